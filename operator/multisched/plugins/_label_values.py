"""Nodes' values of one label, for the plugins that judge a batch of nodes by a topology key
(PodTopologySpread, InterPodAffinity).

Read from the snapshot's columns (``Snapshot.label_values``) when the plugin has one, so
that a batch of nodes is one C-level pass; from each node's labels otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import compress, repeat
from operator import is_
from typing import cast

from multisched.cache import NodeInfo, Snapshot


def label_values(
    snapshot: Snapshot | None, key: str, nodes: Sequence[NodeInfo]
) -> list[str | None]:
    """Each node's value of label ``key`` (None where the node lacks the label)."""
    if snapshot is None:
        return [node.labels.get(key) for node in nodes]
    return snapshot.label_values(key, nodes)


def positions_missing(values: Sequence[str | None]) -> list[int]:
    """The positions of ``values`` that are None (nodes without the label)."""
    if None not in values:
        return []
    return list(compress(range(len(values)), map(is_, values, repeat(None))))


def positions_in(values: Sequence[str | None], wanted: Collection[str]) -> list[int]:
    """The positions of ``values`` found in ``wanted``."""
    if not wanted:
        return []
    return list(compress(range(len(values)), map(wanted.__contains__, values)))


def looked_up(values: Sequence[str | None], table: Mapping[str, int]) -> list[int]:
    """``table[value]`` for each value (0 where the value is None or not in ``table``)."""
    get = cast("Callable[[str | None, int], int]", table.get)
    return list(map(get, values, repeat(0)))
