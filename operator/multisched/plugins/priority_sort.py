"""PrioritySort: the default queue order (upstream ``queuesort/priority_sort.go``).

Higher priority first; equal priorities in the order they entered the queue.
"""

from __future__ import annotations

from multisched.framework import Handle
from multisched.framework.queued_pod import QueuedPodInfo

NAME = "PrioritySort"


class PrioritySort:
    name = NAME

    def __init__(self, args: object, handle: Handle | None) -> None:
        pass

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        p1 = a.pod.priority
        p2 = b.pod.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)


PLUGIN = PrioritySort
