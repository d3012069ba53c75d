"""NodePorts: the pod's host ports must be free on the node.

Upstream ``nodeports/node_ports.go``. The pod's host ports (containers and sidecar init
containers, hostPort > 0) are read once in PreFilter; a pod without any skips the
plugin. A conflict is Unschedulable: preempting the pod holding the port frees it.
"""

from __future__ import annotations

from collections.abc import Sequence

from multisched.cache import HostPortInfo, NodeInfo, PodInfo
from multisched.framework import CycleState, Handle, PreFilterResult, Status
from multisched.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)

from ._hints import is_assigned

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

HostPorts = tuple[tuple[str, str, int], ...]


def fits_ports(want: HostPorts, node: NodeInfo) -> bool:
    used = node.used_ports
    if not used.by_ip:
        return True
    conflicts = used.conflicts
    return not any(conflicts(ip, protocol, port) for ip, protocol, port in want)


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    """Upstream ``nodeports.Fits``: whether ``pod``'s host ports are free on ``node``."""
    return fits_ports(pod.host_ports, node)


class NodePorts:
    name = NAME

    def __init__(self, args: object, handle: Handle | None) -> None:
        pass

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # Ports free up when a pod goes (they are immutable, so its updates never free
        # one); a node update cannot free one, and a new node has them all free.
        return (
            ClusterEventWithHint(ClusterEvent(POD, DELETE), is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, ADD)),
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        ports = pod.host_ports
        if not ports:
            return None, Status.skip()
        # A tuple: adding or removing other pods never changes it, so no clone() needed.
        state.write(PRE_FILTER_STATE_KEY, ports)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        want: HostPorts | None = state.get(PRE_FILTER_STATE_KEY)
        if want is None:
            return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if fits_ports(want, node):
            return None
        return Status.unschedulable(ERR_REASON)


def is_schedulable_after_pod_deleted(pod: PodInfo, old: PodInfo | None, new: None) -> QueueingHint:
    """Upstream ``isSchedulableAfterAssignedPodDeleted``: only a deleted pod that held (or
    was nominated to hold) one of ``pod``'s host ports frees it."""
    if not pod.host_ports or not is_assigned(old):
        return QueueingHint.QUEUE_SKIP
    if old is None:
        return QueueingHint.QUEUE  # not known which ports it held
    if not old.host_ports:
        return QueueingHint.QUEUE_SKIP
    freed = HostPortInfo()
    for ip, protocol, port in old.host_ports:
        freed.add(ip, protocol, port)
    conflicts = freed.conflicts
    if any(conflicts(ip, protocol, port) for ip, protocol, port in pod.host_ports):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


PLUGIN = NodePorts
