"""The scheduling queue: activeQ, backoffQ, unschedulable pool and the pod nominator.

The pods it holds (``QueuedPodInfo``) and the events that move them (``ClusterEvent``)
are the framework's (multisched.framework), as upstream's are: plugins see both.
"""

from .scheduling_queue import PodNominator, QueueName, SchedulingQueue

__all__ = [
    "PodNominator",
    "QueueName",
    "SchedulingQueue",
]
