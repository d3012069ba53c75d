"""Coscheduling (scheduler-plugins v0.34.7, ``pkg/coscheduling/coscheduling.go``): all of
a PodGroup's ``minMember`` pods are placed, or none.

Members are held at Permit until enough of the group is assumed or bound; the first one
there moves its siblings to activeQ. A member that fits nowhere rejects the members
waiting at Permit (PostFilter), which frees their room for another gang, unless the gang
misses at most ``podGroupRejectPercentage`` of its quorum; a timeout at Permit does the
same through Unreserve. QueueSort keeps a group's pods together, ordered by the group's
creation time, so the older of two competing gangs goes first; a gang that failed is
ordered by the time it failed instead, so it does not block the newer ones behind it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import ClassVar

from pydantic import BaseModel

from multisched.cache import POD_GROUP, NodeInfo, PodInfo
from multisched.cache.groups import group_of
from multisched.framework import (
    Code,
    CycleState,
    Handle,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    Status,
)
from multisched.framework.events import ADD, POD, UPDATE, ClusterEvent
from multisched.framework.queued_pod import QueuedPodInfo

from .args import CoschedulingArgs
from .core import PermitVerdict, PodGroupManager
from .podgroup import full_name, wait_time_seconds

NAME = "Coscheduling"
MSG_POD_GROUP_NOT_FOUND = "PodGroup not found"
MSG_NO_POD_GROUP = "can not find pod group"
MSG_POST_FILTER_REJECTION = "optimistic rejection in PostFilter"
MSG_UNRESERVE_REJECTION = "rejection in Unreserve"


class Coscheduling:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = CoschedulingArgs

    def __init__(
        self,
        args: CoschedulingArgs | None,
        handle: Handle,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        args = args or CoschedulingArgs()
        self.handle = handle
        #: permitWaitingTimeSeconds: also how long a group's minResources check holds.
        self.schedule_timeout = args.permit_waiting_time_seconds
        self.pg_backoff = args.pod_group_backoff_seconds
        #: PostFilter spares a gang missing at most this share of its minMember.
        self.pg_reject_threshold = args.pod_group_reject_percentage / 100.0
        # ``clock`` times the caches; ``wall_clock`` the failures QueueSort compares with
        # creationTimestamps and the queue's wall-clock arrival times.
        self.manager = PodGroupManager(handle, self.schedule_timeout, clock, wall_clock)

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (ClusterEvent(POD, ADD), ClusterEvent(POD_GROUP, ADD | UPDATE))

    # -- QueueSort ------------------------------------------------------------------------

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Priority, then the group's time (its last failure, else its creation) or a lone
        pod's first attempt's, then the pod's namespace/name: a gang's pods stay together,
        the older gang first, a gang that failed behind those that have not since."""
        if a.pod.priority != b.pod.priority:
            return a.pod.priority > b.pod.priority
        t1 = self.manager.creation_time(a.pod, _initial_attempt(a))
        t2 = self.manager.creation_time(b.pod, _initial_attempt(b))
        if t1 == t2:
            return a.pod.key < b.pod.key
        return t1 < t2

    # -- PreFilter / PostFilter -----------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        # Unresolvable: preempting for a gang that cannot start would be wasted.
        reason = self.manager.pre_filter(pod)
        return None, Status.unresolvable(reason) if reason is not None else None

    def pre_filter_extensions(self) -> None:
        return None

    async def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        name, pg = self.manager.get_pod_group(pod)
        if pg is None:
            return None, Status.unschedulable(MSG_NO_POD_GROUP)
        assigned = self.manager.get_assigned_pod_count(pod.namespace, group_of(pod))
        if assigned >= pg.min_member:
            return None, Status.unschedulable()  # the quorum stands: keep the gang
        # Here minMember > assigned >= 0. A float64 share, as upstream (v0.28 used float32).
        if (pg.min_member - assigned) / pg.min_member <= self.pg_reject_threshold:
            return None, Status.unschedulable()  # nearly there: let later members try
        # If this member fits nowhere, the others likely won't either: free their room.
        self._reject_waiting(pod.namespace, pg.name, MSG_POST_FILTER_REJECTION)
        if self.pg_backoff > 0 and len(self.manager.members(pod)) >= pg.min_member:
            self.manager.backoff_pod_group(name, self.pg_backoff)
        self.manager.delete_permitted_pod_group(name)
        self.manager.mark_pod_group_schedule_failure(name)
        return None, Status.unschedulable(
            f"PodGroup {name} gets rejected due to Pod {pod.name} "
            "is unschedulable even after PostFilter"
        )

    # -- Reserve / Permit -----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """A member timed out or failed after Reserve: the whole gang lets go."""
        name, pg = self.manager.get_pod_group(pod)
        if pg is None:
            return
        self.manager.unreserve(pod)
        self._reject_waiting(pod.namespace, pg.name, MSG_UNRESERVE_REJECTION)
        self.manager.delete_permitted_pod_group(name)
        self.manager.mark_pod_group_schedule_failure(name)

    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        verdict = self.manager.permit(state, pod)
        if verdict is PermitVerdict.POD_GROUP_NOT_SPECIFIED:
            return None, 0
        if verdict is PermitVerdict.POD_GROUP_NOT_FOUND:
            return Status.unschedulable(MSG_POD_GROUP_NOT_FOUND), 0
        if verdict is PermitVerdict.WAIT:
            _, pg = self.manager.get_pod_group(pod)
            wait = wait_time_seconds(pg, self.schedule_timeout)
            self.manager.activate_siblings(pod, state)
            return Status(Code.WAIT), wait if wait != 0 else self.schedule_timeout
        group = full_name(pod)
        self.manager.clear_pod_group_schedule_failure(group)
        for waiting in self.handle.iterate_over_waiting_pods():
            if full_name(waiting.pod) == group:
                waiting.allow(NAME)
        return None, 0

    def _reject_waiting(self, namespace: str, group: str, message: str) -> None:
        for waiting in self.handle.iterate_over_waiting_pods():
            if waiting.pod.namespace == namespace and group_of(waiting.pod) == group:
                waiting.reject(NAME, message)


def _initial_attempt(qpi: QueuedPodInfo) -> float:
    """When the pod entered the queue, in Unix seconds (comparable with a group's
    creationTimestamp; the queue's own timestamps are on its monotonic clock)."""
    return qpi.first_seen
