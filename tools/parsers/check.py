"""Runs inside one engine virtualenv (`.venv-parsers-<set>`), never in Runway's: parses launch
arguments with the engine's own parser classes and writes one verdict per job.

Usage: `<venv>/bin/python tools/parsers/check.py JOBS.json VERDICTS.json`. Only the standard
library is imported at module level (the engines are imported per entry point, by name, so one
file serves every virtualenv); nothing of Runway's is imported, since Runway is not installed
there. A job is {"id", "entry", "args"} (a container's arguments after `python3 -m <module>`,
or the vllm/vllm-openai image's `vllm serve`) or {"id", "entry": "kuberay", "app"} (one
serveConfigV2 application). A verdict is {"id", "ok", "detail", "notes"}: "detail" is the
parser's error, "notes" the deprecation warnings it printed or logged.

What runs, per entry point (tools/parsers/__init__.py says why where it is narrower than the
process the pod starts); wherever vLLM is imported, its CPU platform is set first:
  vllm             `vllm serve`: the CLI's serve subparser (ServeSubcommand.subparser_init on a
                   FlexibleArgumentParser, as vllm.entrypoints.cli.main builds it), then
                   ServeSubcommand.validate and AsyncEngineArgs.from_cli_args
  dynamo-vllm      dynamo.vllm.args.parse_args (Dynamo's groups + AsyncEngineArgs.add_cli_args,
                   then from_cli_args and Dynamo's cross-validation)
  dynamo-sglang    dynamo.sglang.args.parse_args; fetch_model (a download) is skipped and
                   ServerArgs.__post_init__ (model config and GPU probing) does not run
  dynamo-trtllm    dynamo.trtllm.args.parse_args; tensorrt_llm.llmapi.BuildConfig (four
                   defaults) is a stand-in, TRT-LLM's pin not being on PyPI
  dynamo-mocker    dynamo.mocker.args.parse_args
  dynamo-frontend  dynamo.frontend.main.parse_args (it reads sys.argv)
  kuberay          LLMServingArgs / PDServingArgs (the builder's own validation), then for each
                   LLMConfig: get_engine_config() (splits engine_kwargs into FrontendArgs and
                   AsyncEngineArgs fields, refusing others) and AsyncEngineArgs(**kwargs), as
                   Ray's vLLM engine does; then each kwarg's type against the parser vLLM's
                   add_cli_args builds for that field (Ray passes values as given)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib
import io
import json
import logging
import re
import sys
import types
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

PD_BUILDER = "ray.serve.llm:build_pd_openai_app"
LOGGERS = ("", "vllm", "dynamo", "sglang", "ray")
DEPRECATION = re.compile(r"deprecat|will be removed", re.IGNORECASE)
# The four tensorrt_llm.llmapi.BuildConfig defaults dynamo.trtllm's parser reads, the only thing
# dynamo.trtllm.backend_args takes from TRT-LLM: TRT-LLM's usual values, not read from the
# pinned 1.3.0rc11 (not downloadable). Only defaults: Runway passes none of these flags.
TRTLLM_BUILD_DEFAULTS = {
    "max_batch_size": 2048,
    "max_num_tokens": 8192,
    "max_seq_len": None,
    "max_beam_width": 1,
}


def _module(name: str) -> Any:
    return importlib.import_module(name)


@contextlib.contextmanager
def _captured() -> Iterator[io.StringIO]:
    """What the parsers say: argparse prints its error to stderr before SystemExit, Dynamo logs
    its refusals, vLLM logs deprecations (its loggers do not propagate to the root)."""
    err = io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setLevel(logging.WARNING)
    loggers = [logging.getLogger(name) for name in LOGGERS]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(sys.stderr):
            yield err
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def _notes(text: str) -> list[str]:
    """The deprecation warnings among what a parser said (not torch's own, at its import)."""
    lines = {line.strip() for line in text.splitlines()}
    return sorted(n for n in lines if DEPRECATION.search(n) and " torch/" not in n)


def _cpu_platform() -> None:
    """vLLM picks a platform by probing for devices, and its parser's defaults need one (the
    DeviceConfig default resolves the device type while add_cli_args runs): with no GPU it
    finds none and refuses. Use vLLM's CPU platform, as vLLM's own CLI does for `vllm bench`;
    before anything imports `current_platform`."""
    platforms = _module("vllm.platforms")
    if getattr(platforms, "_current_platform", None) is None:
        cpu = _module("vllm.platforms.cpu").CpuPlatform()
        platforms._current_platform = cpu
        platforms.current_platform = cpu


def check_vllm(args: list[str]) -> None:
    _cpu_platform()
    serve = _module("vllm.entrypoints.cli.serve")
    parser = _module("vllm.utils.argparse_utils").FlexibleArgumentParser(description="vLLM CLI")
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    commands = {cmd.name: cmd for cmd in serve.cmd_init()}
    for cmd in commands.values():
        cmd.subparser_init(subparsers)
    parsed = parser.parse_args(["serve", *args])
    commands["serve"].validate(parsed)
    _module("vllm.engine.arg_utils").AsyncEngineArgs.from_cli_args(parsed)


def check_dynamo_vllm(args: list[str]) -> None:
    _cpu_platform()
    _module("dynamo.vllm.args").parse_args(args)


def check_dynamo_sglang(args: list[str]) -> None:
    module = _module("dynamo.sglang.args")

    async def no_download(_model: str) -> None:
        return None

    def no_post_init(_self: Any) -> None:
        return None

    server_args = module.ServerArgs
    with (
        _patched(module, "fetch_model", no_download),
        _patched(server_args, "__post_init__", no_post_init),
    ):
        asyncio.run(module.parse_args(args))


def check_dynamo_trtllm(args: list[str]) -> None:
    if "tensorrt_llm" not in sys.modules:
        sys.modules["tensorrt_llm"] = types.ModuleType("tensorrt_llm")
        sys.modules["tensorrt_llm.llmapi"] = _build_config_stand_in()
    _module("dynamo.trtllm.args").parse_args(args)


def _build_config_stand_in() -> types.ModuleType:
    llmapi = types.ModuleType("tensorrt_llm.llmapi")
    fields = {k: types.SimpleNamespace(default=v) for k, v in TRTLLM_BUILD_DEFAULTS.items()}
    llmapi.BuildConfig = types.SimpleNamespace(model_fields=fields)  # type: ignore[attr-defined]
    return llmapi


def check_dynamo_mocker(args: list[str]) -> None:
    _module("dynamo.mocker.args").parse_args(args)


def check_dynamo_frontend(args: list[str]) -> None:
    _cpu_platform()
    main = _module("dynamo.frontend.main")
    with _patched(sys, "argv", [sys.argv[0], *args]):
        main.parse_args()


def check_kuberay(app: dict[str, Any]) -> None:
    _cpu_platform()
    if app["import_path"] == PD_BUILDER:
        builder = _module("ray.llm._internal.serve.serving_patterns.prefill_decode.builder")
        pd = builder.PDServingArgs.model_validate(app["args"])
        configs = [pd.prefill_config, pd.decode_config]
    else:
        serving = _module("ray.serve.llm").LLMServingArgs.model_validate(app["args"])
        configs = list(serving.llm_configs)
    engine_args = _module("vllm.engine.arg_utils").AsyncEngineArgs
    for config in configs:
        engine_config = config.get_engine_config()
        engine_args(**engine_config.get_initialization_kwargs())
        _check_kwarg_types(config.engine_kwargs, engine_args)


def _check_kwarg_types(kwargs: dict[str, Any], engine_args: Any) -> None:
    """Each engine kwarg's value against what `vllm serve` would accept for that field: a flag
    (store_true or --x/--no-x) takes a bool, an int or float field a number, a choice one of
    the choices. Ray hands the values to AsyncEngineArgs as they are, unconverted."""
    parser = _module("vllm.utils.argparse_utils").FlexibleArgumentParser(add_help=False)
    engine_args.add_cli_args(parser)
    actions = {a.dest: a for a in parser._actions if a.option_strings}
    fields = {f.name for f in dataclasses.fields(engine_args)}
    for key, value in sorted(kwargs.items()):
        action = actions.get(key)
        if key not in fields or action is None:
            continue  # a FrontendArgs field: get_engine_config has placed it
        problem = _type_problem(action, value)
        if problem:
            raise TypeError(f"engine_kwargs.{key}={value!r}: {problem}")


def _type_problem(action: argparse.Action, value: Any) -> str | None:
    if isinstance(action, argparse.BooleanOptionalAction) or action.nargs == 0:
        return None if isinstance(value, bool) else "the flag takes a bool"
    if action.type in (int, float) and (
        isinstance(value, bool) or not isinstance(value, (int, float))
    ):
        return f"{action.type.__name__} expected"
    if action.type is int and isinstance(value, float):
        return "int expected"
    if action.choices is not None and value not in action.choices:
        return f"not one of {sorted(map(str, action.choices))}"
    return None


@contextlib.contextmanager
def _patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    saved = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, saved)


CHECKS: dict[str, Callable[[list[str]], None]] = {
    "vllm": check_vllm,
    "dynamo-vllm": check_dynamo_vllm,
    "dynamo-sglang": check_dynamo_sglang,
    "dynamo-trtllm": check_dynamo_trtllm,
    "dynamo-mocker": check_dynamo_mocker,
    "dynamo-frontend": check_dynamo_frontend,
}


def verdict(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job; the parser's own error message when it refuses."""
    entry = job["entry"]
    program = "vllm" if entry == "vllm" else f"python3 -m {entry.replace('-', '.')}"
    with _captured() as err, _patched(sys, "argv", [program]):  # argparse's prog
        try:
            if entry == "kuberay":
                check_kuberay(job["app"])
            else:
                CHECKS[entry](list(job["args"]))
        except SystemExit as stop:
            lines = [line for line in err.getvalue().splitlines() if line.strip()]
            detail = lines[-1] if lines else f"exit {stop.code}"
            ok, said = stop.code in (0, None), detail
        except Exception as error:
            ok, said = False, f"{type(error).__name__}: {error}"
        else:
            ok, said = True, ""
    return {"id": job["id"], "ok": ok, "detail": said, "notes": _notes(err.getvalue())}


def versions() -> dict[str, str]:
    out = {}
    for dist in ("vllm", "ai-dynamo", "ai-dynamo-runtime", "sglang", "ray", "torch"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    return out


def main(argv: list[str]) -> int:
    jobs = json.loads(Path(argv[0]).read_text())
    verdicts = [verdict(job) for job in jobs]
    Path(argv[1]).write_text(json.dumps({"versions": versions(), "verdicts": verdicts}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
