"""What the scheduler reports outward; the operator posts it to the API, simulate prints it."""

from __future__ import annotations

from typing import Protocol

from multisched.cache import PodInfo
from multisched.framework.recorder import NULL_RECORDER, FrameworkRecorder

#: Reasons of the PodScheduled=False condition and the FailedScheduling event (upstream).
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


class SchedulingEvents(Protocol):
    async def scheduled(self, profile: str, pod: PodInfo, node_name: str) -> None:
        """Bound: post ``Scheduled`` "Successfully assigned ns/name to node"."""
        ...

    async def failed(self, profile: str, pod: PodInfo, reason: str, message: str) -> None:
        """Not scheduled: Warning ``FailedScheduling`` and ``PodScheduled=False``."""
        ...


class SchedulerObserver(Protocol):
    """Metrics hooks (upstream's scheduler metrics); called per pod: each must be cheap.

    An attempt is counted once, when its end is known: ``bound``, or ``attempt`` for one
    that ended unschedulable or in error, in its scheduling or its binding cycle."""

    def attempt(self, profile: str, result: str, seconds: float) -> None:
        """An attempt ended "unschedulable" or "error", ``seconds`` after its scheduling
        cycle began (upstream's failure handler)."""
        ...

    def algorithm(self, seconds: float) -> None:
        """Filter and score, and PostFilter for a pod that fits nowhere, took ``seconds``."""
        ...

    def bound(
        self,
        profile: str,
        attempt_seconds: float,
        binding_seconds: float,
        sli_seconds: float,
        attempts: int,
        after_flush: bool,
    ) -> None:
        """The pod is bound: a "scheduled" attempt of ``attempt_seconds`` (both cycles), a
        binding cycle of ``binding_seconds``, ``sli_seconds`` since the pod first entered
        activeQ and ``attempts`` attempts; ``after_flush``: it last left the unschedulable
        pool by its timeout."""
        ...

    def binding_failed(self, profile: str) -> None:
        """A binding cycle failed after the pod was assumed (Permit, PreBind or Bind)."""
        ...

    def plugin(self, plugin: str, extension_point: str, status: str, seconds: float) -> None:
        """One plugin call of a sampled cycle (upstream plugin_execution_duration_seconds)."""
        ...

    def queueing_hint(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        """A plugin's queueing hint ran for a pooled pod: "Queue", "QueueSkip" or "Error"
        (upstream queueing_hint_execution_duration_seconds, every call)."""
        ...

    def framework_recorder(self, profile: str) -> FrameworkRecorder:
        """What the profile's framework and plugins report to (extension points, Permit
        waits, preemption)."""
        ...


class NullObserver:
    def attempt(self, profile: str, result: str, seconds: float) -> None:
        pass

    def algorithm(self, seconds: float) -> None:
        pass

    def bound(
        self,
        profile: str,
        attempt_seconds: float,
        binding_seconds: float,
        sli_seconds: float,
        attempts: int,
        after_flush: bool,
    ) -> None:
        pass

    def binding_failed(self, profile: str) -> None:
        pass

    def plugin(self, plugin: str, extension_point: str, status: str, seconds: float) -> None:
        pass

    def queueing_hint(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        pass

    def framework_recorder(self, profile: str) -> FrameworkRecorder:
        return NULL_RECORDER
