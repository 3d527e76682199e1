"""The one exit-code table every `runway` subcommand uses (docs/cli.md "Exit status")."""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    # Not everything succeeded, and the rest was still handled: an object denied, rejected or
    # not rendered, a served name in conflict, a model not Ready, an apply refused. For
    # `render --check`, as for `kubectl diff`: the tree is out of date.
    PARTIAL = 1
    USAGE = 2  # bad flags (argparse's own code) or unusable input
    CHECK_REJECTED = 3  # `render --check`: an object cannot be rendered (or removals withheld)
    UNAVAILABLE = 4  # Git, the API server or LiteLLM could not be reached, or the repo is locked
    INTERRUPTED = 130
    # The reader of standard output went away (`runway ... | head`): nothing more is printed,
    # not even about that, as 128 + SIGPIPE, the status git and coreutils give then.
    PIPE_CLOSED = 141
