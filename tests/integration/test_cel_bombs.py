"""A regex-bomb rule (issue #18, item 8) on each path a config takes into Runway: refused at
InferenceProviderConfig admission over TLS, and refused (never run) when the real webhook loads
it from files or `runway render` finds it in a source directory. The cluster watch is in
tests/e2e/test_cel_bombs.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from kubeio.shipped import bundled_config_objects
from tests.support.builders import provider_config
from tests.support.celbombs import BOMB, REFUSAL
from tests.support.paths import EXAMPLES
from tests.support.webhook import Webhook, review, start_webhook

L17 = "[" + ", ".join(str(i) for i in range(17)) + "]"
SKIPPED = (
    f'InferenceProviderConfig kuberay: rule "{BOMB}" could not be evaluated and counts as not '
    f"matching: does not compile: {REFUSAL}"
)


def bombed_configs() -> list[dict[str, Any]]:
    """The shipped five, kuberay's with the bomb as its first rule at the top priority."""
    configs = bundled_config_objects()
    for config in configs:
        if config["metadata"]["name"] == "kuberay":
            rules = config["spec"]["selectionRules"]
            config["spec"]["selectionRules"] = [{"condition": BOMB, "priority": 1000}, *rules]
    return configs


def test_the_webhook_denies_a_regex_bomb_config_naming_rule_and_pattern(webhook: Webhook) -> None:
    config = provider_config("kuberay", rules=[("true", 1), (BOMB, 9)])

    response = webhook.admit("/validate-inferenceproviderconfig", review(config))

    assert response == {
        "uid": "uid-1",
        "allowed": False,
        "status": {
            "code": 403,
            "message": f"spec.selectionRules[1].condition: Invalid value: {REFUSAL}",
        },
    }


def test_a_regex_bomb_in_the_webhooks_config_files_is_refused_and_never_run(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "providers"
    folder.mkdir()
    (folder / "configs.yaml").write_text(yaml.safe_dump_all(bombed_configs()))
    obj = yaml.safe_load((EXAMPLES / "vllm-multi-gpu.yaml").read_text())
    server = start_webhook(tmp_path, args=["--providers", str(folder)], workers=1)
    try:
        response = server.admit("/mutate", review(obj))
    finally:
        assert server.stop() == 0

    assert (response["allowed"], response["warnings"]) == (True, [SKIPPED])
    assert (
        f"provider config problem: InferenceProviderConfig kuberay rule 0: {REFUSAL}"
        in server.log_text()
    )


def test_render_with_a_regex_bomb_config_in_the_sources_skips_the_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = tmp_path / "sources"
    sources.mkdir()
    shutil.copy(EXAMPLES / "vllm-multi-gpu.yaml", sources / "model.yaml")
    (sources / "configs.yaml").write_text(yaml.safe_dump_all(bombed_configs()))

    repo = str(tmp_path / "gitops")
    code = main(["render", str(sources), "--repo", repo, "--gateway", "gw/inference", "-o", "json"])
    report = json.loads(capsys.readouterr().out)

    assert code == 0
    assert [
        (r["name"], r["provider"], r["rendered"], r["warnings"]) for r in report["results"]
    ] == [("llama-70b", "kuberay", True, [SKIPPED])]
