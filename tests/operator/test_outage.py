"""An API outage during a burst, scheduler and real client together: one log line when the
API server goes, one when it is back (with counts), no traceback, no pod lost."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from kmock import KubernetesEmulator, Request
from kmock._internal.rendering import Response
from kubernetes_asyncio import client as k8s

from builders import node_dict, pod_dict
from multisched.cache import Cache, PodInfo
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.operator.client import KubeClient
from multisched.scheduler import Scheduler, default_registry
from multisched.scheduler.scheduler import MAX_CONCURRENT_BINDS
from multisched.transport import Api, Reachability
from ports import closed_port


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def bound(request: Request) -> Response:
    return Response(status=201, payload={"kind": "Status", "code": 201})


async def drain(sched: Scheduler) -> None:
    while (qpi := sched.queue.pop_nowait()) is not None:
        await sched.schedule_one(qpi)
    await sched.wait_for_bindings()


async def test_a_burst_through_an_outage_logs_two_lines_and_binds_everything(
    kmock: KubernetesEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    kmock[lambda r: r.subresource == "binding"] << bound
    cfg = k8s.Configuration(host=f"http://127.0.0.1:{await closed_port()}")  # API server down
    api_client = k8s.ApiClient(cfg)
    pending: dict[str, Any] = {}
    kube = KubeClient(Api(api_client, timeout=5), instance="t", is_pending=pending.__contains__)
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [{"schedulerName": "s"}]}), registry)
    clock = Clock()
    sched = Scheduler(config, registry, cache=Cache(), client=kube, events=kube, clock=clock)
    sched.feed.on_node(node_dict("n1", cpu="64"))
    pods = [PodInfo.parse(pod_dict(f"p{i}", scheduler_name="s")) for i in range(30)]
    try:
        for pod in pods:
            pending[pod.uid] = pod
            sched.feed.on_pod(pod)
        await drain(sched)
        # Nothing was sent, so nothing stays assumed; every pod waits out its backoff.
        assert all(sched.queue.where(p.uid) == "backoff" for p in pods)
        assert not any(sched.cache.is_assumed(p.uid) for p in pods)
        await kube.recorder.flush()

        cfg.host = str(kmock.url).rstrip("/")  # the API server is back
        clock.now += 60
        sched.queue.flush_backoff_completed()
        await drain(sched)
        await kube.recorder.flush()
    finally:
        await kube.close()
        await api_client.close()

    assert all(sched.cache.get_pod(p.uid) is not None for p in pods)
    bindings = [r for r in kmock if r.subresource == "binding"]
    assert len(bindings) == len(pods)
    lines = [r for r in caplog.records if r.name.startswith("multisched")]
    assert not [r for r in lines if r.exc_info]
    assert [r.levelname for r in lines] == ["WARNING", "WARNING"], [r.getMessage() for r in lines]
    assert lines[0].getMessage().startswith("API server unreachable (bindings failed: ")
    assert lines[1].getMessage().endswith("failed or dropped meanwhile: 30 bindings")
    scheduled = [r for r in kmock if r.method == "POST" and str(r.url.path).endswith("/events")]
    assert len(scheduled) == len(pods)  # the Scheduled events, posted in the background


class SlowApi(Api):
    """An API server as a saturated one answers: every request takes ``latency``."""

    def __init__(self, latency: float) -> None:
        self.reachability = Reachability()
        self.latency = latency
        self.bindings = 0
        self.events = 0
        #: Pod paths whose status got a PodScheduled condition.
        self.conditions: set[str] = set()

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> dict[str, Any]:
        await asyncio.sleep(self.latency)
        if path.endswith("/binding"):
            self.bindings += 1
        elif path.endswith("/events"):
            self.events += 1
        elif path.endswith("/status") and (body or {}).get("status", {}).get("conditions"):
            self.conditions.add(path.removesuffix("/status"))
        return {}


async def test_scheduled_events_keep_pace_with_a_backlogs_bindings() -> None:
    """Each binding is followed by its Scheduled event, both at the API server's latency:
    the event senders must match the binding slots, or the events fall behind a backlog
    until the queue is full and drops them (as it did with half as many senders)."""
    api = SlowApi(latency=0.005)
    kube = KubeClient(api, instance="t")
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [{"schedulerName": "s"}]}), registry)
    sched = Scheduler(config, registry, cache=Cache(), client=kube, events=kube)
    sched.feed.on_node(node_dict("n1", cpu="640", memory="640Gi", pods="1000"))
    count = 10 * MAX_CONCURRENT_BINDS
    try:
        for i in range(count):
            sched.feed.on_pod(PodInfo.parse(pod_dict(f"p{i}", scheduler_name="s")))
        await drain(sched)
        assert api.bindings == count
        # What is left is about the last round's events (one latency behind its bindings).
        assert api.events >= count - 2 * MAX_CONCURRENT_BINDS, api.events
        await asyncio.wait_for(kube.recorder.flush(), 5)
        assert api.events == count
        assert not kube.recorder.dropped
    finally:
        await kube.close()


async def test_an_unschedulable_burst_keeps_every_pods_condition_and_event() -> None:
    """Each failed attempt queues a FailedScheduling event and a PodScheduled=False patch,
    and judging a pod no node can hold is quicker than the two requests. The scheduling loop
    waits for room in the recorder, as kube-scheduler's waits for its condition write, so
    nothing is dropped: not a pod's condition (cluster-autoscaler scales up for the pods that
    carry it, and an unschedulable pod may not be tried again for minutes), nor its event."""
    api = SlowApi(latency=0.005)
    kube = KubeClient(api, instance="t")
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [{"schedulerName": "s"}]}), registry)
    sched = Scheduler(config, registry, cache=Cache(), client=kube, events=kube)
    sched.feed.on_node(node_dict("n1", cpu="1", memory="1Gi"))
    count = 1500  # 3,000 jobs: beyond the queue's 1,000
    try:
        for i in range(count):
            sched.feed.on_pod(
                PodInfo.parse(pod_dict(f"p{i}", scheduler_name="s", requests={"cpu": "2"}))
            )
        await drain(sched)
        await asyncio.wait_for(kube.recorder.flush(), 10)
        assert api.bindings == 0
        assert len(api.conditions) == count, count - len(api.conditions)
        assert api.events == count
        assert not kube.recorder.dropped
    finally:
        await kube.close()
