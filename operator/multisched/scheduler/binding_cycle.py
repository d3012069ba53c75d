"""One pod's binding cycle, as one object (upstream ``bindingCycle``'s arguments kept
together): the profile, the cycle state, the queued pod, its assumed copy, the chosen node
and when the cycle started. It also stands for a binding whose response was lost, until
the watch or the TTL says what became of it (``since``)."""

from __future__ import annotations

from multisched.cache import PodInfo
from multisched.framework import CycleState, Framework
from multisched.queue import QueuedPodInfo

from .algorithm import ScheduleResult


class BindingCycle:
    __slots__ = (
        "assumed",
        "attempt_start",
        "fwk",
        "host",
        "qpi",
        "result",
        "since",
        "start",
        "state",
    )

    def __init__(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: PodInfo,
        host: str,
        result: ScheduleResult | None,
        start: float,
        attempt_start: float,
    ) -> None:
        self.fwk = fwk
        self.state = state
        self.qpi = qpi
        self.assumed = assumed
        self.host = host
        self.result = result
        #: When the binding cycle began (binding latency is measured from here).
        self.start = start
        #: When the attempt's scheduling cycle began (its attempt latency is measured from
        #: here, as upstream's covers both cycles).
        self.attempt_start = attempt_start
        #: When the binding's response was lost (an unconfirmed binding).
        self.since = start

    @property
    def pod(self) -> PodInfo:
        return self.qpi.pod

    def unreserve(self) -> None:
        self.fwk.run_unreserve(self.state, self.assumed, self.host)
