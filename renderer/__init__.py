"""GitOps: load sources, render, strict schema check, write + commit + push, --check; the one
entry point is renderer.pipeline.run_render."""
