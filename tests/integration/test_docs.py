"""Every command block in the README, docs/ and docs/internals/ that claims an output is run,
and what it prints must be what the block says.

A claim is a fenced block with `$ COMMAND` lines: the lines after each command, up to the next
one, are its output (standard output and standard error as a terminal shows them), and a last
line `[exit N]` its exit status (0 when there is none). In the expected output a line `...`
stands for any lines, and `...` inside a line for any text. Each block runs in a scratch folder
of its own, with `examples/` of this repository beside it and the files SETUPS writes (the
docs say what they hold); `runway` is this virtualenv's. A block that needs a cluster or
credentials is listed in NOT_RUN with the reason, and a new one fails here until it is.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.paths import ROOT

BIN = Path(sys.executable).parent
# The user's pages: the README and docs/*.md. docs/internals/ says how it works, for contributors.
USER_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS = [*USER_PAGES, *sorted((ROOT / "docs" / "internals").glob("*.md"))]
MAX_USER_WORDS = 12_000
EXIT = re.compile(r"^\[exit (\d+)\]$")
RUNNABLE = re.compile(r"^(runway|cat|echo)\b")


@dataclass
class Step:
    command: str
    expected: list[str] = field(default_factory=list)
    status: int = 0


@dataclass
class Block:
    doc: str  # path in the repository
    line: int  # of the first command
    steps: list[Step]

    @property
    def name(self) -> str:
        return f"{self.doc}:{self.steps[0].command}"


def claims(path: Path) -> Iterator[Block]:
    fence: list[tuple[int, str]] | None = None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.startswith("```"):
            if fence is not None and any(text.startswith("$ ") for _, text in fence):
                yield parse(path, fence)
            fence = None if fence is not None else []
        elif fence is not None:
            fence.append((number, line))


def parse(path: Path, lines: list[tuple[int, str]]) -> Block:
    steps: list[Step] = []
    first = 0
    for number, text in lines:
        if text.startswith("$ "):
            first = first or number
            steps.append(Step(text[2:]))
        elif not steps:
            raise AssertionError(f"{path.name}:{number}: output before the first command")
        elif EXIT.match(text):
            steps[-1].status = int(EXIT.match(text).group(1))  # type: ignore[union-attr]
        else:
            steps[-1].expected.append(text.rstrip())
    name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    return Block(name, first, steps)


def pattern(expected: list[str]) -> re.Pattern[str]:
    parts = []
    for line in expected:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.compile("".join(parts), re.DOTALL)


# --- what the docs say the scratch folder holds ----------------------------------------------

LIST_YAML = """\
apiVersion: v1
kind: List
items:
  - apiVersion: airunway.ai/v1alpha1
    kind: ModelDeployment
    metadata: {name: phi, namespace: models}
    spec:
      model: {id: microsoft/Phi-3-mini-4k-instruct}
      resources: {gpu: {count: 1}}
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: models}
    spec: {}
  - apiVersion: airunway.ai/v1alpha1
    kind: ModelDeployment
    metadata: {name: broken, namespace: models}
    spec:
      model: {id: 7}
"""


def runway(scratch: Path, *args: str) -> None:
    done = subprocess.run(
        [str(BIN / "runway"), *args],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def cli_files(scratch: Path) -> AbstractContextManager[object]:
    """docs/cli.md: `list.yaml`; `models/phi.yaml`, examples/vllm-direct-explicit.yaml rendered and
    committed into `gitops/`, then edited from max-num-seqs "64" to "128"."""
    (scratch / "list.yaml").write_text(LIST_YAML)
    (scratch / "models").mkdir()
    phi = (ROOT / "examples" / "vllm-direct-explicit.yaml").read_text()
    (scratch / "models" / "phi.yaml").write_text(phi)
    runway(scratch, "render", "models/", "--repo", "gitops", "--commit")
    edited = phi.replace('max-num-seqs: "64"', 'max-num-seqs: "128"')
    assert edited != phi
    (scratch / "models" / "phi.yaml").write_text(edited)
    return nullcontext()


def busy_port(scratch: Path) -> AbstractContextManager[object]:
    """docs/operations.md, `runway serve` on a busy port: a bundle in `tls/`, and port 18445 held."""
    runway(scratch, "certs", "issue", "--out", "tls")
    stack = ExitStack()
    held = stack.enter_context(socket.socket())
    try:
        held.bind(("127.0.0.1", 18445))
        held.listen()
    except OSError:
        pass  # something else holds it: the command meets a busy port all the same
    return stack


QUICKSTART = (
    "examples/vllm-1gpu.yaml examples/llmd-explicit.yaml --repo gitops --gateway gateways/inference"
)


def quickstart_commit(scratch: Path) -> AbstractContextManager[object]:
    """docs/quickstart.md, after step 2: its two examples rendered and committed into `gitops/`."""
    runway(scratch, "render", *QUICKSTART.split(), "--commit")
    return nullcontext()


SETUPS: dict[str, Callable[[Path], AbstractContextManager[object]]] = {
    "docs/quickstart.md:cat gitops/rendered/models/qwen-7b/runway.metadata": quickstart_commit,
    "docs/quickstart.md:runway render examples/vllm-1gpu.yaml examples/llmd-explicit.yaml "
    "--repo gitops --check --gateway gateways/inference -q": quickstart_commit,
    "docs/cli.md": cli_files,
    "docs/internals/cli.md": cli_files,
    "docs/operations.md:runway serve --cert tls/tls.crt --key tls/tls.key --port 18445": busy_port,
    "docs/internals/operations.md:runway serve --cert tls/tls.crt --key tls/tls.key --port 18445": (
        busy_port
    ),
}
GATEWAY_ON_A_CLUSTER = (
    "a cluster with the gateway part, LiteLLM and an OpenAI key; "
    "tests/integration/test_gateway_sync*.py and the e2e tier run these steps"
)
NOT_RUN = {
    f"{page}:kubectl -n gateway create secret generic openai-key "
    '--from-literal=apiKey="$OPENAI_API_KEY"': GATEWAY_ON_A_CLUSTER
    for page in ("docs/gateway.md",)
}


def all_claims() -> list[Block]:
    return [block for doc in DOCS for block in claims(doc)]


def runnable(block: Block) -> bool:
    return all(RUNNABLE.match(step.command) for step in block.steps)


def test_every_block_that_cannot_run_here_says_why() -> None:
    blocks = all_claims()

    assert sorted(b.name for b in blocks if not runnable(b)) == sorted(NOT_RUN)
    assert len([b for b in blocks if runnable(b)]) >= 10


@pytest.mark.parametrize(
    "block", [b for b in all_claims() if runnable(b)], ids=lambda b: f"{b.doc}:{b.line}"
)
def test_the_block_prints_what_it_says(block: Block, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    setup = SETUPS.get(block.name) or SETUPS.get(block.doc) or (lambda _: nullcontext())
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    with setup(tmp_path):
        for step in block.steps:
            done = subprocess.run(
                ["bash", "-c", step.command],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=300,
                check=False,
            )
            printed = "".join(line.rstrip() + "\n" for line in done.stdout.splitlines())

            assert pattern(step.expected).fullmatch(printed), (
                f"{block.doc}:{block.line} `{step.command}` printed:\n{printed}"
            )
            assert done.returncode == step.status, f"`{step.command}` exited {done.returncode}"


@pytest.mark.parametrize(
    ("expected", "printed", "holds"),
    [
        (["a", "...", "c"], "a\nb\nb\nc\n", True),
        (["a", "...", "c"], "a\nc\n", True),
        (["a", "...", "c"], "a\nc\nd\n", False),
        (["x ... z"], "x y z\n", True),
        (["x ... z"], "x y\n", False),
        (["a", "b"], "a\nb\nextra\n", False),
        (["a (b)"], "a (b)\n", True),
    ],
)
def test_the_comparison_holds_a_claim_to_every_line(
    expected: list[str], printed: str, holds: bool
) -> None:
    assert bool(pattern(expected).fullmatch(printed)) is holds


def test_a_block_is_read_as_commands_outputs_and_statuses(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n```\n$ runway one\nout 1\n[exit 2]\n$ runway two\n```\n```sh\nnot a claim\n```\n"
    )

    (block,) = claims(doc)

    assert (block.doc, block.line) == ("doc.md", 3)
    assert [(s.command, s.expected, s.status) for s in block.steps] == [
        ("runway one", ["out 1"], 2),
        ("runway two", [], 0),
    ]


LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_the_readme_is_a_short_guide_and_every_link_resolves() -> None:
    readme = (ROOT / "README.md").read_text()
    broken = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if not file.exists() or (anchor and anchor not in anchors(file.read_text())):
                broken.append(f"{doc.relative_to(ROOT)}: {target}")

    assert len(readme.splitlines()) <= 200
    assert "## The two commands" in readme and "make test" in readme
    assert broken == []
    linked = {m.partition("#")[0] for m in LINK.findall(readme)}
    assert {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} <= linked


def words(path: Path) -> int:
    """Words as `wc -w` counts them: runs of bytes other than ASCII white space."""
    return len(path.read_bytes().split())


def test_the_user_pages_are_short_enough_to_read() -> None:
    counts = {page.relative_to(ROOT).as_posix(): words(page) for page in USER_PAGES}

    assert sum(counts.values()) <= MAX_USER_WORDS, (
        f"README.md and docs/*.md hold {sum(counts.values())} words (at most {MAX_USER_WORDS}): "
        f"move how it works to docs/internals/ ({counts})"
    )


def test_words_are_counted_as_wc_counts_them(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_bytes("one  two\tthree\n`four`, five-six \u00e9t\u00e9\n\n".encode())

    assert words(page) == 6


def section(text: str, heading: str) -> str:
    """The body of a `## heading` section, up to the next heading of any level."""
    body = text.split(f"\n{heading}\n", 1)[1]
    return re.split(r"^#+ ", body, maxsplit=1, flags=re.M)[0].strip()


def test_the_readme_says_in_three_lines_why_a_team_picks_runway() -> None:
    why = section(
        (ROOT / "README.md").read_text(), "## Why Runway instead of AI Runway's controller"
    )
    lines = why.split("\n\n")[0].splitlines()

    assert len(lines) == 3
    assert all(line.startswith("- **") for line in lines)
    assert "](docs/airunway.md)" in lines[2]


def test_the_readme_says_what_gateway_is_and_links_a_one_page_quick_start() -> None:
    readme = (ROOT / "README.md").read_text()
    prose = " ".join(readme.split())
    quickstart = ROOT / "docs" / "quickstart.md"
    blocks = [
        " ".join(step.command.split()[:2]) for block in claims(quickstart) for step in block.steps
    ]

    assert (
        "`--gateway NAMESPACE/NAME` names the Gateway API `Gateway` that the HTTPRoute of every "
        "model with `spec.gateway.enabled: true` attaches to"
    ) in prose
    assert "**[Quick start](docs/quickstart.md)**" in readme.split("## The two commands")[0]
    assert quickstart.read_text().split("```sh\n", 1)[1].startswith("make install")
    assert {"runway validate", "runway render"} <= set(blocks)
    assert words(quickstart) <= 800


def test_the_flow_diagram_is_near_the_top_of_the_readme_and_in_gitops() -> None:
    readme = (ROOT / "README.md").read_text()

    assert "](docs/images/flow.svg)" in readme.split("## ")[0]
    assert "](images/flow.svg)" in (ROOT / "docs" / "gitops.md").read_text()
