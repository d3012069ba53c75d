"""NodeUnschedulable: filter out cordoned nodes unless the pod tolerates the cordon taint."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from multisched.cache import NodeInfo, PodInfo, Taint
from multisched.framework import CycleState, Handle, Status
from multisched.framework.events import ADD, NODE, UPDATE_NODE_TAINT, ClusterEvent

from ._batch import failing, marked, snapshot_of

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
_CORDON_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
_CORDONED = attrgetter("unschedulable")


class NodeUnschedulable:
    name = NAME

    def __init__(self, args: object, handle: Handle | None) -> None:
        self._handle = handle

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        # spec.unschedulable changes arrive as taint updates (as upstream).
        return (ClusterEvent(NODE, ADD | UPDATE_NODE_TAINT),)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.unschedulable:
            return None
        if any(t.tolerates(_CORDON_TAINT) for t in pod.tolerations):
            return None
        return Status.unresolvable(ERR_REASON_UNSCHEDULABLE)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> dict[int, Status]:
        return failing(
            self.filter, state, pod, nodes, marked(nodes, _CORDONED, snapshot_of(self._handle))
        )


PLUGIN = NodeUnschedulable
