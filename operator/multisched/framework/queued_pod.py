"""``QueuedPodInfo``: a pod waiting in the scheduling queue, with its attempt history
(upstream ``framework/types.go``: plugins see it, at QueueSort, PreEnqueue and in hints)."""

from __future__ import annotations

import time

from multisched.cache import PodInfo


class QueuedPodInfo:
    __slots__ = (
        "attempts",
        "consecutive_errors_count",
        "first_seen",
        "flush_timestamp",
        "flushed",
        "gated",
        "initial_attempt_timestamp",
        "message",
        "pod",
        "timestamp",
        "unschedulable_count",
        "unschedulable_plugins",
        "woken_at",
        "woken_by",
    )

    def __init__(self, pod: PodInfo, timestamp: float) -> None:
        self.pod = pod
        #: When the pod arrived, or its last attempt failed (PrioritySort ties break on it;
        #: its backoff runs from it).
        self.timestamp = timestamp
        #: When the pod first entered activeQ (upstream ``InitialAttemptTimestamp``: the
        #: start of ``pod_scheduling_sli_duration_seconds``).
        self.initial_attempt_timestamp: float | None = None
        self.attempts = 0
        #: Failed attempts that a plugin rejected, and the failures since the last such
        #: one that none did (errors): the backoff doubles with the latter while there are
        #: any, else with the former (upstream ``UnschedulableCount``,
        #: ``ConsecutiveErrorsCount``).
        self.unschedulable_count = 0
        self.consecutive_errors_count = 0
        self.unschedulable_plugins: set[str] = set()
        #: Held back by a PreEnqueue plugin (e.g. scheduling gates).
        self.gated = False
        #: Left the unschedulable pool by its timeout, and no attempt failed since (upstream
        #: ``WasFlushedFromUnschedulable``: ``pod_scheduled_after_flush_total``).
        self.flushed = False
        #: When the pool's leftover flush last moved it (0: not since its last attempt).
        self.flush_timestamp = 0.0
        # For ``/debug/queue`` only (wall-clock seconds: people read them).
        self.first_seen = time.time()
        #: The last attempt's FailedScheduling message.
        self.message: str | None = None
        #: The cluster event that last moved the pod out of the unschedulable pool, and when.
        self.woken_by: str | None = None
        self.woken_at: float | None = None

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.pod.key}, attempts={self.attempts})"
