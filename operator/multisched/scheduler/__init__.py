"""The schedule-one loop and everything needed to run it without an API server."""

from .algorithm import (
    Algorithm,
    Explain,
    ScheduleResult,
    SchedulingError,
    num_feasible_nodes_to_find,
)
from .events import (
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    SchedulerObserver,
    SchedulingEvents,
)
from .outcome import Outcome
from .registry import default_registry
from .scheduler import Scheduler

__all__ = [
    "REASON_SCHEDULER_ERROR",
    "REASON_UNSCHEDULABLE",
    "Algorithm",
    "Explain",
    "Outcome",
    "ScheduleResult",
    "Scheduler",
    "SchedulerObserver",
    "SchedulingError",
    "SchedulingEvents",
    "default_registry",
    "num_feasible_nodes_to_find",
]
