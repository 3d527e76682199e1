"""A webhook whose provider configs come from an API server it cannot reach: not ready, and it
refuses admissions (fail closed) instead of selecting from nothing."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.support.builders import model_deployment
from tests.support.cluster import free_port
from tests.support.wait import wait_until
from tests.support.webhook import review, start_webhook


def test_unreachable_cluster_source_is_not_ready_and_fails_closed(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "gone",
                        "cluster": {
                            "server": f"https://127.0.0.1:{free_port()}",
                            "insecure-skip-tls-verify": True,
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "gone", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    server = start_webhook(
        tmp_path, args=["--kubeconfig", str(kubeconfig)], workers=1, ready_path="/healthz"
    )
    try:
        readiness = server.request("GET", "/readyz")
        response = server.admit("/mutate", review(model_deployment(gpu=1)))
        # The failed watch is logged when its connection attempt fails, which under load can
        # come after the requests above: wait for it rather than race it.
        wait_until(
            lambda: "provider config watch failed; retrying" in server.log_text(),
            timeout=30,
            what="the failed watch to be logged",
        )
    finally:
        assert server.stop() == 0

    assert (readiness[0], json.loads(readiness[1])) == (
        503,
        {"status": "provider configurations not loaded or stale"},
    )
    assert response == {
        "uid": "uid-1",
        "allowed": False,
        "status": {"code": 503, "message": "provider configurations are not loaded yet; retry"},
    }
    assert "provider config watch failed; retrying" in server.log_text()
