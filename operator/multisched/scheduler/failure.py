"""Where every failed attempt ends, from either cycle (upstream ``handleSchedulingFailure``,
the scheduler's ``FailureHandler``): count it, requeue the pod, report it once.

What each cycle undoes before it gets here stays with the cycle: the scheduling cycle
unreserves and forgets a pod Reserve or Permit turned down, the binding cycle one whose
binding failed (upstream ``handleBindingCycleError``)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from multisched.cache import PodInfo
from multisched.framework import (
    ApiUnavailable,
    BindingConflict,
    FitError,
    Framework,
    NotLeading,
    Status,
)
from multisched.framework.handle import ClusterClient
from multisched.framework.queued_pod import QueuedPodInfo
from multisched.queue import SchedulingQueue

from .events import (
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    SchedulerObserver,
    SchedulingEvents,
)
from .outcome import CycleResult, Outcome

logger = logging.getLogger(__name__)


class Failure:
    """A failed attempt: its Status, and what the handler does besides requeue and report."""

    __slots__ = ("nominating", "quiet", "rejectors", "result", "status")

    def __init__(
        self,
        status: Status,
        nominating: str | None = None,
        quiet: bool = False,
        result: CycleResult | None = None,
        rejectors: set[str] | None = None,
    ) -> None:
        self.status = status
        #: The plugins whose events may help the pod, when not the status's own (a
        #: rejection past Permit names none: upstream retries such a pod after its backoff,
        #: as it does an error).
        self.rejectors = rejectors
        #: PostFilter's answer (upstream ``NominatingInfo``): a node to nominate, "" to
        #: clear a stale nomination, None to leave it.
        self.nominating = nominating
        #: Requeue only: the cause is reported elsewhere, once (an unreachable API server,
        #: a replica that stopped leading).
        self.quiet = quiet
        #: The outcome's result when it is not the status's (a pod Reserve or Permit
        #: turned down is reported unschedulable, whatever the code).
        self.result = result


class FailureHandler:
    __slots__ = ("_client", "_clock", "_emit", "_events", "_last", "_observer", "_queue")

    def __init__(
        self,
        queue: SchedulingQueue,
        client: ClusterClient | None,
        events: SchedulingEvents | None,
        observer: SchedulerObserver,
        clock: Callable[[], float],
        emit: Callable[[Outcome], Outcome],
    ) -> None:
        self._queue = queue
        self._client = client
        self._events = events
        self._observer = observer
        self._clock = clock
        self._emit = emit
        #: The last message reported per pod, and until when it is not posted again.
        self._last: dict[str, tuple[str, float]] = {}

    def forget(self, uid: str) -> None:
        """The pod is bound or gone: its next failure, if any, is reported afresh."""
        self._last.pop(uid, None)

    async def handle(
        self, fwk: Framework, qpi: QueuedPodInfo, failure: Failure, start: float | None
    ) -> Outcome:
        """Count the attempt (``start``: when it began; None: not counted), requeue the pod
        and report why. A pod the API says is bound already is not requeued (upstream:
        "Pod has been assigned to node. Abort adding it back to queue.")."""
        pod, status = qpi.pod, failure.status
        cause = status.cause
        if isinstance(cause, BindingConflict) and cause.bound_to:
            self._queue.done(pod.uid)
            self.forget(pod.uid)
            return self._emit(Outcome(pod, CycleResult.SCHEDULED, node=cause.bound_to))
        if failure.nominating is not None:
            await self._nominate(pod, failure.nominating)
        elif pod.uid in self._queue:
            # Upstream's AddNominatedPod without NominatingInfo: the record follows the
            # pod's status as the API last showed it, updates during the attempt included.
            self._queue.nominator.add_nominated_pod(pod, pod.nominated_node_name)
        rejected = status.is_rejected()
        message = status.message()
        if start is not None:
            result = "unschedulable" if rejected else "error"
            self._observer.attempt(fwk.profile_name, result, self._clock() - start)
        fit_error = cause if isinstance(cause, FitError) else None
        if failure.rejectors is not None:
            plugins = failure.rejectors
        elif fit_error is not None:
            plugins = fit_error.diagnosis.unschedulable_plugins
        else:
            # A Reserve or Permit rejection names its plugin (upstream wraps it in a
            # FitError); an error names none, whichever plugin returned it.
            plugins = {status.plugin} if status.plugin and rejected else set()
        self._queue.add_unschedulable(qpi, plugins, error=not rejected, message=message)
        if pod.uid in self._queue and not failure.quiet:  # else deleted meanwhile
            reason = REASON_UNSCHEDULABLE if rejected else REASON_SCHEDULER_ERROR
            await self._report(fwk, pod, reason, message)
        ended = failure.result or (CycleResult.UNSCHEDULABLE if rejected else CycleResult.ERROR)
        outcome = Outcome(pod, ended, message=message)
        outcome.nominated_node = failure.nominating or ""
        outcome.fit_error = fit_error
        return self._emit(outcome)

    async def _nominate(self, pod: PodInfo, node: str) -> None:
        if node and pod.uid in self._queue:
            # Only a pod still pending (upstream checks its informer): one deleted during
            # the cycle's awaits would otherwise hold room on the node for good.
            self._queue.nominator.add_nominated_pod(pod, node)
        else:
            self._queue.nominator.delete_nominated_pod(pod)
        if self._client is not None:
            try:
                await self._client.set_nominated_node(pod, node)
            except (ApiUnavailable, NotLeading):
                pass  # logged once elsewhere; the next attempt nominates again
            except Exception as exc:
                logger.warning("could not set nominatedNodeName of %s: %s", pod.key, exc)

    async def _report(self, fwk: Framework, pod: PodInfo, reason: str, message: str) -> None:
        """The same message for the same pod is not posted again until the longest backoff
        (``podMaxBackoffSeconds``) has passed, so retries don't spam."""
        now = self._clock()
        last = self._last.get(pod.uid)
        if last is not None and last[0] == message and now < last[1]:
            return
        self._last[pod.uid] = (message, now + self._queue.max_backoff)
        logger.info("pod %s is unschedulable (%s): %s", pod.key, fwk.profile_name, message)
        if self._events is not None:
            try:
                await self._events.failed(fwk.profile_name, pod, reason, message)
            except Exception as exc:
                logger.warning("could not report the scheduling failure of %s: %s", pod.key, exc)
