"""The runtime fed directly (no kopf): what watch events do to the cache and the queue."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kmock import KubernetesEmulator
from kubernetes_asyncio import client as k8s

from builders import node_dict, pod_dict
from kmock_support import declare_kinds
from multisched.cache import PodInfo
from multisched.operator.options import Options
from multisched.operator.runtime import Runtime
from multisched.plugins.podtopologyspread.common import default_selector
from multisched.scheduler import default_registry
from multisched.transport import Api

SCHED = "my-scheduler"


class HeldElsewhere:
    """A Lease some other replica holds for ever: this runtime never starts its loop."""

    async def get(self, namespace: str, name: str) -> dict[str, Any]:
        return {"metadata": {"resourceVersion": "1"}, "spec": {"holderIdentity": "other"}}

    async def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("the lease exists")

    async def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("never expires")


@pytest.fixture
async def runtime(kmock: KubernetesEmulator) -> AsyncIterator[Runtime]:
    api_client = k8s.ApiClient(k8s.Configuration(host=str(kmock.url).rstrip("/")))
    rt = Runtime(
        Options(http_port=0, secure_port=0, leader_elect=True),
        Api(api_client),
        default_registry(load_entry_points=False),
        lease_api=HeldElsewhere(),
    )
    await rt.start()
    assert not rt.scheduling
    # Writes allowed, but no scheduling loop: the queue stays put.
    rt._writing = True
    rt.elector = None  # the lease stays held elsewhere; writes no longer ask it
    try:
        yield rt
    finally:
        await rt.stop()


def profile_obj(*names: str, uid: str = "uid-p") -> dict[str, Any]:
    return {
        "metadata": {
            "name": "p",
            "uid": uid,
            "generation": 1,
            "creationTimestamp": "2024-01-01T00:00:00Z",
        },
        "spec": {"profiles": [{"schedulerName": n} for n in names]},
    }


async def test_finished_pods_leave_the_cache(runtime: Runtime) -> None:
    runtime.cluster.on_node(node_dict("n1"))
    pod = pod_dict("job", node_name="n1", requests={"cpu": "1"})
    runtime.cluster.on_assigned_pod(pod)
    uid = pod["metadata"]["uid"]
    assert runtime.scheduler.cache.get_pod(uid) is not None
    runtime.cluster.on_assigned_pod({**pod, "status": {"phase": "Succeeded"}})
    assert runtime.scheduler.cache.get_pod(uid) is None
    node = runtime.scheduler.cache.snapshot.get("n1")
    assert node is not None and node.requested.milli_cpu == 0


async def test_relisting_is_idempotent(runtime: Runtime) -> None:
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    pod = pod_dict("web", scheduler_name=SCHED)
    for _ in range(3):
        await runtime.cluster.on_pod(pod)
    assert runtime.scheduler.queue.pending_counts()["active"] == 1


async def test_a_status_only_update_does_not_retry_an_unschedulable_pod(
    runtime: Runtime,
) -> None:
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    pod = pod_dict("web", scheduler_name=SCHED, requests={"cpu": "4"})
    uid = pod["metadata"]["uid"]
    await runtime.cluster.on_pod(pod)
    queue = runtime.scheduler.queue
    qpi = queue.pop_nowait()
    assert qpi is not None
    queue.add_unschedulable(qpi, {"NodeResourcesFit"})
    # Our own PodScheduled=False patch comes back through the watch.
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    await runtime.cluster.on_pod({**pod, "status": {"conditions": [condition]}})
    assert queue.where(uid) == "unschedulable"
    info = queue.info(uid)
    assert info is not None and info.pod.raw["status"]["conditions"] == [condition]
    # A label change cannot make it fit (v1.37: NodeResourcesFit's hint asks for less).
    labelled = {**pod, "metadata": {**pod["metadata"], "labels": {"app": "web"}}}
    await runtime.cluster.on_pod(labelled)
    assert queue.where(uid) == "unschedulable"
    # Asking for less may: it leaves the pool.
    smaller = pod_dict("web", scheduler_name=SCHED, requests={"cpu": "1"})
    smaller["metadata"] = labelled["metadata"]
    await runtime.cluster.on_pod(smaller)
    assert queue.where(uid) in ("active", "backoff")


async def store(kmock: KubernetesEmulator, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Into kmock's store, as the API server keeps it (what a listing then returns)."""
    async with kmock.post(path, json=obj) as resp:
        assert resp.status in (200, 201), await resp.text()
    return obj


async def store_pod(kmock: KubernetesEmulator, pod: dict[str, Any]) -> dict[str, Any]:
    return await store(kmock, f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods", pod)


async def test_pods_wait_for_their_profile_and_stay_when_it_goes(
    kmock: KubernetesEmulator, runtime: Runtime
) -> None:
    declare_kinds(kmock)
    pod = await store_pod(kmock, pod_dict("web", scheduler_name=SCHED))
    uid = pod["metadata"]["uid"]
    await runtime.cluster.on_pod(pod)
    assert runtime.scheduler.queue.where(uid) is None  # nobody serves my-scheduler
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    assert runtime.scheduler.queue.where(uid) == "active"
    await runtime.profile_sync.on_profile(profile_obj(SCHED), deleted=True)
    assert runtime.scheduler.queue.where(uid) is None
    assert runtime.cluster.others[uid].key == "default/web"  # still known, by its identity
    await runtime.profile_sync.on_profile(profile_obj(SCHED, uid="uid-p2"))
    assert runtime.scheduler.queue.where(uid) == "active"


async def test_a_profile_claiming_a_name_schedules_the_pods_that_waited_for_it(
    kmock: KubernetesEmulator, runtime: Runtime
) -> None:
    declare_kinds(kmock)
    waited = [await store_pod(kmock, pod_dict(n, scheduler_name=SCHED)) for n in ("a", "b")]
    gone = await store_pod(kmock, pod_dict("gone", scheduler_name=SCHED))
    unseen = await store_pod(kmock, pod_dict("unseen", scheduler_name=SCHED))
    theirs = await store_pod(kmock, pod_dict("theirs", scheduler_name="other"))
    for pod in [*waited, gone, theirs]:
        await runtime.cluster.on_pod(pod)  # as kopf hands them over
    runtime.cluster.on_pending_pod_gone(gone)  # deleted since (the listing may lag)
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    queue = runtime.scheduler.queue
    assert [queue.where(p["metadata"]["uid"]) for p in waited] == ["active", "active"]
    # Not resurrected; and one kopf has not handed over yet comes by kopf's event.
    assert queue.where(gone["metadata"]["uid"]) is None
    assert queue.where(unseen["metadata"]["uid"]) is None
    assert list(runtime.cluster.others) == [theirs["metadata"]["uid"]]


async def test_the_first_cycle_waits_for_the_pods_a_name_claims_and_takes_them_as_listed(
    kmock: KubernetesEmulator, runtime: Runtime
) -> None:
    """A name served while kopf hands the first listing over: ``a`` came before it (kept as
    another scheduler's, then listed again), ``b`` after it (queued at once). The first
    cycle waits for ``a``'s listing, and the backlog goes in the order it was listed."""
    declare_kinds(kmock)
    assert runtime.intake is not None
    await asyncio.wait_for(runtime.intake.wait_synced(), 10)
    a, b = (pod_dict(n, scheduler_name=SCHED) for n in ("a", "b"))
    await runtime.cluster.on_pod(a)  # nobody serves my-scheduler yet
    listing = asyncio.Event()

    async def slow_listing(name: str) -> AsyncIterator[list[dict[str, Any]]]:
        await listing.wait()
        yield [a]

    runtime.cluster._list_pending = slow_listing
    serving = asyncio.create_task(runtime.profile_sync.on_profile(profile_obj(SCHED)))
    await asyncio.sleep(0.01)
    await runtime.cluster.on_pod(b)  # kopf goes on handing pods over
    queue = runtime.scheduler.queue
    assert queue.where(b["metadata"]["uid"]) == "active"
    assert queue.where(a["metadata"]["uid"]) is None
    runtime.handlers_sync.listed = frozenset({"default/a", "default/b"})
    stop = asyncio.Event()
    loop = asyncio.create_task(runtime._run_loop(stop, None))
    await asyncio.sleep(0.05)
    assert queue.scheduling_cycle == 0  # the claim of my-scheduler is still listing
    listing.set()
    await serving
    uids = [p["metadata"]["uid"] for p in (a, b)]
    for _ in range(200):
        infos = [queue.info(uid) for uid in uids]
        if all(i is not None and i.attempts for i in infos):
            break
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(loop, 5)
    # No node: each failed once, a first (its failure stamped earlier).
    first, second = (queue.info(uid) for uid in uids)
    assert first is not None and second is not None
    assert first.attempts == second.attempts == 1
    assert first.timestamp < second.timestamp


async def test_a_failed_listing_of_a_claimed_name_is_tried_again_at_resync(
    kmock: KubernetesEmulator, runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    pod = pod_dict("web", scheduler_name=SCHED)
    uid = pod["metadata"]["uid"]
    await runtime.cluster.on_pod(pod)
    profile = profile_obj(SCHED)
    await runtime.profile_sync.on_profile(profile)  # kmock serves no pods yet: 404
    assert runtime.scheduler.queue.where(uid) is None
    assert runtime.cluster.unclaimed == {SCHED}
    assert f"could not list the pending pods of {SCHED}" in caplog.text
    declare_kinds(kmock)
    await store_pod(kmock, pod)
    await store(kmock, "/apis/multisched.dev/v1alpha1/schedulerprofiles", profile)
    runtime.profile_sync.resync()
    for _ in range(200):
        if runtime.scheduler.queue.where(uid) == "active":
            break
        await asyncio.sleep(0.01)
    assert runtime.scheduler.queue.where(uid) == "active"
    assert runtime.cluster.unclaimed == set()


async def test_an_unreadable_pod_of_ours_gets_one_warning(
    kmock: KubernetesEmulator, runtime: Runtime
) -> None:
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    bad = pod_dict("bad", scheduler_name=SCHED, requests={"cpu": "lots"})
    theirs = pod_dict("theirs", scheduler_name="other", requests={"cpu": "lots"})
    for pod in (bad, bad, theirs):
        await runtime.cluster.on_pod(pod)
    events = [
        dict(obj.raw)
        for (resource, _, _), obj in kmock.objects.items()
        if resource.plural == "events" and obj.raw["involvedObject"]["kind"] == "Pod"
    ]
    assert [(e["involvedObject"]["name"], e["reason"]) for e in events] == [
        ("bad", "FailedScheduling")
    ]
    assert "lots" in events[0]["message"]
    assert runtime.scheduler.queue.where(bad["metadata"]["uid"]) is None


async def test_a_pod_leaving_the_pending_selection_stays_counted_as_bound(
    runtime: Runtime,
) -> None:
    """kopf's field-selected watch says DELETED when a pod is bound: the pod is no longer
    pending, but it is not gone - the assigned-pod informer holds it in the cache."""
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    runtime.cluster.on_node(node_dict("n1"))
    pod = pod_dict("web", scheduler_name=SCHED, requests={"cpu": "1"})
    uid = pod["metadata"]["uid"]
    await runtime.cluster.on_pod(pod)
    assert runtime.scheduler.queue.where(uid) == "active"
    bound = {**pod, "spec": {**pod["spec"], "nodeName": "n1"}}
    runtime.cluster.on_assigned_pod(bound)  # the two watches race; either order must hold
    runtime.cluster.on_pending_pod_gone(pod)  # the previous object, as the API server sends it
    assert runtime.scheduler.queue.where(uid) is None
    assert uid not in runtime.cluster.unbound
    cached = runtime.scheduler.cache.get_pod(uid)
    assert cached is not None and cached.node_name == "n1"
    node = runtime.scheduler.cache.snapshot.get("n1")
    assert node is not None and node.requested.milli_cpu == 1000
    # Bound pods keep only their identity, not the API object.
    assert set(cached.raw) == {"metadata"}
    assert cached.requests.milli_cpu == 1000


async def test_a_pending_pod_deleted_for_real_leaves_the_queue(runtime: Runtime) -> None:
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    pod = pod_dict("web", scheduler_name=SCHED)
    uid = pod["metadata"]["uid"]
    await runtime.cluster.on_pod(pod)
    assert runtime.scheduler.queue.where(uid) == "active"
    runtime.cluster.on_pending_pod_gone(pod)
    assert runtime.scheduler.queue.where(uid) is None
    assert uid not in runtime.cluster.unbound
    assert runtime.scheduler.cache.get_pod(uid) is None


def _storage_feed(runtime: Runtime, plural: str) -> Any:
    (feed,) = [f for f in runtime.cluster.feeds() if f.resource.plural == plural]
    return feed


async def test_storage_objects_reach_the_volume_plugins_and_requeue_what_they_rejected(
    runtime: Runtime,
) -> None:
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    pod = pod_dict("web", scheduler_name=SCHED)
    pod["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
    uid = pod["metadata"]["uid"]
    await runtime.cluster.on_pod(pod)
    queue = runtime.scheduler.queue
    qpi = queue.pop_nowait()
    assert qpi is not None
    queue.add_unschedulable(qpi, {"VolumeBinding"})  # "persistentvolumeclaim "data" not found"
    # The claim appearing is an event VolumeBinding registered for: the pod may fit now.
    claims = _storage_feed(runtime, "persistentvolumeclaims")
    claim = {
        "metadata": {"name": "data", "namespace": "default", "resourceVersion": "7",
                     "managedFields": [{"manager": "kubectl"}]},
        "spec": {"accessModes": ["ReadWriteOnce"]},
    }  # fmt: skip
    claims.on_upsert(claim)
    assert queue.where(uid) in ("active", "backoff")
    stored = runtime.scheduler.cache.volumes.get_pvc("default", "data")
    assert stored is not None and "managedFields" not in stored["metadata"]
    claims.on_delete(claim)
    assert runtime.scheduler.cache.volumes.get_pvc("default", "data") is None


async def test_a_volume_attachments_deletion_requeues_what_node_volume_limits_rejected(
    runtime: Runtime,
) -> None:
    """v1.37's NodeVolumeLimits counts VolumeAttachments and registers their deletion; no
    other storage deletion moves pods. Its hint requeues a pod with a claim (the claim's
    volume may be the one detached)."""
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    claim = {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    pod = pod_dict("web", scheduler_name=SCHED, volumes=[claim])
    uid = pod["metadata"]["uid"]
    await runtime.cluster.on_pod(pod)
    queue = runtime.scheduler.queue
    qpi = queue.pop_nowait()
    assert qpi is not None
    queue.add_unschedulable(qpi, {"NodeVolumeLimits"})  # "node(s) exceed max volume count"
    attachments = _storage_feed(runtime, "volumeattachments")
    va = {
        "metadata": {"name": "va-1", "resourceVersion": "3"},
        "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "n1",
                 "source": {"persistentVolumeName": "pv-1"}},
    }  # fmt: skip
    attachments.on_upsert(va)
    assert queue.where(uid) == "unschedulable"  # an attachment added frees nothing
    volumes = runtime.scheduler.cache.volumes
    assert [o["metadata"]["name"] for o in volumes.volume_attachments_on("n1")] == ["va-1"]
    _storage_feed(runtime, "persistentvolumes").on_delete({"metadata": {"name": "pv-1"}})
    assert queue.where(uid) == "unschedulable"
    attachments.on_delete(va)
    assert volumes.volume_attachments_on("n1") == []
    assert queue.where(uid) in ("active", "backoff")


async def test_every_storage_kind_has_an_informer(runtime: Runtime) -> None:
    plurals = {f.resource.plural for f in runtime.cluster.feeds()}
    assert plurals >= {
        "persistentvolumes", "persistentvolumeclaims", "storageclasses", "csinodes",
        "csidrivers", "csistoragecapacities", "volumeattachments",
    }  # fmt: skip
    assert runtime.intake is not None
    assert {str(i.resource) for i in runtime.intake.informers} >= {
        "persistentvolumes",
        "csinodes.storage.k8s.io",
        "csistoragecapacities.storage.k8s.io",
        "volumeattachments.storage.k8s.io",
    }


async def test_services_and_controllers_reach_default_spreading(runtime: Runtime) -> None:
    """The four kinds upstream's DefaultSelector lists each have an informer feed; what they
    bring is the selector a pod without constraints spreads by, and a deletion takes it back."""
    workload_feeds = {
        f.resource.plural: f
        for f in runtime.cluster.feeds()
        if f.resource.plural
        in ("services", "replicationcontrollers", "replicasets", "statefulsets")
    }
    assert len(workload_feeds) == 4
    # Not granted (a role of one's own), they read as none: scheduling does not wait on them.
    assert all(f.optional for f in workload_feeds.values())
    assert runtime.intake is not None
    assert {str(i.resource) for i in runtime.intake.informers} >= {
        "services",
        "replicationcontrollers",
        "replicasets.apps",
        "statefulsets.apps",
    }
    services = _storage_feed(runtime, "services")
    sets = _storage_feed(runtime, "replicasets")
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d9c", "uid": "u",
             "controller": True}  # fmt: skip
    pod = PodInfo.parse(
        pod_dict("web-1", labels={"app": "web", "tier": "front"},
                 metadata={"ownerReferences": [owner]})
    )  # fmt: skip
    service = {"metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"app": "web"}}}  # fmt: skip
    replica_set = {"metadata": {"name": "web-5d9c", "namespace": "default"},
                   "spec": {"selector": {"matchLabels": {"tier": "front"}}}}  # fmt: skip
    workloads = runtime.scheduler.cache.workloads
    services.on_upsert(service)
    sets.on_upsert(replica_set)
    selector = default_selector(pod, workloads)
    assert selector.matches({"app": "web", "tier": "front"})
    assert not selector.matches({"app": "web"}) and not selector.matches({"tier": "front"})
    services.on_delete(service)
    sets.on_delete(replica_set)
    assert default_selector(pod, workloads).empty


async def test_a_nominated_pending_pod_deleted_frees_its_node_for_lower_priority_pods(
    runtime: Runtime,
) -> None:
    """The operator's way in (kopf's DELETED of a pending pod): as upstream's
    deletePodFromSchedulingQueue, pods of lower priority that counted the nominated pod on
    its node are asked again (AssignedPodDelete)."""
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    runtime.cluster.on_node(node_dict("n1"))
    low = pod_dict("low", scheduler_name=SCHED, requests={"cpu": "64"}, priority=1)
    await runtime.cluster.on_pod(low)
    queue = runtime.scheduler.queue
    qpi = queue.pop_nowait()
    assert qpi is not None and qpi.pod.name == "low"
    queue.add_unschedulable(qpi, {"NodeResourcesFit"})
    nominated = pod_dict(
        "nom", scheduler_name=SCHED, priority=10, status={"nominatedNodeName": "n1"}
    )
    await runtime.cluster.on_pod(nominated)
    assert queue.where(qpi.pod.uid) == "unschedulable"
    runtime.cluster.on_pending_pod_gone(nominated)
    assert queue.where(qpi.pod.uid) in ("active", "backoff")
