"""NodeUnschedulable: filter out cordoned nodes unless the pod tolerates the cordon taint."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from multisched.cache import NodeInfo, PodInfo, Taint
from multisched.framework import CycleState, Handle, Status
from multisched.framework.events import (
    ADD,
    NODE,
    POD,
    UPDATE_NODE_TAINT,
    UPDATE_POD_TOLERATION,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)

from ._batch import failing, marked, snapshot_of
from ._hints import is_target_pod

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
_CORDON_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
_CORDONED = attrgetter("unschedulable")


class NodeUnschedulable:
    name = NAME

    def __init__(self, args: object, handle: Handle | None) -> None:
        self._handle = handle

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # spec.unschedulable changes arrive as taint updates (as upstream); the pod's own
        # new toleration of the cordon taint is the other way out.
        return (
            ClusterEventWithHint(
                ClusterEvent(NODE, ADD | UPDATE_NODE_TAINT), is_schedulable_after_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, UPDATE_POD_TOLERATION),
                is_schedulable_after_target_pod_toleration_change,
            ),
        )

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


def is_schedulable_after_node_change(
    pod: PodInfo, old: NodeInfo | None, new: NodeInfo
) -> QueueingHint:
    """Upstream ``isSchedulableAfterNodeChange``: a schedulable node was added, or a node
    was uncordoned."""
    if new.unschedulable or (old is not None and not old.unschedulable):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def is_schedulable_after_target_pod_toleration_change(
    pod: PodInfo, old: PodInfo, new: PodInfo
) -> QueueingHint:
    """Upstream ``isSchedulableAfterTargetPodTolerationChange``: the pod now tolerates the
    cordon taint. The old tolerations need no look: had they tolerated it, this plugin
    would not have rejected the pod (tolerations are only ever added)."""
    if is_target_pod(pod, new) and any(t.tolerates(_CORDON_TAINT) for t in new.tolerations):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


PLUGIN = NodeUnschedulable
