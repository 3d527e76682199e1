"""GitOps: load sources, render, strict schema check, write + commit + push, --check."""
