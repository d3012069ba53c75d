"""Per-node values kept between cycles (the resource Filter and Score plugins, preemption).

A backlog's pods mostly ask for the same resources and a cycle changes one node (the one it
binds to), so a value that depends only on a node's state and on the pod's requests is, for
every other node, what it was last cycle. ``NodeValues`` keeps such values per pod-side key,
in the order of the snapshot's node list, and recomputes only the nodes the snapshot's
change log (``Snapshot.node_log``) names. A node that is not the snapshot's own (a clone
made for preemption, a node of a test) is computed afresh, never kept.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from multisched.cache import NodeInfo, Snapshot
from multisched.cache.columns import lookup_all

V = TypeVar("V")

#: Pod-side keys kept at most (distinct request vectors of recent cycles).
MAX_KEYS = 32


class _Table(Generic[V]):
    __slots__ = ("epoch", "position", "values")

    def __init__(self, epoch: int, position: int) -> None:
        self.epoch = epoch
        #: How much of the change log is applied.
        self.position = position
        #: Keyed by the snapshot's own NodeInfo objects (hashed by identity): one C-level
        #: ``dict.get`` per node reads a cycle's values.
        self.values: dict[NodeInfo, V] = {}


class NodeValues(Generic[V]):
    __slots__ = ("_tables",)

    def __init__(self) -> None:
        self._tables: dict[Hashable, _Table[V]] = {}

    def values(
        self,
        snapshot: Snapshot | None,
        key: Hashable,
        nodes: Sequence[NodeInfo],
        compute: Callable[[Sequence[NodeInfo]], list[V]],
    ) -> list[V]:
        """``compute(nodes)``, computing only the nodes changed since their values were
        kept under ``key``."""
        if snapshot is None or not snapshot.node_info_list:
            return compute(nodes)
        table = self._current(snapshot, key, compute)
        values = table.values
        try:
            return lookup_all(values, nodes)
        except KeyError:  # nodes not asked for under this key yet
            pass
        out: list[V | None] = list(map(values.get, nodes))
        stale: list[int] = []
        at = -1
        try:
            while True:
                at = out.index(None, at + 1)
                stale.append(at)
        except ValueError:
            pass
        fresh = compute([nodes[i] for i in stale])
        listed = snapshot.node_info_list
        size = len(listed)
        for i, value in zip(stale, fresh, strict=True):
            out[i] = value
            node = nodes[i]
            # Only the snapshot's own nodes are kept (a clone or a node of a test is not).
            if 0 <= node.index < size and listed[node.index] is node:
                values[node] = value
        return out  # type: ignore[return-value]

    def _current(
        self,
        snapshot: Snapshot,
        key: Hashable,
        compute: Callable[[Sequence[NodeInfo]], list[V]],
    ) -> _Table[V]:
        """The table for ``key`` with the change log applied: the changed nodes it holds
        are computed again at once, so that a cycle's lookup finds every node it kept."""
        log = snapshot.node_log
        table = self._tables.get(key)
        if table is None or table.epoch != snapshot.log_epoch:
            if table is None and len(self._tables) >= MAX_KEYS:
                self._tables.clear()
            table = self._tables[key] = _Table(snapshot.log_epoch, len(log))
            return table
        if table.position < len(log):
            values, listed = table.values, snapshot.node_info_list
            size = len(listed)
            changed = list(
                dict.fromkeys(
                    listed[index]
                    for index in log[table.position :]
                    if index < size and listed[index] in values
                )
            )
            # Dropped first: should ``compute`` fail, they are computed when next asked for.
            for node in changed:
                del values[node]
            table.position = len(log)
            if changed:
                values.update(zip(changed, compute(changed), strict=True))
        return table
