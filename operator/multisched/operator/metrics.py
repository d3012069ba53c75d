"""Prometheus metrics, named after kube-scheduler's (``scheduler_*`` -> ``multisched_*``).

Each runtime has its own ``CollectorRegistry`` (several operators may share a process in
tests). Queue sizes are read on scrape rather than tracked on every queue move.
Per-plugin execution durations come from the cycles the scheduler samples (one in ten, as
upstream), so the filter hot path is not timed otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

# kube-scheduler's buckets: 1 ms doubling to ~16 s, and 10 ms doubling for end-to-end.
ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))
# Plugin calls are microseconds: 10 us growing by 1.5x (upstream's plugin buckets).
PLUGIN_BUCKETS = tuple(0.00001 * 1.5**i for i in range(20))
E2E_BUCKETS = tuple(0.01 * 2**i for i in range(20))


class _PendingPods(Collector):
    def __init__(self, counts: Callable[[], Mapping[str, int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "multisched_pending_pods",
            "Pending pods by queue (active, backoff, unschedulable, gated).",
            labels=["queue"],
        )
        for queue, count in self._counts().items():
            family.add_metric([queue], count)
        yield family


class _ProfilesReady(Collector):
    def __init__(self, ready: Callable[[], Mapping[str, bool]]) -> None:
        self._ready = ready

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "multisched_profile_ready",
            "1 when the SchedulerProfile is Ready (in force as written), 0 when refused.",
            labels=["schedulerprofile"],
        )
        for name, ready in sorted(self._ready().items()):
            family.add_metric([name], 1.0 if ready else 0.0)
        yield family


class Metrics:
    """``scheduler.events.SchedulerObserver`` plus the process-level gauges."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._plugin_children: dict[tuple[str, str, str], Any] = {}
        self.attempts = Counter(
            "multisched_schedule_attempts",
            "Scheduling attempts by result (scheduled, unschedulable, error) and profile.",
            ["result", "profile"],
            registry=self.registry,
        )
        self.attempt_duration = Histogram(
            "multisched_scheduling_attempt_duration_seconds",
            "Scheduling cycle latency (filter, score, reserve, permit), by result and profile.",
            ["result", "profile"],
            buckets=ATTEMPT_BUCKETS,
            registry=self.registry,
        )
        self.e2e_duration = Histogram(
            "multisched_pod_scheduling_duration_seconds",
            "From the first scheduling attempt of a pod to its successful binding.",
            ["profile"],
            buckets=E2E_BUCKETS,
            registry=self.registry,
        )
        self.binding_duration = Histogram(
            "multisched_binding_duration_seconds",
            "Binding cycle latency (permit wait, preBind, bind).",
            ["profile"],
            buckets=ATTEMPT_BUCKETS,
            registry=self.registry,
        )
        self.plugin_duration = Histogram(
            "multisched_plugin_execution_duration_seconds",
            "Duration of one plugin at one extension point, in sampled cycles (Score: the "
            "plugin's pass over all nodes, NormalizeScore included).",
            ["plugin", "extension_point", "status"],
            buckets=PLUGIN_BUCKETS,
            registry=self.registry,
        )
        self.binding_errors = Counter(
            "multisched_binding_errors",
            "Binding cycles that failed after the pod was assumed (Permit rejection, PreBind "
            "or Bind error), by profile; the pod is scheduled again.",
            ["profile"],
            registry=self.registry,
        )
        self.leader = Gauge(
            "multisched_leader",
            "1 while this replica schedules (leader, or leader election off), else 0.",
            registry=self.registry,
        )

    def track_pending(self, counts: Callable[[], Mapping[str, int]]) -> None:
        """Export the queue sizes ``counts`` returns on each scrape."""
        self.registry.register(_PendingPods(counts))

    def track_profiles(self, ready: Callable[[], Mapping[str, bool]]) -> None:
        """Export each SchedulerProfile's Ready condition (1/0) on each scrape."""
        self.registry.register(_ProfilesReady(ready))

    # -- SchedulerObserver ----------------------------------------------------------------

    def attempt(self, profile: str, result: str, seconds: float) -> None:
        self.attempts.labels(result, profile).inc()
        self.attempt_duration.labels(result, profile).observe(seconds)

    def bound(self, profile: str, binding_seconds: float, e2e_seconds: float) -> None:
        self.binding_duration.labels(profile).observe(binding_seconds)
        self.e2e_duration.labels(profile).observe(e2e_seconds)

    def binding_failed(self, profile: str, result: str) -> None:
        # Upstream's failure handler counts a failed binding cycle as an attempt too.
        self.attempts.labels(result, profile).inc()
        self.binding_errors.labels(profile).inc()

    def plugin(self, plugin: str, extension_point: str, status: str, seconds: float) -> None:
        # Called per plugin per node in a sampled cycle: ``labels()`` validates and locks on
        # every call, so the children are looked up once.
        key = (plugin, extension_point, status)
        child = self._plugin_children.get(key)
        if child is None:
            child = self._plugin_children[key] = self.plugin_duration.labels(*key)
        child.observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
