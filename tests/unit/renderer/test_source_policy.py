"""The source repository's policy (kubeio/policy.py): which namespaces each path may define,
checked the same by `validate` and `render` (issue #40, class 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.fields.errors import SourceError
from kubeio.policy import (
    Policy,
    Rule,
    check,
    load_policy,
    matches,
    parse_policy,
    rules_for,
    violations,
)
from kubeio.sources import Document

SEGMENT = st.text("abz-.", min_size=1, max_size=4).filter(lambda s: s not in (".", ".."))
PATHS = st.lists(SEGMENT, min_size=1, max_size=5).map("/".join)


def policy(*rules: tuple[list[str], list[str]]) -> Policy:
    return Policy("p.yaml", Path("/repo"), tuple(Rule(tuple(p), tuple(n)) for p, n in rules))


@given(PATHS, st.lists(SEGMENT, max_size=3).map("/".join))
def test_a_folder_glob_matches_exactly_the_paths_under_the_folder(path: str, folder: str) -> None:
    glob = f"{folder}/**" if folder else "**"
    under = not folder or path == folder or path.startswith(folder + "/")
    assert matches(glob, path) == under


@given(st.integers(0, 4), st.integers(0, 4), PATHS)
def test_a_team_folder_may_define_only_its_namespaces(team: int, other: int, rest: str) -> None:
    rules = policy(*[([f"models/t{i}/**"], [f"t{i}", f"t{i}-*"]) for i in range(5)])

    own = check(rules, f"models/t{team}/{rest}", f"t{team}-x")
    answer = check(rules, f"models/t{team}/{rest}", f"t{other}")

    assert own is None
    assert answer == (
        None
        if team == other
        else f"namespace t{other} is not allowed by p.yaml for models/t{team}/{rest}: "
        f"paths 'models/t{team}/**' may define t{team}, t{team}-*"
    )


def test_a_path_no_rule_matches_may_define_no_namespace() -> None:
    answer = check(policy((["models/a/**"], ["a"])), "elsewhere/x.yaml", "a")

    assert answer == "namespace a is not allowed by p.yaml: no rule's paths match elsewhere/x.yaml"


@pytest.mark.parametrize(
    ("loaded", "message"),
    [
        ([], "expected a mapping with kind: SourcePolicy"),
        ({"kind": "SourcePolicy", "rules": {}}, "rules: expected a list of at most 1000 rules"),
        ({"kind": "SourcePolicy", "rules": [], "x": 1}, "unknown field 'x' (expected kind, rules)"),
        (
            {"kind": "SourcePolicy", "rules": [{"paths": ["a/**"]}]},
            "rules[0]: expected a mapping of exactly paths and namespaces",
        ),
        (
            {"kind": "SourcePolicy", "rules": [{"paths": [], "namespaces": ["a"]}]},
            "rules[0].paths: expected a non-empty list of globs",
        ),
        (
            {"kind": "SourcePolicy", "rules": [{"paths": ["../x"], "namespaces": ["a"]}]},
            "rules[0].paths[0]: a path relative to the work tree, without ..",
        ),
        (
            {"kind": "SourcePolicy", "rules": [{"paths": ["a"], "namespaces": ["*" * 9]}]},
            "rules[0].namespaces[0]: more than 8 wildcards",
        ),
    ],
)
def test_a_malformed_policy_is_refused_naming_the_file_and_field(loaded: Any, message: str) -> None:
    with pytest.raises(SourceError) as raised:
        parse_policy(loaded, "repo/.runway/policy.yaml", Path("repo"))

    assert str(raised.value) == f"repo/.runway/policy.yaml: {message}"


def test_documents_are_checked_against_their_work_trees_policy(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".runway").mkdir()
    (tmp_path / ".runway/policy.yaml").write_text(
        "kind: SourcePolicy\nrules:\n- paths: [src/team-a/**]\n  namespaces: [team-a]\n"
    )
    file = str(tmp_path / "src/team-a/zz.yaml")
    docs = [
        Document(file, 0, {"kind": "ModelDeployment", "metadata": {"namespace": "team-a"}}),
        Document(file, 1, {"kind": "ModelDeployment", "metadata": {"namespace": "team-b"}}),
        Document(file, 2, {"kind": "InferenceProviderConfig", "metadata": {"name": "x"}}),
    ]

    found = violations(docs)

    assert load_policy(tmp_path) == Policy(
        str(tmp_path / ".runway/policy.yaml"),
        tmp_path,
        (Rule(("src/team-a/**",), ("team-a",)),),
    )
    assert found == [
        f"{file} (document 2): namespace team-b is not allowed by "
        f"{tmp_path}/.runway/policy.yaml for src/team-a/zz.yaml: paths 'src/team-a/**' may "
        "define team-a"
    ]


GLOB_PIECES = st.sampled_from(["a", "b", "**", "*", "a*", "?", "[ab]"])
GLOBS = st.lists(GLOB_PIECES, min_size=1, max_size=4).map("/".join)


@given(st.lists(st.lists(GLOBS, min_size=1, max_size=3), max_size=5), PATHS)
def test_the_indexed_rules_are_every_rule_whose_paths_match(
    globs: list[list[str]], path: str
) -> None:
    rules = policy(*[(paths, ["ns"]) for paths in globs])
    every = [
        (next(g for g in rule.paths if matches(g, path)), rule)
        for rule in rules.rules
        if any(matches(g, path) for g in rule.paths)
    ]

    assert rules_for(rules, path) == every
