"""The serving tier's stand-in kubelet (tests/support/kubelet.py) builds a container's process as
Kubernetes does: the command/args rule against the image's ENTRYPOINT and CMD, `$(VAR)` expansion
(defined names replaced, `$$` escaping, undefined references kept), env in order, and each
volumeMount from the volume the pod names. The served cases rely on it; these hold it to the rule
(Kubernetes' "Define a Command and Arguments for a Container" and "Dependent environment
variables")."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.kubelet import (
    Image,
    Memory,
    Volume,
    expand,
    image,
    launch,
    pod_fields,
    service_env,
)

ROW = Image(
    repository="example.test/server",
    entrypoint=("/bin/serve",),
    cmd=("--default",),
    workdir="/srv",
    venv=Path("/venv"),
    source="a row for these tests",
    stand_in="none",
    env=(("FROM_IMAGE", "1"),),
)
NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)


@pytest.mark.parametrize(
    ("container", "argv"),
    [
        ({}, ("/bin/serve", "--default")),
        ({"args": ["--x"]}, ("/bin/serve", "--x")),
        ({"args": []}, ("/bin/serve",)),
        ({"command": ["/bin/other"]}, ("/bin/other",)),
        ({"command": ["/bin/other"], "args": ["--y"]}, ("/bin/other", "--y")),
    ],
)
def test_command_and_args_follow_the_kubernetes_rule(
    container: dict[str, object], argv: tuple[str, ...]
) -> None:
    assert launch({"name": "c", "image": "x", **container}, {}, image_row=ROW).argv == argv


def test_env_expands_in_order_and_args_expand_from_it() -> None:
    container = {
        "name": "c",
        "image": "x",
        "args": ["--model", "$(MODEL)", "--keep", "$(UNSET)", "--escaped", "$$(MODEL)"],
        "env": [
            {"name": "MODEL", "value": "org/name"},
            {"name": "PATH_TO", "value": "/cache/$(MODEL)/$(LATER)"},
            {"name": "LATER", "value": "late"},
        ],
    }
    spec = launch(container, {}, added_env={"STAND_IN": "yes"}, image_row=ROW)
    assert spec.argv == (
        "/bin/serve", "--model", "org/name", "--keep", "$(UNSET)", "--escaped", "$(MODEL)",
    )  # fmt: skip
    assert spec.env == {
        "PATH": "/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "FROM_IMAGE": "1",
        "MODEL": "org/name",
        "PATH_TO": "/cache/org/name/$(LATER)",
        "LATER": "late",
        "STAND_IN": "yes",
    }
    assert spec.workdir == "/srv"


def test_volume_mounts_take_the_volume_the_pod_names() -> None:
    container = {
        "name": "c",
        "image": "x",
        "workingDir": "/work",
        "volumeMounts": [
            {"name": "cache", "mountPath": "/model-cache"},
            {"name": "shm", "mountPath": "/dev/shm"},
        ],
    }
    volumes: dict[str, Volume] = {"cache": Path("/host/cache"), "shm": Memory("20Gi")}
    spec = launch(container, volumes, image_row=ROW)
    assert spec.mounts == (("/model-cache", Path("/host/cache")), ("/dev/shm", Memory("20Gi")))
    assert (spec.workdir, Memory("20Gi").option(), Memory("512Mi").option()) == (
        "/work",
        "size=20g",
        "size=512m",
    )
    with pytest.raises(KeyError, match="volumeMount cache: the test gives it no folder"):
        launch(container, {}, image_row=ROW)


def test_a_value_from_a_reference_is_refused_rather_than_guessed() -> None:
    container = {"name": "c", "image": "x", "env": [{"name": "K", "valueFrom": {}}]}
    with pytest.raises(ValueError, match="env K: only literal values run here"):
        launch(container, {}, image_row=ROW)


def test_an_image_is_found_by_repository_whatever_its_tag_or_digest() -> None:
    assert image("vllm/vllm-openai:v0.33.0").entrypoint == ("vllm", "serve")
    assert image("vllm/vllm-openai@sha256:" + "0" * 64).entrypoint == ("vllm", "serve")
    assert image("nvcr.io/nvidia/ai-dynamo/dynamo-planner:1.1.1").entrypoint == ()
    with pytest.raises(KeyError, match="no row"):
        image("registry.local:5000/vllm")


@given(st.text().filter(lambda s: "$" not in s))
def test_text_without_a_dollar_is_never_changed(text: str) -> None:
    assert expand(text, {"A": "b"}) == text


@given(st.dictionaries(NAMES, st.text(), max_size=5), NAMES, st.text(alphabet="ab()"))
def test_a_reference_is_its_value_when_defined_and_itself_when_not(
    env: dict[str, str], name: str, tail: str
) -> None:
    reference = f"$({name})"
    assert expand(reference + tail, env) == env.get(name, reference) + tail
    assert expand("$" + reference, env) == reference


def test_the_downward_api_gives_the_pods_own_fields() -> None:
    container = {
        "name": "c",
        "image": "x",
        "env": [
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "WHERE", "value": "$(POD).here"},
        ],
    }
    fields = pod_fields("worker-0", "models")
    spec = launch(container, {}, fields=fields, image_row=ROW)
    assert (spec.env["POD"], spec.env["WHERE"]) == ("worker-0", "worker-0.here")
    assert sorted(fields) == ["metadata.name", "metadata.namespace", "metadata.uid"]
    secret = {"name": "c", "image": "x", "env": [{"name": "K", "valueFrom": {"secretKeyRef": {}}}]}
    with pytest.raises(ValueError, match="env K: only literal values run here"):
        launch(secret, {}, fields=fields, image_row=ROW)


def test_services_become_env_unless_the_pod_turns_links_off() -> None:
    """Kubernetes pkg/kubelet/envvars FromServices: per Service with a cluster IP, *_SERVICE_HOST,
    *_SERVICE_PORT(_NAME) and the link-style *_PORT*; the master Service whatever the pod says."""
    service = {
        "metadata": {"name": "my-svc", "namespace": "ns"},
        "spec": {
            "clusterIP": "10.96.0.9",
            "ports": [{"name": "http", "port": 8000, "protocol": "TCP"}, {"port": 9090}],
        },
    }
    headless = {"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}}
    master = {
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "KUBERNETES_SERVICE_PORT": "443",
        "KUBERNETES_SERVICE_PORT_HTTPS": "443",
        "KUBERNETES_PORT": "tcp://10.96.0.1:443",
        "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
        "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
        "KUBERNETES_PORT_443_TCP_PORT": "443",
        "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
    }
    assert service_env({}, [service, headless]) == {
        **master,
        "MY_SVC_SERVICE_HOST": "10.96.0.9",
        "MY_SVC_SERVICE_PORT": "8000",
        "MY_SVC_SERVICE_PORT_HTTP": "8000",
        "MY_SVC_PORT": "tcp://10.96.0.9:8000",
        "MY_SVC_PORT_8000_TCP": "tcp://10.96.0.9:8000",
        "MY_SVC_PORT_8000_TCP_PROTO": "tcp",
        "MY_SVC_PORT_8000_TCP_PORT": "8000",
        "MY_SVC_PORT_8000_TCP_ADDR": "10.96.0.9",
        "MY_SVC_PORT_9090_TCP": "tcp://10.96.0.9:9090",
        "MY_SVC_PORT_9090_TCP_PROTO": "tcp",
        "MY_SVC_PORT_9090_TCP_PORT": "9090",
        "MY_SVC_PORT_9090_TCP_ADDR": "10.96.0.9",
    }
    assert service_env({"enableServiceLinks": False}, [service]) == master
    container = {"name": "c", "image": "x", "env": [{"name": "MY_SVC_PORT", "value": "mine"}]}
    links = service_env({}, [service])
    assert launch(container, {}, links=links, image_row=ROW).env["MY_SVC_PORT"] == "mine"
