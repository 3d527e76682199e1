"""The "commit to a new branch and push" output (issue #41, "Output, GitOps first"): opt-in, only
with `runway ui --actions --repo DIR` (`--remote`, default origin).

The site's working tree, index and branches are never touched, so a portal beside a person's
checkout (or a render) cannot disturb it. Each delivery:

1. asks the remote for its default branch (`git ls-remote --symref REMOTE HEAD`) and fetches it
   into a private ref of its own (refs/runway-ui/fetch/<random>, deleted when done);
2. builds the commit with a temporary index (GIT_INDEX_FILE in a temporary folder): the default
   branch's tree plus the bundle's files (each path checked by ui.outputs.checked_path), as the
   portal's fixed identity, the message ending with a `Requested-by: <username>` trailer;
3. pushes `<commit>:refs/heads/runway-ui/<slug>-<short hash>` with a lease that the branch does
   not exist yet (a branch of that name is never moved), without running the site's hooks;
4. answers the commit, the branch and, when the remote's URL is on a known forge (github.com,
   gitlab.com, bitbucket.org; https or ssh form), a link comparing the branch with the default.

Git authenticates as the site set it up (its credential helper, or the key GIT_SSH_COMMAND
names); no prompt is ever waited for. Every git call has a bounded time. Credentials written in
a remote URL (https://user:token@host/...) are taken out of anything shown or logged.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from renderer.git.runner import Identity
from ui.outputs import Bundle, OutputError, checked_path

AUTHOR = Identity("Runway portal", "runway-ui@runway.invalid")
TRAILER = "Requested-by"
PREFIX = "runway-ui"
LOCAL_TIMEOUT = 30.0  # seconds for a git call on the site's repository
REMOTE_TIMEOUT = 60.0  # seconds for a git call that talks to the remote (ls-remote, fetch, push)
SLUG_MAX = 40
FORGES = {
    "github.com": "https://github.com/{path}/compare/{base}...{branch}",
    "gitlab.com": "https://gitlab.com/{path}/-/compare/{base}...{branch}",
    "bitbucket.org": "https://bitbucket.org/{path}/branches/compare/{branch}%0D{base}",
}
CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")
SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?([^:/\s]+):(?!/)(.+)$")  # git@github.com:owner/repo.git


@dataclass(frozen=True, slots=True)
class Pushed:
    """What a delivery made: the commit, the new branch on the remote, the default branch it
    was made on, and a compare link ('' when the remote is not on a known forge)."""

    commit: str
    branch: str
    base: str
    remote: str
    compare: str = ""


def redacted(text: str) -> str:
    """`text` with any user:password@ of a URL taken out."""
    return CREDENTIALS.sub(r"\1***@", text)


def _env(index: Path | None) -> dict[str, str]:
    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GCM_INTERACTIVE": "never",
        "LC_ALL": "C",
        "GIT_AUTHOR_NAME": AUTHOR.name,
        "GIT_AUTHOR_EMAIL": AUTHOR.email,
        "GIT_COMMITTER_NAME": AUTHOR.name,
        "GIT_COMMITTER_EMAIL": AUTHOR.email,
    }
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return env


def git(
    repo: Path,
    *args: str,
    stdin: bytes | None = None,
    index: Path | None = None,
    timeout: float = LOCAL_TIMEOUT,
) -> str:
    """`git args` in `repo`; its output, or OutputError saying (redacted) why it failed."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            env=_env(index),
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise OutputError(f"git {args[0]} took longer than {timeout:.0f} s") from None
    except OSError as err:
        raise OutputError(f"git {args[0]}: {err.strerror}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise OutputError(f"git {args[0]} failed: {redacted(said[0])}")
    return done.stdout.decode("utf-8", "replace")


def default_branch(repo: Path, remote: str) -> str:
    """The remote's default branch (what its HEAD points to)."""
    said = git(repo, "ls-remote", "--symref", remote, "HEAD", timeout=REMOTE_TIMEOUT)
    for line in said.splitlines():
        ref, _, what = line.partition("\t")
        if what == "HEAD" and ref.startswith("ref: refs/heads/"):
            return ref.removeprefix("ref: refs/heads/")
    raise OutputError(f"the remote {remote!r} has no default branch (is it empty?)")


def slug(title: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return words[:SLUG_MAX].rstrip("-") or "bundle"


def message(bundle: Bundle, requested_by: str) -> str:
    paths = "\n".join(f"- {planned.path}" for planned in bundle.files)
    return (
        f"{bundle.title}\n\nComposed in the Runway portal (runway ui):\n{paths}\n\n"
        f"{TRAILER}: {requested_by}\n"
    )


def build_commit(repo: Path, base: str, bundle: Bundle, requested_by: str) -> str:
    """A commit on `base` with the bundle's files, made with a temporary index."""
    entries = []
    for planned in bundle.files:
        path = checked_path(planned.path)
        blob = git(repo, "hash-object", "-w", "--stdin", stdin=planned.text.encode()).strip()
        entries.append(f"100644 {blob}\t{path}\n")
    with tempfile.TemporaryDirectory(prefix="runway-ui-") as scratch:
        index = Path(scratch) / "index"
        git(repo, "read-tree", base, index=index)
        git(
            repo,
            "update-index",
            "--add",
            "--index-info",
            stdin="".join(entries).encode(),
            index=index,
        )
        tree = git(repo, "write-tree", index=index).strip()
    text = message(bundle, requested_by).encode()
    return git(repo, "commit-tree", tree, "-p", base, "-F", "-", stdin=text).strip()


def remote_url(repo: Path, remote: str) -> str:
    return git(repo, "remote", "get-url", remote).strip()


def compare_link(url: str, base: str, branch: str) -> str:
    """The forge's page comparing `branch` with `base`, '' for a remote not on a known forge."""
    scp = None if "://" in url else SCP_LIKE.match(url)
    if scp is not None:
        host, path = scp.group(1), scp.group(2)
    else:
        match = re.match(r"^(?:https?|ssh|git)://(?:[^@/]+@)?([^/:]+)(?::\d+)?/(.+)$", url)
        if match is None:
            return ""
        host, path = match.group(1), match.group(2)
    template = FORGES.get(host.lower())
    path = path.strip("/").removesuffix(".git")
    if template is None or not re.fullmatch(r"[A-Za-z0-9_.~-]+(/[A-Za-z0-9_.~-]+)+", path):
        return ""
    return template.format(path=path, base=quote(base, safe="/"), branch=quote(branch, safe="/"))


def checked_user(username: str) -> str:
    if not username or not username.isprintable() or len(username) > 512:
        raise OutputError("a branch is committed for a signed-in user, named in plain text")
    return username


def commit_branch(repo: Path, remote: str, bundle: Bundle, requested_by: str) -> Pushed:
    """Commit `bundle` on the remote's default branch and push it as a new branch."""
    who = checked_user(requested_by)
    if not bundle.files:
        raise OutputError(f"{bundle.title} has no files to commit")
    base_name = default_branch(repo, remote)
    private = f"refs/{PREFIX}/fetch/{secrets.token_hex(8)}"
    try:
        git(
            repo,
            "fetch",
            "-q",
            "--no-tags",
            "--no-write-fetch-head",
            remote,
            f"+refs/heads/{base_name}:{private}",
            timeout=REMOTE_TIMEOUT,
        )
        base = git(repo, "rev-parse", "--verify", f"{private}^{{commit}}").strip()
        commit = build_commit(repo, base, bundle, who)
    finally:
        git(repo, "update-ref", "-d", private)
    branch = f"{PREFIX}/{slug(bundle.title)}-{commit[:12]}"
    url = remote_url(repo, remote)
    pushed = Pushed(commit, branch, base_name, remote, compare_link(url, base_name, branch))
    there = git(repo, "ls-remote", remote, f"refs/heads/{branch}", timeout=REMOTE_TIMEOUT)
    if there.split("\t", 1)[0] == commit:
        return pushed  # the same files, on the same base, in the same second: pushed already
    git(
        repo,
        "push",
        "-q",
        "--no-verify",
        f"--force-with-lease=refs/heads/{branch}:",
        git(repo, "remote", "get-url", "--push", remote).strip(),  # by URL: no tracking ref
        f"{commit}:refs/heads/{branch}",
        timeout=REMOTE_TIMEOUT,
    )
    return pushed
