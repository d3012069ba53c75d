"""The scheduling queue: activeQ, backoffQ, unschedulable pool and the pod nominator."""

from .events import WILDCARD_EVENT, ClusterEvent
from .queued_pod import QueuedPodInfo
from .scheduling_queue import PodNominator, QueueName, SchedulingQueue

__all__ = [
    "WILDCARD_EVENT",
    "ClusterEvent",
    "PodNominator",
    "QueueName",
    "QueuedPodInfo",
    "SchedulingQueue",
]
