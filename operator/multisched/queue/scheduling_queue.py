"""The scheduling queue: activeQ, backoffQ and the unschedulable pool (upstream semantics).

- activeQ is ordered by the queueSort plugin (all profiles share one, as upstream requires).
- A pod that failed waits in the unschedulable pool until a cluster event may help it
  (``move_all_to_active_or_backoff``), or 5 minutes pass; it then goes to backoffQ if
  its backoff (initial * 2^(attempts-1), capped) has not expired, else to activeQ.
- Queueing hints: an event moves only the pods that one of their rejecting plugins
  (``unschedulable_plugins``) registered for (``plugin_events``); a plugin the map does
  not know counts as registered for every event, as upstream treats plugins without
  EnqueueExtensions.
- PreEnqueue rejections (scheduling gates) park the pod in the pool, marked gated.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from enum import StrEnum

from multisched.cache import PodInfo
from multisched.framework.events import WILDCARD_EVENT, ClusterEvent, as_event
from multisched.framework.queued_pod import QueuedPodInfo


class QueueName(StrEnum):
    """Where a known pod is (the values are what ``/debug/queue`` and the metrics show)."""

    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    #: In the unschedulable pool, held back by a PreEnqueue plugin (scheduling gates).
    GATED = "gated"
    #: Popped, and not yet bound or requeued.
    IN_FLIGHT = "in-flight"


Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
#: Returns None when the pod may enter activeQ, else a message why it is gated.
PreEnqueue = Callable[[PodInfo], "str | None"]

UNSCHEDULABLE_MAX_STAY_SECONDS = 300.0

#: Upstream's labels of the moves the queue makes on its own (``framework/events.go``), and
#: of a pending pod's own add and update: ``queue_incoming_pods_total``'s ``event``.
UNSCHEDULED_POD_ADD = "UnscheduledPodAdd"
UNSCHEDULED_POD_UPDATE = "UnscheduledPodUpdate"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"


class _Ordered:
    """Heap entry ordering by the profile's queue-sort ``less``."""

    __slots__ = ("less", "qpi")

    def __init__(self, qpi: QueuedPodInfo, less: Less) -> None:
        self.qpi = qpi
        self.less = less

    def __lt__(self, other: _Ordered) -> bool:
        return self.less(self.qpi, other.qpi)


class PodNominator:
    """Nominated pods by node (``framework.PodNominator``)."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    def add_nominated_pod(self, pod: PodInfo, node_name: str) -> None:
        self.delete_nominated_pod(pod)
        if node_name:
            self._by_node.setdefault(node_name, {})[pod.uid] = pod
            self._node_of[pod.uid] = node_name

    def delete_nominated_pod(self, pod: PodInfo) -> None:
        node = self._node_of.pop(pod.uid, None)
        if node is not None:
            pods = self._by_node[node]
            pods.pop(pod.uid, None)
            if not pods:
                del self._by_node[node]

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        pods = self._by_node.get(node_name)
        return list(pods.values()) if pods else []

    def nominated_node(self, uid: str) -> str | None:
        return self._node_of.get(uid)

    def nominated_node_names(self) -> Collection[str]:
        return self._by_node.keys()

    def __bool__(self) -> bool:
        return bool(self._by_node)


class SchedulingQueue:
    def __init__(
        self,
        less: Less,
        pre_enqueue: PreEnqueue | None = None,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.less = less
        self.pre_enqueue = pre_enqueue
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.clock = clock
        self.nominator = PodNominator()
        #: Plugin name -> the cluster events it registered (set by the scheduler per config).
        self.plugin_events: Mapping[str, tuple[ClusterEvent, ...]] = {}
        self._active: list[_Ordered] = []
        self._backoff: list[tuple[float, int, QueuedPodInfo]] = []
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        #: Where each known pod is (never GATED: a gated pod is UNSCHEDULABLE, marked gated).
        self._where: dict[str, QueueName] = {}
        self._infos: dict[str, QueuedPodInfo] = {}
        self._seq = itertools.count()
        self._moved_since_pop: set[str] = set()
        self._wakeup = asyncio.Event() if _has_loop() else None
        self.closed = False
        #: Pods popped so far (upstream's ``SchedulingCycle``).
        self.scheduling_cycle = 0
        #: Pods that entered a queue, by (queue, event): one dict update per move, read on
        #: scrape (upstream ``queue_incoming_pods_total``).
        self.incoming: dict[tuple[str, str], int] = {}

    # -- adding ---------------------------------------------------------------------------

    def add(self, pod: PodInfo) -> None:
        """A new pending pod (or one whose spec changed) for this scheduler."""
        uid = pod.uid
        if uid in self._where:
            self.update(pod)
            return
        qpi = QueuedPodInfo(pod, self.clock())
        self._infos[uid] = qpi
        if pod.nominated_node_name:
            # Upstream ``PriorityQueue.Add``: a nomination the API shows (an earlier preemption,
            # maybe by another replica) holds room on that node for the pods behind it.
            self.nominator.add_nominated_pod(pod, pod.nominated_node_name)
        self._to_active_or_gated(qpi, UNSCHEDULED_POD_ADD)

    def _count_incoming(self, queue: QueueName, event: str) -> None:
        key = (queue.value, event)
        self.incoming[key] = self.incoming.get(key, 0) + 1

    def _to_active_or_gated(self, qpi: QueuedPodInfo, event: str) -> None:
        gate = self.pre_enqueue(qpi.pod) if self.pre_enqueue is not None else None
        uid = qpi.pod.uid
        if gate is not None:
            qpi.gated = True
            qpi.flushed = False  # a gated pod makes no attempt the flush could be credited with
            qpi.unschedulable_plugins = {gate}
            self._unschedulable[uid] = qpi
            if self._where.get(uid) != QueueName.UNSCHEDULABLE:  # not gated in place again
                self._count_incoming(QueueName.UNSCHEDULABLE, event)
            self._where[uid] = QueueName.UNSCHEDULABLE
            return
        qpi.gated = False
        now = qpi.timestamp = self.clock()
        if qpi.initial_attempt_timestamp is None:
            # Upstream starts the pod's scheduling SLI when it first enters activeQ.
            qpi.initial_attempt_timestamp = now
        heapq.heappush(self._active, _Ordered(qpi, self.less))
        self._where[uid] = QueueName.ACTIVE
        self._count_incoming(QueueName.ACTIVE, event)
        self._wake()

    def update(self, pod: PodInfo) -> None:
        uid = pod.uid
        qpi = self._infos.get(uid)
        if qpi is None:
            self.add(pod)
            return
        qpi.pod = pod
        where = self._where.get(uid)
        if where == QueueName.UNSCHEDULABLE:
            # The pod itself changed: it may fit now (upstream isPodUpdated).
            del self._unschedulable[uid]
            if qpi.gated or not self._backing_off(qpi):
                self._to_active_or_gated(qpi, UNSCHEDULED_POD_UPDATE)
            else:
                self._push_backoff(qpi, UNSCHEDULED_POD_UPDATE)
        elif where == QueueName.ACTIVE:
            heapq.heapify(self._active)

    def delete(self, uid: str) -> None:
        """The pod is gone, bound, or no longer ours; forget it everywhere."""
        where = self._where.pop(uid, None)
        qpi = self._infos.pop(uid, None)
        if qpi is not None:
            self.nominator.delete_nominated_pod(qpi.pod)
        # Heap entries of active and backoff pods are left behind and skipped when they
        # come up (``_current``): deleting is O(1), not a rebuild of the heap per pod.
        if where == QueueName.UNSCHEDULABLE:
            self._unschedulable.pop(uid, None)

    def _current(self, qpi: QueuedPodInfo, where: QueueName) -> bool:
        """A heap entry still stands for its pod (not deleted, nor deleted and re-added)."""
        uid = qpi.pod.uid
        return self._where.get(uid) == where and self._infos.get(uid) is qpi

    def delete_where(self, predicate: Callable[[QueuedPodInfo], bool]) -> int:
        """Forget every queued pod ``predicate`` selects (e.g. of a retired profile)."""
        doomed = [uid for uid, qpi in self._infos.items() if predicate(qpi)]
        for uid in doomed:
            self.delete(uid)
        return len(doomed)

    def __contains__(self, uid: str) -> bool:
        return uid in self._where

    # -- popping --------------------------------------------------------------------------

    def has_active(self) -> bool:
        """Whether activeQ may hold a pod to schedule now (stale entries count until popped)."""
        return bool(self._active)

    def pop_nowait(self) -> QueuedPodInfo | None:
        self.flush_backoff_completed()
        while self._active:
            qpi = heapq.heappop(self._active).qpi
            uid = qpi.pod.uid
            if not self._current(qpi, QueueName.ACTIVE):
                continue
            self._where[uid] = QueueName.IN_FLIGHT
            self._moved_since_pop.discard(uid)
            self.scheduling_cycle += 1
            qpi.attempts += 1
            return qpi
        return None

    async def pop(self) -> QueuedPodInfo:
        """Wait for the next pod; flushes backoffQ as pods' backoff expires."""
        while True:
            qpi = self.pop_nowait()
            if qpi is not None:
                return qpi
            if self._wakeup is None:
                self._wakeup = asyncio.Event()
            self._wakeup.clear()
            timeout = self._next_backoff_expiry()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    def _next_backoff_expiry(self) -> float | None:
        if not self._backoff:
            return None
        return max(0.0, self._backoff[0][0] - self.clock()) + 0.001

    # -- after a cycle --------------------------------------------------------------------

    def done(self, uid: str) -> None:
        """The pod was bound (or assumed and handed to binding): it leaves the queue."""
        self._where.pop(uid, None)
        self._infos.pop(uid, None)
        self._moved_since_pop.discard(uid)

    def add_unschedulable(
        self,
        qpi: QueuedPodInfo,
        plugins: set[str],
        error: bool = False,
        message: str | None = None,
    ) -> None:
        """Requeue after a failed attempt (``message``: what the attempt reported).

        Errors go straight to backoffQ. An unschedulable pod goes to the pool, unless a
        move request came while it was in flight (the event it waits for may already have
        happened), in which case it goes to backoffQ - as upstream's moveRequestCycle.
        """
        uid = qpi.pod.uid
        if self._where.get(uid) != QueueName.IN_FLIGHT:
            return  # deleted while in flight
        qpi.unschedulable_plugins = set(plugins)
        qpi.timestamp = self.clock()
        qpi.flushed = False
        if message is not None:
            qpi.message = message
        if error or uid in self._moved_since_pop:
            self._moved_since_pop.discard(uid)
            self._push_backoff(qpi, SCHEDULE_ATTEMPT_FAILURE)
        else:
            self._unschedulable[uid] = qpi
            self._where[uid] = QueueName.UNSCHEDULABLE
            self._count_incoming(QueueName.UNSCHEDULABLE, SCHEDULE_ATTEMPT_FAILURE)

    def _backoff_duration(self, qpi: QueuedPodInfo) -> float:
        duration = self.initial_backoff
        for _ in range(1, qpi.attempts):
            duration *= 2
            if duration >= self.max_backoff:
                return self.max_backoff
        return min(duration, self.max_backoff)

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        return qpi.timestamp + self._backoff_duration(qpi)

    def _backing_off(self, qpi: QueuedPodInfo) -> bool:
        return qpi.attempts > 0 and self.backoff_expiry(qpi) > self.clock()

    def _push_backoff(self, qpi: QueuedPodInfo, event: str) -> None:
        heapq.heappush(self._backoff, (self.backoff_expiry(qpi), next(self._seq), qpi))
        self._where[qpi.pod.uid] = QueueName.BACKOFF
        self._count_incoming(QueueName.BACKOFF, event)
        self._wake()

    def flush_backoff_completed(self) -> None:
        now = self.clock()
        while self._backoff and self._backoff[0][0] <= now:
            _, _, qpi = heapq.heappop(self._backoff)
            if self._current(qpi, QueueName.BACKOFF):
                self._to_active_or_gated(qpi, BACKOFF_COMPLETE)

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent | str = WILDCARD_EVENT,
        only: Callable[[QueuedPodInfo], bool] | None = None,
    ) -> int:
        """A cluster event happened: pooled pods it may help go to activeQ or backoffQ.

        ``event`` may be an upstream label ("NodeAdd", "AssignedPodDelete"); an unknown
        label moves every pod. ``only`` narrows the candidates first (upstream's
        AssignedPodAdded considers only pods with an affinity term matching the new pod).
        """
        event = as_event(event)
        for uid, where in self._where.items():
            if where == QueueName.IN_FLIGHT:
                self._moved_since_pop.add(uid)
        if event.is_wildcard() and only is None:
            moved = list(self._unschedulable.values())
            self._unschedulable.clear()
        else:
            moved = [
                q
                for q in self._unschedulable.values()
                if (only is None or only(q)) and self._worth_requeuing(q, event)
            ]
            for qpi in moved:
                del self._unschedulable[qpi.pod.uid]
        now = time.time()
        for qpi in moved:
            qpi.woken_by, qpi.woken_at = event.label, now
            if qpi.gated or not self._backing_off(qpi):
                self._to_active_or_gated(qpi, event.label)
            else:
                self._push_backoff(qpi, event.label)
        return len(moved)

    def activate(self, uids: Iterable[str]) -> int:
        """Move these pods to activeQ now, backoff or not (upstream ``Activate``, used by
        plugins through ``PodsToActivate``: a gang's siblings, once one of them is placed).
        Gated and in-flight pods stay where they are; an in-flight one will go to backoffQ
        rather than the pool when its attempt fails."""
        moved = 0
        wall = time.time()
        for uid in uids:
            where = self._where.get(uid)
            qpi = self._infos.get(uid)
            if qpi is None or qpi.gated:
                continue
            if where == QueueName.IN_FLIGHT:
                self._moved_since_pop.add(uid)
                continue
            if where == QueueName.UNSCHEDULABLE:
                del self._unschedulable[uid]
            elif where != QueueName.BACKOFF:
                continue  # active already
            qpi.woken_by, qpi.woken_at = FORCE_ACTIVATE, wall
            self._to_active_or_gated(qpi, FORCE_ACTIVATE)
            moved += 1
        return moved

    def _worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
        """Whether a plugin that rejected the pod registered for ``event``."""
        if event.is_wildcard() or not qpi.unschedulable_plugins:
            return True  # failed for no plugin's reason (an error): any event may help
        for plugin in qpi.unschedulable_plugins:
            registered = self.plugin_events.get(plugin)
            if registered is None:
                return True
            for reg in registered:
                if reg.matches(event):
                    return True
        return False

    def flush_unschedulable_left_over(self) -> int:
        """Pods that waited in the pool longer than 5 minutes get another try."""
        now = self.clock()
        stale = [
            q
            for q in self._unschedulable.values()
            if not q.gated and now - q.timestamp > UNSCHEDULABLE_MAX_STAY_SECONDS
        ]
        wall = time.time()
        for qpi in stale:
            qpi.woken_by, qpi.woken_at = UNSCHEDULABLE_TIMEOUT, wall
            qpi.flushed = True
            del self._unschedulable[qpi.pod.uid]
            if self._backing_off(qpi):
                self._push_backoff(qpi, UNSCHEDULABLE_TIMEOUT)
            else:
                self._to_active_or_gated(qpi, UNSCHEDULABLE_TIMEOUT)
        return len(stale)

    # -- introspection (metrics, simulate) ------------------------------------------------

    def pending_counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(
            (QueueName.ACTIVE, QueueName.BACKOFF, QueueName.UNSCHEDULABLE, QueueName.GATED), 0
        )
        for uid, where in self._where.items():
            if where == QueueName.UNSCHEDULABLE and self._infos[uid].gated:
                counts[QueueName.GATED] += 1
            elif where in counts:
                counts[where] += 1
        return counts

    def unschedulable_reasons(self) -> dict[tuple[str, str], int]:
        """Queued pods (not in flight) by a plugin that rejected or gates them and their
        profile: a pod counts once per such plugin (upstream ``unschedulable_pods``)."""
        counts: dict[tuple[str, str], int] = {}
        infos = self._infos
        for uid, where in self._where.items():
            if where == QueueName.IN_FLIGHT:
                continue
            qpi = infos[uid]
            for plugin in qpi.unschedulable_plugins:
                key = (plugin, qpi.pod.scheduler_name)
                counts[key] = counts.get(key, 0) + 1
        return counts

    def has_unschedulable(self) -> bool:
        return bool(self._unschedulable)

    def unschedulable_pods(self) -> Iterator[QueuedPodInfo]:
        return iter(list(self._unschedulable.values()))

    def entries(self) -> Iterator[tuple[QueueName, QueuedPodInfo]]:
        """Every known pod with where it is: active, backoff, unschedulable, gated or
        in-flight (``/debug/queue``)."""
        for uid, where in list(self._where.items()):
            qpi = self._infos[uid]
            gated = where == QueueName.UNSCHEDULABLE and qpi.gated
            yield (QueueName.GATED if gated else where), qpi

    def waits_for(self, qpi: QueuedPodInfo) -> list[str]:
        """The cluster events that would move the pod out of the unschedulable pool: those
        its rejecting plugins registered (``["*"]``: any event)."""
        labels: dict[str, None] = {}
        for plugin in sorted(qpi.unschedulable_plugins):
            registered = self.plugin_events.get(plugin)
            if registered is None:
                return ["*"]
            for reg in registered:
                if reg.is_wildcard():
                    return ["*"]
                labels.setdefault(reg.label)
        return list(labels) if labels else ["*"]

    def info(self, uid: str) -> QueuedPodInfo | None:
        return self._infos.get(uid)

    def where(self, uid: str) -> QueueName | None:
        return self._where.get(uid)


def _has_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
