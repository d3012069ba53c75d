"""VolumeRestrictions, VolumeZone and NodeVolumeLimits: cases from upstream's
volume_restrictions_test.go, volume_zone_test.go and csi_test.go, plugin by plugin and
scheduled end to end with the default profile."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_pod
from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.framework import Code, CycleState, Status
from multisched.plugins.nodevolumelimits import NodeVolumeLimits, csi_attach_limit_key
from multisched.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from multisched.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone, label_zones_to_set
from volume_support import ZONE, claim, csi_node, node, pod, pv, run, storage_class


class _Handle:
    def __init__(self, cache: Cache) -> None:
        self.snapshot = cache.snapshot
        self.client = None


def _cache(*objects: dict[str, Any], nodes: tuple[dict[str, Any], ...] = ()) -> Cache:
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    for obj in objects:
        cache.volumes.upsert(obj["kind"], obj)
    return cache


def _with(*volumes: dict[str, Any], name: str = "p", **kw: Any) -> PodInfo:
    return make_pod(name, volumes=list(volumes), **kw)


def _claim_vol(name: str) -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": name}}


def _run_filter(plugin: Any, pod_info: PodInfo, node_info: NodeInfo) -> Status | None:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod_info, [node_info])
    if status is not None:
        return status
    result: Status | None = plugin.filter(state, pod_info, node_info)
    return result


# -- VolumeRestrictions ---------------------------------------------------------------------

GCE_A = {"name": "a", "gcePersistentDisk": {"pdName": "foo"}}
GCE_A_RO = {"name": "a", "gcePersistentDisk": {"pdName": "foo", "readOnly": True}}
GCE_B = {"name": "b", "gcePersistentDisk": {"pdName": "bar"}}
EBS_A = {"name": "a", "awsElasticBlockStore": {"volumeID": "foo"}}
EBS_A_RO = {"name": "a", "awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}
RBD_A = {"name": "a", "rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}}
RBD_OVERLAP = {"name": "a", "rbd": {"monitors": ["b", "c"], "pool": "foo", "image": "bar"}}
RBD_OTHER = {"name": "a", "rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar"}}
ISCSI_A = {
    "name": "a",
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2016-12.server:storage.target01",
        "lun": 0,
    },
}
ISCSI_B = {
    "name": "a",
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2017-12.server:storage.target01",
        "lun": 0,
    },
}


@pytest.mark.parametrize(
    ("mine", "theirs", "conflict"),
    [
        (GCE_A, GCE_A, True),
        (GCE_A, GCE_B, False),
        (GCE_A_RO, {**GCE_A_RO, "name": "x"}, False),  # both read-only: shared
        (GCE_A_RO, GCE_A, True),
        (EBS_A, EBS_A, True),
        (EBS_A_RO, EBS_A_RO, True),  # EBS attaches to one node, read-only or not
        (RBD_A, RBD_OVERLAP, True),
        (RBD_A, RBD_OTHER, False),
        (ISCSI_A, ISCSI_A, True),
        (ISCSI_A, ISCSI_B, False),
    ],
)
def test_inline_disk_conflicts(mine: Any, theirs: Any, conflict: bool) -> None:
    cache = _cache(nodes=(node("n1"),))
    cache.add_pod(_with(theirs, name="there", node_name="n1"))
    plugin = VolumeRestrictions(None, _Handle(cache))  # type: ignore[arg-type]
    status = _run_filter(plugin, _with(mine, name="new"), cache.snapshot.node_info_map["n1"])
    if conflict:
        assert status is not None and status.code == Code.UNSCHEDULABLE
        assert status.message() == ERR_REASON_DISK_CONFLICT
    else:
        assert status is None or status.code == Code.SKIP


def test_read_write_once_pod_claim_in_use_keeps_a_second_pod_out() -> None:
    rwop = claim("solo", modes=("ReadWriteOncePod",))
    cache = _cache(rwop, claim("shared"), nodes=(node("n1"), node("n2")))
    cache.add_pod(_with(_claim_vol("solo"), name="owner", node_name="n1"))
    plugin = VolumeRestrictions(None, _Handle(cache))  # type: ignore[arg-type]
    second = _with(_claim_vol("solo"), name="second")
    state = CycleState()
    _, status = plugin.pre_filter(state, second, [])
    assert status is None
    verdict = plugin.filter(state, second, cache.snapshot.node_info_map["n2"])
    assert verdict is not None and verdict.code == Code.UNSCHEDULABLE  # preemption may help
    assert verdict.message() == ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT
    # Preemption's dry run takes the owner away: no conflict left.
    owner = cache.get_pod(next(p.uid for p in cache.pods() if p.name == "owner"))
    assert owner is not None
    plugin.remove_pod(state, second, owner, cache.snapshot.node_info_map["n1"])
    assert plugin.filter(state, second, cache.snapshot.node_info_map["n2"]) is None
    # A plain ReadWriteOnce claim is no one's alone: skipped.
    _, status = plugin.pre_filter(CycleState(), _with(_claim_vol("shared")), [])
    assert status is not None and status.code == Code.SKIP


def test_rwop_claim_missing_is_unresolvable() -> None:
    plugin = VolumeRestrictions(None, _Handle(_cache()))  # type: ignore[arg-type]
    _, status = plugin.pre_filter(CycleState(), _with(_claim_vol("nope")), [])
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'persistentvolumeclaim "nope" not found'


def test_rwop_end_to_end_the_second_pod_stays_pending() -> None:
    placed = run(
        node("n1"),
        node("n2"),
        storage_class("local"),
        claim("solo", modes=("ReadWriteOncePod",), volume="pv1", bound=True),
        pv("pv1", modes=("ReadWriteOncePod",), claim_ref="solo"),
        pod("first", "solo"),
        pod("second", "solo"),
    )
    assert placed["first"].status == "Scheduled"
    assert placed["second"].status == "Unschedulable"
    assert ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT in placed["second"].message


# -- VolumeZone -----------------------------------------------------------------------------

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"


@pytest.mark.parametrize(
    ("pv_labels", "node_labels", "fits"),
    [
        ({BETA_ZONE: "us-west1-a"}, {BETA_ZONE: "us-west1-a"}, True),
        ({BETA_ZONE: "us-west1-a"}, {BETA_ZONE: "us-west1-b"}, False),
        ({BETA_ZONE: "us-west1-a"}, {}, True),  # a node without zone labels is not constrained
        ({BETA_ZONE: "us-west1-a"}, {"uselessLabel": "none"}, True),
        ({BETA_ZONE: "us-west1-a__us-west1-b"}, {BETA_ZONE: "us-west1-b"}, True),  # zone set
        ({BETA_REGION: "us-west1"}, {BETA_REGION: "us-west1", BETA_ZONE: "x"}, True),
        ({BETA_REGION: "us-west1"}, {BETA_REGION: "us-east1"}, False),
        ({ZONE: "z1"}, {ZONE: "z1"}, True),
        ({ZONE: "z1"}, {ZONE: "z2"}, False),
        ({ZONE: "z1"}, {BETA_ZONE: "z1"}, False),  # the GA label is what the PV asks for
        ({BETA_ZONE: "a__"}, {BETA_ZONE: "b"}, True),  # unreadable label: ignored
    ],
)
def test_volume_zone(pv_labels: dict[str, str], node_labels: dict[str, str], fits: bool) -> None:
    cache = _cache(
        storage_class("local"),
        claim("data", volume="vol", bound=True),
        pv("vol", claim_ref="data", labels=pv_labels),
        nodes=(node("n1", **node_labels),),
    )
    plugin = VolumeZone(None, _Handle(cache))  # type: ignore[arg-type]
    status = _run_filter(plugin, _with(_claim_vol("data")), cache.snapshot.node_info_map["n1"])
    if fits:
        assert status is None or status.code == Code.SKIP
    else:
        assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message() == ERR_REASON_CONFLICT


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ([], 'persistentvolumeclaim "data" not found'),
        ([claim("data", volume="vol", bound=True)], 'persistentvolume "vol" not found'),
        ([claim("data", klass=None)], "PersistentVolumeClaim had no pv name and storageClass name"),
        (
            [claim("data", klass="imm"), storage_class("imm", mode="Immediate")],
            "PersistentVolume had no name",
        ),
        ([claim("data")], 'storageclass.storage.k8s.io "local" not found'),
    ],
)
def test_volume_zone_prefilter_errors(objects: list[dict[str, Any]], message: str) -> None:
    plugin = VolumeZone(None, _Handle(_cache(*objects)))  # type: ignore[arg-type]
    _, status = plugin.pre_filter(CycleState(), _with(_claim_vol("data")), [])
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == message


def test_wait_for_first_consumer_claims_are_left_to_the_binder() -> None:
    cache = _cache(storage_class("local"), claim("data"))
    plugin = VolumeZone(None, _Handle(cache))  # type: ignore[arg-type]
    _, status = plugin.pre_filter(CycleState(), _with(_claim_vol("data")), [])
    assert status is not None and status.code == Code.SKIP


def test_label_zones_to_set() -> None:
    assert label_zones_to_set("a__b") == frozenset({"a", "b"})
    assert label_zones_to_set(" a ") == frozenset({"a"})
    assert label_zones_to_set("a____b") is None


def test_zoned_pv_end_to_end() -> None:
    placed = run(
        node("east", **{ZONE: "east"}),
        node("west", cpu="64", **{ZONE: "west"}),
        storage_class("local"),
        claim("data", volume="vol", bound=True),
        pv("vol", claim_ref="data", labels={ZONE: "east"}),
        pod("web", "data"),
    )
    assert placed["web"].node == "east"


def test_volume_zone_has_no_pre_filter_extensions() -> None:
    # Upstream's PreFilterExtensions returns nil; the runtime asks every PreFilter plugin
    # that did not skip for them when preemption or nominated pods add and remove pods.
    assert VolumeZone(None, None).pre_filter_extensions() is None  # type: ignore[arg-type]


def test_a_pod_with_a_zoned_volume_preempts_end_to_end() -> None:
    placed = run(
        node("east", cpu="1", **{ZONE: "east"}),
        storage_class("local"),
        claim("data", volume="vol", bound=True),
        pv("vol", claim_ref="data", labels={ZONE: "east"}),
        pod("low", cpu="1", priority=0, nodeName="east"),
        pod("high", "data", cpu="1", priority=1000),
    )
    assert placed["high"].node == "east"
    assert placed["low"].node == ""
    assert "Preempted by pod" in placed["low"].message


# -- NodeVolumeLimits -----------------------------------------------------------------------

DRIVER = "ebs.csi.aws.com"
EBS_CLASS = storage_class("ebs", mode="Immediate", provisioner=DRIVER)


def _csi_pv(name: str, handle: str, claim_name: str) -> dict[str, Any]:
    body = pv(
        name, klass="ebs", claim_ref=claim_name, csi={"driver": DRIVER, "volumeHandle": handle}
    )
    body["spec"].pop("local")
    return body


def _limits_cache(count: int, *existing: tuple[str, str]) -> Cache:
    objects: list[dict[str, Any]] = [EBS_CLASS, csi_node("n1", DRIVER, count)]
    for claim_name, handle in existing:
        objects.append(claim(claim_name, klass="ebs", volume=f"pv-{claim_name}", bound=True))
        objects.append(_csi_pv(f"pv-{claim_name}", handle, claim_name))
    return _cache(*objects, nodes=(node("n1"),))


@pytest.mark.parametrize(
    ("limit", "on_node", "new", "fits"),
    [
        (1, [], ["a"], True),
        (1, ["a"], ["b"], False),
        (2, ["a"], ["b"], True),
        (1, ["a"], ["a"], True),  # the same volume again: already attached, counts once
        (2, ["a"], ["b", "c"], False),
        (3, ["a"], ["b", "c"], True),
    ],
)
def test_csi_volume_count_against_the_csinode_limit(
    limit: int, on_node: list[str], new: list[str], fits: bool
) -> None:
    handles = {c: f"vol-{c}" for c in {*on_node, *new}}
    cache = _limits_cache(limit, *((c, handles[c]) for c in {*on_node, *new}))
    if on_node:
        cache.add_pod(_with(*map(_claim_vol, on_node), name="there", node_name="n1"))
    plugin = NodeVolumeLimits(None, _Handle(cache))  # type: ignore[arg-type]
    status = _run_filter(
        plugin, _with(*map(_claim_vol, new), name="new"), cache.snapshot.node_info_map["n1"]
    )
    if fits:
        assert status is None
    else:
        assert status is not None and status.code == Code.UNSCHEDULABLE
        assert status.message() == "node(s) exceed max volume count"


def test_unbound_claims_count_through_their_class_provisioner() -> None:
    cache = _limits_cache(1, ("a", "vol-a"))
    cache.volumes.upsert("PersistentVolumeClaim", claim("fresh", klass="ebs"))
    cache.add_pod(_with(_claim_vol("a"), name="there", node_name="n1"))
    plugin = NodeVolumeLimits(None, _Handle(cache))  # type: ignore[arg-type]
    status = _run_filter(plugin, _with(_claim_vol("fresh")), cache.snapshot.node_info_map["n1"])
    assert status is not None and status.code == Code.UNSCHEDULABLE


def test_in_tree_volumes_count_only_where_the_node_migrated_them() -> None:
    inline = {"name": "disk", "awsElasticBlockStore": {"volumeID": "vol-1"}}
    other = {"name": "disk", "awsElasticBlockStore": {"volumeID": "vol-2"}}
    for migrated, fits in ((False, True), (True, False)):
        notes = (
            {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"}
            if migrated
            else {}
        )
        cache = _cache(csi_node("n1", DRIVER, 1, **notes), nodes=(node("n1"),))
        cache.add_pod(_with(inline, name="there", node_name="n1"))
        plugin = NodeVolumeLimits(None, _Handle(cache))  # type: ignore[arg-type]
        status = _run_filter(plugin, _with(other), cache.snapshot.node_info_map["n1"])
        assert (status is None) is fits, (migrated, status)


def test_a_missing_claim_of_the_new_pod_is_an_error() -> None:
    plugin = NodeVolumeLimits(None, _Handle(_limits_cache(1)))  # type: ignore[arg-type]
    status = _run_filter(
        plugin, _with(_claim_vol("ghost")), _limits_cache(1).snapshot.node_info_map["n1"]
    )
    assert status is not None and status.code == Code.ERROR
    assert 'persistentvolumeclaim "ghost" not found' in status.message()


def test_attach_limit_keys_fit_a_resource_name() -> None:
    assert csi_attach_limit_key(DRIVER) == "attachable-volumes-csi-ebs.csi.aws.com"
    long_name = "a" * 60
    key = csi_attach_limit_key(long_name)
    assert key.startswith("attachable-volumes-csi-" + "a" * 23) and len(key) == 23 + 23 + 16


def test_a_pod_without_attachable_volumes_is_skipped() -> None:
    plugin = NodeVolumeLimits(None, _Handle(_cache()))  # type: ignore[arg-type]
    _, status = plugin.pre_filter(CycleState(), _with({"name": "t", "emptyDir": {}}), [])
    assert status is not None and status.code == Code.SKIP


def test_csinode_limit_end_to_end_the_second_volume_goes_elsewhere() -> None:
    objects = [
        node("n1"),
        node("n2"),
        EBS_CLASS,
        csi_node("n1", DRIVER, 1),
        claim("a", klass="ebs", volume="pv-a", bound=True),
        _csi_pv("pv-a", "vol-a", "a"),
        claim("b", klass="ebs", volume="pv-b", bound=True),
        _csi_pv("pv-b", "vol-b", "b"),
    ]
    there = pod("there", "a", cpu="1")
    there["spec"]["nodeName"] = "n1"
    busy = pod("busy", cpu="3")  # n2 is fuller: without the limit, the pod would go to n1
    busy["spec"]["nodeName"] = "n2"
    placed = run(*objects, there, busy, pod("new", "b", cpu="1"))
    assert placed["new"].node == "n2"
