"""The scheduler: live profiles, the queue, and the schedule-one loop with async binding.

``set_config`` swaps profiles atomically: a cycle takes its ``Framework`` once at the
start, so a pod mid-cycle finishes under the profile it started with and the next pod
uses the new one.

The scheduling cycle never awaits between choosing a node and assuming the pod there.
Everything after assume - waiting at Permit, PreBind, Bind - runs in a background binding
task (``binding_cycle.py``). A failed attempt ends in ``failure.py``'s handler, from
either cycle.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable

from multisched.cache import Cache, PodInfo
from multisched.config.resolved import ResolvedConfig, ResolvedProfile
from multisched.framework import (
    Code,
    CycleState,
    FitError,
    Framework,
    InstrumentedFramework,
    Registry,
    Status,
    WaitingPod,
)
from multisched.framework.events import (
    WILDCARD_EVENT,
    ClusterEvent,
)
from multisched.framework.handle import ClusterClient
from multisched.framework.queued_pod import QueuedPodInfo
from multisched.queue import QueueName, SchedulingQueue

from .algorithm import Algorithm, NoNodesAvailable, ScheduleResult, SchedulingError
from .binding_cycle import BindingCycle, BindingCycles
from .event_handlers import EventHandlers
from .events import NullObserver, SchedulerObserver, SchedulingEvents
from .failure import Failure, FailureHandler
from .outcome import CycleResult, Outcome

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


class Scheduler:
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
        self.events = events
        self.observer: SchedulerObserver = observer or NullObserver()
        self.rng = rng or random.Random()
        self.clock = clock
        self.explain = False
        self.algorithm = Algorithm(rng=self.rng)
        self.profiles: dict[str, Framework] = {}
        self.config = config
        self.queue = SchedulingQueue(self._less, self._pre_enqueue, clock=clock)
        if type(self.observer) is not NullObserver:  # simulate and explain time no hints
            self.queue.hint_observer = self.observer.queueing_hint
        #: Upstream's ``FailureHandler``: where a failed attempt ends, from either cycle.
        self.failure_handler = FailureHandler(
            self.queue, client, events, self.observer, clock, self._emit
        )
        self.binding = BindingCycles(
            self.cache,
            self.queue,
            self.failure_handler,
            events,
            self.observer,
            clock,
            self._emit,
            max_concurrent_binds,
            assumed_pod_ttl,
            unconfirmed_binding_ttl,
        )
        #: What the cluster tells the scheduler (``EngineFeed``): the only way in.
        self.feed = EventHandlers(
            self.cache, self.queue, lambda: self.profiles, self.binding, self.failure_handler
        )
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
        self.queue.queueing_hints = {name: fwk.plugin_hints for name, fwk in built.items()}
        # Pods of retired names leave the queue untouched; the rest may fit under new plugins.
        self.queue.delete_where(lambda qpi: qpi.pod.scheduler_name not in self.profiles)
        self.queue.move_all_to_active_or_backoff(WILDCARD_EVENT)

    def _activate(self, pods: Iterable[PodInfo]) -> None:
        self.queue.activate(p.uid for p in pods)

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
        self.binding.cleanup_assumed_pods()

    async def retry_unconfirmed_bindings(self, older_than: float = 2.0) -> int:
        """Send again the bindings whose response was lost (``BindingCycles``)."""
        return await self.binding.retry_unconfirmed(older_than)

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
        cycle = await self._scheduling_cycle(fwk, state, qpi, start)
        if isinstance(cycle, Failure):
            return await self.failure_handler.handle(fwk, qpi, cycle, start)
        # The attempt is counted when its binding cycle ends (upstream: after Bind).
        self.binding.start(cycle)
        outcome = Outcome(pod, CycleResult.BINDING, node=cycle.host)
        outcome.schedule = cycle.result
        return outcome

    async def _scheduling_cycle(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, start: float
    ) -> BindingCycle | Failure:
        """Upstream ``schedulingCycle``: the pod assumed on its node, Reserved and Permitted,
        ready for its binding cycle; or the failure, with its Status."""
        pod = qpi.pod
        try:
            result = self.algorithm.schedule_pod(
                fwk, state, pod, self.cache.snapshot, explain=self.explain
            )
        except FitError as err:
            return await self._post_filter(fwk, state, pod, err, start)
        except NoNodesAvailable as err:
            # Upstream: UnschedulableAndUnresolvable, the nomination cleared.
            self.observer.algorithm(self.clock() - start)
            status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err), cause=err)
            return Failure(status, self._cleared_nomination(pod))
        except SchedulingError as err:
            self.observer.algorithm(self.clock() - start)
            return Failure(Status(Code.ERROR, str(err), cause=err), self._cleared_nomination(pod))
        except Exception as exc:
            # A plugin that raised instead of returning a Status (an input it did not
            # expect): the pod is reported and retried like any scheduler error, and the
            # loop goes on, as upstream does for a plugin's error status.
            message = _crash_message(exc)
            logger.error("scheduling cycle of %s failed: %s", pod.key, message)
            logger.debug("scheduling cycle of %s failed", pod.key, exc_info=True)
            self.observer.algorithm(self.clock() - start)
            return Failure(Status(Code.ERROR, message), self._cleared_nomination(pod))
        self.observer.algorithm(self.clock() - start)
        return self._assume_and_reserve(fwk, state, qpi, result, start)

    async def _post_filter(
        self, fwk: Framework, state: CycleState, pod: PodInfo, err: FitError, start: float
    ) -> Failure:
        """No node fits: PostFilter (preemption) may nominate one for the next attempt."""
        # Without PostFilter plugins upstream clears the nomination (no preemption will).
        nominating = None if fwk.post_filter_plugins else self._cleared_nomination(pod)
        if fwk.post_filter_plugins:
            try:
                result, status = await fwk.run_post_filter(state, pod, err.diagnosis.node_to_status)
            except Exception as exc:  # reported with the fit error, as a PostFilter error status
                logger.error("PostFilter for %s failed: %s", pod.key, _crash_message(exc))
                result, status = None, Status(Code.ERROR, _crash_message(exc))
            # Whatever PostFilter says, a found placement included (as v1.37).
            err.diagnosis.post_filter_msg = status.message()
            if result is not None:
                # An empty nomination from PostFilter clears a stale one (upstream ModeOverride).
                nominating = result.nominated_node_name or self._cleared_nomination(pod)
        # Upstream's algorithm latency covers PostFilter; the nomination's write is after.
        self.observer.algorithm(self.clock() - start)
        return Failure(Status(Code.UNSCHEDULABLE, err.message(), cause=err), nominating)

    def _cleared_nomination(self, pod: PodInfo) -> str | None:
        """Upstream's ``clearNominatedNode``: "" (cleared) when the pod has a nomination,
        None (nothing to write) when it has none."""
        stale = pod.nominated_node_name or self.queue.nominator.nominated_node(pod.uid)
        return "" if stale else None

    def _assume_and_reserve(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        result: ScheduleResult,
        start: float,
    ) -> BindingCycle | Failure:
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
            return Failure(status, result=CycleResult.UNSCHEDULABLE)
        self.queue.nominator.delete_nominated_pod(pod)
        return BindingCycle(fwk, state, qpi, assumed, host, result, self.clock(), start)

    def _emit(self, outcome: Outcome) -> Outcome:
        if self.on_outcome is not None:
            self.on_outcome(outcome)
        return outcome

    async def wait_for_bindings(self) -> None:
        await self.binding.wait()
        await self.settle_background()

    async def settle_background(self) -> None:
        """Let the work plugins run off the cycle finish (async preemption's deletes)."""
        while pending := [t for f in self.profiles.values() for t in f.background]:
            await asyncio.wait(pending)

    def held_at_permit(self) -> list[tuple[Framework, WaitingPod]]:
        return [(f, w) for f in self.profiles.values() for w in f.iterate_over_waiting_pods()]

    async def settle_bindings(self) -> None:
        """Like ``wait_for_bindings``, but a pod held at Permit may stay held (a gang's
        first members wait there for the rest): returns once every other binding is done.
        For simulate and explain, which take pods one at a time."""
        await self.settle_background()
        in_flight = self.binding.in_flight
        if in_flight:
            # A binding that nothing holds (simulate's client answers at once) ends in the
            # loop's next pass: one bare yield lets it, where a wait with a timer per pod
            # cost a tenth of simulate's scheduling.
            await asyncio.sleep(0)
        while in_flight:
            pending = [t for t in in_flight if not t.done()]
            if len(pending) <= len(self.held_at_permit()):
                return
            await asyncio.wait(pending, timeout=0.005, return_when=asyncio.FIRST_COMPLETED)

    # -- Driver API -------------------------------------------------------------------------
    # How simulate and explain take the engine through its queue, one pod at a time, on a
    # clock that stands still unless they advance it; they never pop or flush the queue.

    def register_outcome_callback(self, callback: Callable[[Outcome], None]) -> None:
        """``callback`` gets each attempt's Outcome as it ends: at the end of the scheduling
        cycle, or for an assumed pod at the end of its binding cycle. One per engine: a
        second would silently take the first one's outcomes away."""
        if self.on_outcome is not None:
            raise RuntimeError("an outcome callback is registered already")
        self.on_outcome = callback

    async def schedule_next(self) -> Outcome | None:
        """One scheduling cycle for the pod at the head of activeQ, then its binding settled
        (a pod held at Permit stays held). None: activeQ is empty, nothing to do."""
        qpi = self.queue.pop_nowait()
        if qpi is None:
            return None
        return await self._settled_cycle(qpi)

    async def drain(self, max_attempts: int | None = None) -> list[PodInfo]:
        """``schedule_next`` until activeQ is empty, in its order; the clock is not advanced
        (pods backing off stay there). A pod tried more than ``max_attempts`` times is not
        tried again: it is parked in the unschedulable pool and its last Outcome stands
        (pods that keep taking each other's place would cycle forever on a still clock).
        Returns the pods parked."""
        parked: list[PodInfo] = []
        while (qpi := self.queue.pop_nowait()) is not None:
            if max_attempts is not None and qpi.attempts > max_attempts:
                parked.append(qpi.pod)
                self.queue.add_unschedulable(qpi, set())
                continue
            await self._settled_cycle(qpi)
        return parked

    async def _settled_cycle(self, qpi: QueuedPodInfo) -> Outcome:
        outcome = await self.schedule_one(qpi)
        await self.settle_bindings()
        return outcome

    async def end_permit_waits(self, rejection: str | None = None) -> int:
        """Let every pod held at Permit go: rejected with ``rejection``, or without one as
        if its wait had run out (nothing else will come for it); returns once their binding
        cycles (Unreserve, the requeue) are over. Returns how many were held."""
        held = self.held_at_permit()
        for _, waiting in held:
            if rejection is None:
                waiting.expire()
            else:
                waiting.reject("", rejection)
        if held:
            await self.wait_for_bindings()
        return len(held)

    def pods_backing_off(self) -> int:
        return self.queue.pending_counts()[QueueName.BACKOFF]

    def skip_backoff(
        self, advance: Callable[[float], None], event: ClusterEvent | None = None
    ) -> None:
        """Let the longest backoff pass on the clock the caller drives: ``advance`` it past
        ``podMaxBackoffSeconds``, move the pods ``event`` may help out of the unschedulable
        pool, then every pod whose backoff is over into activeQ."""
        advance(self.queue.max_backoff + 1)
        if event is not None:
            self.queue.move_all_to_active_or_backoff(event)
        self.queue.flush_backoff_completed()


def _crash_message(exc: BaseException) -> str:
    """One line for an exception a plugin raised, as the FailedScheduling message shows it."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    name = type(exc).__name__
    return (
        f"running scheduling cycle: {name}: {text}" if text else f"running scheduling cycle: {name}"
    )
