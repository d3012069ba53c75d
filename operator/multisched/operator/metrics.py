"""Prometheus metrics under kube-scheduler v1.37's names, labels and buckets
(``pkg/scheduler/metrics/metrics.go``), so its dashboards and alerts work as they are;
what only multisched has is named ``multisched_*``.

Each runtime has its own ``CollectorRegistry`` (several operators may share a process in
tests). The scheduling path observes children bound once (``labels()`` validates on every
call), histograms without a lock (histogram.py). Sizes and counts the queue and the cache
already hold are read on scrape (metrics_scrape.py). Per-plugin execution durations
come from the cycles the scheduler samples (one in ten, as upstream samples a tenth).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    disable_created_metrics,
    generate_latest,
)

from multisched.scheduler.introspect import EngineView

from .histogram import HistogramSeries, LocklessHistogram
from .metrics_scrape import ProfilesReady, SchedulerState, upstream_help

# Upstream exports no ``_created`` series (one more line per counter series here).
disable_created_metrics()  # type: ignore[no-untyped-call]  # the library leaves it unannotated


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Go's ``ExponentialBuckets``: each bound the previous one times ``factor``, multiplied
    in turn as Go does, so the ``le`` labels print exactly as upstream's."""
    bounds = []
    for _ in range(count):
        bounds.append(start)
        start *= factor
    return tuple(bounds)


#: 1 ms doubling to ~16 s: attempts, the algorithm, a Permit wait.
ATTEMPT_BUCKETS = exponential_buckets(0.001, 2, 15)
#: 0.1 ms doubling to ~200 ms: one extension point.
EXTENSION_POINT_BUCKETS = exponential_buckets(0.0001, 2, 12)
#: 10 us growing by 1.5 to ~22 ms: one plugin call.
PLUGIN_BUCKETS = exponential_buckets(0.00001, 1.5, 20)
#: 10 ms doubling to ~88 min: a pod's whole wait.
SLI_BUCKETS = exponential_buckets(0.01, 2, 20)
POD_ATTEMPTS_BUCKETS = exponential_buckets(1, 2, 5)
VICTIMS_BUCKETS = exponential_buckets(1, 2, 7)
#: ``pod_scheduling_sli_duration_seconds``'s ``attempts`` label stops counting here.
SLI_ATTEMPTS_CAP = 15

SCHEDULED = "scheduled"


def attempts_label(attempts: int) -> str:
    """Upstream ``getAttemptsLabel``: the attempt count, capped to bound the cardinality."""
    return f"{SLI_ATTEMPTS_CAP}+" if attempts >= SLI_ATTEMPTS_CAP else str(attempts)


class ProfileRecorder:
    """``framework.FrameworkRecorder`` for one profile, its children bound on first use."""

    __slots__ = ("_batch", "_metrics", "_permit", "_points", "_profile")

    def __init__(self, metrics: Metrics, profile: str) -> None:
        self._metrics = metrics
        self._profile = profile
        self._points: dict[tuple[str, str], HistogramSeries] = {}
        self._permit: dict[str, HistogramSeries] = {}
        #: Batch attempt and flush counters by (family, label): counted every cycle, and
        #: ``labels()`` costs as much as a filter plugin on a node.
        self._batch: dict[tuple[Counter, str], Any] = {}

    def extension_point(self, point: str, status: str, seconds: float) -> None:
        child = self._points.get((point, status))
        if child is None:
            child = self._metrics.extension_point_duration.labels(point, status, self._profile)
            self._points[(point, status)] = child
        child.observe(seconds)

    def permit_wait(self, status: str, seconds: float) -> None:
        child = self._permit.get(status)
        if child is None:
            child = self._permit[status] = self._metrics.permit_wait_duration.labels(status)
        child.observe(seconds)

    def preemption_attempt(self) -> None:
        self._metrics.preemption_attempts.inc()

    def preemption_victims(self, victims: int) -> None:
        self._metrics.preemption_victims.observe(victims)

    def preemption_goroutine(self, result: str, seconds: float) -> None:
        self._metrics.preemption_goroutines_duration.labels(result).observe(seconds)
        self._metrics.preemption_goroutines_total.labels(result).inc()

    def batch_attempt(self, result: str) -> None:
        self._batch_child(self._metrics.batch_attempts, result).inc()

    def batch_flush(self, reason: str) -> None:
        self._batch_child(self._metrics.batch_cache_flushed, reason).inc()

    def _batch_child(self, family: Counter, label: str) -> Any:
        child = self._batch.get((family, label))
        if child is None:
            child = self._batch[(family, label)] = family.labels(self._profile, label)
        return child


class Metrics:
    """``scheduler.events.SchedulerObserver`` plus the process-level gauges."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self.attempts = Counter(
            "scheduler_schedule_attempts_total",
            upstream_help(
                "STABLE",
                "Number of attempts to schedule pods, by the result. 'unschedulable' means a "
                "pod could not be scheduled, while 'error' means an internal scheduler problem.",
            ),
            ["result", "profile"],
            registry=registry,
        )
        self.attempt_duration = LocklessHistogram(
            "scheduler_scheduling_attempt_duration_seconds",
            upstream_help(
                "STABLE", "Scheduling attempt latency in seconds (scheduling algorithm + binding)"
            ),
            ["result", "profile"],
            buckets=ATTEMPT_BUCKETS,
            registry=registry,
        )
        self.algorithm_duration = LocklessHistogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            upstream_help("BETA", "Scheduling algorithm latency in seconds"),
            buckets=ATTEMPT_BUCKETS,
            registry=registry,
        )
        self.sli_duration = LocklessHistogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            upstream_help(
                "BETA",
                "E2e latency for a pod being scheduled, from the time the pod enters the "
                "scheduling queue and might involve multiple scheduling attempts.",
            ),
            ["attempts"],
            buckets=SLI_BUCKETS,
            registry=registry,
        )
        self.pod_attempts = LocklessHistogram(
            "scheduler_pod_scheduling_attempts",
            upstream_help("STABLE", "Number of attempts to successfully schedule a pod."),
            buckets=POD_ATTEMPTS_BUCKETS,
            registry=registry,
        )
        self.scheduled_after_flush = Counter(
            "scheduler_pod_scheduled_after_flush_total",
            upstream_help(
                "ALPHA",
                "Number of pods that were successfully scheduled after being flushed from "
                "unschedulableEntities due to timeout.",
            ),
            registry=registry,
        )
        self.extension_point_duration = LocklessHistogram(
            "scheduler_framework_extension_point_duration_seconds",
            upstream_help(
                "STABLE", "Latency for running all plugins of a specific extension point."
            ),
            ["extension_point", "status", "profile"],
            buckets=EXTENSION_POINT_BUCKETS,
            registry=registry,
        )
        self.plugin_duration = LocklessHistogram(
            "scheduler_plugin_execution_duration_seconds",
            upstream_help("BETA", "Duration for running a plugin at a specific extension point."),
            ["plugin", "extension_point", "status"],
            buckets=PLUGIN_BUCKETS,
            registry=registry,
        )
        self.queueing_hint_duration = LocklessHistogram(
            "scheduler_queueing_hint_execution_duration_seconds",
            upstream_help("ALPHA", "Duration for running a queueing hint function of a plugin."),
            ["plugin", "event", "hint"],
            buckets=PLUGIN_BUCKETS,
            registry=registry,
        )
        self.permit_wait_duration = LocklessHistogram(
            "scheduler_permit_wait_duration_seconds",
            upstream_help("BETA", "Duration of waiting on permit."),
            ["result"],
            buckets=ATTEMPT_BUCKETS,
            registry=registry,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            upstream_help("STABLE", "Total preemption attempts in the cluster till now"),
            registry=registry,
        )
        self.batch_attempts = Counter(
            "scheduler_batch_attempts_total",
            upstream_help("ALPHA", "Counts of results when we attempt to use batching."),
            ["profile", "result"],
            registry=registry,
        )
        self.batch_cache_flushed = Counter(
            "scheduler_batch_cache_flushed_total",
            upstream_help("ALPHA", "Counts of cache flushes by reason."),
            ["profile", "reason"],
            registry=registry,
        )
        self.preemption_victims = LocklessHistogram(
            "scheduler_preemption_victims",
            upstream_help(
                "STABLE",
                "Number of selected preemption victims for preemption initiated by a single pod",
            ),
            buckets=VICTIMS_BUCKETS,
            registry=registry,
        )
        # Asynchronous preemption's deletes (upstream registers them with the gate on).
        self.preemption_goroutines_duration = LocklessHistogram(
            "scheduler_preemption_goroutines_duration_seconds",
            upstream_help(
                "ALPHA",
                "(Deprecated since 1.37.0) Duration in seconds for running goroutines for the "
                "preemption.",
            ),
            ["result"],
            buckets=SLI_BUCKETS,
            registry=registry,
        )
        self.preemption_goroutines_total = Counter(
            "scheduler_preemption_goroutines_execution_total",
            upstream_help("ALPHA", "Number of preemption goroutines executed."),
            ["result"],
            registry=registry,
        )
        # multisched's own.
        self.binding_duration = LocklessHistogram(
            "multisched_binding_duration_seconds",
            "Binding cycle latency (permit wait, preBind, bind), by profile.",
            ["profile"],
            buckets=ATTEMPT_BUCKETS,
            registry=registry,
        )
        self.binding_errors = Counter(
            "multisched_binding_errors_total",
            "Binding cycles that failed after the pod was assumed (Permit rejection, PreBind "
            "or Bind error), by profile; the pod is scheduled again.",
            ["profile"],
            registry=registry,
        )
        self.leader = Gauge(
            "multisched_leader",
            "1 while this replica schedules (leader, or leader election off), else 0.",
            registry=registry,
        )
        self._attempt_children: dict[tuple[str, str], tuple[Counter, HistogramSeries]] = {}
        self._sli_children: dict[int, HistogramSeries] = {}
        self._plugin_children: dict[tuple[str, str, str], HistogramSeries] = {}
        self._hint_children: dict[tuple[str, str, str], HistogramSeries] = {}
        self._binding_children: dict[str, tuple[HistogramSeries, Counter]] = {}
        self._recorders: dict[str, ProfileRecorder] = {}

    def track_scheduler(self, engine: EngineView) -> None:
        """Export the engine's queue and cache state, read on each scrape."""
        self.registry.register(SchedulerState(engine))

    def track_profiles(self, ready: Callable[[], Mapping[str, bool]]) -> None:
        """Export each SchedulerProfile's Ready condition (1/0) on each scrape."""
        self.registry.register(ProfilesReady(ready))

    # -- SchedulerObserver ----------------------------------------------------------------

    def _attempt(self, result: str, profile: str) -> tuple[Counter, HistogramSeries]:
        key = (result, profile)
        children = self._attempt_children.get(key)
        if children is None:
            children = (self.attempts.labels(*key), self.attempt_duration.labels(*key))
            self._attempt_children[key] = children
        return children

    def _binding(self, profile: str) -> tuple[HistogramSeries, Counter]:
        children = self._binding_children.get(profile)
        if children is None:
            children = (self.binding_duration.labels(profile), self.binding_errors.labels(profile))
            self._binding_children[profile] = children
        return children

    def attempt(self, profile: str, result: str, seconds: float) -> None:
        count, duration = self._attempt(result, profile)
        count.inc()
        duration.observe(seconds)

    def algorithm(self, seconds: float) -> None:
        self.algorithm_duration.observe(seconds)

    def bound(
        self,
        profile: str,
        attempt_seconds: float,
        binding_seconds: float,
        sli_seconds: float,
        attempts: int,
        after_flush: bool,
    ) -> None:
        count, duration = self._attempt(SCHEDULED, profile)
        count.inc()
        duration.observe(attempt_seconds)
        self._binding(profile)[0].observe(binding_seconds)
        self.pod_attempts.observe(attempts)
        capped = min(attempts, SLI_ATTEMPTS_CAP)
        sli = self._sli_children.get(capped)
        if sli is None:
            sli = self._sli_children[capped] = self.sli_duration.labels(attempts_label(capped))
        sli.observe(sli_seconds)
        if after_flush:
            self.scheduled_after_flush.inc()

    def binding_failed(self, profile: str) -> None:
        self._binding(profile)[1].inc()

    def plugin(self, plugin: str, extension_point: str, status: str, seconds: float) -> None:
        # Called per plugin per timed node in a sampled cycle.
        key = (plugin, extension_point, status)
        child = self._plugin_children.get(key)
        if child is None:
            child = self._plugin_children[key] = self.plugin_duration.labels(*key)
        child.observe(seconds)

    def queueing_hint(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        # Called per hint run: per pooled pod its rejecting plugins registered the event for.
        key = (plugin, event, hint)
        child = self._hint_children.get(key)
        if child is None:
            child = self._hint_children[key] = self.queueing_hint_duration.labels(*key)
        child.observe(seconds)

    def framework_recorder(self, profile: str) -> ProfileRecorder:
        recorder = self._recorders.get(profile)
        if recorder is None:
            recorder = self._recorders[profile] = ProfileRecorder(self, profile)
        return recorder

    def render(self) -> bytes:
        return generate_latest(self.registry)
