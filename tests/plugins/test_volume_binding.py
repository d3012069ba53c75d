"""VolumeBinding, with cases from upstream's volume_binding_test.go and binder_test.go,
scheduled end to end (default profile, simulate's PV controller and provisioner)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from builders import RecordingEvents, make_node, make_pod
from multisched.cache import Cache
from multisched.cache.volumes import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS
from multisched.framework import Code, CycleState
from multisched.plugins.volumebinding import VolumeBinding, VolumeBindingArgs
from multisched.plugins.volumebinding.binder import Binder, BindingError, PodVolumes
from multisched.plugins.volumebinding.matching import ClaimMatcher
from volume_support import (
    HOSTNAME,
    ZONE,
    claim,
    csi_node,
    node,
    pod,
    pv,
    run,
    storage_class,
)

LOCAL = storage_class("local")
IMMEDIATE = storage_class("immediate", mode="Immediate")
DYNAMIC = storage_class("fast", provisioner="csi.example.com")


def test_a_pod_goes_where_its_local_pv_is_not_to_the_emptier_node() -> None:
    placed = run(
        node("n1", cpu="16"),
        node("n2", cpu="2"),
        LOCAL,
        claim("data"),
        pv("pv-n2", host="n2"),
        pod("web", "data"),
    )
    assert placed["web"].status == "Scheduled"
    assert placed["web"].node == "n2"


def test_a_missing_claim_leaves_the_pod_pending_with_upstreams_message() -> None:
    placed = run(node("n1"), node("n2"), pod("web", "data"))
    assert placed["web"].status == "Unschedulable"
    assert placed["web"].message.startswith(
        '0/2 nodes are available: persistentvolumeclaim "data" not found.'
    )


def test_an_unbound_immediate_claim_waits_for_the_pv_controller() -> None:
    placed = run(node("n1"), IMMEDIATE, claim("data", klass="immediate"), pod("web", "data"))
    assert placed["web"].message.startswith(
        "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    )


def test_a_bound_pv_with_a_node_affinity_conflict() -> None:
    placed = run(
        node("n1"),
        LOCAL,
        claim("data", volume="pv-a", bound=True),
        pv("pv-a", host="n9", claim_ref="data"),
        pod("web", "data"),
    )
    # n9 does not exist: n1 fails the bound PV's node affinity in Filter.
    assert placed["web"].status == "Unschedulable"
    zone_pv = pv("pv-z", claim_ref="data2", nodeAffinity=_zone_affinity("z2"))
    placed = run(
        node("n1", **{ZONE: "z1"}),
        LOCAL,
        claim("data2", volume="pv-z", bound=True),
        zone_pv,
        pod("web", "data2"),
    )
    assert "1 node(s) didn't match PersistentVolume's node affinity" in placed["web"].message


def test_a_claim_bound_to_a_missing_pv() -> None:
    placed = run(node("n1"), LOCAL, claim("data", volume="gone", bound=True), pod("web", "data"))
    # The PV controller marks the claim Lost before any pod is scheduled (its syncBoundClaim),
    # and VolumeBinding's PreFilter says so, as on a cluster. (VolumeZone's lookup of a
    # claim still Bound to a missing PV: test_volume_filters.)
    assert placed["web"].message.startswith(
        '0/1 nodes are available: persistentvolumeclaim "data" bound to non-existent '
        'persistentvolume "gone".'
    )
    cache = _store(LOCAL, claim("data", volume="gone", bound=True))
    binder = Binder(cache.volumes, bind_timeout=1)
    web = make_pod("web", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}])
    claims = binder.pod_volume_claims(web)
    _, reasons = binder.find_pod_volumes(web, claims, cache.snapshot.node_info_map["n1"])
    assert reasons == ["node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"]


def test_no_available_pv_and_no_provisioner() -> None:
    placed = run(node("n1"), node("n2"), LOCAL, claim("data", size="5Gi"), pv("small", host="n1"))
    placed = run(
        node("n1"),
        node("n2"),
        LOCAL,
        claim("data", size="5Gi"),
        pv("small", host="n1"),
        pod("w", "data"),
    )
    assert placed["w"].message.startswith(
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind."
    )


def test_each_pv_goes_to_one_pod_only_the_assume_cache_counts_it() -> None:
    placed = run(
        node("n1"),
        LOCAL,
        claim("a"),
        claim("b"),
        pv("only", host="n1"),
        pod("first", "a"),
        pod("second", "b"),
    )
    assert placed["first"].node == "n1"
    assert placed["second"].status == "Unschedulable"
    assert "didn't find available persistent volumes to bind" in placed["second"].message


def test_dynamic_provisioning_selects_the_node_and_binds_after_the_provisioner() -> None:
    placed = run(node("n1"), node("n2"), DYNAMIC, claim("data", klass="fast"), pod("web", "data"))
    assert placed["web"].status == "Scheduled"


def test_allowed_topologies_keep_provisioning_in_its_zone() -> None:
    zoned = storage_class(
        "zoned",
        provisioner="csi.example.com",
        allowedTopologies=[{"matchLabelExpressions": [{"key": ZONE, "values": ["z2"]}]}],
    )
    placed = run(
        node("a", **{ZONE: "z1"}),
        node("b", **{ZONE: "z2"}),
        zoned,
        claim("d", klass="zoned"),
        pod("w", "d"),
    )
    assert placed["w"].node == "b"


def test_csi_storage_capacity_is_asked_when_the_driver_tracks_it() -> None:
    driver = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": "csi.example.com"},
        "spec": {"storageCapacity": True},
    }

    def capacity(name: str, zone: str, size: str) -> dict[str, Any]:
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": name, "namespace": "kube-system"},
            "storageClassName": "fast",
            "capacity": size,
            "nodeTopology": {"matchLabels": {ZONE: zone}},
        }

    objects = [node("a", **{ZONE: "z1"}), node("b", **{ZONE: "z2"}), DYNAMIC, driver]
    placed = run(
        *objects,
        capacity("c1", "z1", "1Gi"),
        capacity("c2", "z2", "100Gi"),
        claim("d", klass="fast", size="10Gi"),
        pod("w", "d"),
    )
    assert placed["w"].node == "b"
    placed = run(
        *objects, capacity("c1", "z1", "1Gi"), claim("d", klass="fast", size="10Gi"), pod("w", "d")
    )
    assert placed["w"].message.startswith(
        "0/2 nodes are available: 2 node(s) did not have enough free storage."
    )


def _zone_affinity(zone: str) -> dict[str, Any]:
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
            ]
        }
    }


# -- FindMatchingVolume, from upstream's pv_helpers tests and binder tests ------------------


def _labels(host: str) -> dict[str, str]:
    return {HOSTNAME: host}


@pytest.mark.parametrize(
    ("wanted", "volumes", "expected"),
    [
        ("1Gi", [pv("a", "5Gi"), pv("b", "2Gi"), pv("c", "10Gi")], "b"),  # smallest that fits
        ("3Gi", [pv("a", "2Gi"), pv("b", "5Gi"), pv("c", "5Gi")], "b"),  # first among equals
        ("20Gi", [pv("a", "2Gi"), pv("b", "5Gi")], None),
        ("1Gi", [pv("a", "1Gi", phase="Released"), pv("b", "2Gi")], "b"),  # not Available
        ("1Gi", [pv("a", "1Gi", klass="other"), pv("b", "2Gi")], "b"),  # another class
        ("1Gi", [pv("a", "1Gi", modes=("ReadOnlyMany",)), pv("b", "2Gi")], "b"),  # modes
        ("1Gi", [pv("a", "1Gi", volumeMode="Block"), pv("b", "2Gi")], "b"),  # volume mode
        ("1Gi", [pv("a", "1Gi", host="elsewhere"), pv("b", "2Gi", host="n1")], "b"),  # affinity
        ("1Gi", [pv("a", "1Gi", claim_ref="other"), pv("b", "2Gi")], "b"),  # someone else's
        ("1Gi", [pv("a", "1Gi"), pv("pre", "9Gi", claim_ref="data")], "pre"),  # pre-bound wins
        ("1Gi", [pv("a", "1Gi"), pv("pre", "9Gi", claim_ref="data", host="x")], None),
    ],
)
def test_find_matching_volume(
    wanted: str, volumes: list[dict[str, Any]], expected: str | None
) -> None:
    matcher = ClaimMatcher(claim("data", size=wanted), volumes)
    found = matcher.find(_labels("n1"), {})
    assert (found["metadata"]["name"] if found else None) == expected


def test_find_matching_volume_honours_the_claims_selector() -> None:
    volumes = [pv("a", labels={"tier": "slow"}), pv("b", "2Gi", labels={"tier": "fast"})]
    matcher = ClaimMatcher(claim("data", selector={"matchLabels": {"tier": "fast"}}), volumes)
    assert matcher.find(_labels("n1"), {})["metadata"]["name"] == "b"  # type: ignore[index]
    assert matcher.find(_labels("n1"), {"b": True}) is None  # taken by another claim


# -- the binder's assume, revert and PreBind ----------------------------------------------


class Writer:
    """The API as the binder writes to it: stores, or fails on the n-th write."""

    def __init__(self, store: Any, fail_at: int | None = None, bind: bool = True) -> None:
        self.store = store
        self.fail_at = fail_at
        self.bind = bind
        self.writes: list[tuple[str, str]] = []

    async def __call__(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        if self.fail_at is not None and len(self.writes) == self.fail_at:
            raise RuntimeError("Operation cannot be fulfilled: the object has been modified")
        self.writes.append((kind, obj["metadata"]["name"]))
        meta = {
            **obj["metadata"],
            "resourceVersion": str(int(obj["metadata"].get("resourceVersion") or 0) + 1),
        }
        stored = {**obj, "metadata": meta}
        self.store.upsert(kind, stored)
        if self.bind and kind == PERSISTENT_VOLUME:  # the PV controller completes the bind
            ref = stored["spec"]["claimRef"]
            c = dict(self.store.get_pvc(ref["namespace"], ref["name"]))
            c["metadata"] = {
                **c["metadata"],
                "resourceVersion": "99",
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
            }
            c["spec"] = {**c["spec"], "volumeName": stored["metadata"]["name"]}
            self.store.upsert(PERSISTENT_VOLUME_CLAIM, c)
        return stored


def _store(*objects: dict[str, Any]) -> Cache:
    cache = Cache()
    cache.add_node(node("n1"))
    for obj in objects:
        versioned = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}}
        cache.volumes.upsert(obj["kind"], versioned)
    return cache


def _bind_setup(*extra: dict[str, Any]) -> tuple[Cache, Binder, Any, PodVolumes]:
    cache = _store(LOCAL, claim("data"), pv("pv1", host="n1"), *extra)
    binder = Binder(cache.volumes, bind_timeout=0.2)
    web = make_pod("web", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}])
    claims = binder.pod_volume_claims(web)
    volumes, reasons = binder.find_pod_volumes(web, claims, cache.snapshot.node_info_map["n1"])
    assert reasons == []
    return cache, binder, web, volumes


def test_assume_promises_the_pv_and_revert_gives_it_back() -> None:
    cache, binder, web, volumes = _bind_setup()
    assert binder.assume(web, "n1", volumes) is False
    assumed = cache.volumes.get_pv("pv1")
    assert assumed["spec"]["claimRef"]["name"] == "data"  # type: ignore[index]
    assert assumed["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"  # type: ignore[index]
    assert cache.volumes.pvs.is_assumed("pv1")
    binder.revert(volumes)
    assert not cache.volumes.pvs.is_assumed("pv1")


def test_prebind_writes_the_claim_ref_and_waits_for_the_bind() -> None:
    cache, binder, web, volumes = _bind_setup()
    binder.assume(web, "n1", volumes)
    writer = Writer(cache.volumes)
    asyncio.run(binder.bind(web, "n1", volumes, writer, lambda n: {HOSTNAME: n}))
    assert writer.writes == [(PERSISTENT_VOLUME, "pv1")]


def test_prebind_times_out_when_the_pv_controller_never_binds() -> None:
    cache, binder, web, volumes = _bind_setup()
    binder.assume(web, "n1", volumes)
    with pytest.raises(
        BindingError, match=r"^binding volumes: timed out waiting for the condition$"
    ):
        asyncio.run(
            binder.bind(
                web, "n1", volumes, Writer(cache.volumes, bind=False), lambda n: {HOSTNAME: n}
            )
        )


def test_an_api_error_reverts_what_was_not_written() -> None:
    cache, binder, web, volumes = _bind_setup()
    binder.assume(web, "n1", volumes)
    with pytest.raises(RuntimeError, match="has been modified"):
        asyncio.run(binder.bind(web, "n1", volumes, Writer(cache.volumes, fail_at=0), lambda n: {}))
    assert not cache.volumes.pvs.is_assumed("pv1")
    assert "claimRef" not in cache.volumes.get_pv("pv1")["spec"]  # type: ignore[index]


def test_a_node_gone_while_waiting_fails_the_binding() -> None:
    cache, binder, web, volumes = _bind_setup()
    binder.assume(web, "n1", volumes)
    with pytest.raises(BindingError, match='failed to get node "n1"'):
        asyncio.run(binder.bind(web, "n1", volumes, Writer(cache.volumes), lambda n: None))


# -- the plugin's statuses ----------------------------------------------------------------


class _Handle:
    def __init__(self, cache: Cache) -> None:
        self.snapshot = cache.snapshot
        self.client = None


def test_a_pod_without_claims_is_skipped() -> None:
    plugin = VolumeBinding(VolumeBindingArgs(), _Handle(Cache()))  # type: ignore[arg-type]
    state = CycleState()
    result, status = plugin.pre_filter(state, make_pod("p"), [])
    assert result is None and status is not None and status.code == Code.SKIP
    only_empty_dir = make_pod("q", volumes=[{"name": "tmp", "emptyDir": {}}])
    _, status = plugin.pre_filter(state, only_empty_dir, [])
    assert status is not None and status.code == Code.SKIP


def test_ephemeral_volume_claims_are_waited_for_and_must_belong_to_the_pod() -> None:
    cache = _store(LOCAL)
    plugin = VolumeBinding(VolumeBindingArgs(), _Handle(cache))  # type: ignore[arg-type]
    web = make_pod("web", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}])
    _, status = plugin.pre_filter(CycleState(), web, [])
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "web-scratch"'
    )
    foreign = claim("web-scratch")
    foreign["metadata"]["ownerReferences"] = [{"uid": "someone-else", "controller": True}]
    cache.volumes.upsert(PERSISTENT_VOLUME_CLAIM, foreign)
    _, status = plugin.pre_filter(CycleState(), web, [])
    assert status is not None
    assert "was not created for pod default/web (pod is not owner)" in status.message()


def test_bound_local_pvs_do_not_narrow_the_nodes_in_prefilter() -> None:
    # v1.37 has no GetEligibleNodes: the other nodes fail in Filter, where they are counted.
    cache = _store(
        LOCAL, claim("data", volume="pv1", bound=True), pv("pv1", host="n1", claim_ref="data")
    )
    plugin = VolumeBinding(VolumeBindingArgs(), _Handle(cache))  # type: ignore[arg-type]
    web = make_pod("web", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}])
    result, status = plugin.pre_filter(CycleState(), web, [])
    assert status is None and result is None
    placed = run(node("n1"), node("n2"), LOCAL, claim("data", volume="pv1", bound=True),
                 pv("pv1", host="n1", claim_ref="data"), pod("web", "data"))  # fmt: skip
    assert placed["web"].node == "n1"
    placed = run(node("n1"), node("n2"), LOCAL, claim("data", volume="pv1", bound=True),
                 pv("pv1", host="n9", claim_ref="data"), pod("web", "data"))  # fmt: skip
    assert placed["web"].message.startswith(
        "0/2 nodes are available: 2 node(s) didn't match PersistentVolume's node affinity."
    )


def test_a_storage_class_without_binding_mode_is_an_error() -> None:
    broken = {**LOCAL, "metadata": {"name": "local"}}
    broken.pop("volumeBindingMode")
    cache = _store(broken, claim("data"))
    plugin = VolumeBinding(VolumeBindingArgs(), _Handle(cache))  # type: ignore[arg-type]
    web = make_pod("web", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}])
    _, status = plugin.pre_filter(CycleState(), web, [])
    assert status is not None and status.code == Code.ERROR
    assert status.message() == 'VolumeBindingMode not set for StorageClass "local"'


def test_events_requeue_what_can_help() -> None:
    events = VolumeBinding(None, _Handle(Cache())).events_to_register()  # type: ignore[arg-type]
    resources = {e.event.resource for e in events}
    assert resources == {
        "StorageClass", "PersistentVolumeClaim", "PersistentVolume", "Node", "CSINode",
        "CSIDriver", "CSIStorageCapacity",
    }  # fmt: skip


def test_unused_kinds_are_importable() -> None:
    assert STORAGE_CLASS == "StorageClass"
    assert make_node("x").name == "x"
    assert csi_node("n", "d", 1)["kind"] == "CSINode"


class _FailingVolumes:
    """Binds pods, but the API refuses the binder's PV write (a concurrent edit)."""

    def __init__(self) -> None:
        self.bound: list[str] = []

    async def bind(self, pod: Any, node_name: str) -> None:
        self.bound.append(pod.key)

    def record_preempted(self, pod: Any, message: str) -> None:
        pass

    async def delete_pod(self, pod: Any, reason: str, scheduler_name: str) -> None:
        pass

    async def set_nominated_node(self, pod: Any, node_name: str) -> None:
        pass

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("Operation cannot be fulfilled: the object has been modified")


async def test_a_prebind_api_error_unreserves_and_never_binds_the_pod() -> None:
    from multisched.cache import PodInfo
    from multisched.config import parse_config_object, resolve
    from multisched.scheduler import Scheduler, default_registry
    from volume_support import PROFILE

    cache = _store(LOCAL, claim("data"), pv("pv1", host="n1"))
    registry = default_registry(load_entry_points=False)
    client, events = _FailingVolumes(), RecordingEvents()
    sched = Scheduler(
        resolve(parse_config_object(PROFILE), registry), registry, cache=cache, client=client,
        events=events,
    )  # fmt: skip
    web = PodInfo.parse(pod("web", "data"))
    sched.feed.on_pod(web)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    await sched.schedule_one(qpi)
    await sched.wait_for_bindings()
    assert client.bound == []  # never bound while its volume is not
    assert events.log == [
        (
            "FailedScheduling",
            "default/web",
            "SchedulerError",
            'running PreBind plugin "VolumeBinding": binding volumes: Operation cannot be '
            "fulfilled: the object has been modified",
        )
    ]
    assert not cache.volumes.pvs.is_assumed("pv1")  # the promise is taken back
    assert cache.get_pod(web.uid) is None
    assert sched.queue.where(web.uid) in ("active", "backoff", "unschedulable")


def test_explain_plays_the_binding_out_and_names_the_volumes() -> None:
    """explain runs the binding cycle with nothing written: the binder's writes are finished
    in memory, so an unbound claim does not turn into "ClaimRef got reset"."""
    from multisched.config import parse_config_object, resolve
    from multisched.live.explain import explain
    from multisched.scheduler import default_registry
    from multisched.scheduler.simulate import ClusterInput
    from volume_support import PROFILE

    docs = [node("n1"), node("n2", cpu="64"), LOCAL, claim("data"), pv("pv1", host="n1")]
    docs += [pod("web", "data"), {**DYNAMIC}, claim("scratch", klass="fast"), pod("job", "scratch")]
    cluster = ClusterInput.from_documents([(f"d{i}", d) for i, d in enumerate(docs)], trusted=True)
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_config_object(PROFILE), registry)
    (web,) = asyncio.run(explain(cluster, config, registry, "default", "web")).result.placements
    assert (web.status, web.node, web.message) == ("Scheduled", "n1", "would be assigned to n1")
    assert web.volumes == [{"claim": "data", "volume": "pv1"}]
    cluster = ClusterInput.from_documents([(f"d{i}", d) for i, d in enumerate(docs)], trusted=True)
    (job,) = asyncio.run(explain(cluster, config, registry, "default", "job")).result.placements
    assert job.status == "Scheduled"
    assert job.volumes[0]["selectedNode"] == job.node


def test_a_storage_class_written_without_a_binding_mode_is_immediate_in_simulate() -> None:
    bare = storage_class("plain", provisioner="csi.example.com")
    del bare["volumeBindingMode"]
    placed = run(node("n1"), bare, claim("d", klass="plain"), pod("w", "d"))
    assert "pod has unbound immediate PersistentVolumeClaims" in placed["w"].message


def test_pre_bind_pre_flight_says_whether_prebind_binds_volumes() -> None:
    """PreBindPreFlight: Skip when the pod has no claims or all are bound, an error for a
    node Filter never saw, success when Reserve left volumes to bind there."""
    cache = _store(LOCAL, claim("data"), pv("pv1", host="n1"))
    plugin = VolumeBinding(VolumeBindingArgs(), _Handle(cache))  # type: ignore[arg-type]
    web = make_pod("web", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}])
    state = CycleState()
    assert plugin.pre_bind_pre_flight(state, web, "n1") is not None  # no PreFilter state
    assert plugin.pre_bind_pre_flight(state, web, "n1").is_skip()  # type: ignore[union-attr]
    _, status = plugin.pre_filter(state, web, [])
    assert status is None
    n1 = cache.snapshot.get("n1")
    assert n1 is not None and plugin.filter(state, web, n1) is None
    missing = plugin.pre_bind_pre_flight(state, web, "n2")
    assert missing is not None and missing.code == Code.ERROR
    assert missing.message() == 'no pod volume found for node "n2"'
    assert plugin.reserve(state, web, "n1") is None
    assert plugin.pre_bind_pre_flight(state, web, "n1") is None  # pv1 to bind to data
    bound = _store(
        LOCAL, claim("data", volume="pv1", bound=True), pv("pv1", host="n1", claim_ref="data")
    )
    plugin = VolumeBinding(VolumeBindingArgs(), _Handle(bound))  # type: ignore[arg-type]
    state = CycleState()
    plugin.pre_filter(state, web, [])
    n1 = bound.snapshot.get("n1")
    assert n1 is not None and plugin.filter(state, web, n1) is None
    assert plugin.reserve(state, web, "n1") is None
    done = plugin.pre_bind_pre_flight(state, web, "n1")
    assert done is not None and done.is_skip()
