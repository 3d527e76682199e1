"""The parser tier's own logic (tools/parsers), without its virtualenvs: which launches it hands
the engines' parsers, which engine set parses each, and the kwarg type check of check.py (which
imports only the standard library, so it loads here too). `make parsers` runs the parsers."""

from __future__ import annotations

import argparse
import collections
from typing import Any

import pytest

from kubeio.shipped import bundled_versions
from tests.support.builders import shipped_registry
from tests.support.matrix import cases
from tests.support.paths import EXAMPLES
from tools.parsers.cases import jobs
from tools.parsers.check import _type_problem


@pytest.fixture(scope="module")
def collected() -> tuple[list[dict[str, Any]], dict[str, str]]:
    return jobs(shipped_registry(), bundled_versions(), EXAMPLES)


def test_every_launch_of_every_case_is_collected(
    collected: tuple[list[dict[str, Any]], dict[str, str]],
) -> None:
    found, empty = collected
    launched = [j for j in found if j["case"] != "control"]

    assert collections.Counter(j["entry"] for j in launched) == {
        "vllm": 20,
        "dynamo-vllm": 21,
        "dynamo-sglang": 17,
        "dynamo-trtllm": 17,
        "dynamo-mocker": 4,
        "dynamo-frontend": 18,
        "kuberay": 17,
    }
    matrix = {f"matrix/{ident}" for ident, _ in cases(shipped_registry())}
    assert matrix <= {j["case"] for j in launched} | set(empty)
    # only KAITO renders no launch Runway gives flags to; nothing is refused at admission
    assert {c.split("/")[1].split("-")[0] for c in empty if c.startswith("matrix/")} == {"kaito"}
    assert all(why.startswith("no launch") for why in empty.values())
    assert len({j["id"] for j in found}) == len(found)


def test_each_entry_point_has_a_control_its_parser_must_refuse(
    collected: tuple[list[dict[str, Any]], dict[str, str]],
) -> None:
    found, _ = collected
    controls = {j["entry"]: j for j in found if j["case"] == "control"}

    assert sorted(controls) == sorted({j["entry"] for j in found if j["case"] != "control"})
    assert all(j["expect"] == "refused" for j in controls.values())
    assert controls["vllm"]["args"][-1] == "--runway-no-such-flag"
    (config,) = controls["kuberay"]["app"]["args"]["llm_configs"]
    assert config["engine_kwargs"]["runway_no_such_kwarg"] == 1


def _action(**kwargs: Any) -> argparse.Action:
    parser = argparse.ArgumentParser()
    return parser.add_argument("--x", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "value", "problem"),
    [
        ({"action": "store_true"}, True, None),
        ({"action": "store_true"}, "true", "the flag takes a bool"),
        ({"action": argparse.BooleanOptionalAction}, 1, "the flag takes a bool"),
        ({"type": int}, 16, None),
        ({"type": int}, "16", "int expected"),
        ({"type": int}, 1.5, "int expected"),
        ({"type": int}, True, "int expected"),
        ({"type": float}, 2, None),
        ({"choices": ["auto", "half"]}, "half", None),
        ({"choices": ["auto", "half"]}, "fp4", "not one of ['auto', 'half']"),
    ],
)
def test_engine_kwargs_are_typed_as_the_vllm_flag_takes_them(
    kwargs: dict[str, Any], value: Any, problem: str | None
) -> None:
    assert _type_problem(_action(**kwargs), value) == problem
