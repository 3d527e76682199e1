"""The first process of a stand-in pod (tests/support/kubelet.py starts it under
`unshare --mount --net --fork`): it waits for the host to hand it its veth, brings up loopback and
the pod's address, builds the container's root (an overlay over this machine's root whose writes
land in the pod's folder, a fresh /tmp, the volumes at their mountPaths), and then executes the
container's command there with exactly the container's environment.

`python podinit.py SPEC.json`; standard library only, nothing imported from the repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def run(*argv: str) -> None:
    subprocess.run(argv, check=True)


def network(address: str, gateway: str) -> None:
    run("ip", "link", "set", "lo", "up")
    deadline = time.monotonic() + 30
    while subprocess.run(
        ["ip", "link", "show", "eth0"], capture_output=True, check=False
    ).returncode:
        if time.monotonic() > deadline:
            sys.exit("podinit: the host never moved the pod's veth in")
        time.sleep(0.02)
    run("ip", "addr", "add", address, "dev", "eth0")
    run("ip", "link", "set", "eth0", "up")
    run("ip", "route", "add", "default", "via", gateway)


def root(base: Path, mounts: list[list[str]], workdir: str, shm: str, image: list[str]) -> Path:
    upper, work, merged = base / "upper", base / "work", base / "root"
    for folder in (upper, work, merged):
        folder.mkdir(parents=True, exist_ok=True)
    run("mount", "--make-rprivate", "/")
    run(
        "mount",
        "-t",
        "overlay",
        "overlay",
        "-o",
        f"lowerdir=/,upperdir={upper},workdir={work}",
        str(merged),
    )
    for system in ("proc", "sys", "dev"):
        run("mount", "--rbind", f"/{system}", str(merged / system))
    run("mount", "-t", "tmpfs", "tmpfs", str(merged / "tmp"))
    # A container's own /dev/shm (64 MiB, the container runtimes' default, unless the test says
    # otherwise); a volume at /dev/shm (an emptyDir of medium Memory, as llm-d renders for tensor
    # parallel) is mounted over it.
    run("mount", "-t", "tmpfs", "-o", f"size={shm}", "shm", str(merged / "dev" / "shm"))
    for files in image:  # the stand-in image's virtualenv, wherever the checkout is
        target = merged / files.lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        run("mount", "--bind", files, str(target))
    for mount_path, source in mounts:
        target = merged / mount_path.lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        if source.startswith("tmpfs:"):  # an emptyDir of medium Memory
            run("mount", "-t", "tmpfs", "-o", source.removeprefix("tmpfs:"), "tmpfs", str(target))
        else:
            run("mount", "--bind", source, str(target))
    (merged / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
    return merged


def main(spec_file: str) -> None:
    spec = json.loads(Path(spec_file).read_text())
    network(spec["address"], spec["gateway"])
    merged = root(
        Path(spec["base"]), spec["mounts"], spec["workdir"], spec["shm"], spec["image_files"]
    )
    os.chroot(merged)
    os.chdir(spec["workdir"])
    argv = spec["argv"]
    path = spec["env"].get("PATH", "")
    program = argv[0]
    if "/" not in program:
        for folder in path.split(":"):
            candidate = Path(folder) / program
            if os.access(candidate, os.X_OK):
                program = str(candidate)
                break
    sys.stdout.flush()
    os.execve(program, argv, spec["env"])


if __name__ == "__main__":
    main(sys.argv[1])
