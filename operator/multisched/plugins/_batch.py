"""Shared by the Filter plugins' ``filter_nodes`` (``framework.BatchFilterPlugin``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from multisched.cache import NodeInfo, PodInfo
from multisched.framework import CycleState, Status


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


def marked(nodes: Sequence[NodeInfo], mark: Callable[[NodeInfo], Any]) -> list[int]:
    """The indexes of the nodes for which ``mark`` (an ``operator.attrgetter``) is truthy.
    Most clusters have no such node in a cycle's batch (no taints, no cordon): one pass at
    C speed says so, and only a batch with one is walked in Python."""
    if not any(map(mark, nodes)):
        return []
    return [i for i, node in enumerate(nodes) if mark(node)]
