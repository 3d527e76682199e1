"""KWOK for the live tier, built once: fake nodes and pod lifecycles, no kubelet.

The kwok controller (sigs.k8s.io/kwok/cmd/kwok) is built from tests/cluster/kwok/go.mod, whose
`tool` line pins the version. Without Stage objects it refuses to start, so the stages of KWOK's
own "fast" profile (a node turns Ready at once; a scheduled pod turns Running and Ready, a
finished Job pod Succeeded, a deleted pod goes away) and its node heartbeat are copied from the module into
<cache>/kwok/stages.yaml, which `kwok --config` reads.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from core.model.versions import Versions
from tests.cluster.build import (
    HERE,
    Binary,
    build_binary,
    check_pin,
    module_dir,
    required_version,
    say,
)

MODULE = "sigs.k8s.io/kwok"
KWOK = Binary("kwok", HERE / "kwok", f"{MODULE}/cmd/kwok")
STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    # Node status renewed every ~10 min and the node Lease by kwok itself (--node-lease-duration-
    # seconds), so the controller-manager's node lifecycle controller keeps the nodes Ready.
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)


def stages_file(cache: Path) -> Path:
    return cache / "kwok" / "stages.yaml"


def build(cache: Path, versions: Versions, go: str) -> None:
    check_pin(KWOK.module_dir, MODULE, "KWOK_VERSION", versions.as_env()["KWOK_VERSION"])
    build_binary(KWOK, cache / "bin", go)
    version = required_version(KWOK.module_dir, MODULE)
    target = stages_file(cache)
    marker = target.with_suffix(".version")
    wanted = "\n".join((version, *STAGES))
    if target.exists() and marker.exists() and marker.read_text() == wanted:
        say(f"KWOK stages {version}: up to date")
        return
    source = module_dir(MODULE, version)
    docs = [yaml.safe_load((source / path).read_text()) for path in STAGES]
    if any(not isinstance(d, dict) or d.get("kind") != "Stage" for d in docs):
        raise SystemExit(f"[cluster] {MODULE}@{version}: {STAGES} are not all Stage objects")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump_all(docs, sort_keys=True))
    marker.write_text(wanted)
    say(f"KWOK stages {version}: {len(docs)} stage(s)")
