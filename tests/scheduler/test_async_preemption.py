"""Async preemption through the real Scheduler and queue (upstream KEP-4832, the
SchedulerAsyncPreemption integration tests): the preemptor is nominated in its cycle, its
victims are deleted off the cycle, DefaultPreemption's PreEnqueue holds it back meanwhile,
and the last victim's deletion lets it through."""

from __future__ import annotations

import asyncio
from typing import Any

from builders import node_dict, pod_dict
from multisched.cache import Cache, PodInfo
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.queue import QueueName
from multisched.scheduler import Scheduler, default_registry
from multisched.scheduler.outcome import CycleResult, Outcome


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class WatchingClient:
    """Deletes wait for ``release``; a delete that lands reaches the scheduler as the watch
    would bring it, before the call returns (the race upstream guards against)."""

    def __init__(self) -> None:
        self.sched: Scheduler | None = None
        self.release = asyncio.Event()
        self.fail = False
        self.deleted: list[str] = []
        self.nominated: dict[str, str] = {}

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        assert self.sched is not None
        bound = PodInfo.parse({**pod.raw, "spec": {**pod.raw["spec"], "nodeName": node_name}})
        self.sched.feed.on_pod(bound)

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        pass

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        await self.release.wait()
        if self.fail:
            raise RuntimeError("delete pod failed")
        assert self.sched is not None
        self.deleted.append(pod.name)
        self.sched.feed.on_pod_deleted(pod.uid)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        self.nominated[pod.name] = node_name

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        return obj


def scheduler() -> tuple[Scheduler, WatchingClient, Clock]:
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [{"schedulerName": "s"}]}), registry)
    client = WatchingClient()
    clock = Clock()
    sched = Scheduler(config, registry, cache=Cache(), client=client, clock=clock)
    client.sched = sched
    sched.feed.on_node(node_dict("n1", cpu="2"))
    sched.feed.on_node(node_dict("n2", cpu="1"))
    for name, node in (("low1", "n1"), ("low2", "n1"), ("other", "n2")):
        raw = pod_dict(name, node_name=node, priority=0, requests={"cpu": "1"})
        sched.feed.on_pod(PodInfo.parse(raw))
    high = pod_dict("high", scheduler_name="s", priority=100, requests={"cpu": "2"})
    sched.feed.on_pod(PodInfo.parse(high))
    return sched, client, clock


async def cycle(sched: Scheduler) -> Outcome:
    """One cycle as the live loop runs it (simulate's ``schedule_next`` would wait for the
    deletes before it returns)."""
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    return await sched.schedule_one(qpi)


async def yield_to_background() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def where(sched: Scheduler, name: str) -> str:
    for queue, qpi in sched.queue.entries():
        if qpi.pod.name == name:
            return queue.value
    return "gone"


async def preempt(sched: Scheduler, clock: Clock) -> PodInfo:
    """The preemptor's cycle: nominated to n1, in the pool, its deletes started; then its
    backoff passes and an unrelated pod's deletion tries to move it: it is held back."""
    outcome = await cycle(sched)
    high = outcome.pod
    assert outcome.result == CycleResult.UNSCHEDULABLE
    assert outcome.nominated_node == "n1"
    assert sched.queue.nominator.nominated_node(high.uid) == "n1"
    assert where(sched, "high") == QueueName.UNSCHEDULABLE.value
    await yield_to_background()
    clock.now += 100
    other = next(p for p in sched.cache.pods() if p.name == "other")
    sched.feed.on_pod_deleted(other.uid)
    assert where(sched, "high") == QueueName.GATED.value
    return high


async def test_the_preemptor_waits_for_its_victims_then_takes_their_room() -> None:
    sched, client, clock = scheduler()
    await preempt(sched, clock)
    client.release.set()
    await sched.settle_background()
    assert sorted(client.deleted) == ["low1", "low2"]
    # The last victim's deletion (seen before its delete call returned) let it through.
    assert where(sched, "high") == QueueName.ACTIVE.value
    outcome = await sched.schedule_next()
    assert outcome is not None
    assert (outcome.result, outcome.node) == (CycleResult.BINDING, "n1")
    bound = sched.cache.get_pod(outcome.pod.uid)
    assert bound is not None and bound.node_name == "n1"


async def test_a_failed_delete_lets_the_held_preemptor_go_at_once() -> None:
    sched, client, clock = scheduler()
    await preempt(sched, clock)
    client.fail = True
    client.release.set()
    await sched.settle_background()
    assert client.deleted == []
    # Activated (upstream's Activate on error): PreEnqueue runs again and lets it in.
    assert where(sched, "high") == QueueName.ACTIVE.value
    outcome = await sched.schedule_next()
    assert outcome is not None
    # Its victims are still there: it preempts again, on the node it is nominated to.
    assert outcome.result == CycleResult.UNSCHEDULABLE
    assert outcome.nominated_node == "n1"


async def test_other_pods_are_scheduled_while_the_deletes_are_in_flight() -> None:
    """The point of it all: the API server's answer to the deletes holds up no cycle."""
    sched, client, clock = scheduler()
    await preempt(sched, clock)
    small = pod_dict("small", scheduler_name="s", priority=0, requests={"cpu": "1"})
    sched.feed.on_pod(PodInfo.parse(small))
    outcome = await cycle(sched)
    await yield_to_background()
    assert (outcome.pod.name, outcome.result, outcome.node) == (
        "small",
        CycleResult.BINDING,
        "n2",
    )
    assert client.deleted == []
    client.release.set()
    await sched.settle_background()
    assert sorted(client.deleted) == ["low1", "low2"]


def test_activating_a_pod_with_scheduling_gates_leaves_it_gated() -> None:
    """``activate`` runs PreEnqueue again for a gated pod (upstream moveToActiveQ): a
    preemptor is let go, a pod with scheduling gates stays where it is."""
    sched, _, _ = scheduler()
    gated = pod_dict("gated", scheduler_name="s")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    info = PodInfo.parse(gated)
    sched.feed.on_pod(info)
    assert where(sched, "gated") == QueueName.GATED.value
    assert sched.queue.activate([info.uid]) == 0
    assert where(sched, "gated") == QueueName.GATED.value
