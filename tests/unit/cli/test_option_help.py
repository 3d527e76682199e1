"""`runway COMMAND --help` says what every option does: none is listed bare."""

from __future__ import annotations

from cli.main import build_parser
from cli.options import walk_parsers


def test_every_option_of_every_command_has_help() -> None:
    bare = [
        f"{parser.prog} {'/'.join(action.option_strings)}"
        for parser in walk_parsers(build_parser())
        for action in parser._actions  # argparse lists a parser's options only here
        if action.option_strings and action.help in (None, "")
    ]

    assert bare == []


def test_certs_issue_help_names_what_out_service_and_namespace_are() -> None:
    (issue,) = [p for p in walk_parsers(build_parser()) if p.prog == "runway certs issue"]
    helps = {
        a.option_strings[0]: (a.metavar, a.help)
        for a in issue._actions
        if a.option_strings[:1] in (["--out"], ["--service"], ["--namespace"])
    }

    assert helps == {
        "--out": (
            "DIR",
            "the directory to write ca.crt, ca.key, tls.crt and tls.key into (created if "
            "missing; one that already holds any of them is refused, see --replace-ca)",
        ),
        "--service": (
            "NAME",
            "the webhook's Service: the certificate is for NAME.NAMESPACE.svc, its other "
            "in-cluster names, localhost and 127.0.0.1 (default runway-webhook)",
        ),
        "--namespace": ("NAMESPACE", "the Service's namespace (default runway-system)"),
    }
