"""``FrameworkRecorder``: what a profile's framework and its plugins report for the metrics
(upstream's framework and preemption metrics). The operator binds one to each profile; the
default records nothing, so simulate and explain pay for no timing."""

from __future__ import annotations

from typing import Protocol


class FrameworkRecorder(Protocol):
    """Every method is called on the scheduling path: it must be cheap."""

    def extension_point(self, point: str, status: str, seconds: float) -> None:
        """Every plugin of ``point`` ran once for a pod (upstream
        ``framework_extension_point_duration_seconds``); ``status`` is upstream's code name."""
        ...

    def permit_wait(self, status: str, seconds: float) -> None:
        """A pod held at Permit was allowed or rejected (``permit_wait_duration_seconds``)."""
        ...

    def preemption_attempt(self) -> None:
        """A preemption plugin's PostFilter ran (``preemption_attempts_total``)."""
        ...

    def preemption_victims(self, victims: int) -> None:
        """Preemption chose a node and evicts ``victims`` pods there (``preemption_victims``)."""
        ...


class NullRecorder:
    def extension_point(self, point: str, status: str, seconds: float) -> None:
        pass

    def permit_wait(self, status: str, seconds: float) -> None:
        pass

    def preemption_attempt(self) -> None:
        pass

    def preemption_victims(self, victims: int) -> None:
        pass


NULL_RECORDER = NullRecorder()
