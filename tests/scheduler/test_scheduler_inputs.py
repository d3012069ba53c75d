"""Anything the API server accepts, the schedule-one loop handles: a FailedScheduling event
and PodScheduled=False for pods that fit nowhere, and no crashed cycle for odd nodes."""

import asyncio
from typing import Any

from builders import RecordingClient, RecordingEvents, make_pod, node_dict
from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.config import parse_config_object, resolve
from multisched.framework import CycleState, Registry, Status
from multisched.scheduler import Scheduler, default_registry
from multisched.scheduler.events import REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE


def _default_scheduler(
    registry: Registry | None = None, max_concurrent_binds: int = 16, **plugins: Any
) -> Any:
    registry = registry or default_registry()
    spec = {"profiles": [{"schedulerName": "default-scheduler", **plugins}]}
    obj = {"apiVersion": "multisched.dev/v1alpha1", "kind": "SchedulerProfile", "spec": spec}
    events, client = RecordingEvents(), RecordingClient()
    sched = Scheduler(
        resolve(parse_config_object(obj), registry),
        registry,
        Cache(),
        client,
        events,
        max_concurrent_binds=max_concurrent_binds,
    )
    return sched, events, client


async def _drain(sched: Scheduler) -> None:
    while (qpi := sched.queue.pop_nowait()) is not None:
        await sched.schedule_one(qpi)
        await sched.wait_for_bindings()


async def test_pod_requesting_1e18_cpu_gets_failed_scheduling() -> None:
    sched, events, client = _default_scheduler()
    sched.feed.on_node(node_dict("n1", cpu="2"))
    sched.feed.on_node(node_dict("n2", cpu="4"))
    # "1E" is how the API server stores a request written as 1e18.
    huge = make_pod("huge", requests={"cpu": "1E", "memory": "1Ei"})
    sched.feed.on_pod(huge)
    sched.feed.on_pod(make_pod("small", requests={"cpu": "100m"}))
    await _drain(sched)
    failed = [e for e in events.log if e[0] == "FailedScheduling"]
    assert failed == [
        (
            "FailedScheduling",
            "default/huge",
            REASON_UNSCHEDULABLE,
            # A request beyond every node's allocatable is unresolvable there (v1.34+).
            "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory. "
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
        )
    ]
    assert [key for key, _ in client.bound] == ["default/small"]
    assert huge.uid in sched.queue  # retried later, not dropped


async def test_quantity_past_int64_is_capped_not_hung() -> None:
    sched, events, _ = _default_scheduler()
    # Past Quantity's documented 2^63-1: the cache caps it instead of expanding 10^999999999.
    sched.feed.on_node(node_dict("n1", cpu="1e999999999"))
    sched.feed.on_pod(make_pod("huge", requests={"cpu": "1e999999999"}))
    await _drain(sched)
    assert events.log == [("Scheduled", "default/huge", "n1")]


class Exploding:
    """A score plugin with a bug for odd nodes: it raises instead of returning a Status."""

    name = "Exploding"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 100 // (node.allocatable.milli_cpu - 1000)


async def test_plugin_exception_is_a_scheduler_error_event_and_the_loop_goes_on() -> None:
    registry = default_registry()
    registry.register(Exploding)
    sched, events, client = _default_scheduler(
        registry, plugins={"score": {"enabled": [{"name": "Exploding"}]}}
    )
    # Two feasible nodes, so the cycle scores (one node is taken without scoring).
    sched.feed.on_node(node_dict("odd-1", cpu="1"))
    sched.feed.on_node(node_dict("odd-2", cpu="1"))
    victim = make_pod("victim")
    sched.feed.on_pod(victim)
    await _drain(sched)
    assert events.log == [
        (
            "FailedScheduling",
            "default/victim",
            REASON_SCHEDULER_ERROR,
            "running scheduling cycle: ZeroDivisionError: integer division or modulo by zero",
        )
    ]
    assert victim.uid in sched.queue
    # The loop goes on: once the odd nodes are gone, the next cycle binds.
    sched.feed.on_node_deleted("odd-2")
    sched.feed.on_pod(make_pod("next"))
    await _drain(sched)
    assert ("default/next", "odd-1") in client.bound


class ReserveOnce:
    """Raises at Reserve for the first pod only."""

    name = "ReserveOnce"
    raised = False

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if not ReserveOnce.raised:
            ReserveOnce.raised = True
            raise KeyError("boom")
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pass


async def test_reserve_exception_frees_the_binding_slot_and_the_assumed_pod() -> None:
    registry = default_registry()
    registry.register(ReserveOnce)
    ReserveOnce.raised = False
    # One binding slot: a leaked one would stall the next pod.
    sched, events, client = _default_scheduler(
        registry, 1, plugins={"reserve": {"enabled": [{"name": "ReserveOnce"}]}}
    )
    sched.feed.on_node(node_dict("n1", cpu="1"))
    first = make_pod("first", requests={"cpu": "600m"})
    sched.feed.on_pod(first)
    await _drain(sched)
    assert events.log == [
        (
            "FailedScheduling",
            "default/first",
            REASON_SCHEDULER_ERROR,
            "running scheduling cycle: KeyError: 'boom'",
        )
    ]
    assert not sched.cache.is_assumed(first.uid)
    sched.feed.on_pod(make_pod("second", requests={"cpu": "600m"}))
    await asyncio.wait_for(_drain(sched), timeout=30)
    assert ("default/second", "n1") in client.bound


async def test_odd_but_valid_allocatable_is_scheduled_on_or_skipped() -> None:
    sched, events, client = _default_scheduler()
    odd: dict[str, Any] = node_dict("odd", cpu="0", memory="1e-9", pods="0")
    odd["status"]["allocatable"]["example.com/gpu"] = "9223372036854775807"
    odd["status"]["allocatable"]["hugepages-2Mi"] = "0"
    sched.feed.on_node(odd)
    sched.feed.on_node(node_dict("plain", cpu="1", memory="1Gi", pods="1"))
    for name in ("a", "b"):
        sched.feed.on_pod(make_pod(name, requests={"cpu": "100m", "example.com/gpu": "1"}))
    await _drain(sched)
    # Neither node fits two such pods; nothing crashed and every pod has its answer.
    assert sorted(e[0] for e in events.log) == ["FailedScheduling", "FailedScheduling"]
    assert client.bound == []
    assert all("Insufficient" in e[3] or "Too many pods" in e[3] for e in events.log)


def test_unreadable_status_is_refused_with_the_field() -> None:
    cache = Cache()
    bad = node_dict("bad")
    bad["status"]["allocatable"]["cpu"] = "1 Gi"
    try:
        cache.add_node(bad)
    except ValueError as exc:
        assert "status.allocatable: cpu: invalid quantity '1 Gi'" in str(exc)
    else:
        raise AssertionError("expected a NodeError")


_ = Status  # re-exported type used by plugins above
