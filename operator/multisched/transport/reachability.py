"""Whether the API server answers the ``Api``'s requests: one log line when it stops, one
when it is back, with what failed meanwhile, instead of a traceback per request."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

logger = logging.getLogger(__name__)


class Reachability:
    """Whether the API server answers; one log line when it stops, one when it is back."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.down_since: float | None = None
        #: Requests that failed for want of an answer since the outage began, by kind.
        self.failed: Counter[str] = Counter()
        #: Extra "what happened meanwhile" figures for the recovery line (e.g. drops).
        self.reporters: list[Callable[[], dict[str, int]]] = []
        #: Called when an outage begins (the recorder lets go of the scheduling loop).
        self.on_unreachable: list[Callable[[], None]] = []

    @property
    def reachable(self) -> bool:
        return self.down_since is None

    def unreachable(self, kind: str, error: BaseException) -> None:
        self.failed[kind] += 1
        if self.down_since is None:
            self.down_since = self.clock()
            logger.warning(
                "API server unreachable (%s failed: %s); retrying quietly until it is back",
                kind,
                describe(error),
            )
            for hook in self.on_unreachable:
                hook()

    def answered(self, sent_at: float | None = None) -> None:
        """An answer came; ``sent_at`` (this clock) is when its request was sent. A request
        sent before the outage began proves nothing: a server shutting down still answers
        what it already took, and counting those made the log flap down, up, down."""
        if self.down_since is None:
            return
        if sent_at is not None and sent_at < self.down_since:
            return
        seconds = self.clock() - self.down_since
        counts = dict(self.failed)
        for report in self.reporters:
            counts.update({k: v for k, v in report().items() if v})
        detail = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "nothing"
        logger.warning(
            "API server reachable again after %.1fs; failed or dropped meanwhile: %s",
            seconds,
            detail,
        )
        self.down_since = None
        self.failed.clear()


def describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
