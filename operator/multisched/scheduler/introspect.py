"""What the engine shows of its live state, read-only: ``EngineView`` (the queue's and the
cache's counts, the pods queued and the cache against a listing, for the operator's metrics,
``/debug/queue``, ``/debug/cache`` and group status), and one line each on what a gang is
waiting for and how much of a quota is used (``explain``, ``/debug/queue``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from multisched.cache import Cache, DraStore, GroupStore, PodInfo, Resource, VolumeStore
from multisched.cache.comparer import CacheDiff, compare
from multisched.cache.groups import group_of
from multisched.cache.resources import format_amount
from multisched.framework import QueuedPodInfo
from multisched.queue import QueueName, SchedulingQueue

from .scheduler import Scheduler

__all__ = ["QUEUE_NAMES", "CacheDiff", "EngineView", "gang_line", "quota_line"]

#: Where a pending pod can be, in the order ``/debug/queue`` lists the counts.
QUEUE_NAMES: tuple[str, ...] = tuple(QueueName)


class EngineView:
    """The engine's queue and cache as its operator reads them: nothing here changes them,
    and nothing is recomputed (``of`` a Scheduler; tests build one from a bare queue)."""

    __slots__ = ("_cache", "_queue")

    def __init__(self, queue: SchedulingQueue, cache: Cache) -> None:
        self._queue = queue
        self._cache = cache

    @classmethod
    def of(cls, scheduler: Scheduler) -> EngineView:
        return cls(scheduler.queue, scheduler.cache)

    # -- the queue ------------------------------------------------------------------------

    def pending_counts(self) -> dict[str, int]:
        """Pods per queue (``scheduler_pending_pods``)."""
        return self._queue.pending_counts()

    def incoming(self) -> Mapping[tuple[str, str], int]:
        """(queue, event) -> pods moved there (``scheduler_queue_incoming_pods``)."""
        return self._queue.incoming

    def in_flight_events(self) -> Mapping[str, int]:
        """Event label -> events kept for pods in flight (``scheduler_inflight_events``)."""
        return self._queue.in_flight_events

    def unschedulable_reasons(self) -> dict[tuple[str, str], int]:
        """(plugin, profile) -> pods it rejected (``scheduler_unschedulable_pods``)."""
        return self._queue.unschedulable_reasons()

    def queued_pods(self) -> Iterator[tuple[str, QueuedPodInfo]]:
        """Every pod the queue knows, with the queue it is in."""
        return self._queue.entries()

    def waits_for(self, qpi: QueuedPodInfo) -> list[str]:
        """The events that would move a pooled pod (or the gates holding it)."""
        return self._queue.waits_for(qpi)

    def backoff_remaining(self, qpi: QueuedPodInfo) -> float:
        return max(0.0, self._queue.backoff_expiry(qpi) - self._queue.clock())

    def nominated_node(self, uid: str) -> str | None:
        return self._queue.nominator.nominated_node(uid)

    def has_active(self) -> bool:
        return self._queue.has_active()

    def pods_popped(self) -> int:
        """How many pods the loop has taken from activeQ (it moves when the loop works)."""
        return self._queue.scheduling_cycle

    def pods_in_flight(self) -> int:
        """Pods popped and not yet bound or requeued (their binding cycles included)."""
        return self._queue.in_flight_count()

    # -- the cache ------------------------------------------------------------------------

    def cache_sizes(self) -> dict[str, int]:
        """Nodes, pods and assumed pods (``scheduler_cache_size``)."""
        return self._cache.sizes()

    def cached_pod(self, key: str) -> tuple[str, bool] | None:
        """The node a pod (namespace/name) is on in the cache, and whether it is only
        assumed there; None for a pod the cache does not hold."""
        for cached in self._cache.pods():
            if cached.key == key:
                return cached.node_name, self._cache.is_assumed(cached.uid)
        return None

    def compare(self, nodes: set[str], pods: Mapping[str, tuple[str, str]]) -> CacheDiff:
        """The cache against listed Node names and assigned pods (uid -> key, nodeName)."""
        return compare(self._cache, nodes, pods)

    @property
    def groups(self) -> GroupStore:
        """The PodGroups and ElasticQuotas the cache holds, and their members."""
        return self._cache.groups

    @property
    def volumes(self) -> VolumeStore:
        """The PersistentVolumes, claims, StorageClasses and CSI objects the cache holds."""
        return self._cache.volumes

    @property
    def dra(self) -> DraStore:
        """The DeviceClasses, ResourceClaims, templates and ResourceSlices the cache holds."""
        return self._cache.dra


def gang_line(scheduler: Scheduler, pod: PodInfo) -> str | None:
    """``gang team-a/train: 5 of 8 assumed, waiting at Permit, 41 s left``; None for a
    pod in no group."""
    group = group_of(pod)
    if not group:
        return None
    name = f"{pod.namespace}/{group}"
    groups = scheduler.cache.groups
    obj = groups.pod_group(pod.namespace, group)
    if obj is None:
        return f"gang {name}: no such PodGroup"
    min_member = (obj.get("spec") or {}).get("minMember") or 0
    members = groups.members(pod.namespace, group)
    placed = sum(1 for m in members if scheduler.cache.get_pod(m.uid) is not None)
    held = [
        w
        for _, w in scheduler.held_at_permit()
        if w.pod.namespace == pod.namespace and group_of(w.pod) == group
    ]
    if held:
        left = min(w.seconds_left() for w in held)
        return (
            f"gang {name}: {placed} of {min_member} assumed, waiting at Permit, {left:.0f} s left"
        )
    return f"gang {name}: {placed} of {min_member} assumed or bound, {len(members)} pods exist"


def quota_line(scheduler: Scheduler, namespace: str) -> str | None:
    """``quota team-a/q: cpu 3 used (min 2, max 4)``: what the namespace's pods on nodes
    request against its ElasticQuota; None without one."""
    quota = scheduler.cache.groups.quota_for(namespace)
    if quota is None:
        return None
    spec = quota.get("spec") or {}
    try:
        least, most = Resource.from_list(spec.get("min")), Resource.from_list(spec.get("max"))
    except ValueError as exc:
        return f"quota {namespace}: unreadable ({exc})"
    used = scheduler.cache.snapshot.namespace_requests(namespace)
    names = sorted({*(spec.get("min") or {}), *(spec.get("max") or {})})
    parts = []
    for res in names:
        bounds = [
            f"{word} {format_amount(res, r.get(res))}"
            for word, r, given in (("min", least, spec.get("min")), ("max", most, spec.get("max")))
            if res in (given or {})
        ]
        parts.append(f"{res} {format_amount(res, used.get(res))} used ({', '.join(bounds)})")
    name = (quota.get("metadata") or {}).get("name")
    return f"quota {namespace}/{name}: " + "; ".join(parts)
