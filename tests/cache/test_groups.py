"""The gang and quota plugins' view: PodGroups, ElasticQuotas, each group's pods, what each
namespace's pods on nodes request, and the queue's forced activation (PodsToActivate)."""

from __future__ import annotations

from typing import Any

from builders import make_pod
from multisched.cache import ELASTIC_QUOTA, POD_GROUP, POD_GROUP_LABEL, Cache
from multisched.config.resolved import ResolvedConfig
from multisched.queue import SchedulingQueue
from multisched.scheduler import Scheduler, default_registry


def group(name: str, namespace: str = "team-a", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def member(name: str, group_name: str, namespace: str = "team-a", **kw: Any) -> Any:
    return make_pod(name, namespace=namespace, labels={POD_GROUP_LABEL: group_name}, **kw)


def test_group_members_are_tracked_until_they_go_or_finish() -> None:
    cache = Cache()
    groups = cache.groups
    groups.upsert(POD_GROUP, group("train", minMember=3))
    a, b = member("a", "train"), member("b", "train", node_name="n1")
    other = member("x", "train", namespace="team-b")  # same name, another namespace
    for pod in (a, b, other, make_pod("loner", namespace="team-a")):
        groups.track_pod(pod)
    assert {p.name for p in groups.members("team-a", "train")} == {"a", "b"}
    assert groups.pod_group_of(a) is not None and groups.pod_group_of(other) is None
    done = member("a", "train", status={"phase": "Succeeded"})
    done.uid = a.uid
    groups.track_pod(done)  # the same pod, finished
    groups.untrack_pod(b.uid)
    assert groups.members("team-a", "train") == []
    assert list(groups.groups_with_members()) == [("team-b", "train")]


def test_one_quota_per_namespace_the_first_by_name() -> None:
    groups = Cache().groups
    for name in ("zz", "aa"):
        groups.upsert(
            ELASTIC_QUOTA,
            {"metadata": {"name": name, "namespace": "team-a"}, "spec": {"max": {"cpu": "4"}}},
        )
    quota = groups.quota_for("team-a")
    assert quota is not None and quota["metadata"]["name"] == "aa"
    assert groups.quota_for("team-ab") is None  # a prefix of no namespace's key
    groups.delete(ELASTIC_QUOTA, {"metadata": {"name": "aa", "namespace": "team-a"}})
    quota = groups.quota_for("team-a")
    assert quota is not None and quota["metadata"]["name"] == "zz"


def test_namespace_requests_follow_assume_forget_bind_and_delete() -> None:
    cache = Cache()
    cache.add_node({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}})
    web = make_pod("web", namespace="team-a", requests={"cpu": "1", "memory": "1Gi"})
    api = make_pod("api", namespace="team-a", requests={"cpu": "500m"}, node_name="n1")
    cache.add_pod(api)
    used = cache.snapshot.namespace_requests
    assert used("team-a").milli_cpu == 500
    assumed = cache.assume_pod(web, "n1")
    assert used("team-a").milli_cpu == 1500 and used("team-a").memory == 2**30
    cache.forget_pod(assumed)
    assert used("team-a").milli_cpu == 500
    cache.assume_pod(web, "n1")
    bound = make_pod("web", namespace="team-a", requests={"cpu": "1", "memory": "1Gi"})
    bound.uid, bound.node_name = web.uid, "n1"
    cache.add_pod(bound)  # the watch confirms it: counted once
    assert used("team-a").milli_cpu == 1500
    cache.remove_pod(api.uid)
    assert used("team-a").milli_cpu == 1000
    assert used("elsewhere").milli_cpu == 0


def test_activate_moves_pooled_and_backing_off_pods_but_not_gated_ones() -> None:
    now = [0.0]
    gated = {"gated"}
    q = SchedulingQueue(
        lambda a, b: a.timestamp < b.timestamp,
        lambda pod: "SchedulingGates" if pod.name in gated else None,
        clock=lambda: now[0],
    )
    pods = {n: make_pod(n) for n in ("pooled", "backing-off", "gated", "flying")}
    for pod in pods.values():
        q.add(pod)
    for _ in range(3):  # pooled, backing-off, flying: in the order they came
        qpi = q.pop_nowait()
        assert qpi is not None
        if qpi.pod.name == "pooled":
            q.add_unschedulable(qpi, {"Coscheduling"})
        elif qpi.pod.name == "backing-off":
            q.add_unschedulable(qpi, set(), error=True)
    moved = q.activate(p.uid for p in pods.values())
    assert moved == 2
    where = {n: q.where(p.uid) for n, p in pods.items()}
    assert where == {
        "pooled": "active",
        "backing-off": "active",
        "gated": "unschedulable",
        "flying": "in-flight",
    }
    info = q.info(pods["pooled"].uid)
    assert info is not None and info.woken_by == "ForceActivate"
    # The pod in flight, if it fails now, goes to backoffQ rather than the pool.
    flying = q.info(pods["flying"].uid)
    assert flying is not None
    q.add_unschedulable(flying, {"Coscheduling"})
    assert q.where(pods["flying"].uid) == "backoff"


def test_a_framework_activates_through_the_scheduler() -> None:
    sched = Scheduler(ResolvedConfig(profiles=()), default_registry(load_entry_points=False))
    pod = make_pod("sibling")
    sched.queue.add(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    sched.queue.add_unschedulable(qpi, {"Coscheduling"})
    sched._activate([pod])
    assert sched.queue.where(pod.uid) == "active"
