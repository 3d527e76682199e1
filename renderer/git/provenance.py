"""Where a render came from: the repository its sources live in, the source ("dry") commit and
the command, as Argo CD's source hydrator records them for each hydrated path
(`hydrator.metadata`: repoURL, drySha, commands).

A render commit carries them as Git trailers (`git interpret-trailers --parse` reads them);
each rendered ModelDeployment folder carries them in renderer.output.folders.METADATA_FILE,
written only when that folder's other files change (renderer.stages). The facts are deterministic: no time but Git's own.

The sources' repository is the Git work tree holding every SOURCE given; when they are not all
in one (one is outside any Git repository, or they span two), no repository and no commit is
recorded. Its URL is the remote the checked-out branch tracks, else `origin`, else the only
remote; a URL (`scheme://`, any scheme, any case) loses its user information, and credentials
in it are redacted (core.checks.credentials.redact). Every word of the command is redacted too,
the user information of a URL in it shown as `<redacted>@`. The user information is what lies
between `://` and the last `@` before the first `/`, `?` or `#` (where git reads it too), so a
password holding `@` goes whole. Trailers and metadata are UTF-8 whatever the words held: a
word from bytes that are not UTF-8 is recorded as JSON's escape of it (`caf\\udce9`), which
reads back as the same word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.checks.credentials import redact
from renderer.git.runner import Repo

TRAILER_REPOSITORY = "Runway-Source-Repository"
TRAILER_COMMIT = "Runway-Source-Commit"
TRAILER_DIRTY = "Runway-Source-Dirty"
TRAILER_COMMAND = "Runway-Command"
PATHSPEC_LIMIT = 500  # source paths asked about by name; beyond, the whole work tree is
# A URL's user information: after `scheme://`, up to the last `@` before the first `/`, `?`,
# `#` or white space (RFC 3986's authority, as git reads it), any scheme, any case.
_USERINFO = re.compile(r"(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*://)[^/?#\s]*@")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Provenance:
    """A render's origin. `commit` None: the sources are not all in one Git repository (or it
    has no commit yet); `repository` None: no remote either; `dirty`: the sources given differ
    from `commit` (changed, staged, untracked or removed files)."""

    command: tuple[str, ...]
    repository: str | None = None
    commit: str | None = None
    dirty: bool = False
    work: Path | None = None  # the sources' work tree (not recorded)

    def trailers(self) -> str:
        """The trailer lines, each `Key: value` on one line (the command as a JSON array, so
        that no word of it can break the line)."""
        lines = []
        if self.repository is not None:
            lines.append(f"{TRAILER_REPOSITORY}: {_one_line(self.repository)}")
        if self.commit is not None:
            lines.append(f"{TRAILER_COMMIT}: {self.commit}")
            lines.append(f"{TRAILER_DIRTY}: {'true' if self.dirty else 'false'}")
        lines.append(f"{TRAILER_COMMAND}: {_json(list(self.command))}")
        return "\n".join(lines) + "\n"

    def metadata(self) -> str:
        """A folder's METADATA_FILE: JSON, keys sorted, the hydrator's names where it has them."""
        facts = {
            "command": list(self.command),
            "dirty": self.dirty if self.commit is not None else None,
            "drySha": self.commit,
            "repoURL": self.repository,
        }
        return _json(facts, indent=2, sort_keys=True) + "\n"


def _json(value: object, **how: object) -> str:
    """`value` as JSON, non-ASCII text as it is, but a lone surrogate (a byte of argv that is
    not UTF-8) as its escape: the text is always UTF-8, and reads back as `value`."""
    text = json.dumps(value, ensure_ascii=False, **how)  # type: ignore[arg-type]
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def rendered_from(repo: Repo, subdir: str) -> str | None:
    """The source commit the last commit that changed `subdir` names (its TRAILER_COMMIT); None
    when there is none, or it names none."""
    found = repo.git(
        "log",
        "-1",
        f"--format=%(trailers:key={TRAILER_COMMIT},valueonly,separator=%x20)",
        "HEAD",
        "--",
        f":(literal){subdir}",
        check=False,
    )
    value = found.stdout.strip()
    return value if found.returncode == 0 and value else None


def same_sources(said: Provenance, rendered: str, output: Path) -> bool:
    """Whether the sources are at `rendered` still: the same commit, or, when the output folder
    is in the sources' repository, a later one that changed nothing but the output folder (the
    render's own commits)."""
    if said.commit == rendered:
        return True
    if said.work is None or said.commit is None or not output.resolve().is_relative_to(said.work):
        return False
    repo = Repo(said.work)
    outside = ["--", ".", f":(exclude,literal){output.resolve()}"]
    ancestor = repo.git("merge-base", "--is-ancestor", rendered, said.commit, check=False)
    if ancestor.returncode != 0:
        return False
    changed = repo.git("diff", "--quiet", rendered, said.commit, *outside, check=False)
    return changed.returncode == 0


def _one_line(text: str) -> str:
    """A value as one trailer line: JSON-quoted (ASCII) when it holds a control or a lone
    surrogate."""
    unusual = any(ord(c) < 0x20 or c == "\x7f" or "\ud800" <= c <= "\udfff" for c in text)
    return json.dumps(text) if unusual else text


def command_of(argv: Sequence[str]) -> tuple[str, ...]:
    """The command as recorded: `runway` and its arguments, each redacted, a URL's user
    information as `<redacted>@`."""
    return ("runway", *(redact(_USERINFO.sub(r"\1<redacted>@", word)) for word in argv))


def of_sources(sources: Sequence[str], command: Sequence[str], output: Path | None) -> Provenance:
    """The provenance of a render of `sources` (files and directories); `output`: the output
    folder, never counted as a change to the sources when it lies among them."""
    tops: set[Path] = set()
    for raw in sources:
        try:
            path = Path(raw).resolve()
            folder = path if path.is_dir() else path.parent
            if not (raw and path.exists() and folder.is_dir()):
                return Provenance(tuple(command))  # the render says what is wrong with it
        except (OSError, ValueError):  # a name too long, a NUL: as above
            return Provenance(tuple(command))
        found = Repo(folder).git("rev-parse", "--show-toplevel", check=False)
        if found.returncode != 0 or not found.stdout.strip():
            return Provenance(tuple(command))
        tops.add(Path(found.stdout.strip()).resolve())
    if len(tops) != 1:
        return Provenance(tuple(command))
    repo = Repo(tops.pop())
    commit = repo.head()
    return Provenance(
        tuple(command),
        _remote_url(repo),
        commit,
        commit is not None and _dirty(repo, sources, output),
        repo.work,
    )


def _remote_url(repo: Repo) -> str | None:
    branch = repo.git("symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
    tracked = ""
    if branch:
        tracked = repo.git("config", "--get", f"branch.{branch}.remote", check=False).stdout
    remotes = repo.git("remote", check=False).stdout.split()
    name = tracked.strip() if tracked.strip() in remotes else None
    if name is None:
        name = "origin" if "origin" in remotes else (remotes[0] if len(remotes) == 1 else None)
    if name is None:
        return None
    url = repo.git("remote", "get-url", name, check=False).stdout.strip()
    return public_url(url) if url else None


def public_url(url: str) -> str:
    """A remote's URL as recorded: without its user information, whatever its scheme (a user
    there is a token as often as a name; anyone cloning brings their own), then redacted."""
    return redact(_USERINFO.sub(r"\1", url))


def _dirty(repo: Repo, sources: Sequence[str], output: Path | None) -> bool:
    """Whether the sources given differ from HEAD (git status of just them)."""
    specs = [f":(literal){Path(raw).resolve()}" for raw in sources]
    if len(specs) > PATHSPEC_LIMIT:
        specs = ["."]
    if output is not None and output.resolve().is_relative_to(repo.work):
        specs.append(f":(exclude,literal){output.resolve()}")
    status = repo.git("status", "--porcelain", "-z", "--untracked-files=all", "--", *specs)
    return bool(status.stdout)
