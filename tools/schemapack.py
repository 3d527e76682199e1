"""`make schemas`: regenerate Runway's schema pack (renderer/output/schemas/) at the pinned versions.

The pack holds one JSON file per upstream CRD Runway renders (or installs next to what it
renders): the CRD itself, with every `description` text stripped and everything else kept
(group, names, scope, served versions, openAPIV3Schema with every `x-kubernetes-*` extension,
subresources, printer columns), plus where it came from. Versions come from
core/model/versions.env only.

Two kinds of input:
  * upstreams served by the Go module proxy (Gateway API, GAIE, KubeRay, LeaderWorkerSet, Istio,
    and the Flux and Argo CD kinds that install a provider's operator) are downloaded with
    `go mod download`, as `make cluster` does;
  * KAITO and Dynamo are served by no registry this project can reach: their CRD files are read
    from the directory given with --upstream-crds (laid out <upstream>/<folder>/<file>), and the
    upstream tag or commit each was taken from is recorded from the table below.

`--save-inputs DIR` keeps what was read (upstream text: keep it out of Git); `--inputs DIR`
builds the pack from such a folder instead of fetching. A pack folder is itself valid input,
so regenerating from the pack gives the pack again, byte for byte.

Exit status: 0 written; 1 an input is missing or disagrees with the pins; 2 bad flags.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from core.model.versions import Versions
from tests.cluster.build import module_dir

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "renderer" / "output" / "schemas"
CRD_KIND = "CustomResourceDefinition"
# Schema keywords whose values are sub-schemas; everything else (default, enum, example,
# x-kubernetes-validations, ...) is data and is copied untouched.
_SCHEMA_MAPS = ("properties",)
_SCHEMA_ONE = ("items", "additionalProperties", "not")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")


class InputError(Exception):
    """An input is missing or does not agree with the pins; the message says which."""


@dataclass(frozen=True)
class ModuleSource:
    """A CRD inside an upstream Go module, at the version pinned by `pin`."""

    upstream: str
    pin: str  # KEY of core/model/versions.env
    module: str
    file: str  # path inside the module
    crd: str  # metadata.name of the CRD to keep (files may hold several)

    def record(self, versions: Versions) -> dict[str, str]:
        return {
            "upstream": self.upstream,
            "pin": self.pin,
            "pinned": versions.as_env()[self.pin],
            "version": _tag(versions.as_env()[self.pin]),
            "module": self.module,
            "file": self.file,
        }


@dataclass(frozen=True)
class DirectorySource:
    """A CRD file under --upstream-crds, copied verbatim from an upstream repository."""

    upstream: str
    pin: str
    stands_for: str  # the pin value this file is the CRD of
    version: str  # the upstream version the file was actually taken at (tag, or branch point)
    repository: str
    commit: str
    file: str  # path in the upstream repository
    local: str  # path under --upstream-crds
    crd: str
    note: str = ""

    def record(self, versions: Versions) -> dict[str, str]:
        pinned = versions.as_env()[self.pin]
        if pinned != self.stands_for:
            raise InputError(
                f"{self.pin}={pinned}, but the {self.upstream} CRD source known to "
                f"tools/schemapack.py is for {self.stands_for}: add the CRD of {pinned} to "
                "--upstream-crds and update DIRECTORY_SOURCES"
            )
        out = {
            "upstream": self.upstream,
            "pin": self.pin,
            "pinned": pinned,
            "version": self.version,
            "repository": self.repository,
            "commit": self.commit,
            "file": self.file,
        }
        return out | ({"note": self.note} if self.note else {})


GATEWAY_API = "sigs.k8s.io/gateway-api"
GAIE = "sigs.k8s.io/gateway-api-inference-extension"
KUBERAY = "github.com/ray-project/kuberay/ray-operator"
MODULE_SOURCES = (
    ModuleSource(
        "Gateway API",
        "GATEWAY_API_VERSION",
        GATEWAY_API,
        "config/crd/standard/gateway.networking.k8s.io_gateways.yaml",
        "gateways.gateway.networking.k8s.io",
    ),
    ModuleSource(
        "Gateway API",
        "GATEWAY_API_VERSION",
        GATEWAY_API,
        "config/crd/standard/gateway.networking.k8s.io_httproutes.yaml",
        "httproutes.gateway.networking.k8s.io",
    ),
    ModuleSource(
        "Gateway API",
        "GATEWAY_API_VERSION",
        GATEWAY_API,
        "config/crd/standard/gateway.networking.k8s.io_referencegrants.yaml",
        "referencegrants.gateway.networking.k8s.io",
    ),
    ModuleSource(
        "Gateway API Inference Extension",
        "GAIE_VERSION",
        GAIE,
        "config/crd/bases/inference.networking.k8s.io_inferencepools.yaml",
        "inferencepools.inference.networking.k8s.io",
    ),
    ModuleSource(
        "Gateway API Inference Extension",
        "GAIE_VERSION",
        GAIE,
        "config/crd/bases/inference.networking.x-k8s.io_inferenceobjectives.yaml",
        "inferenceobjectives.inference.networking.x-k8s.io",
    ),
    ModuleSource(
        "KubeRay",
        "KUBERAY_VERSION",
        KUBERAY,
        "config/crd/bases/ray.io_rayservices.yaml",
        "rayservices.ray.io",
    ),
    # Not rendered, but the RayService controller creates RayClusters: a cluster that runs the
    # operator needs this CRD too.
    ModuleSource(
        "KubeRay",
        "KUBERAY_VERSION",
        KUBERAY,
        "config/crd/bases/ray.io_rayclusters.yaml",
        "rayclusters.ray.io",
    ),
    # llm-d and Direct vLLM place a multi-node replica as a LeaderWorkerSet group
    # (core/rendering/leaderworkerset.py).
    ModuleSource(
        "LeaderWorkerSet",
        "LWS_VERSION",
        "sigs.k8s.io/lws",
        "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
        "leaderworkersets.leaderworkerset.x-k8s.io",
    ),
    ModuleSource(
        "Istio",
        "ISTIO_VERSION",
        "istio.io/api",
        "kubernetes/customresourcedefinitions.gen.yaml",
        "destinationrules.networking.istio.io",
    ),
    # Not rendered from ModelDeployments: the objects that install a provider's operator from
    # the GitOps repository (core/rendering/installs.py, the portal's Providers page).
    ModuleSource(
        "Flux source-controller",
        "FLUX_SOURCE_CONTROLLER_VERSION",
        "github.com/fluxcd/source-controller",
        "config/crd/bases/source.toolkit.fluxcd.io_helmrepositories.yaml",
        "helmrepositories.source.toolkit.fluxcd.io",
    ),
    ModuleSource(
        "Flux helm-controller",
        "FLUX_HELM_CONTROLLER_VERSION",
        "github.com/fluxcd/helm-controller",
        "config/crd/bases/helm.toolkit.fluxcd.io_helmreleases.yaml",
        "helmreleases.helm.toolkit.fluxcd.io",
    ),
    ModuleSource(
        "Argo CD",
        "ARGOCD_VERSION",
        "github.com/argoproj/argo-cd/v3",
        "manifests/crds/application-crd.yaml",
        "applications.argoproj.io",
    ),
)
# Facts about the files under --upstream-crds (their README says where each was taken from).
DIRECTORY_SOURCES = (
    DirectorySource(
        "KAITO",
        "KAITO_VERSION",
        stands_for="0.10.0",
        version="v0.10.0",
        repository="github.com/kaito-project/kaito",
        commit="c673cadc60c1ed8e9d2cf7614e3a5fab4d2f987f",
        file="config/crd/bases/kaito.sh_workspaces.yaml",
        local="kaito/v0.10.0/kaito.sh_workspaces.yaml",
        crd="workspaces.kaito.sh",
    ),
    DirectorySource(
        "Dynamo",
        "DYNAMO_VERSION",
        stands_for="1.1.1",
        version="main@01a4b6d6d",
        repository="github.com/ai-dynamo/dynamo",
        commit="01a4b6d6ddd5b0173f0d110040d1f2cccf759bf9",
        file="deploy/operator/config/crd/bases/nvidia.com_dynamographdeployments.yaml",
        local="dynamo/v1.1-branchpoint-01a4b6d6d/nvidia.com_dynamographdeployments.yaml",
        crd="dynamographdeployments.nvidia.com",
        note=(
            "not the v1.1.1 tag: main at the 1.1.0 version bump (the release/1.1 branch point); "
            "the DynamoGraphDeployment CRD did not change on main from 45364b5f1 until a48672f5b, "
            "which changed only descriptions and dropped maximum: 1 on "
            "services.*.failover.numShadows; the 1.1.1 platform chart serves only v1alpha1 too"
        ),
    ),
)


def _tag(version: str) -> str:
    return version if version.startswith("v") else f"v{version}"


def _crd_named(docs: Sequence[Any], name: str, where: str) -> dict[str, Any]:
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") != CRD_KIND:
            continue
        if (doc.get("metadata") or {}).get("name") == name:
            return doc
    raise InputError(f"{where} holds no CustomResourceDefinition named {name}")


def _read_yaml(path: Path) -> list[Any]:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    return list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader))


def gather(versions: Versions, upstream_crds: Path) -> list[dict[str, Any]]:
    """Every input as {"crd": the upstream CRD as published, "source": where it came from}."""
    inputs = []
    for local in DIRECTORY_SOURCES:  # first: a pin without a known source stops before downloads
        record = local.record(versions)
        path = upstream_crds / local.local
        inputs.append({"crd": _crd_named(_read_yaml(path), local.crd, str(path)), "source": record})
    for module in MODULE_SOURCES:
        version = _tag(versions.as_env()[module.pin])
        folder = module_dir(module.module, version)
        where = f"{module.module}@{version} {module.file}"
        crd = _crd_named(_read_yaml(folder / module.file), module.crd, where)
        inputs.append({"crd": crd, "source": module.record(versions)})
    return inputs


def read_inputs(folder: Path) -> list[dict[str, Any]]:
    """Inputs saved by --save-inputs, or a pack folder (its CRDs are already stripped)."""
    files = sorted(folder.glob("*.json"))
    if not files:
        raise InputError(f"{folder}: no *.json inputs")
    return [json.loads(path.read_text(encoding="utf-8")) for path in files]


def strip_schema(schema: Any) -> Any:
    """A schema without its `description` texts; sub-schemas are walked, data values are not
    (a property *named* description stays)."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: strip_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_ONE:
            out[key] = strip_schema(value)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [strip_schema(sub) for sub in value]
        else:
            out[key] = value
    return out


def strip_crd(crd: Mapping[str, Any]) -> dict[str, Any]:
    """What is needed to check objects and to recreate the CRD, with no upstream prose."""
    metadata = crd.get("metadata") or {}
    spec = dict(crd["spec"])
    versions = []
    for published in spec.get("versions") or ():
        version = dict(published)
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is not None:
            version["schema"] = {"openAPIV3Schema": strip_schema(schema)}
        if "additionalPrinterColumns" in version:
            version["additionalPrinterColumns"] = [
                {k: v for k, v in column.items() if k != "description"}
                for column in version["additionalPrinterColumns"]
            ]
        versions.append(version)
    spec["versions"] = versions
    kept_metadata = {k: metadata[k] for k in ("name", "annotations", "labels") if k in metadata}
    return {
        "apiVersion": crd["apiVersion"],
        "kind": CRD_KIND,
        "metadata": kept_metadata,
        "spec": spec,
    }


def serialize(obj: Mapping[str, Any]) -> bytes:
    """The one JSON form of pack files: sorted keys, one space indent, a final newline."""
    return (json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode()


def pack_files(inputs: Sequence[Mapping[str, Any]]) -> dict[str, bytes]:
    """File name -> bytes of every pack file; one file per CRD, named after the CRD."""
    files: dict[str, bytes] = {}
    for item in inputs:
        crd = strip_crd(item["crd"])
        name = f"{crd['metadata']['name']}.json"
        if name in files:
            raise InputError(f"two inputs for the CRD {crd['metadata']['name']}")
        files[name] = serialize({"crd": crd, "source": dict(item["source"])})
    return dict(sorted(files.items()))


def write_pack(files: Mapping[str, bytes], out: Path) -> None:
    """Replace the pack in `out`: each file written whole (rename), stale files removed."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in sorted(out.glob("*.json")):
        if stale.name not in files:
            stale.unlink()
    for name, data in files.items():
        partial = out / f".{name}.partial"
        partial.write_bytes(data)
        partial.replace(out / name)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tools.schemapack", description=__doc__)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--upstream-crds", metavar="DIR", help="the KAITO and Dynamo CRD files (see above)"
    )
    where.add_argument("--inputs", metavar="DIR", help="build from saved inputs or a pack")
    parser.add_argument("--save-inputs", metavar="DIR", help="also keep the inputs read")
    parser.add_argument("--out", default=str(PACK), metavar="DIR", help=f"default {PACK}")
    parser.add_argument(
        "--versions", default=str(ROOT / "core" / "model" / "versions.env"), metavar="FILE"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    versions = Versions.parse(Path(args.versions).read_text(encoding="utf-8"))
    try:
        if args.inputs:
            inputs = read_inputs(Path(args.inputs))
        else:
            inputs = gather(versions, Path(args.upstream_crds))
        files = pack_files(inputs)
    except InputError as err:
        print(f"schemas: {err}", file=sys.stderr)
        return 1
    if args.save_inputs:
        saved = Path(args.save_inputs)
        saved.mkdir(parents=True, exist_ok=True)
        for item in inputs:
            (saved / f"{item['crd']['metadata']['name']}.json").write_bytes(serialize(item))
    write_pack(files, Path(args.out))
    size = sum(len(data) for data in files.values())
    print(f"schemas: {len(files)} CRDs, {size} bytes in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
