"""SchedulingGates: keep a pod out of the active queue while it has scheduling gates.

Upstream ``schedulinggates/scheduling_gates.go``; the message lists the gates as Go
prints a string slice (``[a b]``).
"""

from __future__ import annotations

from multisched.cache import PodInfo
from multisched.framework import Handle, Status
from multisched.framework.events import POD, UPDATE, ClusterEvent

NAME = "SchedulingGates"


class SchedulingGates:
    name = NAME

    def __init__(self, args: object, handle: Handle | None) -> None:
        pass

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        # Only removing a gate from the pod itself helps.
        return (ClusterEvent(POD, UPDATE),)

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        gates = pod.scheduling_gates
        if not gates:
            return None
        return Status.unresolvable(f"waiting for scheduling gates: [{' '.join(gates)}]")


PLUGIN = SchedulingGates
