"""renderer.reuse.rendercache.Shared: equal values become one object, and so are pickled once."""

from __future__ import annotations

import pickle

from renderer.reuse.rendercache import Shared


def test_equal_values_are_one_object_and_each_is_pickled_once() -> None:
    one = Shared()
    kind = ("apps/v1 Deployment", "Kubernetes")
    again = tuple("".join(list(text)) for text in kind)  # equal, distinct strings
    rows = [one(kind), one(again)]

    assert rows[0] is rows[1]
    assert kind is not again
    assert len(pickle.dumps(rows)) <= len(pickle.dumps([kind, again])) - len("".join(kind))
