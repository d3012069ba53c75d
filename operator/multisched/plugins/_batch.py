"""Shared by the Filter plugins' ``filter_nodes`` (``framework.BatchFilterPlugin``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from multisched.cache import NodeInfo, PodInfo, Snapshot
from multisched.framework import CycleState, Handle, Status


def failing(
    judge: Callable[[CycleState, PodInfo, NodeInfo], Status | None],
    state: CycleState,
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    suspects: Iterable[int],
) -> dict[int, Status]:
    """``judge``'s verdicts for the nodes a plugin's quick screen could not clear: the
    screen passes what surely passes, ``filter`` itself decides the rest."""
    out: dict[int, Status] = {}
    for i in suspects:
        status = judge(state, pod, nodes[i])
        if status is not None:
            out[i] = status
    return out


def for_every_node(nodes: Sequence[NodeInfo], status: Status) -> dict[int, Status]:
    """``status`` for each of ``nodes`` (a batch's answer when the cycle state is missing)."""
    return dict.fromkeys(range(len(nodes)), status)


def snapshot_of(handle: Handle | None) -> Snapshot | None:
    """The handle's snapshot; None for a plugin built without a handle."""
    return handle.snapshot if handle is not None else None


def marked(
    nodes: Sequence[NodeInfo], mark: Callable[[NodeInfo], Any], snapshot: Snapshot | None
) -> list[int]:
    """The indexes of the nodes for which ``mark`` (an ``operator.attrgetter`` of a Node's
    own fields) is truthy. Most clusters have no such node at all (no taints, no cordon):
    the snapshot says so once per change of a Node, and a batch is walked only when some
    node has the mark. ``nodes`` are the snapshot's, as the batch Filter and Score calls
    pass them; with no snapshot (a plugin used alone), one pass at C speed decides."""
    if snapshot is not None and snapshot.node_info_list and not snapshot.any_node(mark):
        return []
    if not any(map(mark, nodes)):
        return []
    return [i for i, node in enumerate(nodes) if mark(node)]
