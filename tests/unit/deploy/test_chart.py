"""The Helm chart's templates are what `make chart` (tools/chart.py) writes from the kustomize
files; the e2e tier (tests/e2e/test_helm.py) renders, lints and installs them with Helm."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.paths import ROOT
from tools import chart

CHART = ROOT / "charts" / "runway"


def test_every_generated_file_is_committed_as_generated() -> None:
    files, problems = chart.outputs()

    assert problems == []
    assert chart.stale(files, CHART) == [], "run `make chart` and commit the result"
    generated = {f"templates/{t.target}" for t in chart.SOURCES} | {
        "templates/dashboard.yaml",
        chart.DASHBOARD_COPY,
    }
    hand_written = {"templates/_helpers.tpl", "templates/NOTES.txt", "templates/tests/webhook.yaml"}
    on_disk = {
        p.relative_to(CHART).as_posix() for p in (CHART / "templates").rglob("*") if p.is_file()
    }
    assert on_disk == {n for n in generated | hand_written if n.startswith("templates/")}


def test_a_source_that_loses_a_replacement_is_named(tmp_path: Path) -> None:
    for source in {s for t in chart.SOURCES for s in t.sources} | {chart.DASHBOARD_SOURCE}:
        target = tmp_path / "kustomize" / source
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((ROOT / "kustomize" / source).read_text())
    deployment = tmp_path / "kustomize" / "base" / "deployment.yaml"
    deployment.write_text(deployment.read_text().replace("replicas: 2", "replicas: 3"))

    _, problems = chart.outputs(tmp_path)

    assert problems == [
        "deployment.yaml: expected 1 of '  replicas: 2\\n' in base/deployment.yaml, found 0"
    ]


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("{{ $value }}", '{{ "{{" }} $value {{ "}}" }}'),
        ("no braces", "no braces"),
        ("}}{{", '{{ "}}" }}{{ "{{" }}'),
        ("{ {single} }", "{ {single} }"),
    ],
)
def test_braces_the_source_means_literally_are_escaped(text: str, escaped: str) -> None:
    assert chart.escape(text) == escaped


def test_the_values_schema_and_templates_name_the_same_settings() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = yaml.safe_load((CHART / "values.schema.json").read_text())

    def keys(tree: dict[str, object], prefix: str = "") -> set[str]:
        found = set()
        for name, value in tree.items():
            found.add(prefix + name)
            if isinstance(value, dict) and name not in ("resources", "nodeSelector"):
                found |= keys(value, f"{prefix}{name}.")
        return found

    def schema_keys(node: dict[str, object], prefix: str = "") -> set[str]:
        found = set()
        for name, sub in node.get("properties", {}).items():  # type: ignore[attr-defined]
            found.add(prefix + name)
            found |= schema_keys(sub, f"{prefix}{name}.")
        return found

    read = set()
    for template in (p for p in (CHART / "templates").rglob("*") if p.is_file()):
        text = template.read_text()
        for part in text.split(".Values.")[1:]:
            read.add(part.split()[0].rstrip("}").rstrip(")"))

    names = keys(values)
    leaves = {n for n in names if not any(o.startswith(n + ".") for o in names)}
    assert names == schema_keys(schema)
    assert read == leaves  # every value is read, and nothing is read that has no default


def test_the_portal_is_off_by_default_and_apply_as_user_adds_flags_not_rights() -> None:
    """ui.applyAsUser turns on two flags of the one portal template: the portal applies with the
    signed-in user's own token, so no template grants impersonation."""
    files, _ = chart.outputs()
    values = yaml.safe_load((CHART / "values.yaml").read_text())["ui"]
    ui = files["templates/ui.yaml"]
    portal = sorted(n for n, text in files.items() if ".Values.ui." in text)

    assert (values["enabled"], values["actions"], values["applyAsUser"]) == (False, False, False)
    assert portal == ["templates/ui.yaml"]
    assert ui.splitlines()[1] == "{{- if .Values.ui.enabled }}"
    assert [line for line in ui.splitlines() if "applyAsUser" in line] == [
        '                 "--secret-key-file", "/secrets/ui/secret-key", "--workers", '
        "{{ .Values.ui.workers | quote }}"
        '{{ if or .Values.ui.actions .Values.ui.applyAsUser }}, "--actions"{{ end }}'
        '{{ if .Values.ui.applyAsUser }}, "--apply-as-user"{{ end }}]'
    ]
    assert sorted(n for n, text in files.items() if '"impersonate"' in text) == []


def test_every_object_and_pod_template_gets_the_standard_labels_and_selectors_stay() -> None:
    source = (
        "kind: Service\n"
        "metadata:\n"
        "  name: s\n"
        "spec:\n"
        "  selector:\n"
        "    app.kubernetes.io/name: w\n"
        "---\n"
        "kind: Deployment\n"
        "metadata:\n"
        "  labels:\n"
        "    app.kubernetes.io/name: w\n"
        "    team: a\n"
        "spec:\n"
        "  selector:\n"
        "    matchLabels:\n"
        "      app.kubernetes.io/name: w\n"
        "  template:\n"
        "    metadata:\n"
        "      labels:\n"
        "        app.kubernetes.io/name: w\n"
    )

    assert chart.label(source) == (
        "kind: Service\n"
        "metadata:\n"
        "  labels:\n"
        '    {{- include "runway.labels" . | nindent 4 }}\n'
        "  name: s\n"
        "spec:\n"
        "  selector:\n"
        "    app.kubernetes.io/name: w\n"
        "---\n"
        "kind: Deployment\n"
        "metadata:\n"
        "  labels:\n"
        '    {{- include "runway.releaseLabels" . | nindent 4 }}\n'
        "    app.kubernetes.io/name: w\n"
        "    team: a\n"
        "spec:\n"
        "  selector:\n"
        "    matchLabels:\n"
        "      app.kubernetes.io/name: w\n"
        "  template:\n"
        "    metadata:\n"
        "      labels:\n"
        '        {{- include "runway.releaseLabels" . | nindent 8 }}\n'
        "        app.kubernetes.io/name: w\n"
    )


def test_every_generated_object_is_labelled() -> None:
    files, _ = chart.outputs()
    for name, text in files.items():
        if name.startswith("templates/"):
            lines = text.splitlines()
            objects = [i for i, line in enumerate(lines) if line == "metadata:"]
            assert objects, name
            for i in objects:
                block = lines[i + 1 : chart.block_end(lines, i, 0)]
                assert any('include "runway.' in line for line in block), (name, lines[i - 2 : i])


def test_a_pod_template_without_labels_is_named(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(
        "kind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    metadata:\n"
        "      annotations: {}\n    spec: {}\n"
    )
    problems: list[str] = []

    chart.render(chart.Template("d.yaml", ("d.yaml",)), tmp_path, problems)

    assert problems == [
        "d.yaml: a pod template's metadata without labels: ['    metadata:', '      annotations: {}']"
    ]
