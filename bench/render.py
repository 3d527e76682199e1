"""Render throughput: 1,000 generated ModelDeployments to files in memory (strict checks included)."""

from __future__ import annotations

import time

from providers.registry import ProviderRegistry
from renderer.render import render_all, tree_files
from renderer.schemapack import load_pack
from renderer.sources import bundled_config_objects, bundled_versions
from renderer.strict import Schemas
from tests.support.builders import model_deployment

COUNT = 1000


def main() -> None:
    providers = ("vllm", "llmd", None)  # None: auto-selected (KubeRay for 2 GPUs, Dynamo for 1)
    objects = [
        model_deployment(
            f"m{i:04}",
            f"team{i % 10}",
            gpu=2 if providers[i % 3] is None else 1,
            provider=providers[i % 3],
            engine="vllm",
        )
        for i in range(COUNT)
    ]
    registry = ProviderRegistry.from_objects(bundled_config_objects())
    schemas, pins = Schemas.from_pack(load_pack()), bundled_versions()
    start = time.perf_counter()
    results = render_all(objects, previous={}, registry=registry, schemas=schemas, pins=pins)
    files = tree_files(results, {})
    seconds = time.perf_counter() - start
    rendered = sum(1 for r in results if r.error is None)
    print(
        f"render {COUNT} ModelDeployments in memory: {seconds:.2f} s ({seconds / COUNT * 1000:.1f} ms each), {rendered} rendered, {len(files)} files"
    )


if __name__ == "__main__":
    main()
