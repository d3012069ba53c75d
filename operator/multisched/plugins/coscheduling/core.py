"""The PodGroup manager (upstream ``coscheduling/core``): the checks of a gang as a whole
that the plugin's extension points delegate to."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum

from multisched.cache import NodeInfo, PodInfo
from multisched.cache.groups import POD_GROUP_LABEL, group_of
from multisched.cache.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, format_amount
from multisched.framework import CycleState, Handle

from .expiring import ExpiringNames
from .podgroup import PodGroup, full_name, read_pod_group

PERMIT_STATE_KEY = "PermitCoscheduling"
#: go-cache default expirations of upstream's two caches.
PERMITTED_DEFAULT_TTL = 3.0
BACKED_OFF_DEFAULT_TTL = 10.0


class PermitVerdict(StrEnum):
    """``core.Status``."""

    POD_GROUP_NOT_SPECIFIED = "PodGroup not specified"
    POD_GROUP_NOT_FOUND = "PodGroup not found"
    SUCCESS = "Success"
    WAIT = "Wait"


class PermitState:
    """Whether this cycle's pod is the gang's first to reach Permit (it activates the rest)."""

    __slots__ = ("activate",)

    def __init__(self, activate: bool) -> None:
        self.activate = activate

    def clone(self) -> PermitState:
        return PermitState(self.activate)


class PodGroupManager:
    def __init__(self, handle: Handle, schedule_timeout: int, clock: Callable[[], float]) -> None:
        self.handle = handle
        self.schedule_timeout = schedule_timeout
        #: Groups whose minResources check passed recently: not checked again meanwhile.
        self.permitted = ExpiringNames(clock, PERMITTED_DEFAULT_TTL)
        #: Groups that failed recently: PreFilter turns their pods away until it expires.
        self.backed_off = ExpiringNames(clock, BACKED_OFF_DEFAULT_TTL)

    def get_pod_group(self, pod: PodInfo) -> tuple[str, PodGroup | None]:
        group = group_of(pod)
        if not group:
            return "", None
        raw = self.handle.snapshot.groups.pod_group(pod.namespace, group)
        return f"{pod.namespace}/{group}", read_pod_group(raw) if raw is not None else None

    def members(self, pod: PodInfo) -> list[PodInfo]:
        """The pods with the group's label in the pod's namespace (upstream's pod lister)."""
        return self.handle.snapshot.groups.members(pod.namespace, group_of(pod))

    def backoff_pod_group(self, name: str, seconds: float) -> None:
        if seconds != 0:
            self.backed_off.add(name, seconds)

    def delete_permitted_pod_group(self, name: str) -> None:
        self.permitted.delete(name)

    def pre_filter(self, pod: PodInfo) -> str | None:
        """Why the pod cannot be scheduled now, or None."""
        name, pg = self.get_pod_group(pod)
        if pg is None:
            return None
        if name in self.backed_off:
            return f"podGroup {name} failed recently"
        count = len(self.members(pod))
        if count < pg.min_member:
            return (
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {count}, minMember of group: {pg.min_member}"
            )
        if pg.min_resources is None or name in self.permitted:
            return None
        # Only a resource sum over the cluster: a group that passes may still not fit.
        request = {**pg.min_resources, PODS: pg.min_member}
        gap = check_cluster_resource(self.handle.snapshot.node_info_list, request, name)
        if gap is not None:
            return gap
        self.permitted.add(name, self.schedule_timeout)
        return None

    def permit(self, state: CycleState, pod: PodInfo) -> PermitVerdict:
        name, pg = self.get_pod_group(pod)
        if not name:
            return PermitVerdict.POD_GROUP_NOT_SPECIFIED
        if pg is None:
            return PermitVerdict.POD_GROUP_NOT_FOUND
        # Members assumed or bound before this cycle. Upstream's cycle snapshot predates
        # this pod's assumption; multisched's is live and already holds it: leave it out.
        assigned = self.calculate_assigned_pods(pg.name, pg.namespace, but=pod.uid)
        if assigned + 1 >= pg.min_member:
            return PermitVerdict.SUCCESS
        if assigned == 0:
            # The gang's first member to get here wakes the rest; later ones need not.
            state.write(PERMIT_STATE_KEY, PermitState(activate=True))
        return PermitVerdict.WAIT

    def creation_time(self, pod: PodInfo, default: float) -> float:
        """The group's creation time, or ``default`` for a pod of no (known) group."""
        _, pg = self.get_pod_group(pod)
        return pg.creation_time if pg is not None else default

    def calculate_assigned_pods(self, group: str, namespace: str, but: str = "") -> int:
        """Members on a node in the snapshot (bound or assumed), the pod ``but`` aside."""
        return sum(
            1
            for node in self.handle.snapshot.node_info_list
            for p in node.pods
            if p.labels.get(POD_GROUP_LABEL) == group
            and p.namespace == namespace
            and p.node_name
            and p.uid != but
        )

    def activate_siblings(self, pod: PodInfo, state: CycleState) -> None:
        """Move the gang's other pods to activeQ, when Permit asked for it."""
        if not group_of(pod):
            return
        permit_state = state.get(PERMIT_STATE_KEY)
        if not isinstance(permit_state, PermitState) or not permit_state.activate:
            return
        siblings = [p for p in self.members(pod) if p.uid != pod.uid]
        if siblings:
            self.handle.activate(siblings)


def check_cluster_resource(
    nodes: Sequence[NodeInfo], request: dict[str, int], group_full_name: str
) -> str | None:
    """``CheckClusterResource``: whether the nodes' free room, node by node, covers
    ``request`` (the group's own pods count as free); the remaining gap if not."""
    remaining = dict(request)
    for node in nodes:
        free = node_free_resources(node, group_full_name)
        for name in list(remaining):
            left = remaining[name] - free.get(name, 0)
            if left <= 0:
                del remaining[name]
            else:
                remaining[name] = left
        if not remaining:
            return None
    return f"resource gap: {format_resource_list(remaining)}"


def node_free_resources(node: NodeInfo, group_full_name: str) -> dict[str, int]:
    """``getNodeResource``: allocatable minus requested, as if the group's pods were gone."""
    own = [p for p in node.pods if full_name(p) == group_full_name]
    requested = node.requested.clone()
    for pod in own:
        requested.add(pod.requests, -1)
    allocatable = node.allocatable
    free = {
        CPU: allocatable.milli_cpu - requested.milli_cpu,
        MEMORY: allocatable.memory - requested.memory,
        EPHEMERAL_STORAGE: allocatable.ephemeral_storage - requested.ephemeral_storage,
        PODS: allocatable.allowed_pod_number - (len(node.pods) - len(own)),
    }
    for name, value in allocatable.scalar.items():
        free[name] = value - requested.scalar.get(name, 0)
    return free


def format_resource_list(resources: dict[str, int]) -> str:
    """A resource list as ``map[cpu:1500m pods:2]`` (Go prints map keys sorted)."""
    shown = (f"{n}:{format_amount(n, v)}" for n, v in sorted(resources.items()))
    return "map[" + " ".join(shown) + "]"
