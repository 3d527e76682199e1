"""A small client for LiteLLM's management API: POST /model/new, /model/update, /model/delete,
GET /model/info and /v1/models, authenticated with the master key as a Bearer token.

Response bodies of writes are never logged or put in an exception (a validation error could echo
the request, which holds the provider key); errors carry the route and the HTTP status only.

Redirects are never followed: the master key would go with the request to wherever LiteLLM (or
anything in front of it) points. An answer is read up to MAX_ANSWER bytes, and every entry of
/model/info is reduced to the shape the sync reads (model_name a string or None, litellm_params
and model_info mappings, else empty), so no answer shape or nesting depth can raise anything but
LiteLLMUnavailable.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.fields.errors import RunwayError

TIMEOUT = 30.0
MAX_ANSWER = 64 * 2**20  # bytes of one answer; /model/info of 10,000 entries is about 10 MiB


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
        """Every deployment LiteLLM routes to (config and DB entries alike), each reduced to
        model_name (str or None), litellm_params and model_info (dicts)."""
        data = self._get("/model/info").get("data")
        if not isinstance(data, list):
            raise LiteLLMUnavailable(f"{self.url}/model/info: no data list in the answer")
        return [_entry(d) for d in data if isinstance(d, Mapping)]

    def public_models(self) -> set[str]:
        """The names /v1/models offers (what a client sees as routable)."""
        data = self._get("/v1/models").get("data")
        if not isinstance(data, list):
            raise LiteLLMUnavailable(f"{self.url}/v1/models: no data list in the answer")
        return {m["id"] for m in data if isinstance(m, Mapping) and isinstance(m.get("id"), str)}

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
            with _open(self._request(route, None), self.timeout) as resp:
                raw = resp.read(MAX_ANSWER + 1)
        except urllib.error.HTTPError as err:
            err.close()
            raise LiteLLMUnavailable(f"{self.url}{route} answered {_status(err.code)}") from None
        except (urllib.error.URLError, OSError, ValueError) as err:
            reason = getattr(err, "reason", None) or type(err).__name__
            raise LiteLLMUnavailable(f"{self.url}{route}: {reason}") from None
        if len(raw) > MAX_ANSWER:
            raise LiteLLMUnavailable(f"{self.url}{route}: the answer exceeds {MAX_ANSWER} bytes")
        try:
            answer = json.loads(raw)
        except (ValueError, RecursionError):
            raise LiteLLMUnavailable(f"{self.url}{route}: the answer is not JSON") from None
        if not isinstance(answer, dict):
            raise LiteLLMUnavailable(f"{self.url}{route}: the answer is not a JSON object")
        return answer

    def _post(self, route: str, body: Mapping[str, Any]) -> None:
        try:
            with _open(self._request(route, body), self.timeout) as resp:
                resp.read(MAX_ANSWER)
        except urllib.error.HTTPError as err:
            err.close()
            raise WriteFailed(route, err.code) from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", None) or type(err).__name__
            raise LiteLLMUnavailable(f"{self.url}{route}: {reason}") from None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Answers a redirect with its own status (an HTTPError) instead of following it."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _open(request: urllib.request.Request, timeout: float) -> Any:
    return urllib.request.build_opener(_NoRedirect()).open(request, timeout=timeout)


def _status(code: int) -> str:
    if 300 <= code < 400:
        return f"HTTP {code} (a redirect: never followed, it would carry the master key)"
    return f"HTTP {code}"


def _entry(raw: Mapping[str, Any]) -> dict[str, Any]:
    name = raw.get("model_name")
    params = raw.get("litellm_params")
    info = raw.get("model_info")
    return {
        "model_name": name if isinstance(name, str) else None,
        "litellm_params": dict(params) if isinstance(params, Mapping) else {},
        "model_info": dict(info) if isinstance(info, Mapping) else {},
    }
