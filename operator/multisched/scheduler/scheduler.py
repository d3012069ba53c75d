"""The scheduler: live profiles, the queue, and the schedule-one loop with async binding.

``set_config`` swaps profiles atomically: a cycle takes its ``Framework`` once at the
start, so a pod mid-cycle finishes under the profile it started with and the next pod
uses the new one.

The scheduling cycle never awaits between choosing a node and assuming the pod there.
Everything after assume - waiting at Permit, PreBind, Bind - runs in a background binding
task; only Bind (the API call) takes one of ``max_concurrent_binds`` slots, so pods held at
Permit (gangs) or in PreBind (waiting for the PV controller) never stop other pods from
being bound.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from enum import StrEnum

from multisched.cache import Cache, PodInfo
from multisched.config.resolved import ResolvedConfig, ResolvedProfile
from multisched.framework import (
    ApiUnavailable,
    BindingConflict,
    Code,
    CycleState,
    FitError,
    Framework,
    InstrumentedFramework,
    NotLeading,
    Registry,
    Status,
    WaitingPod,
)
from multisched.framework.handle import ClusterClient
from multisched.queue import ClusterEvent, QueuedPodInfo, SchedulingQueue
from multisched.queue.events import (
    ASSIGNED_POD_DELETE,
    WILDCARD_EVENT,
)

from .algorithm import Algorithm, ScheduleResult, SchedulingError
from .binding_cycle import BindingCycle
from .event_handlers import EventHandlers
from .events import (
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    NullObserver,
    SchedulerObserver,
    SchedulingEvents,
)

logger = logging.getLogger(__name__)

#: One cycle in this many records per-plugin execution time.
PLUGIN_METRICS_SAMPLE = 10
#: How long a bound pod stays assumed without the watch confirming it (upstream
#: ``durationToExpireAssumedPod``).
ASSUMED_POD_TTL_SECONDS = 15 * 60.0
#: How long a pod whose binding response was lost (connection broke after sending) stays
#: assumed: long enough to cover an API outage and the watch's reconnect; if the watch has
#: not shown it bound by then, it is scheduled again (a 409 then says where it went).
UNCONFIRMED_BINDING_TTL_SECONDS = 120.0
#: Bind API calls in flight at once (upstream binds each pod in a goroutine of its own). Each
#: needs an HTTP/1.1 connection of its own, and 16 measured best: with 8 or 48, plain backlogs
#: at 500 nodes ran at 0.93x and 0.96x the pods/s, for 1.03x and 1.06x the CPU per pod
#: (bench-e2e --candidate, 12 alternated runs each).
MAX_CONCURRENT_BINDS = 16


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


class Scheduler(EventHandlers):
    def __init__(
        self,
        config: ResolvedConfig,
        registry: Registry,
        cache: Cache | None = None,
        client: ClusterClient | None = None,
        events: SchedulingEvents | None = None,
        observer: SchedulerObserver | None = None,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_concurrent_binds: int = MAX_CONCURRENT_BINDS,
        assumed_pod_ttl: float = ASSUMED_POD_TTL_SECONDS,
        unconfirmed_binding_ttl: float = UNCONFIRMED_BINDING_TTL_SECONDS,
    ) -> None:
        self.registry = registry
        self.cache = cache or Cache()
        self.client = client
        self.assumed_pod_ttl = assumed_pod_ttl
        self.unconfirmed_binding_ttl = unconfirmed_binding_ttl
        self._unconfirmed: dict[str, BindingCycle] = {}
        self.events = events
        self.observer: SchedulerObserver = observer or NullObserver()
        self.rng = rng or random.Random()
        self.clock = clock
        self.explain = False
        self.algorithm = Algorithm(rng=self.rng)
        self.profiles: dict[str, Framework] = {}
        self.config = config
        self.queue = SchedulingQueue(self._less, self._pre_enqueue, clock=clock)
        #: Bounds concurrent PreBind+Bind (API calls), not pods waiting at Permit.
        self._bind_slots = asyncio.Semaphore(max_concurrent_binds)
        self._binding: set[asyncio.Task[None]] = set()
        self._last_failure: dict[str, tuple[str, float]] = {}
        self._cycles = 0
        self.on_outcome: Callable[[Outcome], None] | None = None
        self.set_config(config)

    # -- profiles -------------------------------------------------------------------------

    def build_profiles(self, config: ResolvedConfig) -> dict[str, Framework]:
        """Instantiate every profile; raises (FrameworkError) without touching the live set."""
        return {prof.scheduler_name: self._framework(prof) for prof in config.profiles}

    def _framework(self, prof: ResolvedProfile) -> Framework:
        nominator = self.queue.nominator if hasattr(self, "queue") else None
        if type(self.observer) is NullObserver:  # nothing timed, nothing to pay
            return Framework(
                prof,
                self.registry,
                self.cache.snapshot,
                client=self.client,
                nominator=nominator,
                rng=self.rng,
                activator=self._activate,
            )
        fwk = InstrumentedFramework(
            prof,
            self.registry,
            self.cache.snapshot,
            self.observer.framework_recorder(prof.scheduler_name),
            client=self.client,
            nominator=nominator,
            rng=self.rng,
            activator=self._activate,
        )
        fwk.plugin_observer = self.observer.plugin
        return fwk

    def set_config(
        self, config: ResolvedConfig, profiles: dict[str, Framework] | None = None
    ) -> None:
        """Swap in a new configuration between cycles; pods of new names get queued by caller."""
        built = profiles if profiles is not None else self.build_profiles(config)
        self.profiles = built
        self.config = config
        self.algorithm.percentage_of_nodes_to_score = config.percentage_of_nodes_to_score
        self.queue.initial_backoff = config.pod_initial_backoff_seconds
        self.queue.max_backoff = config.pod_max_backoff_seconds
        events: dict[str, tuple[ClusterEvent, ...]] = {}
        for fwk in built.values():
            for name, registered in fwk.plugin_events.items():
                events[name] = tuple(dict.fromkeys(events.get(name, ()) + registered))
        self.queue.plugin_events = events
        # Pods of retired names leave the queue untouched; the rest may fit under new plugins.
        self.queue.delete_where(lambda qpi: qpi.pod.scheduler_name not in self.profiles)
        self.queue.move_all_to_active_or_backoff(WILDCARD_EVENT)

    def _less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        fwk = self.profiles.get(a.pod.scheduler_name) or next(iter(self.profiles.values()), None)
        if fwk is None or fwk.queue_sort_plugin is None:
            return a.timestamp < b.timestamp
        return fwk.less(a, b)

    def _pre_enqueue(self, pod: PodInfo) -> str | None:
        fwk = self.profiles.get(pod.scheduler_name)
        if fwk is None:
            return None
        status = fwk.run_pre_enqueue(pod)
        return None if status is None else status.plugin or "PreEnqueue"

    # -- housekeeping ---------------------------------------------------------------------

    def housekeep(self) -> None:
        """Upstream's periodic work: flush backoffQ and the pool's leftovers (pods waiting
        longer than 5 minutes for an event), and expire assumptions the watch never confirmed."""
        self.queue.flush_backoff_completed()
        self.queue.flush_unschedulable_left_over()
        self.cleanup_assumed_pods()

    def cleanup_assumed_pods(self) -> int:
        expired = self.cache.cleanup_assumed_pods(self.clock())
        for pod in expired:
            entry = self._unconfirmed.pop(pod.uid, None)
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
            self._count_failed_binding(entry)
            self.queue.add_unschedulable(entry.qpi, set(), error=True)
        if expired:
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
        return len(expired)

    # -- the loop -------------------------------------------------------------------------

    async def run(
        self,
        stop: asyncio.Event | None = None,
        gate: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Schedule pods until ``stop`` is set (or forever).

        ``gate`` is awaited between popping a pod and its cycle: the cluster view must be
        fresh at the moment a node is chosen, not only when the pod was popped.
        """
        while stop is None or not stop.is_set():
            qpi = self.queue.pop_nowait()
            if qpi is not None:
                # A backlog pops without waiting: let bindings, events and watches run
                # between cycles, as a waiting pop would.
                await asyncio.sleep(0)
            else:
                pop = asyncio.ensure_future(self.queue.pop())
                if stop is not None:
                    stopper = asyncio.ensure_future(stop.wait())
                    done, _ = await asyncio.wait(
                        {pop, stopper}, return_when=asyncio.FIRST_COMPLETED
                    )
                    if pop not in done:
                        pop.cancel()
                        stopper.cancel()
                        break
                    stopper.cancel()
                qpi = await pop
            if gate is not None:
                await gate()
            try:
                await self.schedule_one(qpi)
            except Exception:
                logger.exception("scheduling cycle for %s failed", qpi.pod.key)
                self.queue.add_unschedulable(qpi, set(), error=True)

    async def schedule_one(self, qpi: QueuedPodInfo) -> Outcome:
        """One scheduling cycle; binding continues in a background task."""
        pod = qpi.pod
        fwk = self.profiles.get(pod.scheduler_name)
        if (
            fwk is None
            or pod.terminating
            or pod.uid not in self.queue  # deleted, or seen bound, since it was popped
            or self.cache.get_pod(pod.uid) is not None
        ):
            self.queue.delete(pod.uid)
            return self._emit(Outcome(pod, CycleResult.SKIPPED))
        start = self.clock()
        # Like upstream, time individual plugins in one cycle out of ten only.
        self._cycles += 1
        state = CycleState(record_plugin_metrics=self._cycles % PLUGIN_METRICS_SAMPLE == 0)
        try:
            result = self.algorithm.schedule_pod(
                fwk, state, pod, self.cache.snapshot, explain=self.explain
            )
        except FitError as err:
            return await self._handle_fit_error(fwk, state, qpi, err, start)
        except SchedulingError as err:
            self.observer.algorithm(self.clock() - start)
            await self._fail(
                fwk, qpi, REASON_SCHEDULER_ERROR, str(err), set(), error=True, start=start
            )
            return self._emit(Outcome(pod, CycleResult.ERROR, message=str(err)))
        except Exception as exc:
            # A plugin that raised instead of returning a Status (an input it did not
            # expect): the pod is reported and retried like any scheduler error, and the
            # loop goes on, as upstream does for a plugin's error status.
            message = _crash_message(exc)
            logger.error("scheduling cycle of %s failed: %s", pod.key, message)
            logger.debug("scheduling cycle of %s failed", pod.key, exc_info=True)
            await self._fail(
                fwk, qpi, REASON_SCHEDULER_ERROR, message, set(), error=True, start=start
            )
            return self._emit(Outcome(pod, CycleResult.ERROR, message=message))
        self.observer.algorithm(self.clock() - start)
        return await self._assume_and_bind(fwk, state, qpi, result, start)

    async def _handle_fit_error(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, err: FitError, start: float
    ) -> Outcome:
        pod = qpi.pod
        nominated = ""
        clear = False
        if fwk.post_filter_plugins:
            try:
                result, status = await fwk.run_post_filter(state, pod, err.diagnosis.node_to_status)
            except Exception as exc:  # reported with the fit error, as a PostFilter error status
                logger.error("PostFilter for %s failed: %s", pod.key, _crash_message(exc))
                result, status = None, Status(Code.ERROR, _crash_message(exc))
            # Whatever PostFilter says, a found placement included (as v1.37).
            err.diagnosis.post_filter_msg = status.message()
            if result is not None:
                nominated = result.nominated_node_name
                # An empty nomination from PostFilter clears a stale one (upstream ModeOverride).
                clear = not nominated and bool(
                    pod.nominated_node_name or self.queue.nominator.nominated_node(pod.uid)
                )
        # Upstream's algorithm latency covers PostFilter; the nomination's write is after.
        self.observer.algorithm(self.clock() - start)
        message = err.message()
        if nominated or clear:
            if nominated:
                self.queue.nominator.add_nominated_pod(pod, nominated)
            else:
                self.queue.nominator.delete_nominated_pod(pod)
            if self.client is not None:
                try:
                    await self.client.set_nominated_node(pod, nominated)
                except (ApiUnavailable, NotLeading):
                    pass  # logged once elsewhere; the next attempt nominates again
                except Exception as exc:
                    logger.warning("could not set nominatedNodeName of %s: %s", pod.key, exc)
        plugins = err.diagnosis.unschedulable_plugins
        await self._fail(fwk, qpi, REASON_UNSCHEDULABLE, message, plugins, start=start)
        outcome = Outcome(pod, CycleResult.UNSCHEDULABLE, message=message)
        outcome.nominated_node = nominated
        outcome.fit_error = err
        return self._emit(outcome)

    async def _assume_and_bind(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        result: ScheduleResult,
        start: float,
    ) -> Outcome:
        pod = qpi.pod
        host = result.suggested_host
        # Nothing awaits between filtering and here: the snapshot the node was chosen from
        # is still the one the pod is assumed into.
        assumed = self.cache.assume_pod(pod, host)
        try:
            status = fwk.run_reserve(state, assumed, host)
            if status is None:
                status = fwk.run_permit(state, assumed, host)
                if status is not None and status.code == Code.WAIT:
                    status = None  # waits in the binding cycle
        except Exception as exc:  # never leave the pod assumed
            logger.error("Reserve/Permit for %s failed: %s", pod.key, _crash_message(exc))
            status = Status(Code.ERROR, _crash_message(exc))
        if status is not None:
            fwk.run_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            fwk.waiting_pods.pop(pod.uid, None)
            rejected = status.is_rejected()
            reason = REASON_UNSCHEDULABLE if rejected else REASON_SCHEDULER_ERROR
            await self._fail(
                fwk, qpi, reason, status.message(), {status.plugin}, error=not rejected, start=start
            )
            return self._emit(Outcome(pod, CycleResult.UNSCHEDULABLE, message=status.message()))
        self.queue.nominator.delete_nominated_pod(pod)
        # The attempt is counted when its binding cycle ends (upstream: after Bind).
        cycle = BindingCycle(fwk, state, qpi, assumed, host, result, self.clock(), start)
        task = asyncio.create_task(self._binding_cycle(cycle))
        self._binding.add(task)
        task.add_done_callback(self._binding.discard)
        outcome = Outcome(pod, CycleResult.BINDING, node=host)
        outcome.schedule = result
        return outcome

    async def _binding_cycle(self, cycle: BindingCycle) -> None:
        fwk, state, assumed, host = cycle.fwk, cycle.state, cycle.assumed, cycle.host
        try:
            # Waiting at Permit holds no slot: a gang of any size cannot starve the rest.
            status = await fwk.wait_on_permit(assumed)
            if status is None:
                # PreBind holds no slot either: VolumeBinding waits there for the PV
                # controller, up to bindTimeoutSeconds.
                status = await fwk.run_pre_bind(state, assumed, host)
            if status is None:
                async with self._bind_slots:
                    status = await fwk.run_bind(state, assumed, host)
        except Exception as exc:
            logger.exception("binding cycle of %s failed", cycle.pod.key)
            status = Status.from_exception(exc)
        await self._after_bind(cycle, status)

    async def _after_bind(self, cycle: BindingCycle, status: Status | None) -> None:
        if status is not None:
            await self._binding_failed(cycle, status)
            return
        fwk, pod, host = cycle.fwk, cycle.pod, cycle.host
        self.cache.finish_binding(pod.uid, self.clock() + self.assumed_pod_ttl)
        self.queue.done(pod.uid)
        self._last_failure.pop(pod.uid, None)
        fwk.run_post_bind(cycle.state, cycle.assumed, host)
        self._count_bound(cycle)
        if self.events is not None:
            try:
                await self.events.scheduled(fwk.profile_name, pod, host)
            except Exception as exc:
                logger.warning("could not post the Scheduled event of %s: %s", pod.key, exc)
        outcome = Outcome(pod, CycleResult.SCHEDULED, node=host)
        outcome.schedule = cycle.result
        self._emit(outcome)

    async def _binding_failed(self, cycle: BindingCycle, status: Status) -> None:
        fwk, pod = cycle.fwk, cycle.pod
        cause = status.cause
        if isinstance(cause, BindingConflict) and cause.bound_to:
            self._bound_elsewhere(cycle, cause.bound_to)
            return
        if isinstance(cause, ApiUnavailable) and cause.maybe_sent:
            # The binding may be stored: keep counting the pod until the watch or the
            # TTL tells; giving its room away now could over-commit the node.
            self.cache.finish_binding(pod.uid, self.clock() + self.unconfirmed_binding_ttl)
            cycle.since = self.clock()
            self._unconfirmed[pod.uid] = cycle
            self._emit(Outcome(pod, CycleResult.BINDING, node=cycle.host, message=str(cause)))
            return
        cycle.unreserve()
        self.cache.forget_pod(cycle.assumed)
        self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
        rejected = status.is_rejected()
        # A rejection at Permit (a gang let go) is unschedulable, not an error.
        result_name = CycleResult.UNSCHEDULABLE if rejected else CycleResult.ERROR
        # A step-down is no failure of the pod's: neither counted nor reported.
        stepped_down = isinstance(cause, NotLeading)
        if not stepped_down:
            self.observer.binding_failed(fwk.profile_name)
        await self._fail(
            fwk,
            cycle.qpi,
            REASON_UNSCHEDULABLE if rejected else REASON_SCHEDULER_ERROR,
            status.message(),
            {status.plugin} if status.plugin else set(),
            error=not rejected,
            # An unreachable API server is logged once by the client, and a replica
            # that stopped leading says so once: not per pod.
            quiet=isinstance(cause, ApiUnavailable | NotLeading),
            start=None if stepped_down else cycle.attempt_start,
        )
        self._emit(Outcome(pod, result_name, message=status.message()))

    def _confirmed(self, uid: str, node: str = "") -> None:
        """The watch answered for a binding whose response was lost. Bound where we sent
        it: the cycle ends as a successful one would (the Scheduled event included, once:
        the resend loop finds it gone). Gone, or bound elsewhere: nothing of ours to say."""
        cycle = self._unconfirmed.pop(uid, None)
        if cycle is None:
            return
        if node and node == cycle.host:
            task = asyncio.create_task(self._after_bind(cycle, None))
            self._binding.add(task)
            task.add_done_callback(self._binding.discard)
            return
        self._count_failed_binding(cycle)
        self.queue.done(uid)
        self._last_failure.pop(uid, None)

    async def retry_unconfirmed_bindings(self, older_than: float = 2.0) -> int:
        """Send again the bindings whose response was lost, rather than wait for the TTL:
        one the API server stored answers 409 "already assigned" (bound there, as the
        watch will show), one it never got binds now. Returns how many were sent."""
        sent = 0
        now = self.clock()
        for uid, entry in list(self._unconfirmed.items()):
            if now - entry.since < older_than or self._unconfirmed.get(uid) is not entry:
                continue
            async with self._bind_slots:
                if self._unconfirmed.get(uid) is not entry:
                    continue  # the watch answered while we waited for a slot
                status = await entry.fwk.run_bind(entry.state, entry.assumed, entry.host)
            sent += 1
            if self._unconfirmed.get(uid) is not entry:
                continue
            if status is not None and isinstance(status.cause, ApiUnavailable | NotLeading):
                # Still no answer (or not ours to send now): the first request may yet be
                # stored; keep waiting for the watch or the TTL.
                entry.since = self.clock()
                continue
            del self._unconfirmed[uid]
            entry.start, entry.result = now, None
            await self._after_bind(entry, status)
        return sent

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
            self._count_failed_binding(cycle)
        cycle.unreserve()
        self.cache.forget_pod(cycle.assumed)
        if self.cache.get_pod(pod.uid) is None:  # the watch may have confirmed it meanwhile
            self.cache.assume_pod(pod, node)
            self.cache.finish_binding(pod.uid, self.clock() + self.assumed_pod_ttl)
        self._unconfirmed.pop(pod.uid, None)
        self.queue.done(pod.uid)
        self._last_failure.pop(pod.uid, None)
        self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)
        self._emit(Outcome(pod, CycleResult.SCHEDULED, node=node))

    async def _fail(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        reason: str,
        message: str,
        plugins: set[str],
        error: bool = False,
        quiet: bool = False,
        start: float | None = None,
    ) -> None:
        """Requeue and report; the same message for the same pod is not posted again until
        the longest backoff (``podMaxBackoffSeconds``) has passed, so retries don't spam.
        ``quiet``: requeue only (the cause is reported elsewhere, once). ``start``: when
        the attempt began, to count it (None: not counted)."""
        pod = qpi.pod
        if start is not None:
            result = "unschedulable" if reason == REASON_UNSCHEDULABLE else "error"
            self.observer.attempt(fwk.profile_name, result, self.clock() - start)
        self.queue.add_unschedulable(qpi, plugins, error=error, message=message)
        if pod.uid not in self.queue or quiet:
            return  # deleted meanwhile
        now = self.clock()
        last = self._last_failure.get(pod.uid)
        if last is not None and last[0] == message and now < last[1]:
            return
        self._last_failure[pod.uid] = (message, now + self.queue.max_backoff)
        logger.info("pod %s is unschedulable (%s): %s", pod.key, fwk.profile_name, message)
        if self.events is not None:
            try:
                await self.events.failed(fwk.profile_name, pod, reason, message)
            except Exception as exc:
                logger.warning("could not report the scheduling failure of %s: %s", pod.key, exc)

    def _count_bound(self, cycle: BindingCycle) -> None:
        now = self.clock()
        qpi = cycle.qpi
        first = qpi.initial_attempt_timestamp
        self.observer.bound(
            cycle.fwk.profile_name,
            now - cycle.attempt_start,
            now - cycle.start,
            now - (cycle.attempt_start if first is None else first),
            qpi.attempts,
            qpi.flushed,
        )

    def _count_failed_binding(self, cycle: BindingCycle) -> None:
        """A binding the API did not store for this pod (it is gone, or bound elsewhere)."""
        profile = cycle.fwk.profile_name
        self.observer.binding_failed(profile)
        self.observer.attempt(profile, "error", self.clock() - cycle.attempt_start)

    def _emit(self, outcome: Outcome) -> Outcome:
        if self.on_outcome is not None:
            self.on_outcome(outcome)
        return outcome

    async def wait_for_bindings(self) -> None:
        while self._binding:
            await asyncio.gather(*list(self._binding), return_exceptions=True)

    def held_at_permit(self) -> list[tuple[Framework, WaitingPod]]:
        return [(f, w) for f in self.profiles.values() for w in f.iterate_over_waiting_pods()]

    async def settle_bindings(self) -> None:
        """Like ``wait_for_bindings``, but a pod held at Permit may stay held (a gang's
        first members wait there for the rest): returns once every other binding is done.
        For simulate and explain, which take pods one at a time."""
        if self._binding:
            # A binding that nothing holds (simulate's client answers at once) ends in the
            # loop's next pass: one bare yield lets it, where a wait with a timer per pod
            # cost a tenth of simulate's scheduling.
            await asyncio.sleep(0)
        while self._binding:
            pending = [t for t in self._binding if not t.done()]
            if len(pending) <= len(self.held_at_permit()):
                return
            await asyncio.wait(pending, timeout=0.005, return_when=asyncio.FIRST_COMPLETED)


def _crash_message(exc: BaseException) -> str:
    """One line for an exception a plugin raised, as the FailedScheduling message shows it."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    name = type(exc).__name__
    return (
        f"running scheduling cycle: {name}: {text}" if text else f"running scheduling cycle: {name}"
    )
