"""What the scheduler reports outward; the operator posts it to the API, simulate prints it."""

from __future__ import annotations

from typing import Protocol

from multisched.cache import PodInfo

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
    """Metrics hooks; every method must be cheap."""

    def attempt(self, profile: str, result: str, seconds: float) -> None: ...

    def bound(self, profile: str, binding_seconds: float, e2e_seconds: float) -> None: ...

    def binding_failed(self, profile: str, result: str) -> None:
        """A binding cycle failed after the pod was assumed; ``result`` is "unschedulable"
        or "error", as upstream's failure handler counts it among the attempts."""
        ...

    def plugin(self, plugin: str, extension_point: str, status: str, seconds: float) -> None:
        """One plugin call of a sampled cycle (upstream plugin_execution_duration_seconds)."""
        ...


class NullObserver:
    def attempt(self, profile: str, result: str, seconds: float) -> None:
        pass

    def plugin(self, plugin: str, extension_point: str, status: str, seconds: float) -> None:
        pass

    def bound(self, profile: str, binding_seconds: float, e2e_seconds: float) -> None:
        pass

    def binding_failed(self, profile: str, result: str) -> None:
        pass
