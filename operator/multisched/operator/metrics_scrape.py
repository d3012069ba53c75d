"""The metrics read on each scrape rather than kept up to date on every change: the queue's
and the cache's sizes, the queue's incoming-pod counts (a plain dict the queue bumps) and
the pods each plugin rejected. The scheduling path pays nothing for them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from multisched.scheduler.introspect import EngineView

#: The scheduling entity every queued pod is (upstream's other one, "podgroup", needs the
#: GenericWorkload gate, which multisched does not implement).
POD_ENTITY = "pod"


def upstream_help(level: str, text: str) -> str:
    """Upstream's HELP, stability level first, as component-base annotates it."""
    return f"[{level}] {text}"


class SchedulerState(Collector):
    """``scheduler_pending_pods``, ``scheduler_queued_entities``, the queue's incoming
    counters, ``scheduler_cache_size`` and ``scheduler_unschedulable_pods``."""

    def __init__(self, engine: EngineView) -> None:
        self._engine = engine

    def collect(self) -> Iterator[Metric]:
        engine = self._engine
        counts = engine.pending_counts()
        pending = GaugeMetricFamily(
            "scheduler_pending_pods",
            upstream_help(
                "STABLE",
                "Number of pending pods, by the queue type. 'active' means number of pods in "
                "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
                "number of pods in unschedulableEntities that the scheduler attempted to "
                "schedule and failed; 'gated' is the number of unschedulable pods that the "
                "scheduler never attempted to schedule because they are gated.",
            ),
            labels=["queue"],
        )
        entities = GaugeMetricFamily(
            "scheduler_queued_entities",
            upstream_help("ALPHA", "Number of queued scheduling entities, by the queue type."),
            labels=["queue", "type"],
        )
        for name, count in counts.items():
            pending.add_metric([name], count)
            entities.add_metric([name, POD_ENTITY], count)
        yield pending
        yield entities
        yield from _incoming(engine.incoming())
        sizes = GaugeMetricFamily(
            "scheduler_cache_size",
            upstream_help(
                "ALPHA", "Number of nodes, pods, and assumed (bound) pods in the scheduler cache."
            ),
            labels=["type"],
        )
        for kind, size in engine.cache_sizes().items():
            sizes.add_metric([kind], size)
        yield sizes
        reasons = GaugeMetricFamily(
            "scheduler_unschedulable_pods",
            upstream_help(
                "BETA",
                "The number of unschedulable pods broken down by plugin name. A pod will "
                "increment the gauge for all plugins that caused it to not schedule and so "
                "this metric have meaning only when broken down by plugin.",
            ),
            labels=["plugin", "profile"],
        )
        for (plugin, profile), count in sorted(engine.unschedulable_reasons().items()):
            reasons.add_metric([plugin, profile], count)
        yield reasons
        in_flight = GaugeMetricFamily(
            "scheduler_inflight_events",
            upstream_help("ALPHA", "Number of events currently tracked in the scheduling queue."),
            labels=["event"],
        )
        for event, count in sorted(engine.in_flight_events().items()):
            in_flight.add_metric([event], count)
        yield in_flight


def _incoming(incoming: Mapping[tuple[str, str], int]) -> Iterator[Metric]:
    pods = CounterMetricFamily(
        "scheduler_queue_incoming_pods",
        upstream_help(
            "STABLE", "Number of pods added to scheduling queues by event and queue type."
        ),
        labels=["queue", "event"],
    )
    # Every move the queue counts takes a pod to another queue (or in): as many entities.
    entities = CounterMetricFamily(
        "scheduler_queue_incoming_entities",
        upstream_help(
            "ALPHA",
            "Number of scheduling entities added to scheduling queues by event, queue type, "
            "and entity type.",
        ),
        labels=["queue", "event", "type"],
    )
    for (queue, event), count in sorted(incoming.items()):
        pods.add_metric([queue, event], count)
        entities.add_metric([queue, event, POD_ENTITY], count)
    yield pods
    yield entities


class ProfilesReady(Collector):
    """``multisched_profile_ready``: each SchedulerProfile's Ready condition as 1 or 0."""

    def __init__(self, ready: Callable[[], Mapping[str, bool]]) -> None:
        self._ready = ready

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "multisched_profile_ready",
            "1 when the SchedulerProfile is Ready (in force as written), 0 when refused.",
            labels=["schedulerprofile"],
        )
        for name, ready in sorted(self._ready().items()):
            family.add_metric([name], 1.0 if ready else 0.0)
        yield family
