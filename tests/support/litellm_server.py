"""LiteLLM's real proxy app on 127.0.0.1, for the gateway-sync tests:
`python -m tests.support.litellm_server CONFIG PORT`.

What is substituted, and why: ONLY the persistence behind POST /model/new, /model/update and
/model/delete. LiteLLM's own handlers for those three routes need its Prisma-backed database, and
Prisma's native query engine is shipped by no package registry (it is downloaded from Prisma's
own host at first use), so they cannot run here. The replacements keep each route's contract:
the same request models (Deployment, updateDeployment, ModelInfoDelete), the same master-key
authentication dependency (user_api_key_auth), the same answers (the stored row; 400 for an
unknown id or for a model that lives in config.yaml), and they apply the write to the proxy's own
in-memory router with Router.upsert_deployment / Router.delete_deployment, the calls LiteLLM
itself makes after its database write. Everything else (authentication, /model/info, /v1/models,
routing a chat completion to the upstream) is LiteLLM's own code, unchanged.

Test knob (not part of LiteLLM): POST /test/fail-next-new makes the next /model/new store the
model and then answer 500, as LiteLLM issue 38556 reports for a multi-replica proxy.
"""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations at runtime,
# and the request models are imported inside build_app().

import os
import sys
from typing import Any

# LiteLLM reads these when it is imported and when it starts: keep it offline (the bundled cost
# map instead of a download) and point it at the test's config.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_TELEMETRY", "False")
os.environ.setdefault("LITELLM_LOG", "ERROR")


def build_app() -> Any:
    """The proxy app with the three persistence routes swapped (see the module docstring)."""
    import litellm.proxy.proxy_server as ps  # noqa: PLC0415  (after the environment is set)
    from fastapi import Depends, status  # noqa: PLC0415
    from fastapi.routing import APIRoute  # noqa: PLC0415
    from litellm.proxy._types import (  # noqa: PLC0415
        ModelInfoDelete,
        ProxyErrorTypes,
        ProxyException,
    )
    from litellm.proxy.auth.user_api_key_auth import user_api_key_auth  # noqa: PLC0415
    from litellm.types.router import Deployment, updateDeployment  # noqa: PLC0415

    app = ps.app
    existing = len(app.router.routes)
    rows: dict[str, dict[str, Any]] = {}  # the stand-in for LiteLLM_ProxyModelTable
    fail_next_new: list[bool] = []

    def error(message: str, code: int = status.HTTP_400_BAD_REQUEST) -> ProxyException:
        return ProxyException(
            message=message, type=ProxyErrorTypes.auth_error, param="None", code=code
        )

    def answer(model_id: str) -> dict[str, Any]:
        row = rows[model_id]
        # LiteLLM answers with the stored row, whose litellm_params are encrypted: no key leaves.
        params = {k: "<encrypted>" for k in row["litellm_params"]}
        return {"model_id": model_id, **row, "litellm_params": params}

    def route(deployment: dict[str, Any]) -> None:
        router = ps.llm_router
        assert router is not None, "the test config must define at least one model"
        router.upsert_deployment(Deployment(**deployment))

    @app.post("/model/new", dependencies=[Depends(user_api_key_auth)])
    async def model_new(model_params: Deployment) -> dict[str, Any]:
        model_id = model_params.model_info.id
        if not model_id or model_id in rows:
            raise error(f"Authentication Error, Unique constraint failed on model_id={model_id}")
        rows[model_id] = {
            "model_name": model_params.model_name,
            "litellm_params": model_params.litellm_params.model_dump(exclude_none=True),
            "model_info": model_params.model_info.model_dump(exclude_none=True),
        }
        route({**rows[model_id], "model_info": {**rows[model_id]["model_info"], "db_model": True}})
        if fail_next_new:
            fail_next_new.clear()
            raise error(
                "Model was saved to the database, but it is not live in this pod's router yet",
                status.HTTP_500_INTERNAL_SERVER_ERROR,
            )
        return answer(model_id)

    @app.post("/model/update", dependencies=[Depends(user_api_key_auth)])
    async def model_update(model_params: updateDeployment) -> dict[str, Any]:
        model_id = model_params.model_info.id if model_params.model_info else None
        if model_id is None:
            raise error("Authentication Error, model_info.id not provided")
        if model_id not in rows:
            if ps.llm_router is not None and ps.llm_router.get_deployment(model_id=model_id):
                raise error(
                    "Can't edit model. Model in config. Store model in db via `/model/new`. to edit."
                )
            raise error("Authentication Error, model not found")
        if model_params.litellm_params is None:
            raise error("Authentication Error, litellm_params not provided")
        row = rows[model_id]
        changed = model_params.litellm_params.model_dump(exclude_none=True)
        row["litellm_params"] = {**row["litellm_params"], **changed}
        if model_params.model_name:
            row["model_name"] = model_params.model_name
        route({**row, "model_info": {**row["model_info"], "db_model": True}})
        return answer(model_id)

    @app.post("/model/delete", dependencies=[Depends(user_api_key_auth)])
    async def model_delete(model_info: ModelInfoDelete) -> dict[str, str]:
        if rows.pop(model_info.id, None) is None:
            raise error(f"Model with id={model_info.id} not found in db")
        if ps.llm_router is not None:
            ps.llm_router.delete_deployment(id=model_info.id)
        return {"message": f"Model: {model_info.id} deleted successfully"}

    @app.post("/test/fail-next-new", dependencies=[Depends(user_api_key_auth)])
    async def fail_next() -> dict[str, bool]:
        fail_next_new.append(True)
        return {"armed": True}

    # Starlette takes the first matching route: put the replacements before LiteLLM's own.
    ours = app.router.routes[existing:]
    assert [r.path for r in ours if isinstance(r, APIRoute)] == [
        "/model/new",
        "/model/update",
        "/model/delete",
        "/test/fail-next-new",
    ]
    app.router.routes[:] = ours + app.router.routes[:existing]
    return app


def main(argv: list[str]) -> int:
    config, port = argv
    os.environ["CONFIG_FILE_PATH"] = config
    import uvicorn  # noqa: PLC0415

    uvicorn.run(build_app(), host="127.0.0.1", port=int(port), log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
