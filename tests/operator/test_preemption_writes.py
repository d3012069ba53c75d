"""A preemption's writes, scheduler and real client together: the preemptor's nomination
goes out in the same status patch as its PodScheduled=False (upstream ``updatePod``), so a
preempting pod costs the API server what it costs under kube-scheduler."""

from __future__ import annotations

from typing import Any

from builders import node_dict, pod_dict
from multisched.cache import Cache, PodInfo
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.operator.client import KubeClient
from multisched.scheduler import Scheduler, default_registry
from multisched.transport import Api, Reachability


class RecordingApi(Api):
    def __init__(self) -> None:
        self.reachability = Reachability()
        self.writes: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> dict[str, Any]:
        self.writes.append((method, path, body))
        return {}


async def test_a_preemptor_is_nominated_in_the_patch_that_reports_it() -> None:
    api = RecordingApi()
    kube = KubeClient(api, instance="t")
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [{"schedulerName": "s"}]}), registry)
    sched = Scheduler(config, registry, cache=Cache(), client=kube, events=kube)
    sched.feed.on_node(node_dict("n1", cpu="2", memory="4Gi"))
    victim = pod_dict("low", node_name="n1", priority=0, requests={"cpu": "2"})
    sched.feed.on_pod(PodInfo.parse(victim))
    sched.feed.on_pod(
        PodInfo.parse(pod_dict("high", scheduler_name="s", priority=100, requests={"cpu": "1"}))
    )
    try:
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        await sched.schedule_one(qpi)
        await sched.wait_for_bindings()  # the victims' deletes run off the cycle
        await kube.recorder.flush()
        high = [(m, body) for m, path, body in api.writes if "/pods/high" in path]
        low = [m for m, path, _ in api.writes if "/pods/low" in path]
    finally:
        await kube.close()
    assert low == ["PATCH", "DELETE"]  # DisruptionTarget, then the deletion
    ((method, body),) = high
    assert method == "PATCH"
    assert body["status"]["nominatedNodeName"] == "n1"
    (condition,) = body["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    assert sched.queue.nominator.nominated_node(qpi.pod.uid) == "n1"
