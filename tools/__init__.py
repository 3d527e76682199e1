"""Development-time tools (`make schemas`); not part of the installed package."""
