"""How one scheduling attempt ended, as simulate, explain and the tests read it."""

from __future__ import annotations

from enum import StrEnum

from multisched.cache import PodInfo
from multisched.framework import FitError

from .algorithm import ScheduleResult


class CycleResult(StrEnum):
    """How one attempt ended (equal to the plain strings simulate and the metrics use)."""

    SCHEDULED = "scheduled"
    UNSCHEDULABLE = "unschedulable"
    ERROR = "error"
    #: Not attempted: the pod went away, got bound, or is not ours any more.
    SKIPPED = "skipped"
    #: Assumed and handed to the binding cycle; its end comes as another Outcome.
    BINDING = "binding"


class Outcome:
    """The result of one attempt, for simulate and tests."""

    __slots__ = ("fit_error", "message", "node", "nominated_node", "pod", "result", "schedule")

    def __init__(
        self, pod: PodInfo, result: CycleResult | str, node: str = "", message: str = ""
    ) -> None:
        self.pod = pod
        self.result = CycleResult(result)
        self.node = node
        self.message = message
        self.nominated_node = ""
        self.schedule: ScheduleResult | None = None
        self.fit_error: FitError | None = None
