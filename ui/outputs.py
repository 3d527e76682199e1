"""Where a composed object goes (issue #41, "Output, GitOps first"): every page that composes
(Models, Providers' installation, Gateway providers) hands a Bundle to one of these.

- download: the files as one YAML stream;
- patch: a unified diff that `git apply` accepts at the root of the source repository, made
  against the files as they are on disk now (a new file, or a change to the file that already
  defines the same object);
- branch: committed to a new branch of the configured repository and pushed (ui/branches.py);
- apply: server-side applied to the cluster as the signed-in user (ui/applying.py).

A Planned path is always relative to the repository root, POSIX, inside it (checked here: a
path that climbs out or is absolute is refused, so no output is written outside the repo).
"""

from __future__ import annotations

import difflib
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from ui.settings import UiSettings

GIT_TIMEOUT = 10.0  # seconds for one git call the outputs make
MAX_FILE = 1024 * 1024  # bytes of an existing file a patch is made against


class Delivery(StrEnum):
    DOWNLOAD = "download"
    PATCH = "patch"
    BRANCH = "branch"
    APPLY = "apply"


class OutputError(ValueError):
    """A bundle that cannot be delivered; the page shows the message as it is."""


@dataclass(frozen=True, slots=True)
class Planned:
    """One file of a bundle: its path from the repository root, and its whole new text."""

    path: str
    text: str


@dataclass(frozen=True, slots=True)
class Bundle:
    title: str  # what the user composed, e.g. "ModelDeployment team-a/llama"
    files: tuple[Planned, ...]
    objects: tuple[Mapping[str, Any], ...] = ()  # what `apply` applies, in order


def checked_path(path: str) -> PurePosixPath:
    """`path` as a repository-relative path, or an OutputError when it is absolute, climbs out
    with `..`, or holds an empty or `.git` part."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or "\\" in path:
        raise OutputError(f"{path!r} is not a path inside the repository")
    if any(part in ("", ".", "..", ".git") for part in path.split("/")):
        raise OutputError(f"{path!r} is not a plain path inside the repository")
    return pure


def repo_root(settings: UiSettings) -> Path:
    """The root paths are relative to: --repo, else the Git top level of the first source
    folder, else that folder itself."""
    if settings.repo:
        return Path(settings.repo).resolve()
    if not settings.sources:
        raise OutputError("no source folder (-f) or repository (--repo) to make paths against")
    first = Path(settings.sources[0]).resolve()
    try:
        top = subprocess.run(
            ["git", "-C", str(first), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return first
    return Path(top.stdout.strip()) if top.returncode == 0 else first


def relative_to_root(settings: UiSettings, folder: str) -> str:
    """A source folder as a repository-relative POSIX path ('' for the root itself)."""
    root = repo_root(settings)
    try:
        rel = Path(folder).resolve().relative_to(root)
    except ValueError:
        raise OutputError(f"{folder} is not inside the repository {root}") from None
    return "" if rel == Path() else rel.as_posix()


def download_text(bundle: Bundle) -> str:
    """The bundle's files as one YAML stream, each preceded by a comment naming its path."""
    return "".join(
        f"{'---' + chr(10) if i else ''}# {planned.path}\n{planned.text}"
        for i, planned in enumerate(bundle.files)
    )


def patch_text(bundle: Bundle, root: Path) -> str:
    """A unified diff `git apply` accepts at `root`; '' when nothing would change."""
    return "".join(_file_diff(planned, root) for planned in bundle.files)


def _file_diff(planned: Planned, root: Path) -> str:
    rel = checked_path(planned.path)
    target = root.joinpath(*rel.parts)
    old = _existing(target)
    if old == planned.text:
        return ""
    new_lines = planned.text.splitlines(keepends=True)
    old_lines = old.splitlines(keepends=True) if old is not None else []
    header = [f"diff --git a/{rel} b/{rel}\n"]
    if old is None:
        header.append("new file mode 100644\n")
    body = list(
        difflib.unified_diff(
            old_lines,
            new_lines,
            "/dev/null" if old is None else f"a/{rel}",
            f"b/{rel}",
            n=3,
        )
    )
    return "".join(header + [_terminated(line) for line in body])


def _terminated(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def _existing(target: Path) -> str | None:
    if target.is_symlink():
        raise OutputError(f"{target} is a symbolic link; the portal does not write through links")
    if not target.exists():
        return None
    if not target.is_file():
        raise OutputError(f"{target} exists and is not a file")
    with target.open("rb") as handle:
        data = handle.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise OutputError(f"{target} is larger than {MAX_FILE} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise OutputError(f"{target} is not UTF-8 text") from None
