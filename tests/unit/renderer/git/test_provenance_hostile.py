"""Hostile provenance cannot break a render commit's trailers or runway.metadata
(renderer.git.provenance): a repository URL with credentials in it (any scheme, any case, a
password holding `@`), a command whose words hold newlines, a forged `Key: value` line, any
Unicode or bytes that are not UTF-8 (as Python holds them from argv: lone surrogates). What is
written is UTF-8, each trailer one line that the real `git interpret-trailers --parse` reads
back as exactly the recorded values, and no credential is ever in it: secrets never enter Git."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.git.provenance import (
    TRAILER_COMMAND,
    TRAILER_COMMIT,
    TRAILER_DIRTY,
    TRAILER_REPOSITORY,
    Provenance,
    command_of,
    public_url,
)

SHA = "0123456789abcdef0123456789abcdef01234567"
# A password as a URL holds it: no `/`, `?`, `#` (they end the authority, for git as for RFC
# 3986) nor white space; `@` and `:` may be in it. Marked, so that finding it is no accident.
PASSWORDS = st.text(
    st.characters(codec="ascii", categories=["L", "N"], include_characters="@:%!$&'()*+,;=-._~"),
    min_size=1,
    max_size=20,
).map(lambda s: f"S3CR3T{s}")
USERS = st.text(st.characters(codec="ascii", categories=["L", "N"]), max_size=8)
SCHEMES = st.sampled_from(["https", "HTTPS", "Http", "ssh", "SSH", "git+https", "ftp", "git"])
HOSTS = st.sampled_from(["git.example.com", "host:8443", "[::1]", "10.0.0.1"])
PATHS = st.sampled_from(["/org/repo.git", "/x", "", "/a@b/c", "?q=1"])
# argv as Python holds it: any text, newlines and forged trailer lines among it, and words from
# bytes that are not UTF-8 (lone surrogates, as os.fsdecode gives them).
WORDS = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=30),
    st.sampled_from(["\nRunway-Source-Commit: forged", "a\r\nb", "x\n\ny", "\u2028", "\x00"]),
    st.binary(max_size=12).map(os.fsdecode),
)


def credential_url(scheme: str, user: str, password: str, host: str, path: str) -> str:
    return f"{scheme}://{user}:{password}@{host}{path}"


def parsed_trailers(message: bytes, cwd: Path) -> list[tuple[str, str]]:
    """The trailers of a commit message as git itself reads them (no repository needed)."""
    done = subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        input=message,
        capture_output=True,
        cwd=cwd,
        check=True,
        timeout=30,
    )
    lines = done.stdout.decode("utf-8").split("\n")[:-1]  # git's lines: \u2028 is none
    return [(k, v) for k, _, v in (line.partition(": ") for line in lines)]


def value_of(text: str) -> str:
    """A repository trailer's value: as written, or JSON-quoted when it had to be."""
    return json.loads(text) if text.startswith('"') else text


@settings(max_examples=60, deadline=None)
@given(
    argv=st.lists(WORDS, max_size=6),
    parts=st.tuples(SCHEMES, USERS, PASSWORDS, HOSTS, PATHS),
    dirty=st.booleans(),
)
def test_trailers_parse_back_exactly_and_hold_no_credential(
    argv: list[str],
    parts: tuple[str, str, str, str, str],
    dirty: bool,
) -> None:
    url = credential_url(*parts)
    password = parts[2]
    said = Provenance(
        command_of([*argv, "--push", url]), public_url(url), SHA, dirty, Path("/nowhere")
    )
    message = ("runway render: 1 added\n\n" + said.trailers()).encode("utf-8")
    metadata = said.metadata().encode("utf-8")

    found = parsed_trailers(message, Path.cwd())

    assert password.encode() not in message
    assert password.encode() not in metadata
    assert [k for k, _ in found] == [
        TRAILER_REPOSITORY,
        TRAILER_COMMIT,
        TRAILER_DIRTY,
        TRAILER_COMMAND,
    ]
    values = dict(found)
    assert value_of(values[TRAILER_REPOSITORY]) == said.repository
    assert values[TRAILER_COMMIT] == SHA
    assert values[TRAILER_DIRTY] == ("true" if dirty else "false")
    assert json.loads(values[TRAILER_COMMAND]) == list(said.command)
    assert json.loads(metadata)["command"] == list(said.command)
    assert json.loads(metadata)["repoURL"] == said.repository


def test_a_credential_in_any_scheme_or_case_is_never_recorded() -> None:
    """The regressions the properties found: a command word `HTTPS://user:token@host` was kept
    as it was (the redaction's URL shape is lower case), a password holding `@` left its tail
    (`p@ss` -> `ss@host`), and an ssh:// URL's user information became `<redacted>host/x`."""
    command = command_of(["--push", "HTTPS://user:S3CR3T@host/x", "--push=https://u:p@ss@h/y"])

    assert command == (
        "runway",
        "--push",
        "HTTPS://<redacted>@host/x",
        "--push=https://<redacted>@h/y",
    )
    assert public_url("ssh://git:S3CR3T@host/x") == "ssh://host/x"
    assert public_url("HTTPS://user:p@ss@host/x") == "HTTPS://host/x"


def test_a_word_that_is_not_utf8_is_recorded_as_a_json_escape() -> None:
    """A word of argv from bytes that are not UTF-8 made the commit message unwritable (the
    render ended in a UnicodeEncodeError); it is recorded as JSON's escape, which reads back
    as the same word."""
    word = os.fsdecode(b"caf\xe9")
    said = Provenance(command_of(["render", word]))

    assert said.trailers() == f'{TRAILER_COMMAND}: ["runway", "render", "caf\\udce9"]\n'
    assert json.loads(said.metadata())["command"] == ["runway", "render", word]
    said.metadata().encode("utf-8")
