"""The `runway` command line: one parser, one error boundary, one exit-code table."""
