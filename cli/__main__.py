"""`python -m cli` runs the runway command."""

from cli.main import run

run()
