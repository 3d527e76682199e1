"""ui/branches.py against a real Git server on loopback (tests/support/gitserver.py): the pushed
commit's tree, author and trailer, the branch's name, the compare link, and the site's checkout
(working tree, index, HEAD, refs) exactly as it was."""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gitserver import GitServer, start_git_server
from tests.support.ui import post_headers
from ui.app import create_app
from ui.branches import AUTHOR, Pushed, commit_branch, compare_link, redacted
from ui.outputs import Bundle, OutputError, Planned
from ui.settings import Mode, UiSettings

KEY = b"k" * 32
MANIFEST = (
    "apiVersion: airunway.ai/v1alpha1\nkind: ModelDeployment\nmetadata:\n  name: phi\n"
    "  namespace: team-a\nspec:\n  model:\n    id: microsoft/Phi-4-mini-instruct\n"
    "  provider:\n    name: vllm\n  engine:\n    type: vllm\n"
    "    image: vllm/vllm-openai:v0.33.0\n  resources:\n    gpu:\n      count: 1\n"
)
MODEL = "apiVersion: airunway.ai/v1alpha1\nkind: ModelDeployment\nmetadata:\n  name: llama\n"


def flat(html: str) -> str:
    return re.sub(r">\s+<", "><", re.sub(r"\s+", " ", html)).strip().replace(" </p>", "</p>")


def run(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GitServer]:
    started = start_git_server(tmp_path / "server")
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def site(server: GitServer, tmp_path: Path) -> Path:
    """The site's checkout of the GitOps repository: one commit on main pushed, then a change
    in the working tree and another staged, as a person working there leaves them."""
    url = server.create("gitops")
    work = tmp_path / "site"
    run(tmp_path, "init", "-q", "-b", "main", str(work))
    run(work, "config", "user.name", "Site")
    run(work, "config", "user.email", "site@example.com")
    (work / "models").mkdir()
    (work / "models" / "old.yaml").write_text("old: 1\n")
    (work / "README").write_text("gitops\n")
    run(work, "add", "-A")
    run(work, "commit", "-q", "-m", "first")
    run(work, "remote", "add", "origin", url)
    run(work, "push", "-q", "origin", "main")
    (work / "README").write_text("edited, not staged\n")
    (work / "staged.txt").write_text("staged\n")
    run(work, "add", "staged.txt")
    return work


def snapshot(work: Path) -> tuple[str, str, str, str]:
    index = hashlib.sha256((work / ".git" / "index").read_bytes()).hexdigest()
    return (
        run(work, "status", "--porcelain=v1", "--untracked-files=all"),
        index,
        run(work, "rev-parse", "HEAD"),
        run(work, "for-each-ref", "--format=%(refname) %(objectname)"),
    )


def bundle() -> Bundle:
    return Bundle(
        "ModelDeployment team-a/llama",
        (
            Planned("models/team-a/llama.yaml", MODEL),
            Planned("models/old.yaml", "old: 2\n"),
        ),
    )


def test_a_bundle_is_committed_on_the_remote_default_branch_and_pushed_as_a_new_branch(
    server: GitServer, site: Path
) -> None:
    before = snapshot(site)
    base = server.head("gitops")
    pushed = commit_branch(site, "origin", bundle(), "alice@example.com")
    bare = server.root / "gitops.git"
    assert pushed == Pushed(
        pushed.commit,
        f"runway-ui/modeldeployment-team-a-llama-{pushed.commit[:12]}",
        "main",
        "origin",
    )
    assert server.head("gitops", pushed.branch) == pushed.commit
    assert server.head("gitops") == base  # the default branch did not move
    files = run(bare, "ls-tree", "-r", "--name-only", pushed.commit).splitlines()
    assert files == ["README", "models/old.yaml", "models/team-a/llama.yaml"]
    assert run(bare, "show", f"{pushed.commit}:models/team-a/llama.yaml") == MODEL
    assert run(bare, "show", f"{pushed.commit}:models/old.yaml") == "old: 2\n"
    assert run(bare, "show", f"{pushed.commit}:README") == "gitops\n"
    assert run(bare, "log", "-1", "--format=%P", pushed.commit).strip() == base
    people = run(bare, "log", "-1", "--format=%an <%ae>|%cn <%ce>", pushed.commit).strip()
    assert people == f"{AUTHOR.name} <{AUTHOR.email}>|{AUTHOR.name} <{AUTHOR.email}>"
    trailer = run(bare, "log", "-1", "--format=%(trailers:key=Requested-by)", pushed.commit)
    assert trailer.strip() == "Requested-by: alice@example.com"
    assert run(bare, "log", "-1", "--format=%B", pushed.commit) == (
        "ModelDeployment team-a/llama\n\nComposed in the Runway portal (runway ui):\n"
        "- models/team-a/llama.yaml\n- models/old.yaml\n\nRequested-by: alice@example.com\n\n"
    )
    assert snapshot(site) == before  # working tree, index, HEAD and every ref as they were


def test_the_same_bundle_again_in_the_same_second_is_the_same_branch_and_another_is_new(
    server: GitServer, site: Path
) -> None:
    first = commit_branch(site, "origin", bundle(), "alice")
    other = Bundle("ModelDeployment team-a/llama", (Planned("models/x.yaml", "x: 1\n"),))
    second = commit_branch(site, "origin", other, "alice")
    assert second.branch != first.branch
    heads = run(server.root / "gitops.git", "for-each-ref", "--format=%(refname)", "refs/heads")
    assert sorted(heads.splitlines()) == sorted(
        ["refs/heads/main", f"refs/heads/{first.branch}", f"refs/heads/{second.branch}"]
    )


def test_a_path_outside_the_repository_is_refused_and_nothing_is_pushed(
    server: GitServer, site: Path
) -> None:
    bad = Bundle("x", (Planned("../escape.yaml", "a: 1\n"),))
    with pytest.raises(OutputError) as raised:
        commit_branch(site, "origin", bad, "alice")
    assert str(raised.value) == "'../escape.yaml' is not a plain path inside the repository"
    heads = run(server.root / "gitops.git", "for-each-ref", "--format=%(refname)")
    assert heads.splitlines() == ["refs/heads/main"]
    assert run(site, "for-each-ref", "--format=%(refname)", "refs/runway-ui") == ""


def test_credentials_in_the_remote_url_never_reach_the_message(site: Path) -> None:
    run(site, "remote", "set-url", "origin", "http://robot:s3cret-token@127.0.0.1:9/gitops.git")
    with pytest.raises(OutputError) as raised:
        commit_branch(site, "origin", bundle(), "alice")
    said = re.sub(r"after \d+ ms", "after N ms", str(raised.value))
    assert said == (
        "git ls-remote failed: fatal: unable to access 'http://127.0.0.1:9/gitops.git/': "
        "Failed to connect to 127.0.0.1 port 9 after N ms: Couldn't connect to server"
    )


@pytest.mark.parametrize(
    ("url", "link"),
    [
        (
            "https://github.com/acme/gitops.git",
            "https://github.com/acme/gitops/compare/main...runway-ui/x-1",
        ),
        (
            "git@github.com:acme/gitops.git",
            "https://github.com/acme/gitops/compare/main...runway-ui/x-1",
        ),
        (
            "ssh://git@github.com/acme/gitops",
            "https://github.com/acme/gitops/compare/main...runway-ui/x-1",
        ),
        (
            "https://token@gitlab.com/group/sub/gitops.git",
            "https://gitlab.com/group/sub/gitops/-/compare/main...runway-ui/x-1",
        ),
        (
            "git@bitbucket.org:acme/gitops.git",
            "https://bitbucket.org/acme/gitops/branches/compare/runway-ui/x-1%0Dmain",
        ),
        ("https://git.example.com/acme/gitops.git", ""),
        ("/srv/git/gitops.git", ""),
        ("http://127.0.0.1:8080/gitops.git", ""),
    ],
)
def test_compare_links_for_the_known_forges_only(url: str, link: str) -> None:
    assert compare_link(url, "main", "runway-ui/x-1") == link


def test_redacted_takes_out_user_and_password() -> None:
    said = "fatal: unable to access 'https://bot:ghp_abc@github.com/a/b.git/': 403"
    assert redacted(said) == "fatal: unable to access 'https://***@github.com/a/b.git/': 403"


def test_the_branch_button_commits_the_composed_model_and_says_where(
    server: GitServer, site: Path
) -> None:
    """POST /outputs/branch as the page's button sends it (offline: no user, 'offline')."""
    settings = UiSettings(
        mode=Mode.OFFLINE, sources=(str(site),), actions=True, repo=str(site), secret_key=KEY
    )
    client = create_app(settings).test_client()
    headers = post_headers(client, KEY)
    form = {"outputs_source": "manifest", "manifest": MANIFEST}
    offered = client.post("/outputs/offer", data=form, headers=headers).get_data(as_text=True)
    assert flat(offered) == (
        "<p>ModelDeployment team-a/phi: team-a/phi.yaml</p>"
        '<div class="output-buttons"><button type="submit" class="secondary" '
        'formaction="/outputs/download" formmethod="post">Download YAML</button>'
        '<button type="button" class="secondary" hx-post="/outputs/patch" '
        'hx-include="closest form" hx-target="#outputs-result">Show patch</button>'
        '<button type="button" hx-post="/outputs/branch" hx-include="closest form" '
        'hx-target="#outputs-result" hx-disabled-elt="this">Commit to a new branch</button></div>'
    )
    before = snapshot(site)
    answer = client.post("/outputs/branch", data=form, headers=headers)
    heads = run(
        server.root / "gitops.git", "for-each-ref", "--format=%(refname:lstrip=2) %(objectname)"
    )
    branch, commit = next(h.split() for h in heads.splitlines() if h.startswith("runway-ui/"))
    assert branch == f"runway-ui/modeldeployment-team-a-phi-{commit[:12]}"
    assert (
        answer.get_data(as_text=True).split()
        == (
            '<p class="ok" role="status">Committed ModelDeployment team-a/phi as '
            f"<code>{commit}</code> on the new branch <code>{branch}</code> of origin (made on main)."
            "\n</p>"
        ).split()
    )
    assert run(server.root / "gitops.git", "show", f"{commit}:team-a/phi.yaml") == MANIFEST
    trailer = run(
        server.root / "gitops.git", "log", "-1", "--format=%(trailers:key=Requested-by)", commit
    )
    assert trailer.strip() == "Requested-by: offline"
    assert snapshot(site) == before
