"""`make flags`: regenerate the engine flag catalogs in providers/<name>/catalogs/ from the engines' own
argument definitions at the pinned versions.

Method: `pip download --no-deps` of each pinned wheel (PyPI serves all of them), then a static
read of the argument definitions with `ast` (nothing is imported, so no torch and no GPU):
  vllm           vllm==<VLLM_VERSION>: the OpenAI server parser (make_arg_parser: FrontendArgs
                 + AsyncEngineArgs), the parser the vllm/vllm-openai image runs
  dynamo-vllm    ai-dynamo==<DYNAMO_VERSION> (dynamo.vllm's runtime + backend groups) and the
                 vLLM its `vllm` extra pins (AsyncEngineArgs only: no --host/--port)
  dynamo-sglang  ai-dynamo (dynamo.sglang's groups) and the SGLang its `sglang` extra pins
                 (ServerArgs.add_cli_args)
  dynamo-trtllm  ai-dynamo (dynamo.trtllm's groups): TRT-LLM itself takes no CLI there, its
                 engine options go through --extra-engine-args / --trtllm.* (recorded as a prefix)
  dynamo-mocker  ai-dynamo (dynamo/mocker/args.py parse_args): the mocker test backend's workers
  dynamo-frontend  ai-dynamo (dynamo.frontend's FrontendArgGroup with the KV router and AIC perf
                 groups it adds): the frontend sidecar Runway gives each worker behind a gateway
Run with the project's Python: `python -m tools.flags [--out DIR] [--cache DIR]`.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The image Runway renders for each Dynamo engine (providers/dynamo/render.py), whose parser a catalog
# describes; another spec.engine.image only gets warnings.
RUNTIMES = {"vllm": "vllm-runtime", "sglang": "sglang-runtime", "trtllm": "tensorrtllm-runtime"}
NO_VALUE_ACTIONS = {"store_true", "store_false", "store_const", "count", "help", "version"}


def pins() -> dict[str, str]:
    text = (ROOT / "core" / "model" / "versions.env").read_text()
    return dict(
        line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")
    )


def download(requirement: str, dest: Path) -> Path:
    """The wheel of `requirement`, downloaded into `dest` unless it is already there."""
    package, _, version = requirement.partition("==")
    name = package.replace("-", "_")
    cached = list(dest.glob(f"{name}-{version}-*.whl"))
    if cached:
        return cached[0]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--quiet",
            "-d",
            str(dest),
            requirement,
        ],
        check=True,
        timeout=1800,
    )
    return next(dest.glob(f"{name}-{version}-*.whl"))


def read(wheel: Path, member: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(member).decode("utf-8")


def members(wheel: Path, prefix: str) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return sorted(n for n in archive.namelist() if n.startswith(prefix) and n.endswith(".py"))


def extra_pin(wheel: Path, package: str, extra: str) -> str:
    metadata = next(
        read(wheel, n)
        for n in zipfile.ZipFile(wheel).namelist()
        if n.endswith(".dist-info/METADATA")
    )
    pattern = rf"^Requires-Dist: {package}(?:\[[^\]]*\])?==(\S+); extra == '{extra}'$"
    match = re.search(pattern, metadata, re.MULTILINE)
    if match is None:
        raise SystemExit(f"{wheel.name}: no {package}== pin for extra {extra}")
    return match.group(1)


def ray_vllm(wheel: Path) -> str:
    """The vLLM version ray[llm] names: its pin, or the floor it requires (Ray 2.55 requires
    `vllm[audio]>=0.18.0`, and the newest vLLM no longer has the module Ray imports)."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
    pattern = r"^Requires-Dist: vllm(?:\[[^\]]*\])?(?:==|>=)([\w.]+)[^;]*; extra == \"llm\"$"
    match = re.search(pattern, metadata, re.MULTILINE)
    if match is None:
        raise SystemExit(f"{wheel.name}: no vllm requirement in the llm extra")
    return match.group(1)


# --- annotations of dataclass fields (vLLM builds most flags from them) ----------------------


def class_fields(sources: Iterable[str]) -> dict[str, dict[str, str]]:
    """class name -> field -> annotation source, for every class in the sources."""
    out: dict[str, dict[str, str]] = {}
    for text in sources:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                fields = out.setdefault(node.name, {})
                for base in node.bases:
                    if isinstance(base, ast.Name) and base.id in out:
                        fields.update({k: v for k, v in out[base.id].items() if k not in fields})
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        fields[item.target.id] = ast.unparse(item.annotation)
    return out


def kind_of(annotation: str) -> tuple[str, str]:
    """(value, type) the way vLLM's get_kwargs turns a field annotation into argparse kwargs."""
    parts = {p.strip() for p in annotation.replace("Optional[", "").rstrip("]").split("|")}
    if parts == {"bool", "str", "None"}:
        return "optional", "str"
    if "bool" in parts:
        return "none", "bool"
    for simple in ("int", "float", "str"):
        if parts <= {simple, "None"}:
            return "required", simple
    return "required", annotation


# --- add_argument calls ------------------------------------------------------------------------


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _const(node: ast.expr | None) -> Any:
    return node.value if isinstance(node, ast.Constant) else None


def add_argument_flags(
    text: str,
    fields: Mapping[str, Mapping[str, str]] | None = None,
    *,
    function: str | None = None,
) -> dict[str, dict[str, str]]:
    """Every --flag an add_argument / add_negatable_bool_argument call in `text` (in the
    function named `function`, when given) defines."""
    tree: ast.AST = ast.parse(text)
    if function is not None:
        tree = next(
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function
        )
    kwargs_class: dict[str, str] = {}  # model_kwargs = get_kwargs(ModelConfig)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "get_kwargs"
            and isinstance(node.value.args[0], ast.Name)
            and isinstance(node.targets[0], ast.Name)
        ):
            kwargs_class[node.targets[0].id] = node.value.args[0].id
    flags: dict[str, dict[str, str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "add_negatable_bool_argument":
            flag = _const(_kw(node, "flag_name"))
            if isinstance(flag, str):
                flags[flag] = {"value": "none", "type": "bool"}
                flags["--no-" + flag[2:]] = {"value": "none", "type": "bool"}
            continue
        if name != "add_argument":
            continue
        names = [
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        for key in ("flag_name", "obsolete_flag", "alias"):
            value = _const(_kw(node, key))
            if isinstance(value, str):
                names.append(value)
        names = [n for n in names if n.startswith("-")]
        if not names:
            continue
        entry = _entry(node, kwargs_class, fields or {})
        for flag in names:
            flags[flag] = {k: v for k, v in entry.items() if k != "negatable"}
            # argparse's BooleanOptionalAction adds --no-x for long options only (not for -i)
            if entry.get("negatable") and flag.startswith("--"):
                flags["--no-" + flag[2:]] = {"value": "none", "type": "bool"}
    return flags


def _entry(
    call: ast.Call, kwargs_class: Mapping[str, str], fields: Mapping[str, Mapping[str, str]]
) -> dict[str, str]:
    value, kind, negatable = "required", "str", ""
    spreads = [k.value for k in call.keywords if k.arg is None]  # **model_kwargs["x"]
    for spread in list(spreads):  # **{**cache_kwargs["x"], "default": None}
        if isinstance(spread, ast.Dict):
            spreads += [v for k, v in zip(spread.keys, spread.values, strict=True) if k is None]
    for sub in spreads:
        if (
            isinstance(sub, ast.Subscript)
            and isinstance(sub.value, ast.Name)
            and sub.value.id in kwargs_class
        ):
            annotation = fields.get(kwargs_class[sub.value.id], {}).get(str(_const(sub.slice)), "")
            if annotation:
                value, kind = kind_of(annotation)
                negatable = "yes" if kind == "bool" else ""
    action = _kw(call, "action")
    action_name = _const(action) or (action.attr if isinstance(action, ast.Attribute) else None)
    if action_name in NO_VALUE_ACTIONS:
        value, kind, negatable = "none", "bool", ""
    elif action_name == "BooleanOptionalAction":
        value, kind, negatable = "none", "bool", "yes"
    arg_type = _kw(call, "type") or _kw(call, "arg_type")
    if isinstance(arg_type, ast.Name) and arg_type.id in ("int", "float", "str"):
        kind = arg_type.id
    if _const(_kw(call, "nargs")) in ("?", "*"):
        value = "optional"
    out = {"value": value, "type": kind}
    if negatable:
        out["negatable"] = negatable
    return out


def field_flags(fields: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """`--field-name` for every field (vLLM's FrontendArgs.add_cli_args)."""
    flags: dict[str, dict[str, str]] = {}
    for name, annotation in fields.items():
        flag = "--" + name.replace("_", "-")
        value, kind = kind_of(annotation)
        flags[flag] = {"value": value, "type": kind}
        if kind == "bool" and value == "none":
            flags["--no-" + flag[2:]] = {"value": "none", "type": "bool"}
    return flags


# --- the catalogs ------------------------------------------------------------------------------


def vllm_flags(wheel: Path, *, frontend: bool) -> tuple[dict[str, dict[str, str]], list[str]]:
    config_files = [m for m in members(wheel, "vllm/config/")] + ["vllm/engine/arg_utils.py"]
    fields = class_fields(read(wheel, m) for m in config_files)
    flags = add_argument_flags(read(wheel, "vllm/engine/arg_utils.py"), fields)
    sources = ["vllm/engine/arg_utils.py", "vllm/config/*.py"]
    if frontend:
        cli = "vllm/entrypoints/common/cli_args.py"
        text = read(wheel, cli)
        frontend_fields = class_fields([text])["FrontendArgs"]
        flags.update(field_flags(frontend_fields))
        flags.update(add_argument_flags(text, function="make_arg_parser"))
        sources.append(cli)
    return flags, sources


def dynamo_flags(wheel: Path, engine: str) -> tuple[dict[str, dict[str, str]], list[str]]:
    files = [
        "dynamo/common/configuration/groups/runtime_args.py",
        f"dynamo/{engine}/backend_args.py",
    ]
    flags: dict[str, dict[str, str]] = {}
    for member in files:
        flags.update(add_argument_flags(read(wheel, member)))
    return flags, files


def ray_serve_llm_flags(wheel: Path) -> tuple[dict[str, dict[str, str]], list[str]]:
    """The engine_kwargs Ray Serve LLM accepts: the public fields of vLLM's FrontendArgs and
    AsyncEngineArgs (Ray splits engine_kwargs into those two and refuses anything else), each
    spelled as its flag, with a --no- spelling for switches."""
    engine, frontend = "vllm/engine/arg_utils.py", "vllm/entrypoints/openai/cli_args.py"
    fields = class_fields(read(wheel, m) for m in [*members(wheel, "vllm/config/"), engine])
    parsed = add_argument_flags(read(wheel, engine), fields)
    declared = {
        **class_fields([read(wheel, frontend)])["FrontendArgs"],
        **fields["AsyncEngineArgs"],
    }
    flags: dict[str, dict[str, str]] = {}
    for name, annotation in declared.items():
        if name.startswith("_"):  # private fields (_api_process_count): not settings
            continue
        flag = "--" + name.replace("_", "-")
        entry = parsed.get(flag) or field_flags({name: annotation})[flag]
        flags[flag] = entry
        negated = "--no-" + flag[2:]
        if negated in parsed or (entry["type"] == "bool" and entry["value"] == "none"):
            flags[negated] = {"value": "none", "type": "bool"}
    sources = [f"{engine} (AsyncEngineArgs)", "vllm/config/*.py", f"{frontend} (FrontendArgs)"]
    return flags, sources


# The Dynamo entry points that are not an engine backend: module -> the files defining its parser.
DYNAMO_TOOLS = {
    "mocker": ["dynamo/mocker/args.py"],
    "frontend": [
        "dynamo/frontend/frontend_args.py",
        "dynamo/common/configuration/groups/kv_router_args.py",
        "dynamo/common/configuration/groups/aic_perf_args.py",
    ],
}
# The image Runway runs each of them in with flags: the mocker's workers run in the planner
# image; the frontend sidecar (python3 -m dynamo.frontend) in the vLLM runtime image.
TOOL_IMAGES = {"mocker": "dynamo-planner", "frontend": "vllm-runtime"}


def dynamo_tool_flags(wheel: Path, module: str) -> tuple[dict[str, dict[str, str]], list[str]]:
    files = DYNAMO_TOOLS[module]
    flags: dict[str, dict[str, str]] = {}
    for member in files:
        flags.update(add_argument_flags(read(wheel, member)))
    return flags, files


def catalog(
    engine: str,
    version: str,
    method: str,
    sources: list[str],
    flags: Mapping[str, Any],
    *,
    image: str,
    vllm_parser: bool = False,
    prefixes: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One catalog. vLLM's FlexibleArgumentParser reads `--max_model_len` as `--max-model-len`
    and `--compilation-config.mode 3` as a key of `--compilation-config`; `prefixes` are open
    namespaces (dynamo.trtllm's `--trtllm.<key>`)."""
    return {
        "engine": engine,
        "version": version,
        "image": image,
        "method": method,
        "sources": sources,
        "underscoresAsDashes": vllm_parser,
        "dottedKeys": vllm_parser,
        "prefixes": list(prefixes),
        "flags": dict(sorted(flags.items())),
    }


def build(work: Path) -> dict[str, dict[str, Any]]:
    versions = pins()
    vllm_version = versions["VLLM_VERSION"].lstrip("v")
    dynamo_version = versions["DYNAMO_VERSION"]
    out: dict[str, dict[str, Any]] = {}

    wheel = download(f"vllm=={vllm_version}", work / "vllm")
    flags, sources = vllm_flags(wheel, frontend=True)
    out["vllm"] = catalog(
        "vllm",
        vllm_version,
        f"pip download --no-deps vllm=={vllm_version}; static ast read",
        sources,
        flags,
        image=f"vllm/vllm-openai:{versions['VLLM_VERSION']}",
        vllm_parser=True,
    )

    dynamo = download(f"ai-dynamo=={dynamo_version}", work / "dynamo")
    for engine, package in (("vllm", "vllm"), ("sglang", "sglang"), ("trtllm", "tensorrt-llm")):
        flags, sources = dynamo_flags(dynamo, engine)
        sources = [f"ai-dynamo=={dynamo_version}:{s}" for s in sources]
        pinned = extra_pin(dynamo, package, engine)
        method = f"pip download --no-deps ai-dynamo=={dynamo_version}"
        if engine == "vllm":
            wheel = download(f"vllm=={pinned}", work / "vllm-dynamo")
            engine_flags, engine_sources = vllm_flags(wheel, frontend=False)
            flags = {**engine_flags, **flags}
            sources += [f"vllm=={pinned}:{s}" for s in engine_sources]
            method += f" and vllm=={pinned}; static ast read"
        elif engine == "sglang":
            wheel = download(f"sglang=={pinned}", work / "sglang")
            text = read(wheel, "sglang/srt/server_args.py")
            engine_flags = add_argument_flags(text, function="add_cli_args")
            flags = {**engine_flags, **flags}
            sources.append(f"sglang=={pinned}:sglang/srt/server_args.py (ServerArgs.add_cli_args)")
            method += f" and sglang=={pinned}; static ast read"
        else:
            method += (
                f"; static ast read (tensorrt-llm=={pinned} options pass through"
                " --extra-engine-args or --trtllm.<key>, not as flags)"
            )
        out[f"dynamo-{engine}"] = catalog(
            f"dynamo.{engine}",
            f"{dynamo_version} ({package} {pinned})",
            method,
            sources,
            flags,
            image=f"nvcr.io/nvidia/ai-dynamo/{RUNTIMES[engine]}:{dynamo_version}",
            vllm_parser=engine == "vllm",
            prefixes=("--trtllm.",) if engine == "trtllm" else (),
        )
    for module in DYNAMO_TOOLS:
        flags, sources = dynamo_tool_flags(dynamo, module)
        out[f"dynamo-{module}"] = catalog(
            f"dynamo.{module}",
            dynamo_version,
            f"pip download --no-deps ai-dynamo=={dynamo_version}; static ast read",
            [f"ai-dynamo=={dynamo_version}:{s}" for s in sources],
            flags,
            image=f"nvcr.io/nvidia/ai-dynamo/{TOOL_IMAGES[module]}:{dynamo_version}",
        )
    ray = versions["RAY_VERSION"]
    floor = ray_vllm(download(f"ray=={ray}", work / "ray"))
    wheel = download(f"vllm=={floor}", work / "vllm-ray")
    flags, sources = ray_serve_llm_flags(wheel)
    out["kuberay"] = catalog(
        "ray-serve-llm",
        f"{ray} (vllm {floor})",
        f"pip download --no-deps vllm=={floor} (the floor ray[llm]=={ray} declares); static ast"
        " read of the AsyncEngineArgs and FrontendArgs dataclass fields",
        [f"vllm=={floor}:{s}" for s in sources],
        flags,
        image=f"rayproject/ray-llm:{ray}-py311-cu128",
        vllm_parser=True,
    )
    return out


def home(catalog: str) -> Path:
    """Where a catalog ships: beside the provider whose pods run it (`vllm` with Direct vLLM,
    which llm-d shares; `dynamo-<module>` with Dynamo)."""
    provider = "dynamo" if catalog.startswith("dynamo-") else catalog
    return ROOT / "providers" / provider / "catalogs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--out", help="write every catalog here (default: beside its provider, see home())"
    )
    parser.add_argument("--cache", help="keep downloaded wheels here (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temporary:
        for name, data in build(Path(args.cache or temporary)).items():
            out = Path(args.out) if args.out else home(name)
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{name}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            print(f"{name}: {len(data['flags'])} flags, {data['version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
