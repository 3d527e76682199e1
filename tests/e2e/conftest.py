"""The e2e tier's fixtures (tests/support/e2e.py): the real API server, the live plane, a
namespace per test and the registered webhook."""

from tests.support.e2e import (  # noqa: F401  (fixtures)
    api,
    cluster,
    live_cluster,
    live_registered,
    namespace,
    registered,
)
