"""The git wing's jobs as the integration tests call them on a work tree of their own."""

from __future__ import annotations

from collections.abc import Mapping

from renderer.git import disk
from renderer.git.runner import Repo


def write_tree(
    repo: Repo, subdir: str, files: Mapping[str, str], current: Mapping[str, str]
) -> list[str]:
    """`files` written into `subdir` of the work tree as a render writes them (only the bytes
    that change); the paths written and removed."""
    with disk.tree_writer(repo, subdir) as writer:
        return disk.write_tree(writer, files, current)
