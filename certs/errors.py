"""The one error of the certs edge: a flag value or a certificate directory that cannot be used.

It is a SourceError, so `runway` exits 2 (usage) with `runway: WHAT: WHY` (cli/main.py); WHAT is
the flag or the path.
"""

from __future__ import annotations

from core.fields.errors import SourceError


class BundleError(SourceError):
    """Unusable input to `runway certs`: a lifetime, a directory, a file in it, a target."""
