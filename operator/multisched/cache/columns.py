"""Reading a per-node column (a dict keyed by the snapshot's NodeInfo objects) for a batch
of nodes: the hot path of the plugins that judge or score a batch at once."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from operator import itemgetter
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def lookup_all(column: Mapping[K, V], keys: Sequence[K]) -> list[V]:
    """``[column[k] for k in keys]`` in one C-level call; KeyError if one is missing.

    An ``itemgetter`` of all the keys: a lookup with a default (``dict.get``) would need a
    second pass to find the missing ones, and testing a list for a sentinel compares every
    element by value."""
    if len(keys) > 1:
        return list(itemgetter(*keys)(column))
    return [column[k] for k in keys]
