"""SchedulingGates: keep a pod out of the active queue while it has scheduling gates.

Upstream ``schedulinggates/scheduling_gates.go``; the message lists the gates as Go
prints a string slice (``[a b]``).
"""

from __future__ import annotations

from multisched.cache import PodInfo
from multisched.framework import Handle, Status
from multisched.framework.events import (
    POD,
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)

from ._hints import is_target_pod

NAME = "SchedulingGates"


class SchedulingGates:
    name = NAME

    def __init__(self, args: object, handle: Handle | None) -> None:
        pass

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # Only the pod itself losing its last gate helps.
        return (
            ClusterEventWithHint(
                ClusterEvent(POD, UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                is_schedulable_after_target_pod_gates_eliminated,
            ),
        )

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        gates = pod.scheduling_gates
        if not gates:
            return None
        return Status.unresolvable(f"waiting for scheduling gates: [{' '.join(gates)}]")


def is_schedulable_after_target_pod_gates_eliminated(
    pod: PodInfo, old: PodInfo, new: PodInfo
) -> QueueingHint:
    """Upstream ``isSchedulableAfterUpdateTargetPodSchedulingGatesEliminated``: the event
    itself says the gates are gone."""
    return QueueingHint.QUEUE if is_target_pod(pod, new) else QueueingHint.QUEUE_SKIP


PLUGIN = SchedulingGates
