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

    def preemption_goroutine(self, result: str, seconds: float) -> None:
        """An asynchronous preemption ended, "success" or "error", after ``seconds``
        (``preemption_goroutines_duration_seconds``, ``preemption_goroutines_execution_total``)."""
        ...

    def batch_attempt(self, result: str) -> None:
        """Opportunistic batching gave a pod a hint or not: "no_hint", "hint_used",
        "hint_not_used" (``batch_attempts_total``)."""
        ...

    def batch_flush(self, reason: str) -> None:
        """Opportunistic batching dropped its state, for ``reason``
        (``batch_cache_flushed_total``)."""
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

    def preemption_goroutine(self, result: str, seconds: float) -> None:
        pass

    def batch_attempt(self, result: str) -> None:
        pass

    def batch_flush(self, reason: str) -> None:
        pass


NULL_RECORDER = NullRecorder()
