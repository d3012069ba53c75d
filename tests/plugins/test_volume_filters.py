"""VolumeRestrictions and VolumeZone: cases from upstream's volume_restrictions_test.go and
volume_zone_test.go, plugin by plugin and scheduled end to end with the default profile
(NodeVolumeLimits: test_node_volume_limits.py)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_pod
from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.framework import Code, CycleState, Status
from multisched.framework.events import PVC_ADD, PVC_UPDATE
from multisched.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from multisched.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone, label_zones_to_set
from volume_support import ZONE, claim, node, pod, pv, run, storage_class


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
REGION = "topology.kubernetes.io/region"


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
        # v1.37: a PV's beta label matches the node's GA one when the node has no beta one.
        ({BETA_ZONE: "us-west1-a"}, {ZONE: "us-west1-a"}, True),
        ({BETA_ZONE: "us-west1-a"}, {ZONE: "us-west1-b"}, False),
        ({BETA_REGION: "us-west1"}, {REGION: "us-west1"}, True),
        ({ZONE: "us-west1-a", REGION: "us-west1-a"}, {ZONE: "us-west1-a"}, False),
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


def test_events_the_volume_filters_register() -> None:
    """v1.37: VolumeRestrictions waits for a claim to be added (its access modes cannot
    change), VolumeZone also for one to be updated (its volumeName filled in)."""
    restrictions = VolumeRestrictions(None, None).events_to_register()  # type: ignore[arg-type]
    zone = VolumeZone(None, None).events_to_register()  # type: ignore[arg-type]

    def covers(events: Any, event: Any) -> bool:
        return any(e.event.matches(event) for e in events)

    assert covers(restrictions, PVC_ADD) and not covers(restrictions, PVC_UPDATE)
    assert covers(zone, PVC_ADD) and covers(zone, PVC_UPDATE)
