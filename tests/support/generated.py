"""Hypothesis strategies for the hardening classes (issue #13): what each class generates, and
what the answer to it must be. Shared by the property tests and `make fuzz`."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from tests.support.builders import external_model_provider, model_deployment, provider_config
from tests.support.webhook import review

INT64_MAX = 2**63 - 1
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
KINDS = (
    ("airunway.ai", "v1alpha1", "ModelDeployment"),
    ("airunway.ai", "v1alpha1", "InferenceProviderConfig"),
    ("gateway.tokenfactory.mirantis.com", "v1alpha1", "ExternalModelProvider"),
    ("", "v1", "Pod"),
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)


def json_trees(
    leaves: st.SearchStrategy[Any],
    keys: st.SearchStrategy[str],
    *,
    max_size: int = 4,
    max_leaves: int = 16,
) -> st.SearchStrategy[Any]:
    """JSON-shaped values: `leaves`, and lists and maps (keys from `keys`) of them, nested."""
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=max_size) | st.dictionaries(keys, inner, max_size=max_size)
        ),
        max_leaves=max_leaves,
    )


json_values = json_trees(json_scalars, st.text(max_size=8))


# Class 1: any operation, any object and oldObject (lists, strings, numbers, null, objects).
@st.composite
def any_request_reviews(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(KINDS))
    obj = draw(json_values | st.builds(model_deployment))
    document = review(
        obj,
        operation=draw(st.sampled_from(OPERATIONS) | st.text(max_size=8)),
        uid=draw(st.text(min_size=1, max_size=12)),
        kind=kind,
    )
    request = document["request"]
    if draw(st.booleans()):
        request["oldObject"] = draw(json_values)
    for name in ("subResource", "name", "namespace", "dryRun"):
        if draw(st.integers(0, 3)) == 0:
            request[name] = draw(json_scalars)
    return document


# Class 2: numbers past what Kubernetes holds, where quantities and integers sit in a spec.
QUANTITY_FIELDS = (
    ("resources", "memory"),
    ("resources", "cpu"),
    ("scaling", "prefill", "memory"),
    ("scaling", "decode", "memory"),
)
INTEGER_FIELDS = (
    ("resources", "gpu", "count"),
    ("scaling", "replicas"),
    ("engine", "contextLength"),
    ("engine", "args", "max-num-seqs"),
    ("provider", "overrides", "spec", "replicas"),
)

digits = st.text(alphabet="0123456789", min_size=1, max_size=6000)


@st.composite
def huge_quantities(draw: st.DrawFn) -> str:
    """Quantities whose value is beyond 2^63-1: big exponents, 5,000-digit exponents, long
    mantissas with a suffix."""
    mantissa = draw(st.sampled_from(["1", "9.5", "+2", "123456789"]))
    form = draw(st.integers(0, 2))
    if form == 0:
        return f"{mantissa}e{draw(st.integers(19, 10**7))}"
    if form == 1:
        return f"{mantissa}E+{draw(digits.filter(lambda d: len(d.lstrip('0')) > 20))}"
    return draw(st.sampled_from(["9", "99"])) + "0" * draw(st.integers(18, 120)) + "Ei"


huge_integers = st.integers(min_value=INT64_MAX + 1, max_value=2**4000) | st.integers(
    min_value=-(2**4000), max_value=-(2**63) - 1
)


@st.composite
def out_of_range_objects(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A ModelDeployment with one number out of range, and the field the denial must name."""
    obj = model_deployment(gpu=1, engine="vllm", provider="vllm")
    value: str | int
    if draw(st.booleans()):
        path, value = draw(st.sampled_from(QUANTITY_FIELDS)), draw(huge_quantities())
    elif draw(st.booleans()):
        path = ("model", "storage", "volumes", "0", "size")
        value = draw(huge_quantities())
        obj["spec"]["model"]["storage"] = {
            "volumes": [{"name": "cache", "purpose": "modelCache", "size": "1Gi"}]
        }
    else:
        path, value = draw(st.sampled_from(INTEGER_FIELDS)), draw(huge_integers)
    node = obj["spec"]
    for part in path[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    node[path[-1]] = value
    field = "spec." + ".".join(p if not p.isdigit() else f"[{p}]" for p in path).replace(".[", "[")
    return obj, field


# Class 9: a YAML document with one key given twice, somewhere in it.
keys = st.from_regex(r"\A[a-z][a-zA-Z0-9]{0,8}\Z")


@st.composite
def yaml_with_duplicate(draw: st.DrawFn) -> tuple[str, int, str]:
    """(YAML text, 1-based index of the document with the duplicate, the duplicated key)."""
    before = draw(st.integers(0, 3))
    docs = [f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n" for i in range(before)]
    fields = draw(st.lists(keys, min_size=1, max_size=6, unique=True))
    key = draw(st.sampled_from(fields))
    depth = draw(st.integers(0, 3))
    indent = "  " * (depth + 1)
    lines = ["apiVersion: airunway.ai/v1alpha1", "kind: ModelDeployment", "spec:"]
    lines += [f"{'  ' * (d + 1)}level{d}:" for d in range(depth)]
    body = [f"{indent}{f}: {draw(st.integers(0, 9))}" for f in fields]
    body.insert(draw(st.integers(0, len(body))), f"{indent}{key}: twice")
    docs.append("\n".join(lines + body) + "\n")
    return "---\n".join(docs), before + 1, key


# Class 10: credentials by value where a name or a plain value belongs.
alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
tokens = st.one_of(
    st.text(alphabet=alnum, min_size=34, max_size=40).map(lambda t: "hf_" + t),
    st.text(alphabet=alnum, min_size=40, max_size=48).map(lambda t: "sk-proj-1" + t),
    st.text(alphabet=alnum, min_size=36, max_size=36).map(lambda t: "ghp_" + t),
    st.just("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"),
    st.text(alphabet=alnum, min_size=12, max_size=30).map(
        lambda t: f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOi{t}.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV"
    ),
)
secret_names = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\.[a-z0-9]{1,10}){0,2}\Z")


@st.composite
def credential_objects(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A ModelDeployment with a token in one field, and the field the denial must name."""
    token = draw(tokens)
    obj = model_deployment(gpu=1, engine="vllm", provider="vllm")
    spec = obj["spec"]
    where = draw(st.integers(0, 4))
    if where == 0:
        spec["env"] = [{"name": "A", "value": "x"}, {"name": "TOKEN", "value": token}]
        return obj, "spec.env[1].value"
    if where == 1:
        spec["engine"]["args"] = {"api-key": token}
        return obj, "spec.engine.args.api-key"
    if where == 2:
        spec["engine"]["extraArgs"] = ["--api-key", token]
        return obj, "spec.engine.extraArgs[1]"
    if where == 3:
        obj["metadata"]["annotations"] = {"example.com/token": token}
        return obj, "metadata.annotations[example.com/token]"
    spec["secrets"] = {"huggingFaceToken": token}
    return obj, "spec.secrets.huggingFaceToken"


# Other kinds with generated content (their classes belong to other checks; here only: a
# well-formed answer, never a 5xx or a traceback).
@st.composite
def other_kind_reviews(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        rule = draw(
            st.text(alphabet="abcdefghijklmnopqrstuvwxyz.()[]<>=!&|' 0123456789", max_size=60)
        )
        obj = provider_config("gen", rules=[(rule, draw(st.integers(-5, 200)))])
    else:
        obj = external_model_provider(
            baseURL=draw(st.text(max_size=30) | st.just("http://[::1")),
            models=[{"servedName": draw(st.text(max_size=12))}],
        )
    return review(copy.deepcopy(obj))
