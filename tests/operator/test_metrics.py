"""The metrics under kube-scheduler v1.37.2's names, labels and buckets, and what the
scheduler counts in them; /metrics over HTTP is test_health_metrics'."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import Metric

from builders import node_dict, pod_dict
from multisched.cache import Cache, PodInfo
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.framework.events import NODE_ADD
from multisched.operator.metrics import Metrics
from multisched.queue import SchedulingQueue
from multisched.scheduler import Scheduler, default_registry
from multisched.scheduler.introspect import EngineView


def go_exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """client_golang's ``ExponentialBuckets`` (prometheus/histogram.go): each bound the
    previous one times ``factor``."""
    out = []
    for _ in range(count):
        out.append(start)
        start *= factor
    return out


#: kube-scheduler v1.37.2's metrics that multisched exports: name, type, label names,
#: ``ExponentialBuckets(start, factor, count)`` and stability level, each as declared in
#: k8s.io/kubernetes@v1.37.2/pkg/scheduler/metrics/metrics.go at the line given
#: (its ``Name:`` field).
UPSTREAM: list[tuple[str, str, set[str], tuple[float, float, int] | None, str, int]] = [
    ("scheduler_schedule_attempts_total", "counter", {"result", "profile"}, None, "STABLE", 271),
    (
        "scheduler_scheduling_attempt_duration_seconds",
        "histogram",
        {"result", "profile"},
        (0.001, 2, 15),
        "STABLE",
        289,
    ),
    (
        "scheduler_scheduling_algorithm_duration_seconds",
        "histogram",
        set(),
        (0.001, 2, 15),
        "BETA",
        297,
    ),
    ("scheduler_preemption_victims", "histogram", set(), (1, 2, 7), "STABLE", 306),
    ("scheduler_preemption_attempts_total", "counter", set(), None, "STABLE", 315),
    ("scheduler_pending_pods", "gauge", {"queue"}, None, "STABLE", 322),
    ("scheduler_queued_entities", "gauge", {"queue", "type"}, None, "ALPHA", 329),
    (
        "scheduler_pod_scheduling_sli_duration_seconds",
        "histogram",
        {"attempts"},
        (0.01, 2, 20),
        "BETA",
        372,
    ),
    ("scheduler_pod_scheduling_attempts", "histogram", set(), (1, 2, 5), "STABLE", 383),
    ("scheduler_pod_scheduled_after_flush_total", "counter", set(), None, "ALPHA", 392),
    (
        "scheduler_framework_extension_point_duration_seconds",
        "histogram",
        {"extension_point", "status", "profile"},
        (0.0001, 2, 12),
        "STABLE",
        409,
    ),
    (
        "scheduler_plugin_execution_duration_seconds",
        "histogram",
        {"plugin", "extension_point", "status"},
        (0.00001, 1.5, 20),
        "BETA",
        420,
    ),
    ("scheduler_queue_incoming_pods_total", "counter", {"queue", "event"}, None, "STABLE", 444),
    (
        "scheduler_queue_incoming_entities_total",
        "counter",
        {"queue", "event", "type"},
        None,
        "ALPHA",
        452,
    ),
    (
        "scheduler_permit_wait_duration_seconds",
        "histogram",
        {"result"},
        (0.001, 2, 15),
        "BETA",
        460,
    ),
    ("scheduler_cache_size", "gauge", {"type"}, None, "ALPHA", 470),
    ("scheduler_unschedulable_pods", "gauge", {"plugin", "profile"}, None, "BETA", 478),
    (
        "scheduler_preemption_goroutines_duration_seconds",
        "histogram",
        {"result"},
        (0.01, 2, 20),
        "ALPHA",
        494,
    ),
    ("scheduler_preemption_goroutines_execution_total", "counter", {"result"}, None, "ALPHA", 505),
    ("scheduler_batch_attempts_total", "counter", {"profile", "result"}, None, "ALPHA", 350),
    ("scheduler_inflight_events", "gauge", {"event"}, None, "ALPHA", 336),
    (
        "scheduler_queueing_hint_execution_duration_seconds",
        "histogram",
        {"plugin", "event", "hint"},
        (0.00001, 1.5, 20),
        "ALPHA",
        432,
    ),
    ("scheduler_batch_cache_flushed_total", "counter", {"profile", "reason"}, None, "ALPHA", 357),
]
#: What only multisched has keeps its prefix.
MULTISCHED_ONLY = {
    "multisched_leader",
    "multisched_profile_ready",
    "multisched_binding_duration_seconds",
    "multisched_binding_errors_total",
}


class FakeClient:
    """The API writes plugins make; ``bind_error`` fails every binding."""

    def __init__(self) -> None:
        self.bind_error: Exception | None = None
        self.deleted: list[str] = []

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        if self.bind_error is not None:
            raise self.bind_error

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        pass

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        self.deleted.append(pod.name)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        pass

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        return obj


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def exposition_name(family: Metric) -> str:
    return f"{family.name}_total" if family.type == "counter" else family.name


def families(metrics: Metrics) -> dict[str, Metric]:
    return {exposition_name(f): f for f in metrics.registry.collect()}


def value(metrics: Metrics, name: str, **labels: str) -> float:
    """A sample's value; 0 when the series does not exist (never observed)."""
    return metrics.registry.get_sample_value(name, labels) or 0.0


def fire_every_hook(metrics: Metrics) -> None:
    """Every observation once, so every labelled metric has a series."""
    queue = SchedulingQueue(lambda a, b: a.timestamp < b.timestamp)
    queue.add(PodInfo.parse(pod_dict("p", scheduler_name="s")))
    qpi = queue.pop_nowait()
    assert qpi is not None
    queue.add_unschedulable(qpi, {"NodeResourcesFit"})
    queue.add(PodInfo.parse(pod_dict("in-flight", scheduler_name="s")))
    assert queue.pop_nowait() is not None
    queue.move_all_to_active_or_backoff(NODE_ADD)  # kept for the pod in flight
    metrics.track_scheduler(EngineView(queue, Cache()))
    metrics.track_profiles(lambda: {"s": True})
    metrics.queueing_hint("NodeResourcesFit", "NodeAdd", "Queue", 0.00002)
    metrics.attempt("s", "unschedulable", 0.002)
    metrics.algorithm(0.001)
    metrics.bound("s", 0.01, 0.005, 0.5, 1, after_flush=True)
    metrics.binding_failed("s")
    metrics.plugin("NodeResourcesFit", "Filter", "Success", 0.00002)
    recorder = metrics.framework_recorder("s")
    recorder.extension_point("Filter", "Success", 0.0003)
    recorder.permit_wait("Success", 0.1)
    recorder.preemption_attempt()
    recorder.preemption_victims(2)
    recorder.preemption_goroutine("success", 0.02)
    recorder.batch_attempt("hint_used")
    recorder.batch_flush("expired")
    metrics.leader.set(1)


def test_exported_metrics_are_upstreams_with_its_labels_and_buckets() -> None:
    metrics = Metrics()
    fire_every_hook(metrics)
    exported = families(metrics)
    for name, kind, labels, buckets, stability, line in UPSTREAM:
        where = f"{name} (metrics.go:{line})"
        family = exported.get(name)
        assert family is not None, f"{where} is not exported"
        assert family.type == kind, where
        assert family.documentation.startswith(f"[{stability}] "), where
        assert family.samples, where
        seen = {k for s in family.samples for k in s.labels} - {"le"}
        assert seen == labels, where
        if buckets is None:
            continue
        series = dict(sorted(family.samples[0].labels.items()))
        series.pop("le", None)
        bounds = [
            float(s.labels["le"])
            for s in family.samples
            if s.name.endswith("_bucket")
            and {k: v for k, v in s.labels.items() if k != "le"} == series
        ]
        assert bounds == [*go_exponential_buckets(*buckets), float("inf")], where


def test_nothing_else_is_exported_and_the_old_names_are_gone() -> None:
    metrics = Metrics()
    fire_every_hook(metrics)
    exported = set(families(metrics))
    assert exported == {row[0] for row in UPSTREAM} | MULTISCHED_ONLY
    text = metrics.render().decode()
    # Removed upstream (and once copied here as multisched_pod_scheduling_duration_seconds).
    assert "pod_scheduling_duration_seconds" not in text
    for old in (
        "multisched_schedule_attempts",
        "multisched_scheduling_attempt_duration_seconds",
        "multisched_pending_pods",
        "multisched_plugin_execution_duration_seconds",
    ):
        assert old not in text
    assert "_created" not in text  # upstream exports none


def test_the_sli_attempts_label_is_capped_at_15() -> None:
    metrics = Metrics()
    for attempts in (1, 14, 15, 40):
        metrics.bound("s", 0.01, 0.01, 1.0, attempts, after_flush=False)
    counts = {
        s.labels["attempts"]: s.value
        for s in families(metrics)["scheduler_pod_scheduling_sli_duration_seconds"].samples
        if s.name.endswith("_count")
    }
    assert counts == {"1": 1, "14": 1, "15+": 2}


def test_batch_attempts_and_flushes_are_counted_per_profile_and_label() -> None:
    metrics = Metrics()
    first, second = metrics.framework_recorder("a"), metrics.framework_recorder("b")
    for _ in range(3):
        first.batch_attempt("hint_used")
    first.batch_attempt("no_hint")
    second.batch_attempt("hint_used")
    first.batch_flush("expired")
    first.batch_flush("expired")
    second.batch_flush("pod_skipped")

    def totals(name: str, label: str) -> dict[tuple[str, str], float]:
        return {
            (s.labels["profile"], s.labels[label]): s.value
            for s in families(metrics)[name].samples
            if s.name.endswith("_total")
        }

    assert totals("scheduler_batch_attempts_total", "result") == {
        ("a", "hint_used"): 3,
        ("a", "no_hint"): 1,
        ("b", "hint_used"): 1,
    }
    assert totals("scheduler_batch_cache_flushed_total", "reason") == {
        ("a", "expired"): 2,
        ("b", "pod_skipped"): 1,
    }


# -- what the scheduler counts -----------------------------------------------------------


@pytest.fixture
def scheduler() -> Iterator[tuple[Scheduler, Metrics, FakeClient, Clock]]:
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [{"schedulerName": "s"}]}), registry)
    metrics = Metrics()
    client = FakeClient()
    clock = Clock()
    sched = Scheduler(config, registry, cache=Cache(), client=client, observer=metrics, clock=clock)
    metrics.track_scheduler(EngineView.of(sched))
    yield sched, metrics, client, clock


async def schedule_next(sched: Scheduler) -> None:
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    await sched.schedule_one(qpi)
    await sched.wait_for_bindings()


def add_pod(sched: Scheduler, name: str, **kw: Any) -> None:
    sched.feed.on_pod(PodInfo.parse(pod_dict(name, scheduler_name="s", **kw)))


def attempts(metrics: Metrics) -> dict[str, float]:
    return {
        result: value(metrics, "scheduler_schedule_attempts_total", result=result, profile="s")
        for result in ("scheduled", "unschedulable", "error")
    }


def points(metrics: Metrics) -> dict[tuple[str, str], float]:
    """Observations per (extension point, status) of profile "s"."""
    family = families(metrics)["scheduler_framework_extension_point_duration_seconds"]
    return {
        (s.labels["extension_point"], s.labels["status"]): s.value
        for s in family.samples
        if s.name.endswith("_count") and s.labels["profile"] == "s"
    }


async def test_a_bound_pod_is_one_scheduled_attempt(
    scheduler: tuple[Scheduler, Metrics, FakeClient, Clock],
) -> None:
    sched, metrics, _, clock = scheduler
    sched.feed.on_node(node_dict("n1", cpu="2"))
    sched.feed.on_node(node_dict("n2", cpu="4"))
    add_pod(sched, "web", requests={"cpu": "1"})
    clock.now += 3  # waits in activeQ: part of the SLI, not of the attempt
    await schedule_next(sched)
    assert attempts(metrics) == {"scheduled": 1, "unschedulable": 0, "error": 0}
    histogram = "scheduler_scheduling_attempt_duration_seconds"
    assert value(metrics, f"{histogram}_count", result="scheduled", profile="s") == 1
    assert value(metrics, f"{histogram}_sum", result="scheduled", profile="s") == 0
    sli = "scheduler_pod_scheduling_sli_duration_seconds"
    assert value(metrics, f"{sli}_count", attempts="1") == 1
    assert value(metrics, f"{sli}_sum", attempts="1") == 3
    assert value(metrics, "scheduler_pod_scheduling_attempts_count") == 1
    assert value(metrics, "scheduler_scheduling_algorithm_duration_seconds_count") == 1
    assert value(metrics, "multisched_binding_duration_seconds_count", profile="s") == 1
    assert points(metrics) == {
        (point, "Success"): 1
        for point in (
            "PreEnqueue",
            "PreFilter",
            "Filter",
            "PreScore",
            "Score",
            "Reserve",
            "Permit",
            "PreBind",
            "Bind",
            "PostBind",
        )
    } | {("PreBindPreFlight", "Skip"): 1}  # no PreBind work for it: no nomination either
    incoming = "scheduler_queue_incoming_pods_total"
    assert value(metrics, incoming, queue="active", event="UnscheduledPodAdd") == 1
    assert value(metrics, "scheduler_pending_pods", queue="active") == 0
    assert value(metrics, "scheduler_cache_size", type="pods") == 1
    assert value(metrics, "scheduler_cache_size", type="nodes") == 2


async def test_an_unschedulable_pod_is_one_unschedulable_attempt_and_waits_in_the_pool(
    scheduler: tuple[Scheduler, Metrics, FakeClient, Clock],
) -> None:
    sched, metrics, _, _ = scheduler
    sched.feed.on_node(node_dict("n1", cpu="2"))
    add_pod(sched, "big", requests={"cpu": "64"})
    await schedule_next(sched)
    assert attempts(metrics) == {"scheduled": 0, "unschedulable": 1, "error": 0}
    assert value(metrics, "scheduler_pending_pods", queue="unschedulable") == 1
    reasons = "scheduler_unschedulable_pods"
    assert value(metrics, reasons, plugin="NodeResourcesFit", profile="s") == 1
    incoming = "scheduler_queue_incoming_pods_total"
    assert value(metrics, incoming, queue="unschedulable", event="ScheduleAttemptFailure") == 1
    # DefaultPreemption ran (a preemption attempt, upstream counts every one) and found
    # nothing to evict.
    assert points(metrics)[("PostFilter", "Unschedulable")] == 1
    assert value(metrics, "scheduler_preemption_attempts_total") == 1
    assert value(metrics, "scheduler_preemption_victims_count") == 0
    assert value(metrics, "scheduler_scheduling_algorithm_duration_seconds_count") == 1


async def test_no_node_at_all_is_an_unschedulable_attempt(
    scheduler: tuple[Scheduler, Metrics, FakeClient, Clock],
) -> None:
    """Upstream's ErrNoNodesAvailable is UnschedulableAndUnresolvable: counted unschedulable,
    and, rejected by no plugin, retried after its backoff."""
    sched, metrics, _, _ = scheduler
    add_pod(sched, "nowhere")  # no node at all: "no nodes available to schedule pods"
    await schedule_next(sched)
    assert attempts(metrics) == {"scheduled": 0, "unschedulable": 1, "error": 0}
    assert value(metrics, "scheduler_pending_pods", queue="backoff") == 1


async def test_a_failed_binding_is_one_error_attempt_not_a_scheduled_one(
    scheduler: tuple[Scheduler, Metrics, FakeClient, Clock],
) -> None:
    sched, metrics, client, _ = scheduler
    sched.feed.on_node(node_dict("n1", cpu="2"))
    client.bind_error = RuntimeError("etcdserver: request timed out")
    add_pod(sched, "web", requests={"cpu": "1"})
    await schedule_next(sched)
    assert attempts(metrics) == {"scheduled": 0, "unschedulable": 0, "error": 1}
    assert value(metrics, "multisched_binding_errors_total", profile="s") == 1
    assert points(metrics)[("Bind", "Error")] == 1
    assert points(metrics)[("Unreserve", "Success")] == 1
    assert value(metrics, "scheduler_pod_scheduling_attempts_count") == 0


async def test_pending_pods_by_queue(
    scheduler: tuple[Scheduler, Metrics, FakeClient, Clock],
) -> None:
    sched, metrics, client, _ = scheduler
    sched.feed.on_node(node_dict("n1", cpu="2"))
    client.bind_error = RuntimeError("etcdserver: request timed out")
    add_pod(sched, "a-erring", requests={"cpu": "1"})
    await schedule_next(sched)  # an error: to backoffQ
    add_pod(sched, "b-too-big", requests={"cpu": "64"})
    await schedule_next(sched)  # to the unschedulable pool
    add_pod(sched, "c-gated", schedulingGates=[{"name": "example.com/wait"}])
    add_pod(sched, "d-waiting")
    add_pod(sched, "e-waiting")
    pending = {
        queue: value(metrics, "scheduler_pending_pods", queue=queue)
        for queue in ("active", "backoff", "unschedulable", "gated")
    }
    assert pending == {"active": 2, "backoff": 1, "unschedulable": 1, "gated": 1}
    entities = "scheduler_queued_entities"
    assert value(metrics, entities, queue="active", type="pod") == 2
    reasons = "scheduler_unschedulable_pods"
    assert value(metrics, reasons, plugin="SchedulingGates", profile="s") == 1
    incoming = "scheduler_queue_incoming_pods_total"
    assert value(metrics, incoming, queue="unschedulable", event="UnscheduledPodAdd") == 1
    assert value(metrics, incoming, queue="backoff", event="ScheduleAttemptFailure") == 1


async def test_preemption_counts_its_attempt_and_victims(
    scheduler: tuple[Scheduler, Metrics, FakeClient, Clock],
) -> None:
    sched, metrics, client, _ = scheduler
    sched.feed.on_node(node_dict("n1", cpu="2"))
    sched.feed.on_pod(
        PodInfo.parse(pod_dict("low", node_name="n1", priority=0, requests={"cpu": "2"}))
    )
    add_pod(sched, "high", priority=100, requests={"cpu": "1"})
    await schedule_next(sched)
    assert client.deleted == ["low"]
    assert value(metrics, "scheduler_preemption_attempts_total") == 1
    assert value(metrics, "scheduler_preemption_victims_count") == 1
    assert value(metrics, "scheduler_preemption_victims_bucket", le="1.0") == 1
    assert attempts(metrics) == {"scheduled": 0, "unschedulable": 1, "error": 0}


async def test_a_pod_bound_after_the_pools_timeout_is_counted_after_flush(
    scheduler: tuple[Scheduler, Metrics, FakeClient, Clock],
) -> None:
    sched, metrics, _, clock = scheduler
    sched.feed.on_node(node_dict("n1", cpu="2"))
    add_pod(sched, "fits", requests={"cpu": "1"})
    await schedule_next(sched)
    add_pod(sched, "big", requests={"cpu": "3"})
    await schedule_next(sched)  # to the pool, for an event that never comes
    clock.now += 301
    assert sched.queue.flush_unschedulable_left_over() == 1
    sched.feed.on_node(node_dict("n2", cpu="4"))
    await schedule_next(sched)
    assert attempts(metrics) == {"scheduled": 2, "unschedulable": 1, "error": 0}
    assert value(metrics, "scheduler_pod_scheduled_after_flush_total") == 1
    incoming = "scheduler_queue_incoming_pods_total"
    assert value(metrics, incoming, queue="active", event="UnschedulableTimeout") == 1
    sli = "scheduler_pod_scheduling_sli_duration_seconds"
    assert value(metrics, f"{sli}_count", attempts="2") == 1
    assert value(metrics, f"{sli}_sum", attempts="2") == 301
