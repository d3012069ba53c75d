"""``QueuedPodInfo``: a pod waiting in the scheduling queue, with its attempt history."""

from __future__ import annotations

from multisched.cache import PodInfo


class QueuedPodInfo:
    __slots__ = (
        "attempts",
        "gated",
        "initial_attempt_timestamp",
        "pod",
        "timestamp",
        "unschedulable_plugins",
    )

    def __init__(self, pod: PodInfo, timestamp: float) -> None:
        self.pod = pod
        #: When the pod was last added to a queue (PrioritySort ties break on it).
        self.timestamp = timestamp
        self.initial_attempt_timestamp: float | None = None
        self.attempts = 0
        self.unschedulable_plugins: set[str] = set()
        #: Held back by a PreEnqueue plugin (e.g. scheduling gates).
        self.gated = False

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.pod.key}, attempts={self.attempts})"
