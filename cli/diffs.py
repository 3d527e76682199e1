"""`runway render --diff`: what a render would change in the output tree, as a unified diff with
git's headers (so `git apply` takes it), like `kubectl diff`, `flux diff ks` and `argocd app
diff` show it. Coloured only for a terminal, and never when NO_COLOR is set (no-color.org)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence
from typing import TextIO

NO_FINAL_NEWLINE = "\\ No newline at end of file\n"
_RED, _GREEN, _CYAN, _BOLD, _RESET = "\033[31m", "\033[32m", "\033[36m", "\033[1m", "\033[0m"


def wants_colour(out: TextIO, env: Mapping[str, str]) -> bool:
    """Colour for a terminal only, and never with NO_COLOR set to anything but empty."""
    return out.isatty() and not env.get("NO_COLOR")


def tree_diff(
    changes: Mapping[str, Sequence[str]],
    before: Mapping[str, str],
    after: Mapping[str, str],
    subdir: str,
) -> Iterator[str]:
    """The lines of the diff, file by file in path order: `changes` names the paths ("added",
    "changed", "removed"; relative to `subdir`), `before` and `after` hold their texts."""
    status = {path: kind for kind, paths in changes.items() for path in paths}
    for path in sorted(status):
        name = f"{subdir}/{path}"
        old = before[path] if status[path] != "added" else ""
        new = after[path] if status[path] != "removed" else ""
        yield f"diff --git a/{name} b/{name}\n"
        if status[path] == "added":
            yield "new file mode 100644\n"
        elif status[path] == "removed":
            yield "deleted file mode 100644\n"
        source = f"a/{name}" if status[path] != "added" else "/dev/null"
        target = f"b/{name}" if status[path] != "removed" else "/dev/null"
        lines = difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), source, target
        )
        for line in lines:
            yield line if line.endswith("\n") else line + "\n" + NO_FINAL_NEWLINE


def write_diff(lines: Iterator[str], out: TextIO, *, colour: bool) -> None:
    """Write the lines; with `colour`, headers bold, hunks cyan, removals red, additions green
    (a header is what comes between `diff --git` and the first hunk)."""
    header = False
    for line in lines:
        if not colour:
            out.write(line)
            continue
        if line.startswith("diff --git "):
            header = True
        elif line.startswith("@@"):
            header = False
            out.write(_paint(_CYAN, line))
            continue
        if header:
            out.write(_paint(_BOLD, line))
        elif line.startswith("-"):
            out.write(_paint(_RED, line))
        elif line.startswith("+"):
            out.write(_paint(_GREEN, line))
        else:
            out.write(line)


def _paint(code: str, line: str) -> str:
    return f"{code}{line.removesuffix(chr(10))}{_RESET}\n"
