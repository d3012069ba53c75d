"""NodeName: a pod that names its node (``spec.nodeName``) fits only that node.

Upstream ``nodename/node_name.go``; a mismatch is unresolvable since preemption cannot
rename a node.
"""

from __future__ import annotations

from collections.abc import Sequence

from multisched.cache import NodeInfo, PodInfo
from multisched.framework import CycleState, Handle, Status
from multisched.framework.events import ADD, NODE, ClusterEvent

from ._batch import failing

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    return not pod.node_name or pod.node_name == node.name


class NodeName:
    name = NAME

    def __init__(self, args: object, handle: Handle | None) -> None:
        pass

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        # Only the named node appearing helps; no hint (upstream has none: always requeue).
        return (ClusterEvent(NODE, ADD),)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        wanted = pod.node_name
        if not wanted or wanted == node.name:
            return None
        return Status.unresolvable(ERR_REASON)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> dict[int, Status]:
        wanted = pod.node_name
        if not wanted:
            return {}
        return failing(
            self.filter, state, pod, nodes, [i for i, n in enumerate(nodes) if n.name != wanted]
        )


PLUGIN = NodeName
