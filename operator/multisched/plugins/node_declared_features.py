"""NodeDeclaredFeatures: the node must declare every feature the pod needs.

Upstream ``nodedeclaredfeatures/nodedeclaredfeatures.go`` (GA and locked on in v1.37). A
kubelet lists the features it implements in ``status.declaredFeatures``; the features a pod
needs are inferred from its spec by ``cache.declared_features`` once per pod update
(``PodInfo.required_node_features``), so PreFilter only looks at a number and skips the
plugin for the pods that need nothing, which is nearly all of them. A missing feature is
UnschedulableAndUnresolvable: preempting pods cannot add one.
"""

from __future__ import annotations

from collections.abc import Sequence

from multisched.cache import NodeInfo, PodInfo
from multisched.framework import CycleState, Handle, PreFilterResult, Status
from multisched.framework.events import (
    ADD,
    NODE,
    TARGET_POD,
    UPDATE,
    UPDATE_NODE_DECLARED_FEATURE,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from multisched.framework.status import SKIP

from ._batch import for_every_node
from ._hints import is_target_pod

NAME = "NodeDeclaredFeatures"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"


def _missing_state() -> Status:
    return Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycle-state: not found')


class NodeDeclaredFeatures:
    name = NAME

    def __init__(self, args: object, handle: Handle | None) -> None:
        pass

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # A node that comes or declares other features, or the pod needing other ones.
        return (
            ClusterEventWithHint(
                ClusterEvent(NODE, ADD | UPDATE_NODE_DECLARED_FEATURE),
                is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(TARGET_POD, UPDATE), is_schedulable_after_target_pod_update
            ),
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        needed = pod.required_node_features
        if not needed:
            return None, SKIP
        # An int: the pods on a node never change it, so no clone() needed.
        state.write(PRE_FILTER_STATE_KEY, needed)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        needed: int | None = state.get(PRE_FILTER_STATE_KEY)
        if needed is None:
            return _missing_state()
        if needed & node.declared_features == needed:
            return None
        return Status.unresolvable(ERR_REASON_UNSATISFIED_REQUIREMENTS)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> dict[int, Status]:
        needed: int | None = state.get(PRE_FILTER_STATE_KEY)
        if needed is None:
            return for_every_node(nodes, _missing_state())
        # One status for every failing node: the cycle only reads its reason.
        lacking = Status.unresolvable(ERR_REASON_UNSATISFIED_REQUIREMENTS)
        return {
            i: lacking for i, node in enumerate(nodes) if needed & node.declared_features != needed
        }


def _declared(node: NodeInfo) -> object:
    """``status.declaredFeatures`` as listed: upstream compares the lists, names it does not
    know included."""
    return (node.raw.get("status") or {}).get("declaredFeatures") or []


def is_schedulable_after_node_change(
    pod: PodInfo, old: NodeInfo | None, new: NodeInfo
) -> QueueingHint:
    """Upstream ``isSchedulableAfterNodeChange``: a new node, or other declared features."""
    if old is not None and _declared(old) == _declared(new):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def is_schedulable_after_target_pod_update(
    pod: PodInfo, old: PodInfo, new: PodInfo
) -> QueueingHint:
    """Upstream ``isSchedulableAfterTargetPodUpdate``: the pod's update changed the
    features it needs (inferred once per parse, ``PodInfo.required_node_features``)."""
    if is_target_pod(pod, new) and old.required_node_features != new.required_node_features:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


PLUGIN = NodeDeclaredFeatures
