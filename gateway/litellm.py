"""A small client for LiteLLM's management API: POST /model/new, /model/update, /model/delete,
GET /model/info and /v1/models, authenticated with the master key as a Bearer token.

Response bodies of writes are never logged or put in an exception (a validation error could echo
the request, which holds the provider key); errors carry the route and the HTTP status only.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from providers.errors import RunwayError

TIMEOUT = 30.0


class LiteLLMUnavailable(RunwayError):
    """LiteLLM could not be reached or answered something that is not the management API."""


@dataclass(frozen=True)
class WriteFailed(Exception):
    """A management write answered an error status (the body is deliberately not kept)."""

    route: str
    status: int

    def __str__(self) -> str:
        return f"{self.route} answered HTTP {self.status}"


@dataclass
class LiteLLM:
    url: str  # e.g. http://litellm.gateway.svc:4000
    master_key: str = field(repr=False)
    timeout: float = TIMEOUT

    def model_info(self) -> list[dict[str, Any]]:
        """Every deployment LiteLLM routes to (config and DB entries alike)."""
        data = self._get("/model/info").get("data")
        if not isinstance(data, list):
            raise LiteLLMUnavailable(f"{self.url}/model/info: no data list in the answer")
        return [d for d in data if isinstance(d, dict)]

    def public_models(self) -> set[str]:
        """The names /v1/models offers (what a client sees as routable)."""
        data = self._get("/v1/models").get("data")
        return {str(m.get("id")) for m in data or () if isinstance(m, Mapping)}

    def new(self, body: Mapping[str, Any]) -> None:
        self._post("/model/new", body)

    def update(self, body: Mapping[str, Any]) -> None:
        self._post("/model/update", body)

    def delete(self, model_id: str) -> None:
        self._post("/model/delete", {"id": model_id})

    def _request(self, route: str, body: Mapping[str, Any] | None) -> urllib.request.Request:
        headers = {"Authorization": f"Bearer {self.master_key}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        return urllib.request.Request(
            self.url.rstrip("/") + route,
            data=data,
            headers=headers,
            method="GET" if body is None else "POST",
        )

    def _get(self, route: str) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(self._request(route, None), timeout=self.timeout) as resp:
                answer = json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raise LiteLLMUnavailable(f"{self.url}{route} answered HTTP {err.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as err:
            reason = getattr(err, "reason", None) or type(err).__name__
            raise LiteLLMUnavailable(f"{self.url}{route}: {reason}") from None
        if not isinstance(answer, dict):
            raise LiteLLMUnavailable(f"{self.url}{route}: the answer is not a JSON object")
        return answer

    def _post(self, route: str, body: Mapping[str, Any]) -> None:
        try:
            with urllib.request.urlopen(self._request(route, body), timeout=self.timeout) as resp:
                resp.read()
        except urllib.error.HTTPError as err:
            err.close()
            raise WriteFailed(route, err.code) from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", None) or type(err).__name__
            raise LiteLLMUnavailable(f"{self.url}{route}: {reason}") from None
