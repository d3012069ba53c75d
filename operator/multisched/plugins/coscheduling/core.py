"""The PodGroup manager (upstream ``coscheduling/core``): the checks of a gang as a whole
that the plugin's extension points delegate to."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import StrEnum

from multisched.cache import NodeInfo, PodInfo
from multisched.cache.groups import group_of
from multisched.cache.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, format_amount
from multisched.framework import CycleState, Handle

from .expiring import ExpiringNames
from .podgroup import PodGroup, full_name, read_pod_group

PERMIT_STATE_KEY = "PermitCoscheduling"
#: go-cache default expirations of upstream's two caches.
PERMITTED_DEFAULT_TTL = 3.0
BACKED_OFF_DEFAULT_TTL = 10.0
#: Groups tracked before the first sweep for those whose pods are all gone.
SWEEP_MIN = 64


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
    def __init__(
        self,
        handle: Handle,
        schedule_timeout: int,
        clock: Callable[[], float],
        wall_clock: Callable[[], float],
    ) -> None:
        self.handle = handle
        self.schedule_timeout = schedule_timeout
        self._wall_clock = wall_clock
        #: Groups whose minResources check passed recently: not checked again meanwhile.
        self.permitted = ExpiringNames(clock, PERMITTED_DEFAULT_TTL)
        #: Groups that failed recently: PreFilter turns their pods away until it expires.
        self.backed_off = ExpiringNames(clock, BACKED_OFF_DEFAULT_TTL)
        #: "ns/group" -> uids of the members past Permit, not unreserved and not yet seen
        #: bound: with the bound ones the pod lister has, upstream's ``assignedPodsByPG``.
        self._past_permit: dict[str, set[str]] = {}
        #: "ns/group" -> when it last failed, in Unix seconds: QueueSort reads it in place
        #: of the group's creationTimestamp, so a failed gang queues behind newer ones.
        self._last_failed: dict[str, float] = {}
        #: Upstream forgets a pod on the informer's delete; here the groups whose pods are
        #: all gone are swept once the entries double.
        self._sweep_at = SWEEP_MIN

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

    def mark_pod_group_schedule_failure(self, name: str) -> None:
        now = self._wall_clock()
        # Strictly after the previous mark: two failures one clock tick apart keep their order.
        latest = max(self._last_failed.values(), default=-math.inf)
        self._last_failed[name] = now if now > latest else math.nextafter(latest, math.inf)
        self._maybe_sweep()

    def clear_pod_group_schedule_failure(self, name: str) -> None:
        self._last_failed.pop(name, None)

    def pre_filter(self, pod: PodInfo) -> str | None:
        """Why the pod cannot be scheduled now, or None."""
        name, pg = self.get_pod_group(pod)
        if pg is None:
            return None
        if name in self.backed_off:
            return f"podGroup {name} failed recently"
        members = self.members(pod)
        if len(members) < pg.min_member:
            return (
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {len(members)}, minMember of group: {pg.min_member}"
            )
        # Gated pods cannot be placed yet: the quorum is of the members free to schedule.
        gated = sum(1 for p in members if p.scheduling_gates)
        if len(members) - gated < pg.min_member:
            return (
                f"pre-filter pod {pod.name} cannot proceed due to gated pods in the same PodGroup"
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
        self._maybe_sweep()
        self._past_permit.setdefault(name, set()).add(pod.uid)
        assigned = self.get_assigned_pod_count(pod.namespace, group_of(pod), at_permit=pod.uid)
        if assigned >= pg.min_member:
            return PermitVerdict.SUCCESS
        if assigned == 1:
            # The gang's first member to get here wakes the rest; later ones need not.
            state.write(PERMIT_STATE_KEY, PermitState(activate=True))
        return PermitVerdict.WAIT

    def unreserve(self, pod: PodInfo) -> None:
        """The pod no longer holds a place: it leaves the group's assigned pods."""
        name = full_name(pod)
        past = self._past_permit.get(name)
        if past is not None:
            past.discard(pod.uid)
            if not past:
                del self._past_permit[name]

    def creation_time(self, pod: PodInfo, default: float) -> float:
        """When the group last failed, else its creation time; ``default`` for a pod of no
        (known) group."""
        group = group_of(pod)
        if not group:
            return default
        failed = self._last_failed.get(f"{pod.namespace}/{group}")
        if failed is not None:
            return failed
        _, pg = self.get_pod_group(pod)
        return pg.creation_time if pg is not None else default

    def get_assigned_pod_count(self, namespace: str, group: str, at_permit: str = "") -> int:
        """The group's pods bound (as the pod lister has them) or past Permit (waiting or
        binding); ``at_permit``, the pod at Permit now, counts even if not listed yet."""
        name = f"{namespace}/{group}"
        past = self._past_permit.get(name, set())
        live = {at_permit} if at_permit else set()
        bound = 0
        for p in self.handle.snapshot.groups.members(namespace, group):
            if p.uid == at_permit:
                continue
            if p.node_name:
                bound += 1
            elif p.uid in past:
                live.add(p.uid)
        if len(live) != len(past):
            # Bound since, deleted or finished (upstream drops those on the informer's
            # delete): the set keeps only the pods it alone counts.
            if live:
                self._past_permit[name] = live
            else:
                self._past_permit.pop(name, None)
        return bound + len(live)

    def _maybe_sweep(self) -> None:
        if len(self._past_permit) + len(self._last_failed) < self._sweep_at:
            return
        groups = self.handle.snapshot.groups
        for name in list(self._past_permit):
            namespace, group = name.split("/", 1)
            self.get_assigned_pod_count(namespace, group)
        for name in list(self._last_failed):
            if not groups.members(*name.split("/", 1)):
                del self._last_failed[name]  # no pod left to sort by it
        self._sweep_at = max(SWEEP_MIN, 2 * (len(self._past_permit) + len(self._last_failed)))

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
