"""The scheduling queue: activeQ, backoffQ, unschedulable pool and the pod nominator."""

from .queued_pod import QueuedPodInfo
from .scheduling_queue import PodNominator, SchedulingQueue

__all__ = ["PodNominator", "QueuedPodInfo", "SchedulingQueue"]
