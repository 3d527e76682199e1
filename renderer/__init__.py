"""GitOps: load sources, render, strict schema check, write + commit + push, --check; the one
entry point is renderer.flow.render."""
