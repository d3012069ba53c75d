"""The binding cycle (upstream ``bindingCycle``): everything after the pod is assumed -
waiting at Permit, PreBind, Bind, PostBind - in a background task of its own.

``BindingCycle`` is one pod's cycle, as one object (upstream ``bindingCycle``'s arguments
kept together): the profile, the cycle state, the queued pod, its assumed copy, the chosen
node and when the cycle started. It also stands for a binding whose response was lost,
until the watch or the TTL says what became of it (``since``). ``BindingCycles`` runs them,
and keeps those unconfirmed bindings.

Only Bind (the API call) takes one of ``max_concurrent_binds`` slots, so pods held at
Permit (gangs) or in PreBind (waiting for the PV controller) never stop other pods from
being bound.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from multisched.cache import Cache, PodInfo
from multisched.framework import (
    ApiUnavailable,
    BindingConflict,
    CycleState,
    Framework,
    NotLeading,
    Status,
)
from multisched.framework.events import ASSIGNED_POD_DELETE
from multisched.framework.queued_pod import QueuedPodInfo
from multisched.queue import SchedulingQueue

from .algorithm import ScheduleResult
from .events import SchedulerObserver, SchedulingEvents
from .failure import Failure, FailureHandler
from .outcome import CycleResult, Outcome

logger = logging.getLogger(__name__)


class BindingCycle:
    __slots__ = (
        "assumed",
        "attempt_start",
        "fwk",
        "host",
        "nominated",
        "past_permit",
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
        #: Permit let the pod go: a later failure names no rejecting plugin.
        self.past_permit = False
        #: Whether the binding cycle set the pod's nominatedNodeName (cleared on failure).
        self.nominated = False

    @property
    def pod(self) -> PodInfo:
        return self.qpi.pod

    def unreserve(self) -> None:
        self.fwk.run_unreserve(self.state, self.assumed, self.host)


class BindingCycles:
    """The binding cycles in flight, and the bindings whose response was lost."""

    __slots__ = (
        "_cache",
        "_clock",
        "_emit",
        "_events",
        "_failure",
        "_observer",
        "_queue",
        "_slots",
        "assumed_pod_ttl",
        "in_flight",
        "unconfirmed",
        "unconfirmed_binding_ttl",
    )

    def __init__(
        self,
        cache: Cache,
        queue: SchedulingQueue,
        failure: FailureHandler,
        events: SchedulingEvents | None,
        observer: SchedulerObserver,
        clock: Callable[[], float],
        emit: Callable[[Outcome], Outcome],
        max_concurrent_binds: int,
        assumed_pod_ttl: float,
        unconfirmed_binding_ttl: float,
    ) -> None:
        self._cache = cache
        self._queue = queue
        self._failure = failure
        self._events = events
        self._observer = observer
        self._clock = clock
        self._emit = emit
        #: Bounds concurrent Bind calls, not pods waiting at Permit or in PreBind.
        self._slots = asyncio.Semaphore(max_concurrent_binds)
        self.assumed_pod_ttl = assumed_pod_ttl
        self.unconfirmed_binding_ttl = unconfirmed_binding_ttl
        self.in_flight: set[asyncio.Task[None]] = set()
        #: Bindings whose response was lost, by pod uid.
        self.unconfirmed: dict[str, BindingCycle] = {}

    def start(self, cycle: BindingCycle) -> None:
        self._spawn(self._run(cycle))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self.in_flight.add(task)
        task.add_done_callback(self.in_flight.discard)

    async def _run(self, cycle: BindingCycle) -> None:
        fwk, state, assumed, host = cycle.fwk, cycle.state, cycle.assumed, cycle.host
        try:
            status = await self._expect(cycle)
            # Waiting at Permit holds no slot: a gang of any size cannot starve the rest.
            if status is None:
                status = await fwk.wait_on_permit(assumed)
            # Upstream: no failure after Permit makes the pod unschedulable by a plugin's
            # verdict; it is retried after its backoff.
            cycle.past_permit = status is None
            if status is None:
                # PreBind holds no slot either: VolumeBinding waits there for the PV
                # controller, up to bindTimeoutSeconds.
                status = await fwk.run_pre_bind_preemptible(state, assumed, host)
            if status is None:
                async with self._slots:
                    status = await fwk.run_bind(state, assumed, host)
        except Exception as exc:
            logger.exception("binding cycle of %s failed", cycle.pod.key)
            status = Status.from_exception(exc)
        await self._end(cycle, status)

    async def _expect(self, cycle: BindingCycle) -> Status | None:
        """v1.35+'s nominatedNodeName as an expectation (NominatedNodeNameForExpectation):
        when PreBind has work to do (volumes to bind) or Permit holds the pod, the pod is
        nominated to its node first, telling cluster autoscalers and Karpenter it is about
        to land there. A failed write is logged, not fatal, as upstream."""
        fwk, assumed = cycle.fwk, cycle.assumed
        pre_flight = fwk.run_pre_bind_pre_flights(cycle.state, assumed, cycle.host)
        if pre_flight is not None and not pre_flight.is_skip():
            return pre_flight
        if pre_flight is not None and not fwk.will_wait_on_permit(assumed):
            return None  # bound at once: no expectation to announce
        client = fwk.client
        if client is not None:
            try:
                await client.set_nominated_node(cycle.pod, cycle.host)
                cycle.nominated = True
            except (ApiUnavailable, NotLeading):
                pass  # logged once elsewhere
            except Exception as exc:
                logger.warning(
                    "could not set nominatedNodeName of %s in its binding cycle: %s",
                    cycle.pod.key,
                    exc,
                )
        return None

    async def _end(self, cycle: BindingCycle, status: Status | None) -> None:
        if status is not None:
            await self._failed(cycle, status)
            return
        fwk, pod, host = cycle.fwk, cycle.pod, cycle.host
        self._cache.finish_binding(pod.uid, self._clock() + self.assumed_pod_ttl)
        self._queue.done(pod.uid)
        self._failure.forget(pod.uid)
        fwk.run_post_bind(cycle.state, cycle.assumed, host)
        self._count_bound(cycle)
        if self._events is not None:
            try:
                await self._events.scheduled(fwk.profile_name, pod, host)
            except Exception as exc:
                logger.warning("could not post the Scheduled event of %s: %s", pod.key, exc)
        outcome = Outcome(pod, CycleResult.SCHEDULED, node=host)
        outcome.schedule = cycle.result
        self._emit(outcome)

    async def _failed(self, cycle: BindingCycle, status: Status) -> None:
        """Undo what the cycle holds, then the failure handler (upstream
        ``handleBindingCycleError``); a binding that may be stored is kept instead."""
        pod = cycle.pod
        cause = status.cause
        if isinstance(cause, BindingConflict) and cause.bound_to:
            self._bound_elsewhere(cycle, cause.bound_to)
            await self._failure.handle(cycle.fwk, cycle.qpi, Failure(status), None)
            return
        if isinstance(cause, ApiUnavailable) and cause.maybe_sent:
            # The binding may be stored: keep counting the pod until the watch or the
            # TTL tells; giving its room away now could over-commit the node.
            self._cache.finish_binding(pod.uid, self._clock() + self.unconfirmed_binding_ttl)
            cycle.since = self._clock()
            self.unconfirmed[pod.uid] = cycle
            self._emit(Outcome(pod, CycleResult.BINDING, node=cycle.host, message=str(cause)))
            return
        cycle.unreserve()
        self._cache.forget_pod(cycle.assumed)
        self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, old=cycle.assumed)
        # A step-down is no failure of the pod's: neither counted nor reported.
        stepped_down = isinstance(cause, NotLeading)
        if not stepped_down:
            self._observer.binding_failed(cycle.fwk.profile_name)
        # An unreachable API server is logged once by the client, and a replica that
        # stopped leading says so once: not per pod.
        # Upstream clears the nomination on a binding failure; ours only when there is one.
        clear = "" if cycle.nominated or pod.nominated_node_name else None
        failure = Failure(
            status,
            nominating=clear,
            quiet=isinstance(cause, ApiUnavailable | NotLeading),
            rejectors=set() if cycle.past_permit else None,
        )
        start = None if stepped_down else cycle.attempt_start
        await self._failure.handle(cycle.fwk, cycle.qpi, failure, start)

    def _bound_elsewhere(self, cycle: BindingCycle, node: str) -> None:
        """A 409 says the pod is already on ``node`` (an earlier binding whose response was
        lost, or another scheduler): count it there until the watch confirms it."""
        pod = cycle.pod
        logger.info(
            "pod %s is already bound to %s; not binding it to %s", pod.key, node, cycle.host
        )
        if node == cycle.host:  # our own binding, whose response was lost
            self._count_bound(cycle)
        else:
            self._count_failed(cycle)
        cycle.unreserve()
        self._cache.forget_pod(cycle.assumed)
        if self._cache.get_pod(pod.uid) is None:  # the watch may have confirmed it meanwhile
            self._cache.assume_pod(pod, node)
            self._cache.finish_binding(pod.uid, self._clock() + self.assumed_pod_ttl)
        self.unconfirmed.pop(pod.uid, None)
        self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, old=cycle.assumed)

    def confirmed(self, uid: str, node: str = "") -> None:
        """The watch answered for a binding whose response was lost. Bound where we sent
        it: the cycle ends as a successful one would (the Scheduled event included, once:
        the resend loop finds it gone). Gone, or bound elsewhere: nothing of ours to say."""
        cycle = self.unconfirmed.pop(uid, None)
        if cycle is None:
            return
        if node and node == cycle.host:
            self._spawn(self._end(cycle, None))
            return
        self._count_failed(cycle)
        self._queue.done(uid)
        self._failure.forget(uid)

    async def retry_unconfirmed(self, older_than: float) -> int:
        """Send again the bindings whose response was lost, rather than wait for the TTL:
        one the API server stored answers 409 "already assigned" (bound there, as the
        watch will show), one it never got binds now. Returns how many were sent."""
        sent = 0
        now = self._clock()
        for uid, entry in list(self.unconfirmed.items()):
            if now - entry.since < older_than or self.unconfirmed.get(uid) is not entry:
                continue
            async with self._slots:
                if self.unconfirmed.get(uid) is not entry:
                    continue  # the watch answered while we waited for a slot
                status = await entry.fwk.run_bind(entry.state, entry.assumed, entry.host)
            sent += 1
            if self.unconfirmed.get(uid) is not entry:
                continue
            if status is not None and isinstance(status.cause, ApiUnavailable | NotLeading):
                # Still no answer (or not ours to send now): the first request may yet be
                # stored; keep waiting for the watch or the TTL.
                entry.since = self._clock()
                continue
            del self.unconfirmed[uid]
            entry.start, entry.result = now, None
            await self._end(entry, status)
        return sent

    def cleanup_assumed_pods(self) -> int:
        """Expire assumptions the watch never confirmed; a lost binding's pod is scheduled
        again."""
        expired = self._cache.cleanup_assumed_pods(self._clock())
        for pod in expired:
            entry = self.unconfirmed.pop(pod.uid, None)
            if entry is None:
                logger.warning("assumed pod %s expired: the watch never showed it bound", pod.key)
                continue
            logger.info(
                "binding of %s to %s is still unconfirmed after %.0fs; scheduling it again",
                pod.key,
                entry.host,
                self.unconfirmed_binding_ttl,
            )
            entry.unreserve()
            self._count_failed(entry)
            self._queue.add_unschedulable(entry.qpi, set(), error=True)
        for pod in expired:  # each with the pod that no longer holds its room
            self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, old=pod)
        return len(expired)

    async def wait(self) -> None:
        while self.in_flight:
            await asyncio.gather(*list(self.in_flight), return_exceptions=True)

    def _count_bound(self, cycle: BindingCycle) -> None:
        now = self._clock()
        qpi = cycle.qpi
        first = qpi.initial_attempt_timestamp
        self._observer.bound(
            cycle.fwk.profile_name,
            now - cycle.attempt_start,
            now - cycle.start,
            now - (cycle.attempt_start if first is None else first),
            qpi.attempts,
            qpi.flushed,
        )

    def _count_failed(self, cycle: BindingCycle) -> None:
        """A binding the API did not store for this pod (it is gone, or bound elsewhere)."""
        profile = cycle.fwk.profile_name
        self._observer.binding_failed(profile)
        self._observer.attempt(profile, "error", self._clock() - cycle.attempt_start)
