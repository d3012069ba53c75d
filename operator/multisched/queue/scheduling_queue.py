"""The scheduling queue: activeQ, backoffQ and the unschedulable pool (upstream semantics).

- activeQ is ordered by the queueSort plugin (all profiles share one, as upstream requires).
- A pod that failed waits in the unschedulable pool until a cluster event may help it
  (``move_all_to_active_or_backoff``), or 5 minutes pass; it then goes to backoffQ if
  its backoff (initial * 2^(attempts-1), capped) has not expired, else to activeQ.
- Queueing hints (upstream ``isPodWorthRequeuing``): an event moves a pooled pod only if
  one of its rejecting plugins (``unschedulable_plugins``) registered a matching event and
  that registration's hint says QUEUE for the event's old and new objects (a registration
  without a hint always does; a plugin the maps do not know counts as registered for
  every event, as upstream treats plugins without EnqueueExtensions).
- In-flight events: events that happen while a pod is being scheduled are kept until its
  attempt ends, and its failure is checked against them (``determineSchedulingHintForInFlightPod``).
- Pop from backoffQ (upstream's SchedulerPopFromBackoffQ): when activeQ is empty, ``pop``
  takes the pod next to complete its backoff at once rather than waiting (errors excepted).
- PreEnqueue rejections (scheduling gates) park the pod in the pool, marked gated.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from enum import StrEnum
from typing import Any

from multisched.cache import PodInfo
from multisched.framework.events import (
    ALL,
    UNSCHEDULABLE_TIMEOUT_EVENT,
    WILDCARD,
    WILDCARD_EVENT,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintFn,
    as_event,
)
from multisched.framework.queued_pod import QueuedPodInfo

log = logging.getLogger(__name__)


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
#: backoffQ's ordering window (upstream ``backoffQOrderingWindowDuration``): backoff expiries
#: are truncated to whole windows, a window completes as a whole, and within one the pods
#: are ordered as activeQ orders them - so popping from backoffQ takes the likeliest pod.
BACKOFF_ORDERING_WINDOW = 1.0

#: Upstream's labels of the moves the queue makes on its own (``framework/events.go``), and
#: of a pending pod's own add and update: ``queue_incoming_pods_total``'s ``event``.
UNSCHEDULED_POD_ADD = "UnscheduledPodAdd"
UNSCHEDULED_POD_UPDATE = "UnscheduledPodUpdate"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = UNSCHEDULABLE_TIMEOUT_EVENT.label
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
#: A pod activated while in flight: a wildcard for that pod only (its ``new`` object).
FORCE_ACTIVATE_EVENT = ClusterEvent(WILDCARD, ALL, FORCE_ACTIVATE)

#: Plugin, event label, hint ("Queue", "QueueSkip", "Error"), seconds (upstream
#: ``queueing_hint_execution_duration_seconds``).
HintObserver = Callable[[str, str, str, float], None]
#: Profile -> plugin -> its registrations (``Framework.plugin_hints``).
QueueingHintMap = Mapping[str, Mapping[str, tuple[ClusterEventWithHint, ...]]]
#: The hints a plugin's registrations give for one event: None means "requeue" (no hint).
_Matched = tuple["QueueingHintFn | None", ...]


class _Ordered:
    """Heap entry ordering by the profile's queue-sort ``less``."""

    __slots__ = ("less", "qpi")

    def __init__(self, qpi: QueuedPodInfo, less: Less) -> None:
        self.qpi = qpi
        self.less = less

    def __lt__(self, other: _Ordered) -> bool:
        return self.less(self.qpi, other.qpi)


class _Backoff:
    """backoffQ entry: by window of backoff expiry, then as activeQ orders pods
    (upstream ``lessBackoffCompletedWithPriority``), then first in first out."""

    __slots__ = ("expiry", "less", "qpi", "seq")

    def __init__(self, expiry: float, seq: int, qpi: QueuedPodInfo, less: Less) -> None:
        self.expiry = expiry
        self.seq = seq
        self.qpi = qpi
        self.less = less

    def __lt__(self, other: _Backoff) -> bool:
        if self.expiry != other.expiry:
            return self.expiry < other.expiry
        if self.less(self.qpi, other.qpi):
            return True
        return not self.less(other.qpi, self.qpi) and self.seq < other.seq


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

    def update_nominated_pod(self, old: PodInfo, new: PodInfo) -> None:
        """Upstream ``UpdateNominatedPod``: the record follows the pod's status (its
        nomination added, changed or removed) and holds its latest object. A nomination
        made in memory that the API does not show yet is kept while neither object names
        one."""
        node = new.nominated_node_name
        if not node and not old.nominated_node_name:
            node = self._node_of.get(old.uid, "")
        self.add_nominated_pod(new, node)

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
        backoff_ordering_window: float = BACKOFF_ORDERING_WINDOW,
    ) -> None:
        self.less = less
        self.pre_enqueue = pre_enqueue
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.clock = clock
        #: 0: no windows (exact expiries, ordered by expiry alone).
        self._window = backoff_ordering_window
        self.nominator = PodNominator()
        self._plugin_events: Mapping[str, tuple[ClusterEvent, ...]] = {}
        self._queueing_hints: QueueingHintMap = {}
        #: (resource, action) -> profile -> plugin -> the matching registrations' hints
        #: (None: the plugin is unknown, any event may help), filled as pods ask: a pod's
        #: check allocates nothing. Dropped when the maps change.
        self._matched: dict[tuple[str, int], dict[str, dict[str, _Matched | None]]] = {}
        #: (resource, action) -> whether any registration matches it (``_of_interest``).
        self._interest: dict[tuple[str, int], bool] = {}
        #: Gated pod uid -> the PreEnqueue plugin holding it (upstream ``GatingPlugin``).
        self._gating: dict[str, str] = {}
        self.hint_observer: HintObserver | None = None
        self._hint_errors_logged: set[tuple[str, str]] = set()
        self._active: list[_Ordered] = []
        #: Pods backing off after being unschedulable, and after an error (upstream's
        #: podBackoffQ and podErrorBackoffQ; only the former is popped when activeQ is empty).
        self._backoff: list[_Backoff] = []
        self._error_backoff: list[tuple[float, int, QueuedPodInfo]] = []
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        #: Where each known pod is (never GATED: a gated pod is UNSCHEDULABLE, marked gated).
        self._where: dict[str, QueueName] = {}
        self._infos: dict[str, QueuedPodInfo] = {}
        self._seq = itertools.count()
        #: Events since the oldest in-flight pod was popped (upstream ``inFlightEvents``):
        #: (event, old, new); ``_log_base`` is the absolute index of its first entry.
        self._in_flight_log: deque[tuple[ClusterEvent, Any, Any]] = deque()
        self._log_base = 0
        #: In-flight pod uid -> the absolute log index of its pop (upstream ``inFlightPods``).
        self._in_flight_from: dict[str, int] = {}
        #: Event label -> events the log holds (upstream ``scheduler_inflight_events``).
        self.in_flight_events: dict[str, int] = {}
        self._wakeup = asyncio.Event() if _has_loop() else None
        self.closed = False
        #: Pods popped so far (upstream's ``SchedulingCycle``).
        self.scheduling_cycle = 0
        #: Pods that entered a queue, by (queue, event): one dict update per move, read on
        #: scrape (upstream ``queue_incoming_pods_total``).
        self.incoming: dict[tuple[str, str], int] = {}

    # -- what plugins wait for --------------------------------------------------------------

    @property
    def plugin_events(self) -> Mapping[str, tuple[ClusterEvent, ...]]:
        """Plugin name -> the cluster events it registered, across profiles (for profiles
        without ``queueing_hints``, and ``waits_for``)."""
        return self._plugin_events

    @plugin_events.setter
    def plugin_events(self, events: Mapping[str, tuple[ClusterEvent, ...]]) -> None:
        self._plugin_events = events
        self._matched.clear()
        self._interest.clear()

    @property
    def queueing_hints(self) -> QueueingHintMap:
        """Profile -> plugin -> its registrations with their hints (upstream
        ``queueingHintMap``), set by the scheduler per configuration."""
        return self._queueing_hints

    @queueing_hints.setter
    def queueing_hints(self, hints: QueueingHintMap) -> None:
        self._queueing_hints = hints
        self._matched.clear()
        self._interest.clear()

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

    def order_as_listed(self, keys: Collection[str]) -> int:
        """Before the first pop: the pods of the first listing (``namespace/name`` keys) take
        the order the API server lists them in, by key, as kube-scheduler's informer hands
        them to its queue. kopf hands them over in its own order, and among pods of one
        priority activeQ goes by arrival. They swap their arrival stamps, nothing else (so
        priority still comes first, and pods that came later stay behind). Returns how many
        were reordered."""
        if self.scheduling_cycle or not keys:
            return 0
        listed = [e.qpi for e in self._active if e.qpi.pod.key in keys]
        stamps = sorted(qpi.timestamp for qpi in listed)
        for qpi, stamp in zip(sorted(listed, key=lambda q: q.pod.key), stamps, strict=True):
            qpi.timestamp = stamp
        heapq.heapify(self._active)
        return len(listed)

    def _count_incoming(self, queue: QueueName, event: str) -> None:
        key = (queue.value, event)
        self.incoming[key] = self.incoming.get(key, 0) + 1

    def _gated(self, qpi: QueuedPodInfo, event: str) -> bool:
        """PreEnqueue: a pod a plugin holds back waits in the pool, gated (True)."""
        gate = self.pre_enqueue(qpi.pod) if self.pre_enqueue is not None else None
        uid = qpi.pod.uid
        if gate is None:
            qpi.gated = False
            self._gating.pop(uid, None)
            return False
        qpi.gated = True
        qpi.flushed = False  # a gated pod makes no attempt the flush could be credited with
        # Upstream adds the gate to the rejecting plugins: an async preemptor waits for
        # what its filters' hints say, once its gate's events come.
        qpi.unschedulable_plugins = {*qpi.unschedulable_plugins, gate}
        self._gating[uid] = gate
        self._unschedulable[uid] = qpi
        if self._where.get(uid) != QueueName.UNSCHEDULABLE:  # not gated in place again
            self._count_incoming(QueueName.UNSCHEDULABLE, event)
        self._where[uid] = QueueName.UNSCHEDULABLE
        return True

    def _to_active_or_gated(self, qpi: QueuedPodInfo, event: str, pre_enqueue: bool = True) -> None:
        """``pre_enqueue=False``: the pod comes from backoffQ, whose entry ran PreEnqueue
        (upstream's moveToActiveQ with SchedulerPopFromBackoffQ)."""
        if pre_enqueue and self._gated(qpi, event):
            return
        uid = qpi.pod.uid
        # The timestamp stays that of its arrival or its last failed attempt (upstream's
        # moveToActiveQ does not touch it): a retried pod keeps its place among its peers.
        if qpi.initial_attempt_timestamp is None:
            # Upstream starts the pod's scheduling SLI when it first enters activeQ.
            qpi.initial_attempt_timestamp = self.clock()
        heapq.heappush(self._active, _Ordered(qpi, self.less))
        self._where[uid] = QueueName.ACTIVE
        self._count_incoming(QueueName.ACTIVE, event)
        self._wake()

    def update(self, pod: PodInfo, events: Iterable[ClusterEvent] | None = None) -> None:
        """The pending pod changed (upstream ``Update``). ``events``: what changed (v1.37
        ``PodSchedulingPropertiesChange``); a pooled pod then moves only if its rejecting
        plugins' hints say one of them may help. Without them, or for a gated pod (PreEnqueue
        decides again), any change moves it."""
        uid = pod.uid
        old = self.update_status(pod)
        if old is None:
            self.add(pod)
            return
        qpi = self._infos[uid]
        where = self._where.get(uid)
        if where == QueueName.IN_FLIGHT and events is not None:
            for event in events:  # its failure will be checked against its own change
                self._record_in_flight(event, old, pod)
        elif where == QueueName.UNSCHEDULABLE:
            label = UNSCHEDULED_POD_UPDATE
            if events is not None and not qpi.gated:
                label = next(
                    (e.label for e in events if self._worth_requeuing(qpi, e, old, pod)), ""
                )
                if not label:
                    return  # no rejecting plugin's hint says the change may help
            del self._unschedulable[uid]
            if not self._backing_off(qpi):
                self._to_active_or_gated(qpi, label)
            else:
                self._push_backoff(qpi, label)
        elif where == QueueName.ACTIVE:
            heapq.heapify(self._active)

    def update_status(self, pod: PodInfo) -> PodInfo | None:
        """Only the pending pod's status changed: it keeps its place, is read from ``pod``
        from now on, and its nomination follows (not while in flight, as upstream).
        Returns the object it replaced (None: not queued)."""
        qpi = self._infos.get(pod.uid)
        if qpi is None:
            return None
        old, qpi.pod = qpi.pod, pod
        if self._where.get(pod.uid) != QueueName.IN_FLIGHT:
            self.nominator.update_nominated_pod(old, pod)
        return old

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
        elif where == QueueName.IN_FLIGHT:
            self._end_in_flight(uid)
        self._gating.pop(uid, None)

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

    def in_flight_count(self) -> int:
        """Pods popped whose attempt has not ended: in their scheduling cycle, or in their
        binding cycle (at Permit, in PreBind, or being bound)."""
        return len(self._in_flight_from)

    def pop_nowait(self, from_backoff: bool = False) -> QueuedPodInfo | None:
        """The head of activeQ, or None. ``from_backoff``: when activeQ is empty, the head
        of backoffQ instead (what ``pop`` does; drivers that step pods on a still clock
        leave pods backing off where they are)."""
        self.flush_backoff_completed()
        while self._active:
            qpi = heapq.heappop(self._active).qpi
            if not self._current(qpi, QueueName.ACTIVE):
                continue
            return self._start_in_flight(qpi)
        return self._pop_from_backoff() if from_backoff else None

    def _start_in_flight(self, qpi: QueuedPodInfo) -> QueuedPodInfo:
        uid = qpi.pod.uid
        self._where[uid] = QueueName.IN_FLIGHT
        # Re-inserted at the end: the dict stays ordered by start, oldest first.
        self._in_flight_from.pop(uid, None)
        self._in_flight_from[uid] = self._log_base + len(self._in_flight_log)
        self.scheduling_cycle += 1
        qpi.attempts += 1
        return qpi

    def _pop_from_backoff(self) -> QueuedPodInfo | None:
        """activeQ is empty: the pod closest to completing its backoff goes now rather
        than leaving the scheduler idle (upstream ``PopFromBackoffQ``). A gated pod is
        left to PreEnqueue's verdict, as activeQ would."""
        while self._backoff:
            qpi = heapq.heappop(self._backoff).qpi
            if not self._current(qpi, QueueName.BACKOFF):
                continue
            self._to_active_or_gated(qpi, POP_FROM_BACKOFF_Q, pre_enqueue=False)
            heapq.heappop(self._active)  # the entry just pushed onto the empty activeQ
            return self._start_in_flight(qpi)
        return None

    async def pop(self) -> QueuedPodInfo:
        """Wait for the next pod: activeQ's head, else backoffQ's (upstream
        ``PopFromBackoffQ``), else the first pod an event or a completed backoff brings."""
        while True:
            qpi = self.pop_nowait(from_backoff=True)
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
        """Seconds until the next backoff completes (a window completes at its end)."""
        heads = [self._error_backoff[0][0]] if self._error_backoff else []
        if self._backoff:
            heads.append(self._backoff[0].expiry)
        if not heads:
            return None
        return max(0.0, min(heads) + self._window - self.clock()) + 0.001

    # -- after a cycle --------------------------------------------------------------------

    def done(self, uid: str) -> None:
        """The pod was bound (or assumed and handed to binding): it leaves the queue."""
        self._where.pop(uid, None)
        self._infos.pop(uid, None)
        self._end_in_flight(uid)

    def _record_in_flight(self, event: ClusterEvent, old: Any, new: Any) -> None:
        """Keep an event for the pods in flight (upstream ``addEventIfAnyInFlight``)."""
        if self._in_flight_from:
            self._in_flight_log.append((event, old, new))
            label = event.label
            self.in_flight_events[label] = self.in_flight_events.get(label, 0) + 1

    def _end_in_flight(self, uid: str) -> None:
        """The pod's attempt ended: drop the events no in-flight pod still needs."""
        if self._in_flight_from.pop(uid, None) is None:
            return
        log, counts = self._in_flight_log, self.in_flight_events
        if not self._in_flight_from:
            self._log_base += len(log)
            log.clear()
            counts.clear()
            return
        # The first entry started first (insertion order): no scan of every pod in flight,
        # which gangs held at Permit can make many.
        oldest = next(iter(self._in_flight_from.values()))
        while self._log_base < oldest:
            label = log.popleft()[0].label
            counts[label] -= 1
            if not counts[label]:
                del counts[label]
            self._log_base += 1

    def _in_flight_hint(self, qpi: QueuedPodInfo) -> bool:
        """Whether an event that happened during the pod's attempt may make it schedulable
        (upstream ``determineSchedulingHintForInFlightPod``; a pod no plugin rejected
        goes to the error backoffQ without asking, ``add_unschedulable``)."""
        start = self._in_flight_from.get(qpi.pod.uid)
        if start is None:
            return False
        log = self._in_flight_log
        for i in range(start - self._log_base, len(log)):
            event, old, new = log[i]
            if self._worth_requeuing(qpi, event, old, new):
                return True
        return False

    def add_unschedulable(
        self,
        qpi: QueuedPodInfo,
        plugins: set[str],
        error: bool = False,
        message: str | None = None,
    ) -> None:
        """Requeue after a failed attempt (``message``: what the attempt reported).

        Errors go straight to backoffQ. An unschedulable pod goes to the pool, unless an
        event that happened while it was in flight may make it schedulable (its rejecting
        plugins' hints say QUEUE), in which case it goes to backoffQ.
        """
        uid = qpi.pod.uid
        if self._where.get(uid) != QueueName.IN_FLIGHT:
            self._end_in_flight(uid)
            return  # deleted while in flight
        qpi.unschedulable_plugins = set(plugins)
        if plugins:
            qpi.unschedulable_count += 1
            qpi.consecutive_errors_count = 0
        else:  # no plugin's verdict: something unusual (an API error, no node at all)
            qpi.consecutive_errors_count += 1
        qpi.timestamp = self.clock()
        qpi.flushed = False
        qpi.flush_timestamp = 0.0
        if message is not None:
            qpi.message = message
        # An error, or no plugin's verdict: upstream's error backoffQ, which pops never
        # take early, whatever happened during the attempt.
        error = error or not plugins
        requeue = not error and self._in_flight_hint(qpi)
        self._end_in_flight(uid)
        if error:
            self._push_backoff(qpi, SCHEDULE_ATTEMPT_FAILURE, error=True)
        elif requeue:
            self._push_backoff(qpi, SCHEDULE_ATTEMPT_FAILURE)
        else:
            self._unschedulable[uid] = qpi
            self._where[uid] = QueueName.UNSCHEDULABLE
            self._count_incoming(QueueName.UNSCHEDULABLE, SCHEDULE_ATTEMPT_FAILURE)

    def _backoff_duration(self, qpi: QueuedPodInfo) -> float:
        """Upstream ``getBackoffTime``: doubled per consecutive error while there are any,
        else per failed attempt a plugin rejected."""
        count = qpi.consecutive_errors_count or qpi.unschedulable_count
        duration = self.initial_backoff
        for _ in range(1, count):
            duration *= 2
            if duration >= self.max_backoff:
                return self.max_backoff
        return min(duration, self.max_backoff)

    def _align(self, t: float) -> float:
        """The start of ``t``'s ordering window."""
        w = self._window
        return math.floor(t / w) * w if w > 0 else t

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        """When the pod's backoff completes: the window its expiry falls in ends (upstream
        truncates the expiry to its window and completes the window as a whole)."""
        expiry = self._align(qpi.timestamp + self._backoff_duration(qpi))
        return expiry + self._window

    def _backing_off(self, qpi: QueuedPodInfo) -> bool:
        failed = qpi.unschedulable_count or qpi.consecutive_errors_count
        return failed > 0 and self.backoff_expiry(qpi) > self.clock()

    def _push_backoff(self, qpi: QueuedPodInfo, event: str, error: bool = False) -> None:
        """PreEnqueue runs on the way in (upstream's moveToBackoffQ with
        SchedulerPopFromBackoffQ): a gated pod waits in the pool instead, and the way out
        runs none."""
        if self._gated(qpi, event):
            return
        expiry = self._align(qpi.timestamp + self._backoff_duration(qpi))
        if error:
            heapq.heappush(self._error_backoff, (expiry, next(self._seq), qpi))
        else:
            heapq.heappush(self._backoff, _Backoff(expiry, next(self._seq), qpi, self.less))
        self._where[qpi.pod.uid] = QueueName.BACKOFF
        self._count_incoming(QueueName.BACKOFF, event)
        self._wake()

    def flush_backoff_completed(self) -> None:
        """Move the pods of every completed window to activeQ (upstream flushes once per
        window, aligned with them)."""
        done_before = self._align(self.clock()) - self._window
        backoff, errors = self._backoff, self._error_backoff
        while errors and errors[0][0] <= done_before:
            qpi = heapq.heappop(errors)[2]
            if self._current(qpi, QueueName.BACKOFF):
                self._to_active_or_gated(qpi, BACKOFF_COMPLETE, pre_enqueue=False)
        while backoff and backoff[0].expiry <= done_before:
            qpi = heapq.heappop(backoff).qpi
            if self._current(qpi, QueueName.BACKOFF):
                self._to_active_or_gated(qpi, BACKOFF_COMPLETE, pre_enqueue=False)

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent | str = WILDCARD_EVENT,
        only: Callable[[QueuedPodInfo], bool] | None = None,
        old: Any = None,
        new: Any = None,
    ) -> int:
        """A cluster event happened: pooled pods it may help go to activeQ or backoffQ
        (upstream ``MoveAllToActiveOrBackoffQueue``).

        ``event`` may be an upstream label ("NodeAdd", "AssignedPodDelete"); an unknown
        label moves every pod. ``old``/``new``: the changed object before and after, for
        the hints (None for an add's old, a delete's new). ``only`` narrows the candidates
        first (upstream's PreEnqueueCheck). Pods in flight see the event when their
        attempt fails.
        """
        event = as_event(event)
        if not self._of_interest(event):
            return 0  # no plugin registered it: neither the pool nor the pods in flight care
        self._record_in_flight(event, old, new)
        if event.is_wildcard() and only is None and new is None:
            moved = list(self._unschedulable.values())
            self._unschedulable.clear()
        else:
            moved = [
                q
                for q in self._unschedulable.values()
                if (only is None or only(q)) and self._worth_requeuing(q, event, old, new)
            ]
            for qpi in moved:
                del self._unschedulable[qpi.pod.uid]
        now = time.time()
        for qpi in moved:
            qpi.woken_by, qpi.woken_at = event.label, now
            if not self._backing_off(qpi):
                self._to_active_or_gated(qpi, event.label)
            else:
                self._push_backoff(qpi, event.label)
        return len(moved)

    def activate(self, uids: Iterable[str]) -> int:
        """Move these pods to activeQ now, backoff or not (upstream ``Activate``, used by
        plugins through ``PodsToActivate``: a gang's siblings, once one of them is placed).
        A gated pod goes through PreEnqueue again (a preemptor whose victims' deletes
        failed is let go); in-flight pods stay where they are, and go to backoffQ rather
        than the pool when their attempt fails."""
        moved = 0
        wall = time.time()
        for uid in uids:
            where = self._where.get(uid)
            qpi = self._infos.get(uid)
            if qpi is None:
                continue
            if where == QueueName.IN_FLIGHT:
                # Upstream records ForceActivate for this pod alone among in-flight events.
                self._record_in_flight(FORCE_ACTIVATE_EVENT, None, qpi.pod)
                continue
            if where == QueueName.UNSCHEDULABLE:
                del self._unschedulable[uid]
            elif where != QueueName.BACKOFF:
                continue  # active already
            qpi.woken_by, qpi.woken_at = FORCE_ACTIVATE, wall
            # From backoffQ PreEnqueue ran on the way in (upstream's Activate).
            self._to_active_or_gated(
                qpi, FORCE_ACTIVATE, pre_enqueue=where == QueueName.UNSCHEDULABLE
            )
            moved += not qpi.gated
        return moved

    def _worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> bool:
        """Whether ``event`` may make the pod schedulable (upstream ``isPodWorthRequeuing``):
        a plugin that rejected it registered a matching event whose hint says QUEUE. A gated
        pod is considered only for the events its gate registered."""
        plugins = qpi.unschedulable_plugins
        if not plugins:
            return True  # failed for no plugin's reason (an error): any event may help
        if event.is_wildcard():
            # A wildcard carrying a pod is for that pod alone (ForceActivate in flight).
            return not isinstance(new, PodInfo) or new.uid == qpi.pod.uid
        pod = qpi.pod
        profile = pod.scheduler_name
        by_event = self._matched.get((event.resource, event.action))
        if by_event is None:
            by_event = self._matched[(event.resource, event.action)] = {}
        matched = by_event.get(profile)
        if matched is None:
            matched = by_event[profile] = {}
        if qpi.gated:
            gate = self._gating.get(pod.uid)
            if gate is not None:
                if gate in matched:
                    gate_hints = matched[gate]
                else:
                    gate_hints = matched[gate] = self._match(profile, gate, event)
                if gate_hints is not None and not gate_hints:
                    return False  # the gate cannot lift on this event
        for plugin in plugins:
            if plugin in matched:
                hints = matched[plugin]
            else:
                hints = matched[plugin] = self._match(profile, plugin, event)
            if hints is None:
                return True
            for hint in hints:
                if hint is None or self._run_hint(plugin, hint, pod, event, old, new):
                    return True
        return False

    def _of_interest(self, event: ClusterEvent) -> bool:
        """Upstream ``isEventOfInterest``: some plugin of some profile registered the event
        (the framework registers every event for a plugin that names none). Without any
        registration (a queue driven directly, as in tests) every event is."""
        if event.is_wildcard():
            return True
        key = (event.resource, event.action)
        known = self._interest.get(key)
        if known is None:
            registrations = [
                r.event
                for by_plugin in self._queueing_hints.values()
                for hints in by_plugin.values()
                for r in hints
            ]
            registrations += [e for events in self._plugin_events.values() for e in events]
            known = not registrations or any(r.matches(event) for r in registrations)
            self._interest[key] = known
        return known

    def _match(self, profile: str, plugin: str, event: ClusterEvent) -> _Matched | None:
        """The hints of ``plugin``'s registrations that match ``event`` (None in place of a
        registration without a hint); None if the plugin registered nothing we know of."""
        by_plugin = self._queueing_hints.get(profile)
        registered = by_plugin.get(plugin) if by_plugin is not None else None
        if registered is not None:
            return tuple(r.hint for r in registered if r.event.matches(event))
        events = self._plugin_events.get(plugin)
        if events is None:
            return None
        return tuple(None for e in events if e.matches(event))

    def _run_hint(
        self,
        plugin: str,
        hint: QueueingHintFn,
        pod: PodInfo,
        event: ClusterEvent,
        old: Any,
        new: Any,
    ) -> bool:
        observer = self.hint_observer
        start = time.perf_counter() if observer is not None else 0.0
        try:
            queue = hint(pod, old, new) == QueueingHint.QUEUE
            result = "Queue" if queue else "QueueSkip"
        except Exception as exc:
            # Upstream counts a failing hint as Queue, lest the pod be stuck in the pool.
            queue, result = True, "Error"
            if (plugin, event.label) not in self._hint_errors_logged:
                self._hint_errors_logged.add((plugin, event.label))
                log.debug("queueing hint of %s failed for %s: %s", plugin, event.label, exc)
        if observer is not None:
            observer(plugin, event.label, result, time.perf_counter() - start)
        return queue

    def flush_unschedulable_left_over(self) -> int:
        """Pods that waited in the pool longer than 5 minutes get another try."""
        now = self.clock()
        # Gated pods too, PreEnqueue asked again (upstream); each waits from its last
        # attempt or its last flush, whichever is later.
        stale = [
            q
            for q in self._unschedulable.values()
            if now - max(q.timestamp, q.flush_timestamp) > UNSCHEDULABLE_MAX_STAY_SECONDS
        ]
        if stale:
            # Upstream moves them as an event, which the pods in flight are told of.
            self._record_in_flight(UNSCHEDULABLE_TIMEOUT_EVENT, None, None)
        wall = time.time()
        for qpi in stale:
            qpi.woken_by, qpi.woken_at = UNSCHEDULABLE_TIMEOUT, wall
            qpi.flushed = True
            qpi.flush_timestamp = now
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
