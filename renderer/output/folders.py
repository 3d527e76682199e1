"""What one output folder is: its key (namespace/name), its files, the Result of rendering it,
and the kustomization that lists it. Kept apart from renderer.output.render, so that reading a render's
report (renderer.reuse.stamp) does not import the renderers."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.model.kinds import ExternalModelProvider, ModelDeployment
from kubeio.objects import object_key

HYDRATED_FILE = "modeldeployment.yaml"
EXTERNAL_FILE = "externalmodelprovider.yaml"
# Where a ModelDeployment's folder came from (renderer.git.provenance), beside its files. No
# extension, as Argo CD's hydrator.metadata: no tool that reads a folder's *.yaml, *.yml and
# *.json as manifests takes it for one; no kustomization lists it; the report leaves it out.
METADATA_FILE = "runway.metadata"
EXTERNAL_SUFFIX = ".emp"  # a dot: no ModelDeployment name can have one, so folders never clash


@dataclass(frozen=True)
class Result:
    """One ModelDeployment's outcome: its files (relative to its folder), or why it has none."""

    key: str  # namespace/name
    files: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None
    warnings: tuple[str, ...] = ()
    engine: str | None = None
    provider: str | None = None
    # True when rendering again with this output's own hydrated object as the previous one gives
    # the same output (admission is sticky), so an incremental render may key on that object.
    settled: bool = False
    # (`apiVersion Kind`, where its schema came from) of every object the strict check consulted
    schemas: tuple[tuple[str, str], ...] = ()
    scanned: bool = False  # every file was found free of credentials (core.checks.credentials)

    @classmethod
    def recorded(
        cls,
        key: str,
        files: Mapping[str, str],
        *,
        error: str | None,
        warnings: tuple[str, ...],
        engine: str | None,
        provider: str | None,
        schemas: tuple[tuple[str, str], ...],
    ) -> Result:
        """`Result(key, files, error, warnings, engine, provider, schemas=schemas)` as a record
        of an earlier render holds it, made without the frozen constructor's one
        object.__setattr__ per field (the 10,000 results of a stamp: 14 -> 5 ms)."""
        result = object.__new__(cls)
        result.__dict__.update(
            key=key,
            files=files,
            error=error,
            warnings=warnings,
            engine=engine,
            provider=provider,
            settled=False,
            schemas=schemas,
            scanned=False,
        )
        return result


def report_row(result: Result) -> dict[str, Any]:
    """A result as `runway render -o json` (and -o yaml) reports it, its keys in sorted order.
    A key's first two parts are its namespace and name (a hostile key with more slashes is
    reported so)."""
    parts = result.key.split("/")
    return {
        "engine": result.engine,
        "error": result.error,
        "files": reported_files(result),
        "name": parts[1],
        "namespace": parts[0],
        "provider": result.provider,
        "rendered": result.error is None,
        "warnings": list(result.warnings),
    }


def reported_files(result: Result) -> list[str]:
    """The names of a result's files as the report lists them: all but METADATA_FILE."""
    return sorted(name for name in result.files if name != METADATA_FILE)


def report_line(result: Result) -> str:
    """report_row(result) as the JSON report writes it: json.dumps' text, keys sorted."""
    return _row_encoder()(report_row(result))


@functools.cache
def _row_encoder() -> Callable[[Mapping[str, Any]], str]:
    """json.dumps of a report row, as one encoder made once (CPython's C one when there is
    one; json.dumps makes one per call): a row's keys come sorted and hold no mapping."""
    plain = json.JSONEncoder()
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return plain.encode
    # what json.JSONEncoder.iterencode gives the C encoder for json.dumps' defaults
    encoder = make(
        {},
        plain.default,
        json.encoder.encode_basestring_ascii,
        None,
        ": ",
        ", ",
        False,
        False,
        True,
    )
    return lambda row: "".join(encoder(row, 0))


def folder_of(obj: Mapping[str, Any]) -> str:
    md = ModelDeployment(obj)
    return object_key(md.namespace, md.name)


def external_folder_of(obj: Mapping[str, Any]) -> str:
    """The folder of an ExternalModelProvider: its name with EXTERNAL_SUFFIX."""
    emp = ExternalModelProvider(obj)
    return object_key(emp.namespace, f"{emp.name}{EXTERNAL_SUFFIX}")


def kustomization(resources: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [r for r in resources if r != "kustomization.yaml"],
    }
