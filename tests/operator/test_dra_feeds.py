"""DRA objects from the watches: each kind's feed fills the engine's DRA store and raises the
ClusterEvents upstream's event handlers raise (claims from the assume cache too), and the
informers list resource.k8s.io/v1 when it is served and read it as none when it is not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kmock import KubernetesEmulator, ResourceInfo
from kubernetes_asyncio import client as k8s

from builders import pod_dict
from multisched.operator.intake import Feed
from multisched.operator.options import Options
from multisched.operator.runtime import Runtime
from multisched.scheduler import default_registry
from multisched.transport import Api

SCHED = "my-scheduler"
DRIVER = "gpu.example.com"


class HeldElsewhere:
    """A Lease some other replica holds for ever: this runtime never starts its loop."""

    async def get(self, namespace: str, name: str) -> dict[str, Any]:
        return {"metadata": {"resourceVersion": "1"}, "spec": {"holderIdentity": "other"}}

    async def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("the lease exists")

    async def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("never expires")


def serve_dra(kmock: KubernetesEmulator) -> None:
    for plural, kind, namespaced in (
        ("deviceclasses", "DeviceClass", False),
        ("resourceslices", "ResourceSlice", False),
        ("resourceclaims", "ResourceClaim", True),
        ("devicetaintrules", "DeviceTaintRule", False),
    ):
        kmock.resources[f"resource.k8s.io/v1/{plural}"] = ResourceInfo(
            kind=kind,
            singular=kind.lower(),
            namespaced=namespaced,
            verbs={"get", "list", "watch", "create", "update", "delete"},
        )


async def start(kmock: KubernetesEmulator) -> Runtime:
    api_client = k8s.ApiClient(k8s.Configuration(host=str(kmock.url).rstrip("/")))
    rt = Runtime(
        Options(http_port=0, secure_port=0, leader_elect=True),
        Api(api_client),
        default_registry(load_entry_points=False),
        lease_api=HeldElsewhere(),
    )
    await rt.start()
    rt._writing = True
    rt.elector = None
    return rt


@pytest.fixture
async def runtime(kmock: KubernetesEmulator) -> AsyncIterator[Runtime]:
    rt = await start(kmock)
    try:
        yield rt
    finally:
        await rt.stop()


def profile_obj(*names: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "p",
            "uid": "uid-p",
            "generation": 1,
            "creationTimestamp": "2024-01-01T00:00:00Z",
        },
        "spec": {"profiles": [{"schedulerName": n} for n in names]},
    }


def feed(runtime: Runtime, plural: str) -> Feed:
    (found,) = [f for f in runtime.cluster.feeds() if f.resource.plural == plural]
    return found


def slice_obj(name: str, version: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": version},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": name, "resourceSliceCount": 1, "generation": 1},
            "nodeName": name,
            "devices": [{"name": "gpu-0"}],
        },
    }


def claim_obj(version: str, allocated: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": "gpu",
            "namespace": "default",
            "uid": "uid-claim",
            "resourceVersion": version,
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
    }
    if allocated:
        result = {"request": "r", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}
        out["status"] = {"allocation": {"devices": {"results": [result]}}}
    return out


async def test_dra_kinds_have_optional_feeds_and_templates_none(runtime: Runtime) -> None:
    """kube-scheduler watches claims, slices and classes, not templates (nor may it list
    them); a server without resource.k8s.io/v1 (kmock serves none here) reads as none."""
    dra = {
        f.resource.plural: f
        for f in runtime.cluster.feeds()
        if f.resource.group == "resource.k8s.io"
    }
    assert set(dra) == {"deviceclasses", "resourceclaims", "resourceslices", "devicetaintrules"}
    assert all(f.optional and f.resource.version == "v1" for f in dra.values())
    assert runtime.intake is not None
    informers = {str(i.resource): i for i in runtime.intake.informers}
    absent = informers["resourceslices.resource.k8s.io"]
    await asyncio.wait_for(absent.synced.wait(), 10)
    assert absent.absent


async def test_each_feed_raises_upstreams_events(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    raised: list[tuple[str, Any, Any]] = []
    queue = runtime.scheduler.queue

    def record(event: Any, only: Any = None, old: Any = None, new: Any = None) -> int:
        raised.append((event.label, old, new))
        return 0

    monkeypatch.setattr(queue, "move_all_to_active_or_backoff", record)
    dra = runtime.scheduler.cache.dra
    slices, claims = feed(runtime, "resourceslices"), feed(runtime, "resourceclaims")
    classes = feed(runtime, "deviceclasses")

    slices.on_upsert(slice_obj("n1"))
    slices.on_upsert(slice_obj("n1", "2"))
    slices.on_delete(slice_obj("n1", "2"))  # upstream registers no slice deletion
    classes.on_upsert({"metadata": {"name": "gpu", "resourceVersion": "1"}, "spec": {}})
    classes.on_delete({"metadata": {"name": "gpu"}})
    assert [label for label, _, _ in raised] == [
        "resource.k8s.io/ResourceSliceAdd",
        "resource.k8s.io/ResourceSliceUpdate",
        "resource.k8s.io/DeviceClassAdd",
        "resource.k8s.io/DeviceClassDelete",
    ]
    assert raised[1][1]["metadata"]["resourceVersion"] == "1"  # the hints see before ...
    assert raised[1][2]["metadata"]["resourceVersion"] == "2"  # ... and after
    assert dra.list_slices() == [] and dra.get_device_class("gpu") is None

    raised.clear()
    claims.on_upsert(claim_obj("5"))
    stored = dra.get_claim("default", "gpu")
    assert stored is not None and "managedFields" not in stored["metadata"]
    # PreBind's write, assumed: upstream's assume cache raises the update itself ...
    allocated = claim_obj("6", allocated=True)
    dra.claims.assume(allocated)
    assert dra.allocated_devices()[0] == {(DRIVER, "n1", "gpu-0")}
    # ... and the informer's echo at that version changes nothing, so raises nothing.
    claims.on_upsert(claim_obj("6", allocated=True))
    claims.on_upsert(claim_obj("7", allocated=True))
    claims.on_delete(claim_obj("7"))
    assert [label for label, _, _ in raised] == [
        "resource.k8s.io/ResourceClaimAdd",
        "resource.k8s.io/ResourceClaimUpdate",
        "resource.k8s.io/ResourceClaimUpdate",
        "resource.k8s.io/ResourceClaimDelete",
    ]
    assert raised[1][2] is allocated
    assert raised[3][1]["metadata"]["resourceVersion"] == "7"  # the deleted claim as it was
    assert dra.allocated_devices()[0] == set()


async def test_a_new_slice_requeues_what_dynamic_resources_rejected(runtime: Runtime) -> None:
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    pod = pod_dict("trainer", scheduler_name=SCHED)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu"}]
    uid = pod["metadata"]["uid"]
    feed(runtime, "resourceclaims").on_upsert(claim_obj("1"))  # else PreEnqueue holds the pod
    await runtime.cluster.on_pod(pod)
    queue = runtime.scheduler.queue
    qpi = queue.pop_nowait()
    assert qpi is not None
    queue.add_unschedulable(qpi, {"DynamicResources"})  # "cannot allocate all claims"
    feed(runtime, "resourceslices").on_delete(slice_obj("n9"))
    assert queue.where(uid) == "unschedulable"
    feed(runtime, "resourceslices").on_upsert(slice_obj("n1"))
    assert queue.where(uid) in ("active", "backoff")


async def test_the_informers_bring_served_dra_objects(kmock: KubernetesEmulator) -> None:
    serve_dra(kmock)
    created = slice_obj("n1")
    async with kmock.post("/apis/resource.k8s.io/v1/resourceslices", json=created) as resp:
        assert resp.status in (200, 201), await resp.text()
    claim = claim_obj("3", allocated=True)
    path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
    async with kmock.post(path, json=claim) as resp:
        assert resp.status in (200, 201), await resp.text()
    rt = await start(kmock)
    try:
        assert rt.intake is not None
        # Declaring kinds makes kmock refuse the undeclared ones (nodes, pods): wait for
        # these two informers, not all.
        informers = {str(i.resource): i for i in rt.intake.informers}
        for name in ("resourceslices.resource.k8s.io", "resourceclaims.resource.k8s.io"):
            await asyncio.wait_for(informers[name].synced.wait(), 10)
        dra = rt.scheduler.cache.dra
        assert [s["metadata"]["name"] for s in dra.list_slices()] == ["n1"]
        stored = dra.get_claim("default", "gpu")
        assert stored is not None
        # Nothing of what the allocator reads is trimmed on the way in.
        assert stored["status"]["allocation"] == claim["status"]["allocation"]
        assert dra.allocated_devices()[0] == {(DRIVER, "n1", "gpu-0")}
    finally:
        await rt.stop()


def rule_obj(version: str = "1", effect: str = "NoSchedule") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "broken", "uid": "uid-rule", "resourceVersion": version},
        "spec": {
            "deviceSelector": {"driver": DRIVER, "pool": "n1"},
            "taint": {"key": "example.com/broken", "effect": effect},
        },
    }


async def test_a_rule_raises_the_updates_of_the_slices_it_retaints(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As upstream's slice tracker: a rule change is a ResourceSlice update of each slice
    whose devices' taints it changed (old and new as DynamicResources read them), and
    nothing when no taint changes."""
    raised: list[tuple[str, Any, Any]] = []

    def record(event: Any, only: Any = None, old: Any = None, new: Any = None) -> int:
        raised.append((event.label, old, new))
        return 0

    monkeypatch.setattr(runtime.scheduler.queue, "move_all_to_active_or_backoff", record)
    slices, rules = feed(runtime, "resourceslices"), feed(runtime, "devicetaintrules")
    slices.on_upsert(slice_obj("n1"))
    slices.on_upsert(slice_obj("n2"))
    raised.clear()
    rules.on_upsert(rule_obj())
    ((label, old, new),) = raised
    assert label == "resource.k8s.io/ResourceSliceUpdate"
    assert "taints" not in old["spec"]["devices"][0]
    assert new["spec"]["devices"][0]["taints"] == [rule_obj()["spec"]["taint"]]
    raised.clear()
    rules.on_upsert(rule_obj("2"))  # the same taint: no slice changed
    assert raised == []
    rules.on_delete(rule_obj("2"))
    ((label, old, new),) = raised
    assert (
        label == "resource.k8s.io/ResourceSliceUpdate" and "taints" not in new["spec"]["devices"][0]
    )


async def test_removing_a_rule_requeues_what_dynamic_resources_rejected(runtime: Runtime) -> None:
    await runtime.profile_sync.on_profile(profile_obj(SCHED))
    feed(runtime, "resourceslices").on_upsert(slice_obj("n1"))
    rules = feed(runtime, "devicetaintrules")
    rules.on_upsert(rule_obj())
    pod = pod_dict("trainer", scheduler_name=SCHED)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu"}]
    uid = pod["metadata"]["uid"]
    feed(runtime, "resourceclaims").on_upsert(claim_obj("1"))
    await runtime.cluster.on_pod(pod)
    queue = runtime.scheduler.queue
    qpi = queue.pop_nowait()
    assert qpi is not None
    queue.add_unschedulable(qpi, {"DynamicResources"})  # the only device is tainted
    rules.on_upsert(rule_obj("2"))  # a status update, say: the taint stays
    assert queue.where(uid) == "unschedulable"
    rules.on_delete(rule_obj("2"))
    assert queue.where(uid) in ("active", "backoff")


async def test_the_informers_bring_served_rules(kmock: KubernetesEmulator) -> None:
    serve_dra(kmock)
    async with kmock.post("/apis/resource.k8s.io/v1/resourceslices", json=slice_obj("n1")) as r:
        assert r.status in (200, 201), await r.text()
    async with kmock.post("/apis/resource.k8s.io/v1/devicetaintrules", json=rule_obj()) as r:
        assert r.status in (200, 201), await r.text()
    rt = await start(kmock)
    try:
        assert rt.intake is not None
        informers = {str(i.resource): i for i in rt.intake.informers}
        for name in ("resourceslices.resource.k8s.io", "devicetaintrules.resource.k8s.io"):
            await asyncio.wait_for(informers[name].synced.wait(), 10)
        (listed,) = rt.scheduler.cache.dra.list_slices()
        assert listed["spec"]["devices"][0]["taints"][0]["key"] == "example.com/broken"
    finally:
        await rt.stop()
