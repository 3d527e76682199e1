"""`runway certs` on mistaken input: every refusal exits 2 with one line naming the flag, the
directory or the file, and nothing is written; existing directories are covered by property
tests over the states of each file, not by one example each."""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from certs.bundle import Identity, issue_bundle, load_certificates
from certs.contents import DATA, FILES
from tests.support.certcli import BOUNDED, ISSUED, run

BACKDATE = dt.timedelta(minutes=5)


SLOT_STATES = ("absent", "junk", "dangling", "real")


@pytest.fixture(scope="module")
def real_bundle() -> Iterator[dict[str, bytes]]:
    with tempfile.TemporaryDirectory() as name:
        issue_bundle(
            Path(name),
            Identity.for_service("runway-webhook", "runway-system"),
            days=30,
            ca_days=60,
            now=dt.datetime.now(dt.UTC),
        )
        yield {n: (Path(name) / n).read_bytes() for n in FILES}


def lay_out(directory: Path, states: dict[str, str], real: dict[str, bytes]) -> None:
    directory.mkdir(exist_ok=True)
    for name, state in states.items():
        path = directory / name
        if state == "junk":
            path.write_bytes(b"not a certificate\n")
        elif state == "dangling":
            path.symlink_to(f"{DATA}/{name}-gone")
        elif state == "real" and name != DATA:
            path.write_bytes(real[name])
        elif state == "real":
            (directory / "..2026_01_01_00_00_00.000000").mkdir()
            path.symlink_to("..2026_01_01_00_00_00.000000")


def snapshot(directory: Path) -> dict[str, str]:
    """What each entry of the directory is: a link's target or a file's bytes."""
    return {
        p.name: f"-> {os.readlink(p)}" if p.is_symlink() else p.read_text(errors="replace")
        for p in sorted(directory.iterdir())
        if p.is_symlink() or p.is_file()
    }


@BOUNDED
@given(
    states=st.fixed_dictionaries({n: st.sampled_from(SLOT_STATES) for n in (*FILES, DATA)}),
    replace=st.booleans(),
)
def test_issue_never_replaces_any_part_of_a_bundle_without_replace_ca(
    states: dict[str, str],
    replace: bool,
    real_bundle: dict[str, bytes],
    capsys: pytest.CaptureFixture[str],
) -> None:
    with tempfile.TemporaryDirectory() as name:
        out = Path(name) / "certs"
        lay_out(out, states, real_bundle)
        before = snapshot(out)
        flags = ["--replace-ca"] if replace else []
        code, stdout, stderr = run(capsys, "certs", "issue", "--out", str(out), *flags)
        after = snapshot(out)
        served = load_certificates(out / "tls.crt")[0] if code == 0 else None
        cas = load_certificates(out / "ca.crt") if code == 0 else []

    present = [n for n in (*FILES, DATA) if states[n] != "absent"]
    if present and not replace:
        assert (code, stdout, after) == (2, "", before)
        assert stderr == (
            f"runway: {out}: already holds a certificate bundle ({', '.join(present)}); a new "
            "CA would break the caBundle the API server trusts. Renew with `runway certs rotate "
            f"--out {out}`, or pass --replace-ca and then inject the new ca.crt\n"
        )
    else:
        assert (code, stdout, stderr) == (0, ISSUED.format(out=out), "")
        assert served is not None and len(cas) == 1
        served.verify_directly_issued_by(cas[0])


# For rotate, each file comes from bundle A, from bundle B, or is absent, junk or empty.
SOURCES = ("A", "B", "absent", "junk", "empty")
CHECK_ORDER = ("ca.crt", "ca.key", "tls.crt", "tls.key")


@pytest.fixture(scope="module")
def two_bundles() -> Iterator[dict[str, dict[str, bytes]]]:
    bundles: dict[str, dict[str, bytes]] = {}
    with tempfile.TemporaryDirectory() as name:
        for label in ("A", "B"):
            directory = Path(name) / label
            issue_bundle(
                directory,
                Identity.for_service("runway-webhook", "runway-system"),
                days=300,
                ca_days=600,
                now=dt.datetime.now(dt.UTC),
            )
            bundles[label] = {n: (directory / n).read_bytes() for n in FILES}
        yield bundles


def rotate_outcome(sources: dict[str, str], out: Path) -> tuple[int, str, str]:
    """The documented answer of `rotate` for a directory laid out from `sources`."""
    for name in CHECK_ORDER:
        path, source = out / name, sources[name]
        if source == "absent":
            return (
                2,
                "",
                f"runway: {path}: missing from the bundle; issue a new one with --replace-ca\n",
            )
        if source in ("junk", "empty"):
            what = (
                "holds no PEM certificate"
                if name.endswith(".crt")
                else ("holds no unencrypted PEM private key")
            )
            return 2, "", f"runway: {path}: {what}\n"
    if sources["ca.key"] != sources["ca.crt"]:
        return (
            2,
            "",
            f"runway: {out / 'ca.key'}: is not the EC key of the first CA in ca.crt; issue a new "
            "bundle with --replace-ca\n",
        )
    same = sources["tls.crt"] == sources["tls.key"] == sources["ca.crt"]
    return 0, "nothing to renew\n" if same else "renewed: tls\n", ""


@BOUNDED
@given(sources=st.fixed_dictionaries({n: st.sampled_from(SOURCES) for n in FILES}))
def test_rotate_names_the_first_unusable_file_and_heals_a_mismatched_serving_pair(
    sources: dict[str, str],
    two_bundles: dict[str, dict[str, bytes]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    with tempfile.TemporaryDirectory() as name:
        out = Path(name)
        for file, source in sources.items():
            if source in ("A", "B"):
                (out / file).write_bytes(two_bundles[source][file])
            elif source != "absent":
                (out / file).write_bytes(b"" if source == "empty" else b"-----BEGIN junk\n")
        before = snapshot(out)
        answer = run(capsys, "certs", "rotate", "--out", str(out))
        after = snapshot(out)
        leaf = load_certificates(out / "tls.crt")[0] if answer[0] == 0 else None
        ca = load_certificates(out / "ca.crt")[0] if answer[0] == 0 else None

    expected = rotate_outcome(sources, out)
    assert answer == expected
    if expected[0] != 0:
        assert after == before  # nothing written
    else:
        assert leaf is not None and ca is not None
        leaf.verify_directly_issued_by(ca)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["certs", "rotate", "--out", "{tmp}/missing"],
            "runway: {tmp}/missing: holds no certificate bundle (no such directory); create one "
            "with `runway certs issue --out {tmp}/missing`\n",
        ),
        (
            ["certs", "issue", "--out", "{tmp}/file/certs"],
            "runway: {tmp}/file: is not a directory\n",
        ),
        (
            ["certs", "inject", "--ca", "{tmp}/file"],
            "runway: --mutating/--validating: name at least one webhook configuration to set "
            "the caBundle on (--mutating NAME, --validating NAME; repeatable)\n",
        ),
        (
            ["certs", "inject", "--ca", "{tmp}/missing.crt", "--mutating", "runway"],
            "runway: --ca: {tmp}/missing.crt: no such file\n",
        ),
        (
            ["certs", "inject", "--ca", "{tmp}", "--validating", "runway"],
            "runway: --ca: {tmp}: is a directory (give DIR/ca.crt)\n",
        ),
        (
            ["certs", "inject", "--ca", "{tmp}/file", "--validating", "runway"],
            "runway: --ca: {tmp}/file: holds no PEM certificate\n",
        ),
    ],
    ids=[
        "rotate-missing-directory",
        "issue-under-a-file",
        "inject-without-a-configuration",
        "inject-missing-ca",
        "inject-ca-is-a-directory",
        "inject-ca-not-pem",
    ],
)
def test_certs_usage_errors_exit_2_with_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("not a certificate\n")
    code, out, err = run(capsys, *(a.format(tmp=tmp_path) for a in argv))

    assert (code, out, err) == (2, "", message.format(tmp=tmp_path))


@BOUNDED
@given(content=st.binary(max_size=2000))
def test_inject_refuses_any_ca_file_without_a_certificate_before_contacting_a_cluster(
    content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    with tempfile.NamedTemporaryFile() as handle:
        handle.write(content)
        handle.flush()
        answer = run(
            capsys,
            "certs",
            "inject",
            "--ca",
            handle.name,
            "--mutating",
            "runway",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        )

    assert answer == (2, "", f"runway: --ca: {handle.name}: holds no PEM certificate\n")


def test_issue_names_every_file_it_writes_the_ca_key_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "certs"

    code, stdout, stderr = run(capsys, "certs", "issue", "--out", str(out))

    written = sorted(p.name for p in out.iterdir() if not p.name.startswith(".."))
    assert (code, stderr, written) == (0, "", ["ca.crt", "ca.key", "tls.crt", "tls.key"])
    assert stdout == (
        f"issued {out}/ca.crt, {out}/ca.key, {out}/tls.crt and {out}/tls.key for "
        "runway-webhook.runway-system.svc, runway-webhook.runway-system.svc.cluster.local, "
        "runway-webhook.runway-system, runway-webhook, localhost, 127.0.0.1\n"
    )
