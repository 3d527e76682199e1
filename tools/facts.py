"""`make facts`: regenerate the operators' facts (providers/<name>/facts/*.json) at the pins of
core/model/versions.env, read from the operators' own sources.

Neither upstream is served by a registry this project reaches (the Go module proxy answers 403
for github.com/kaito-project/kaito@v0.10.0 and github.com/llm-d/llm-d-inference-scheduler@v0.6.0),
so each input is a Git repository holding the pinned tag (a clone or a bare mirror), and every
file is read at the tag with `git show`, never from a work tree.

KAITO (--kaito-git, tag v<KAITO_VERSION>) -> providers/kaito/facts/presets.json:
  presets/workspace/models/supported_models.yaml    names, downloadAtRuntime, downloadAuthRequired
  presets/workspace/models/*/model.go               the registered presets and their served names
  presets/workspace/models/vllm_model.go            HF ids mapped to built-in presets; redirects
  pkg/sku/{azure,aws,arc}_sku_handler.go           the instance types node auto-provisioning knows
  charts/kaito/workspace/values.yaml               the install's defaults

aikit (--aikit-git, tag <AIKIT_VERSION>) -> providers/kaito/facts/aikit.json:
  pkg/aikit2llb/inference/runner.go      the runner's entrypoint script: the scheme it strips, the
                                         URL schemes it fetches with curl, what it passes to
                                         `hf download`, and the name it serves a GGUF under
  pkg/aikit2llb/inference/image.go       the runner image's entrypoint
  .github/workflows/release-runners.yaml the runner images published per tag, their platforms
  .github/workflows/release.yaml         the BuildKit frontend image published per tag
  README.md                              the pre-made model images and the name each serves
  go.mod                                 the BuildKit release aikit builds against

llm-d-inference-scheduler (--llmd-git, tag v<LLMD_VERSION>) -> providers/llmd/facts/pd.json:
  deploy/config/pd-epp-config.yaml                 the P/D picker configuration
  pkg/plugins/filter/pd_role.go                    the role label, its values, the filter names
  cmd/pd-sidecar/main.go, pkg/sidecar/proxy/proxy.go   the routing sidecar's flags and connectors
  scripts/pull_images.sh                           the sidecar's image

The output is data only (names, booleans, numbers, the picker configuration's settings): no
upstream code or prose. Exit status: 0 written (or unchanged with --check); 1 an input is
missing or not as expected, or --check found a file out of date; 2 bad flags.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from core.model.versions import Versions

ROOT = Path(__file__).resolve().parents[1]
KAITO_OUT = ROOT / "providers" / "kaito" / "facts" / "presets.json"
LLMD_OUT = ROOT / "providers" / "llmd" / "facts" / "pd.json"
AIKIT_OUT = ROOT / "providers" / "kaito" / "facts" / "aikit.json"
MODELS = "presets/workspace/models"
SKU_FILES = {
    "azure": "pkg/sku/azure_sku_handler.go",
    "aws": "pkg/sku/aws_sku_handler.go",
    "arc": "pkg/sku/arc_sku_handker.go",  # the file's name at the tag
}
_CONST = re.compile(r'^\s*(Preset\w+)\s*=\s*"([^"]+)"', re.M)
_CONST_JOINED = re.compile(r'^\s*(Preset\w+)\s*=\s*(Preset\w+) \+ "([^"]+)"', re.M)
_REGISTERED = re.compile(r"KaitoModelRegister\.Register\(&plugin\.Registration\{\s*Name:\s*(\w+)")
_MODEL_NAME = re.compile(r"\bModelName:\s*(\w+|\"[^\"]+\")")
_MAP_ENTRY = re.compile(r'^\s*"([^"]+)":\s*"([^"]+)",', re.M)
_SKU = re.compile(
    r'\{SKU: "([^"]+)", GPUCount: (\d+), GPUMem: resource\.MustParse\("([^"]+)"\), '
    r'GPUModel: "([^"]+)"'
)


class InputError(Exception):
    """An input is missing or not shaped as this generator expects; the message says which."""


def _show(git: Path, tag: str, path: str) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={git}", "show", f"{tag}:{path}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise InputError(f"{path} at {tag}: {done.stderr.strip() or 'not found'}")
    return done.stdout


def _ls(git: Path, tag: str, path: str) -> list[str]:
    done = subprocess.run(
        ["git", f"--git-dir={git}", "ls-tree", "--name-only", f"{tag}:{path}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise InputError(f"{path} at {tag}: {done.stderr.strip()}")
    return sorted(done.stdout.split())


def _go_map(source: str, variable: str, where: str) -> dict[str, str]:
    start = source.find(f"{variable} = map[string]string{{")
    if start < 0:
        raise InputError(f"{where}: no map {variable}")
    end = source.find("\n\t}", start)
    return dict(_MAP_ENTRY.findall(source[start:end]))


def _registered(git: Path, tag: str) -> tuple[dict[str, str], list[str]]:
    """{preset: served name} of every preset a model package registers, and the files read."""
    presets: dict[str, str] = {}
    files = []
    for package in _ls(git, tag, MODELS):
        path = f"{MODELS}/{package}/model.go"
        if package.endswith((".go", ".yaml")):
            continue
        try:
            source = _show(git, tag, path)
        except InputError:
            continue
        constants = dict(_CONST.findall(source))
        for name, base, suffix in _CONST_JOINED.findall(source):  # falcon: X = Y + "-instruct"
            constants[name] = constants[base] + suffix
        names = [constants.get(n, n) for n in _REGISTERED.findall(source)]
        if not names:
            continue
        files.append(path)
        served = {
            constants.get(v, v.strip('"')) if not v.startswith('"') else v.strip('"')
            for v in _MODEL_NAME.findall(source)
        }
        for name in names:
            # Each preset's vLLM parameters set ModelName (served-model-name, pkg/model/
            # interface.go buildVLLMInferenceCommand) to its own preset constant.
            if name not in served:
                raise InputError(f"{path}: preset {name} sets no ModelName of its own name")
            presets[name] = name
    if not presets:
        raise InputError(f"{MODELS}: no registered presets found")
    return presets, files


def _skus(git: Path, tag: str) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for cloud, path in SKU_FILES.items():
        rows = _SKU.findall(_show(git, tag, path))
        if not rows:
            raise InputError(f"{path}: no SKUs found")
        out[cloud] = {
            sku: {"gpus": int(count), "gpuMemory": memory, "gpuModel": model}
            for sku, count, memory, model in sorted(rows)
        }
    return out


def kaito(git: Path, version: str) -> dict[str, Any]:
    tag = f"v{version}"
    supported = yaml.safe_load(_show(git, tag, f"{MODELS}/supported_models.yaml"))["models"]
    registered, model_files = _registered(git, tag)
    vllm = _show(git, tag, f"{MODELS}/vllm_model.go")
    hf_ids = _go_map(vllm, "builtinVLLMModels", f"{MODELS}/vllm_model.go")
    redirects = _go_map(vllm, "legacyBuiltinToCatalog", f"{MODELS}/vllm_model.go")
    values = yaml.safe_load(_show(git, tag, "charts/kaito/workspace/values.yaml"))
    by_name = {str(m["name"]): m for m in supported}
    presets: dict[str, Any] = {}
    for name in sorted(registered):
        entry = by_name.get(name)
        if entry is None:
            raise InputError(f"preset {name} is registered but not in supported_models.yaml")
        presets[name] = {
            "servedName": registered[name],
            "downloadAtRuntime": bool(entry.get("downloadAtRuntime")),
            "downloadAuthRequired": bool(entry.get("downloadAuthRequired")),
        }
    for hf, preset in hf_ids.items():
        if preset not in presets:
            raise InputError(f"builtinVLLMModels maps {hf} to {preset}, which is not registered")
    return {
        "kaito": tag,
        "sources": sorted(
            [
                f"{MODELS}/supported_models.yaml",
                f"{MODELS}/vllm_model.go",
                "charts/kaito/workspace/values.yaml",
                *model_files,
                *SKU_FILES.values(),
            ]
        ),
        "presets": presets,
        "deprecated": sorted(str(m["name"]) for m in supported if m.get("deprecated")),
        # GetModelByName: lower-cased, short names redirected to an HF id, then a registered
        # preset, then (an HF id) builtinVLLMModels' preset, else a preset generated from
        # the HF repository (presets/workspace/generator/generator.go NewGenerator and
        # FinalizeParams): named and served as the lower-cased last path part, downloaded at
        # runtime, authentication required only when Hugging Face answers 401/403.
        "huggingFaceIds": dict(sorted(hf_ids.items())),
        "redirects": dict(sorted(redirects.items())),
        "generated": {"servedName": "lower-cased last path part", "downloadAtRuntime": True},
        "instanceTypes": _skus(git, tag),
        # Azure also takes any other N- or D-series name (workspace_validation.go, NAP branch).
        "azureSeriesPrefixes": ["Standard_D", "Standard_N"],
        "install": {
            "nodeAutoProvisioning": not values["featureGates"]["disableNodeAutoProvisioning"],
            "cloudProvider": "azure",  # chart README: cloudProviderName defaults to "azure"
        },
    }


_RUNNER = "pkg/aikit2llb/inference/runner.go"
_AIKIT_IMAGE = "pkg/aikit2llb/inference/image.go"
_AIKIT_RUNNERS = ".github/workflows/release-runners.yaml"
_AIKIT_RELEASE = ".github/workflows/release.yaml"
_STRIPPED = re.compile(r'MODEL="\$\{MODEL#([a-z0-9+.-]+://)\}"')
_FETCHED = re.compile(r'\[\[ "\$MODEL" == ([a-z]+://)\* \]\]')
_HF_ARGS = re.compile(
    r'HF_ARGS=\("download" "\$MODEL" "--local-dir" "([^"]+)" "--include" "([^"]+)"\)'
)
_SERVED_SUFFIX = re.compile(r'MODEL_NAME="\$\{GGUF_BASENAME%([^}]+)\}"')
_RUNNER_ENTRYPOINT = re.compile(r'Entrypoint = \[\]string\{"(/[^"]+)"\}')
_PREMADE = re.compile(
    r"`docker run [^`]*?ghcr\.io/kaito-project/aikit/([a-z0-9.-]+:[a-z0-9.-]+)`\s*\|\s*`([^`]+)`"
)


def _premade(readme: str) -> dict[str, dict[str, Any]]:
    """{image (name:tag under the registry): its served name and whether the README offers it on
    CPU ("## CPU" table) and on NVIDIA GPUs ("### NVIDIA CUDA" table)}."""
    out: dict[str, dict[str, Any]] = {}
    section = ""
    for line in readme.splitlines():
        if line.startswith("#"):
            section = {"## CPU": "cpu", "### NVIDIA CUDA": "gpu"}.get(line.strip(), "")
            continue
        match = _PREMADE.search(line)
        if not section or match is None:
            continue
        entry = out.setdefault(
            match.group(1), {"servedName": match.group(2), "cpu": False, "gpu": False}
        )
        if entry["servedName"] != match.group(2):
            raise InputError(f"README.md: {match.group(1)} serves two names")
        entry[section] = True
    return dict(sorted(out.items()))


def aikit(git: Path, tag: str) -> dict[str, Any]:
    runner = _show(git, tag, _RUNNER)
    stripped = _STRIPPED.findall(runner)
    fetched = _FETCHED.findall(runner)
    hf_args = _HF_ARGS.search(runner)
    suffix = _SERVED_SUFFIX.search(runner)
    entrypoint = _RUNNER_ENTRYPOINT.search(_show(git, tag, _AIKIT_IMAGE))
    runners = yaml.safe_load(_show(git, tag, _AIKIT_RUNNERS))
    release = _show(git, tag, _AIKIT_RELEASE)
    frontend = re.search(r"images: (ghcr\.io/[\w./-]+)", release)
    meta = runners["jobs"]["release-runners"]
    pushed = next(
        str(step["with"]["images"]) for step in meta["steps"] if step.get("id") == "docker_meta"
    )
    buildkit = re.search(
        r"^\s*github\.com/moby/buildkit (v[\w.+-]+)", _show(git, tag, "go.mod"), re.M
    )
    premade = _premade(_show(git, tag, "README.md"))
    if not (stripped and fetched and hf_args and suffix and entrypoint and frontend and buildkit):
        raise InputError("aikit: the runner script, image config, frontend or go.mod changed shape")
    if not premade or "/${{ matrix.runner }}" not in pushed:
        raise InputError("aikit: no pre-made models in README.md, or runner images renamed")
    return {
        "aikit": tag,
        "sources": sorted(
            [_RUNNER, _AIKIT_IMAGE, _AIKIT_RUNNERS, _AIKIT_RELEASE, "README.md", "go.mod"]
        ),
        # generateRunnerScript / generateLlamaCppDownload: the model reference's handling
        "runner": {
            "entrypoint": entrypoint.group(1),
            "strippedSchemes": stripped,
            "downloadedSchemes": fetched,  # curl -o /models/<basename of the URL>
            "huggingFace": {"localDir": hf_args.group(1), "include": hf_args.group(2)},
            "modelsDir": hf_args.group(1),
            "servedName": {"from": "the first GGUF file's name", "stripSuffix": suffix.group(1)},
        },
        "runners": {
            "registry": pushed.split("/${{")[0],
            "images": {
                str(m["runner"]): {"platforms": str(m["platforms"]).split(",")}
                for m in meta["strategy"]["matrix"]["include"]
            },
        },
        "frontend": frontend.group(1),
        "buildkit": buildkit.group(1),
        "premade": {"registry": "ghcr.io/kaito-project/aikit", "images": premade},
    }


_GO_FLAG = re.compile(r'flag\.(String|Bool|Int)\(\s*"([^"]+)",\s*([^,]+),')
_GO_STRING = re.compile(r'^\s*(\w+)\s*=\s*"([^"]*)"', re.M)


def llmd(git: Path, version: str) -> dict[str, Any]:
    tag = f"v{version}"
    config_path = "deploy/config/pd-epp-config.yaml"
    config = yaml.safe_load(_show(git, tag, config_path))
    for plugin in config["plugins"]:
        # ${PRIMARY_PORT} is a template value of upstream's deploy scripts; the parameter is for
        # data-parallel pods and its default, 0, means the pool's port: Runway leaves it out.
        (plugin.get("parameters") or {}).pop("primaryPort", None)
    roles_path = "pkg/plugins/filter/pd_role.go"
    roles = dict(_GO_STRING.findall(_show(git, tag, roles_path)))
    main_path = "cmd/pd-sidecar/main.go"
    proxy_path = "pkg/sidecar/proxy/proxy.go"
    proxy = dict(_GO_STRING.findall(_show(git, tag, proxy_path)))
    main = _show(git, tag, main_path)
    flags = {}
    for kind, name, raw in _GO_FLAG.findall(main):
        default = raw.strip()
        if default.startswith("proxy."):
            default = f'"{proxy[default.removeprefix("proxy.")]}"'
        literal = re.fullmatch(r'"[^"]*"|-?\d+|true|false', default)
        flags[name] = {  # a default computed at start (an environment variable) is null
            "type": kind.lower(),
            "default": default.strip('"') if literal else None,
        }
    start = main.find("supportedConnectors = []string{")
    connectors = [
        proxy[n] for n in re.findall(r"proxy\.(\w+)", main[start : main.find("}", start)])
    ]
    images = _show(git, tag, "scripts/pull_images.sh")
    image = re.search(r"(ghcr\.io/llm-d/llm-d-routing-sidecar):", images)
    needed = (
        "RoleLabel",
        "RolePrefill",
        "RoleDecode",
        "RoleBoth",
        "PrefillRoleType",
        "DecodeRoleType",
    )
    if image is None or not flags or not connectors or any(k not in roles for k in needed):
        raise InputError(
            "llm-d: the role constants, sidecar flags, connectors or image are missing"
        )
    return {
        "llmd": tag,
        "sources": sorted(
            [config_path, roles_path, main_path, proxy_path, "scripts/pull_images.sh"]
        ),
        "pickerConfig": config,
        "roleLabel": roles["RoleLabel"],
        "roles": {
            "prefill": roles["RolePrefill"],
            "decode": roles["RoleDecode"],
            "both": roles["RoleBoth"],
        },
        "filters": {"prefill": roles["PrefillRoleType"], "decode": roles["DecodeRoleType"]},
        "sidecar": {
            "image": image.group(1),
            "flags": dict(sorted(flags.items())),
            "connectors": connectors,
        },
    }


def render(facts: dict[str, Any]) -> str:
    return json.dumps(facts, indent=1, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.facts", description=__doc__)
    parser.add_argument("--kaito-git", required=True, type=Path, help="a KAITO Git directory")
    parser.add_argument(
        "--llmd-git", required=True, type=Path, help="an llm-d-inference-scheduler Git directory"
    )
    parser.add_argument("--aikit-git", required=True, type=Path, help="an aikit Git directory")
    parser.add_argument("--check", action="store_true", help="fail when a file is out of date")
    args = parser.parse_args(argv)
    pins = Versions.parse((ROOT / "core" / "model" / "versions.env").read_text("utf-8"))
    try:
        outputs = {
            KAITO_OUT: render(kaito(args.kaito_git, pins.pin("kaito"))),
            LLMD_OUT: render(llmd(args.llmd_git, pins.pin("llmd"))),
            AIKIT_OUT: render(aikit(args.aikit_git, pins.pin("aikit"))),
        }
    except (InputError, KeyError, TypeError, yaml.YAMLError) as err:
        print(f"facts: {err}", file=sys.stderr)
        return 1
    stale = [
        out for out, text in outputs.items() if not out.exists() or out.read_text("utf-8") != text
    ]
    if args.check:
        for out in stale:
            print(f"facts: {out.relative_to(ROOT)} is out of date", file=sys.stderr)
        return 1 if stale else 0
    for out, text in outputs.items():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, "utf-8")
        print(f"facts: wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
