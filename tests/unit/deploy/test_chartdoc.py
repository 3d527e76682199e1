"""The chart's README is generated from values.yaml (tools/chartdoc.py, written by `make chart`);
tests/unit/deploy/test_chart.py fails when the committed one is stale."""

from __future__ import annotations

import yaml

from tests.support.paths import ROOT
from tools import chart, chartdoc

CHART = ROOT / "charts" / "runway"
VALUES = """\
# A header, apart from every key.

# The section.
image:
  # Its registry
  # and name.
  repository: runway-webhook
  tag: "0.1.0"
resources:
  # no blank line between a comment and its key

  requests: {cpu: 1}
# Pipes | escaped.
list: [a]
"""
SCHEMA = {
    "properties": {
        "image": {"properties": {"repository": {}, "tag": {}}},
        "resources": {"type": "object"},
        "list": {},
    }
}


def test_each_value_is_a_row_with_its_type_default_and_the_comment_above_it() -> None:
    found, missing = chartdoc.rows(yaml.safe_load(VALUES), SCHEMA, chartdoc.comments(VALUES))

    assert found == [
        chartdoc.Row("image", "object", "", "The section."),
        chartdoc.Row("image.repository", "string", '"runway-webhook"', "Its registry and name."),
        chartdoc.Row("image.tag", "string", '"0.1.0"', ""),
        chartdoc.Row("resources", "object", '{"requests":{"cpu":1}}', ""),
        chartdoc.Row("list", "list", '["a"]', "Pipes | escaped."),
    ]
    assert missing == ["image.tag", "resources"]


def test_a_value_without_a_comment_is_named_and_nothing_is_written() -> None:
    text, problems = chartdoc.readme((CHART / "Chart.yaml").read_text(), VALUES, SCHEMA)

    assert problems == [
        "values.yaml: image.tag has no comment above it",
        "values.yaml: resources has no comment above it",
    ]
    assert '| `list` | list | `["a"]` | Pipes \\| escaped. |' in text.splitlines()


def test_the_readme_has_a_row_for_every_value_of_the_chart() -> None:
    files, problems = chart.outputs()
    table = [line for line in files["README.md"].splitlines() if line.startswith("| `")]
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    def leaves(tree: dict[str, object], prefix: str = "") -> list[str]:
        found: list[str] = []
        for name, value in tree.items():
            nested = isinstance(value, dict) and name not in ("resources", "nodeSelector")
            found += leaves(value, f"{prefix}{name}.") if nested else [prefix + name]  # type: ignore[arg-type]
        return found

    assert problems == []
    assert [line.split("`")[1] for line in table if "| object |  |" not in line] == leaves(values)
    assert (
        "| `image.tag` | string | `\"0.1.0\"` | The image's tag: the chart's appVersion. |" in table
    )
