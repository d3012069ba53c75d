"""NodeVolumeLimits: cases from upstream v1.37 nodevolumelimits/csi_test.go (TestCSILimits,
TestVolumeLimitScalingGate with the gate on, as v1.37 defaults it), with upstream's fixtures:
per driver four claims ``csi-<driver>-<i>`` bound to PVs of the same name (CSI, in-tree EBS
or hostPath by driver), ``csi-4`` unbound with class ``csi-sc``, ``csi-5`` with no class,
``csi-6`` bound to a PV that does not exist; VolumeAttachments ``va-<driver>-<i>`` of the
first PVs on the node."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_node, make_pod
from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.framework import Code, CycleState, Status
from multisched.framework.events import (
    ASSIGNED_POD_DELETE,
    CSI_NODE_ADD,
    CSI_NODE_UPDATE,
    PVC_ADD,
    PVC_UPDATE,
    VOLUME_ATTACHMENT_DELETE,
)
from multisched.plugins.nodevolumelimits import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NodeVolumeLimits,
    driver_not_installed,
)
from multisched.plugins.nodevolumelimits.migration import ebs_volume_id, gce_volume_id
from volume_support import claim, csi_node, node, pod, pv, run, storage_class

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
EBS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH = "kubernetes.io/hostpath"
NODE = "node-for-max-pd-test-1"
SC = "csi-sc"
OK = None
MAX = (Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


class _Handle:
    def __init__(self, cache: Cache) -> None:
        self.snapshot = cache.snapshot


def _pv(name: str, driver: str) -> dict[str, Any]:
    if driver == EBS_IN_TREE:
        source: dict[str, Any] = {"awsElasticBlockStore": {"volumeID": name}}
    elif driver == HOSTPATH:
        source = {"hostPath": {"path": "/tmp"}}
    else:
        source = {"csi": {"driver": driver, "volumeHandle": name}}
    body = pv(name, klass="", **source)
    body["spec"].pop("local")
    return body


def _objects(
    drivers: list[str], va_count: int, limit_source: str, limit: int
) -> list[dict[str, Any]]:
    """Upstream's listers: PVs, claims, the class, VolumeAttachments and the CSINode."""
    out: list[dict[str, Any]] = [storage_class(SC, provisioner=drivers[0])]
    for driver in drivers:
        for i in range(4):
            out.append(_pv(f"csi-{driver}-{i}", driver))
            out.append(claim(f"csi-{driver}-{i}", klass=None, volume=f"csi-{driver}-{i}"))
        for i in range(va_count):
            out.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "VolumeAttachment",
                    "metadata": {"name": f"va-{driver}-{i}"},
                    "spec": {
                        "attacher": driver,
                        "nodeName": NODE,
                        "source": {"persistentVolumeName": f"csi-{driver}-{i}"},
                    },
                }
            )
    out.append(claim("csi-4", klass=SC))
    out.append(claim("csi-5", klass=None))
    out.append(claim("csi-6", klass=SC, volume="missing-in-action"))
    if limit_source in ("csinode", "csinode-with-no-limit"):
        body = csi_node(NODE, drivers[0], limit)
        body["spec"]["drivers"] = [
            {"name": d, "nodeID": NODE, "allocatable": {"count": limit}} for d in drivers
        ]
        if limit_source == "csinode-with-no-limit":
            for d in body["spec"]["drivers"]:
                del d["allocatable"]
        out.append(body)
    elif limit_source == "no-csi-driver":
        out.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": NODE},
                "spec": {"drivers": []},
            }
        )
    return out


def _pvc_pod(*claims: str, name: str = "p") -> PodInfo:
    return make_pod(
        name,
        volumes=[
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
            for i, c in enumerate(claims)
        ],
    )


def _ebs_inline(volume_id: str, *others: dict[str, Any]) -> PodInfo:
    return make_pod(
        "inline",
        volumes=[*others, {"name": "ebs", "awsElasticBlockStore": {"volumeID": volume_id}}],
    )


CONFIGMAP_AND_SECRET = ({"name": "cm", "configMap": {"name": "x"}}, {"name": "s", "secret": {}})


def _ephemeral_pod(uid: str, *names: str, others: tuple[dict[str, Any], ...] = ()) -> PodInfo:
    return make_pod(
        "abc",
        namespace="test",
        metadata={"uid": uid},
        volumes=[*others, *({"name": n, "ephemeral": {"volumeClaimTemplate": {}}} for n in names)],
    )


def _ephemeral_claim(name: str, owner_uid: str | None) -> dict[str, Any]:
    body = claim(name, klass=SC, namespace="test")
    if owner_uid is not None:
        body["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "abc", "uid": owner_uid, "controller": True}
        ]
    return body


def running() -> PodInfo:
    return _pvc_pod(f"csi-{EBS}-3", name="running")


def pending() -> PodInfo:
    return _pvc_pod("csi-4", name="pending")


def csi_ebs_one() -> PodInfo:
    return _pvc_pod(f"csi-{EBS}-0", name="ebs-one")


def csi_ebs_two() -> PodInfo:
    return _pvc_pod(f"csi-{EBS}-1", f"csi-{EBS}-2", name="ebs-two")


def gce_two() -> PodInfo:
    return _pvc_pod(f"csi-{GCE}-1", f"csi-{GCE}-2", name="gce-two")


def in_tree_one() -> PodInfo:
    return _pvc_pod(f"csi-{EBS_IN_TREE}-0", name="in-tree-one")


def in_tree_two() -> PodInfo:
    return _pvc_pod(f"csi-{EBS_IN_TREE}-1", f"csi-{EBS_IN_TREE}-2", name="in-tree-two")


def ephemeral() -> PodInfo:
    return _ephemeral_pod("12345", "xyz")


def ephemeral_two() -> PodInfo:
    return _ephemeral_pod("12345II", "x", "y")


OWNED = [_ephemeral_claim("abc-xyz", "12345")]
OWNED_TWO = [_ephemeral_claim("abc-x", "12345II"), _ephemeral_claim("abc-y", "12345II")]
NOT_OWNED = [_ephemeral_claim("abc-xyz", None)]
IN_TREE_AND_CSI = [EBS_IN_TREE, EBS]

# (name, new pod, existing pods, limit, drivers, limit source, VolumeAttachments per driver,
#  extra claims, want PreFilter skip, want Filter status)
CASES: list[tuple[Any, ...]] = [
    ("should count VolumeAttachments towards volume limit when no pods exist",
     csi_ebs_one, [], 2, [EBS], "csinode", 2, [], False, MAX),
    ("should schedule pod when VolumeAttachments count does not exceed limit",
     csi_ebs_one, [], 2, [EBS], "csinode", 1, [], False, OK),
    ("fits when node volume limit >= new pods CSI volume",
     csi_ebs_one, [running, csi_ebs_two], 4, [EBS], "csinode", 0, [], False, OK),
    ("doesn't when node volume limit <= pods CSI volume",
     csi_ebs_one, [running, csi_ebs_two], 2, [EBS], "csinode", 0, [], False, MAX),
    ("should when driver does not support volume limits",
     csi_ebs_one, [running, csi_ebs_two], 2, [EBS], "csinode-with-no-limit", 0, [], False, OK),
    ("count pending PVCs towards volume limit <= pods CSI volume",
     csi_ebs_one, [pending, csi_ebs_two], 2, [EBS], "csinode", 0, [], False, MAX),
    ("count multiple pending pvcs towards volume limit >= pods CSI volume",
     csi_ebs_one, [pending, pending, csi_ebs_two], 4, [EBS], "csinode", 0, [], False, OK),
    ("should count PVCs with invalid PV name but valid SC",
     csi_ebs_one, [lambda: _pvc_pod("csi-6"), csi_ebs_two], 2, [EBS], "csinode", 0, [], False,
     MAX),
    ("don't count pvcs with missing SC towards volume limit",
     csi_ebs_one, [running, lambda: _pvc_pod("csi-5")], 2, [EBS], "csinode", 0, [], False, OK),
    ("count pvcs with the same type towards volume limit",
     csi_ebs_one, [gce_two, csi_ebs_two], 2, [EBS, GCE], "csinode", 0, [], False, MAX),
    ("don't count pvcs with different type towards volume limit",
     gce_two, [csi_ebs_two, running], 2, [EBS, GCE], "csinode", 0, [], False, OK),
    ("should count in-tree volumes if migration is enabled",
     in_tree_one, [in_tree_two], 2, IN_TREE_AND_CSI, "csinode", 0, [], False, MAX),
    ("nil csi node",
     lambda: _ebs_inline("aws-inline1"), [in_tree_two], 0, IN_TREE_AND_CSI, "", 0, [], False, OK),
    ("should count unbound in-tree volumes if migration is enabled",
     pending, [in_tree_two], 2, IN_TREE_AND_CSI, "csinode", 0, [], False, MAX),
    ("should not limit pod if volume used does not report limits",
     in_tree_one, [in_tree_two], 2, IN_TREE_AND_CSI, "csinode-with-no-limit", 0, [], False, OK),
    ("should not count non-migratable in-tree volumes",
     lambda: _pvc_pod(f"csi-{HOSTPATH}-0"), [csi_ebs_two], 2, [HOSTPATH, EBS], "csinode", 0, [],
     False, OK),
    ("should count in-tree inline volumes if migration is enabled",
     lambda: _ebs_inline("aws-inline1"), [in_tree_two], 2, IN_TREE_AND_CSI, "csinode", 0, [],
     False, MAX),
    ("should count in-tree and csi volumes if migration is enabled (when scheduling in-tree "
     "volumes)",
     in_tree_one, [csi_ebs_two], 2, IN_TREE_AND_CSI, "csinode", 0, [], False, MAX),
    ("should count in-tree, inline and csi volumes if migration is enabled (when scheduling "
     "in-tree volumes)",
     lambda: _ebs_inline("aws-inline1"), [csi_ebs_two, in_tree_one], 3, IN_TREE_AND_CSI,
     "csinode", 0, [], False, MAX),
    ("should not count in-tree, inline and csi volumes if migration is enabled (when scheduling "
     "in-tree volumes)",
     lambda: _ebs_inline(f"csi-{EBS}-1"), [csi_ebs_two, in_tree_one], 3, IN_TREE_AND_CSI,
     "csinode", 0, [], False, OK),
    ("should count in-tree and csi volumes if migration is enabled (when scheduling csi "
     "volumes)",
     csi_ebs_one, [in_tree_two], 2, IN_TREE_AND_CSI, "csinode", 0, [], False, MAX),
    # The real lister names the resource in the singular (upstream's fake, in the plural).
    ("ephemeral volume missing",
     ephemeral, [], 0, [EBS], "csinode-with-no-limit", 0, [], False,
     (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
      'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found')),
    ("ephemeral volume not owned",
     ephemeral, [], 0, [EBS], "csinode-with-no-limit", 0, NOT_OWNED, False,
     (Code.ERROR, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)")),
    ("ephemeral volume unbound",
     ephemeral, [], 0, [EBS], "csinode-with-no-limit", 0, OWNED, False, OK),
    ("ephemeral doesn't when node volume limit <= pods CSI volume",
     ephemeral, [running, csi_ebs_two], 2, [EBS], "csinode", 0, OWNED, False, MAX),
    ("ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
     csi_ebs_one, [running, ephemeral_two], 2, [EBS], "csinode", 0, OWNED_TWO, False, MAX),
    ("persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent "
     "volume",
     csi_ebs_one, [running, ephemeral, csi_ebs_two], 3, [EBS], "csinode", 0, OWNED, False, MAX),
    ("persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
     csi_ebs_one, [running, ephemeral, csi_ebs_two], 5, [EBS], "csinode", 0, OWNED, False, OK),
    ("skip Filter when the pod only uses secrets and configmaps",
     lambda: make_pod("cm", volumes=list(CONFIGMAP_AND_SECRET)), [], 2, [EBS], "csinode", 0, [],
     True, OK),
    ("don't skip Filter when the pod has pvcs",
     lambda: make_pod(
         "pvc",
         volumes=[*CONFIGMAP_AND_SECRET,
                  {"name": "c", "persistentVolumeClaim": {"claimName": f"csi-{EBS}-0"}}],
     ), [], 2, [EBS], "csinode", 0, [], False, OK),
    ("don't skip Filter when the pod has ephemeral volumes",
     lambda: _ephemeral_pod("12345", "xyz", others=CONFIGMAP_AND_SECRET), [], 0, [EBS],
     "csinode-with-no-limit", 0, [], False,
     (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
      'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found')),
    ("don't skip Filter when the pod has inline migratable volumes",
     lambda: _ebs_inline("aws-inline1", *CONFIGMAP_AND_SECRET), [in_tree_two], 2,
     IN_TREE_AND_CSI, "csinode", 0, [], False, MAX),
]  # fmt: skip


def _node(existing: list[Any]) -> NodeInfo:
    return make_node(NODE, pods_on=[make() for make in existing])


def _plugin(*objects: dict[str, Any]) -> NodeVolumeLimits:
    cache = Cache()
    for obj in objects:
        cache.volumes.upsert(obj["kind"], obj)
    return NodeVolumeLimits(None, _Handle(cache))  # type: ignore[arg-type]


def _outcome(status: Status | None) -> tuple[Code, str] | None:
    return None if status is None else (status.code, status.message())


@pytest.mark.parametrize(
    ("new", "existing", "limit", "drivers", "source", "vas", "extra", "skips", "want"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_csi_limits(
    new: Any,
    existing: list[Any],
    limit: int,
    drivers: list[str],
    source: str,
    vas: int,
    extra: list[dict[str, Any]],
    skips: bool,
    want: tuple[Code, str] | None,
) -> None:
    plugin = _plugin(*_objects(drivers, vas, source, limit), *extra)
    state = CycleState()
    new_pod = new()
    _, pre = plugin.pre_filter(state, new_pod, [])
    assert (pre is not None and pre.code == Code.SKIP) is skips
    if not skips:
        assert _outcome(plugin.filter(state, new_pod, _node(existing))) == want


NOT_INSTALLED = (Code.UNSCHEDULABLE, driver_not_installed(EBS))


@pytest.mark.parametrize(
    ("source", "limit", "csi_driver", "want"),
    [
        ("no-csi-driver", 0, {}, OK),  # the CSIDriver does not opt in
        ("no-csi-driver", 0, {"preventPodSchedulingIfMissing": True}, NOT_INSTALLED),
        ("", 0, {"preventPodSchedulingIfMissing": True}, NOT_INSTALLED),  # no CSINode at all
        ("csinode", 2, {"preventPodSchedulingIfMissing": True}, OK),  # installed, in the limit
        ("no-csi-driver", 0, None, OK),  # no CSIDriver object: maybe not a CSI driver
    ],
    ids=[
        "allow scheduling when CSIDriver exists but PreventPodSchedulingIfMissing is not set",
        "fail when driver not installed and PreventPodSchedulingIfMissing is true",
        "fail when the node has no CSINode and PreventPodSchedulingIfMissing is true",
        "driver installed within limit",
        "allow scheduling when CSIDriver object missing",
    ],
)
def test_volume_limit_scaling(
    source: str, limit: int, csi_driver: dict[str, Any] | None, want: tuple[Code, str] | None
) -> None:
    objects = _objects([EBS], 0, source, limit)
    if csi_driver is not None:
        objects.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIDriver",
                "metadata": {"name": EBS},
                "spec": csi_driver,
            }
        )
    plugin = _plugin(*objects)
    new_pod = csi_ebs_one()
    state = CycleState()
    assert plugin.pre_filter(state, new_pod, []) == (None, None)
    assert _outcome(plugin.filter(state, new_pod, _node([]))) == want


def test_limits_come_from_the_csinode_alone() -> None:
    # v1.28 also read a node's attachable-volumes-csi-<driver> allocatable; v1.37 does not.
    plugin = _plugin(*_objects([EBS], 0, "", 0))
    node_info = make_node(NODE, extra={f"attachable-volumes-csi-{EBS}": "1"}, pods_on=[running()])
    assert plugin.filter(CycleState(), csi_ebs_one(), node_info) is None


def test_in_tree_volumes_count_on_any_node_with_a_csinode() -> None:
    # v1.28 counted them only where the CSINode's migrated-plugins annotation listed the
    # plugin; in v1.37 the migration is GA, and a CSINode is all it takes.
    plugin = _plugin(*_objects(IN_TREE_AND_CSI, 0, "csinode", 2))
    node_info = _node([in_tree_two])
    assert _outcome(plugin.filter(CycleState(), in_tree_one(), node_info)) == MAX


def test_portworx_inline_volumes_count_and_azure_file_ones_do_not() -> None:
    px = "pxd.portworx.com"
    objects = _objects([px], 0, "csinode", 1)

    def portworx(volume_id: str) -> PodInfo:
        return make_pod(
            volume_id, volumes=[{"name": "px", "portworxVolume": {"volumeID": volume_id}}]
        )

    plugin = _plugin(*objects)
    assert (
        _outcome(plugin.filter(CycleState(), portworx("b"), _node([lambda: portworx("a")]))) == MAX
    )
    azure_file = make_pod(
        "af", volumes=[{"name": "af", "azureFile": {"secretName": "s", "shareName": "share"}}]
    )
    _, pre = plugin.pre_filter(CycleState(), azure_file, [])
    assert pre is None  # migratable, so not skipped
    assert plugin.filter(CycleState(), azure_file, _node([])) is None  # but never counted


def test_a_volume_attachment_of_a_volume_a_pod_uses_counts_once() -> None:
    # va-0, va-1 and va-2 are attached; 1 and 2 are also csi_ebs_two's: 3 attached, not 5,
    # and the new pod's csi-3 makes 4.
    plugin = _plugin(*_objects([EBS], 3, "csinode", 4))
    assert plugin.filter(CycleState(), running(), _node([csi_ebs_two])) is None
    plugin = _plugin(*_objects([EBS], 3, "csinode", 3))
    assert _outcome(plugin.filter(CycleState(), running(), _node([csi_ebs_two]))) == MAX


def test_volume_attachments_of_other_nodes_do_not_count() -> None:
    objects = _objects([EBS], 2, "csinode", 2)
    for obj in objects:
        if obj["kind"] == "VolumeAttachment":
            obj["spec"]["nodeName"] = "elsewhere"
    plugin = _plugin(*objects)
    assert plugin.filter(CycleState(), csi_ebs_one(), _node([])) is None


def test_a_deleted_volume_attachment_frees_its_slot() -> None:
    objects = _objects([EBS], 2, "csinode", 2)
    plugin = _plugin(*objects)
    assert _outcome(plugin.filter(CycleState(), csi_ebs_one(), _node([]))) == MAX
    store = plugin.handle.snapshot.volumes
    store.delete("VolumeAttachment", next(o for o in objects if o["kind"] == "VolumeAttachment"))
    assert plugin.filter(CycleState(), csi_ebs_one(), _node([])) is None


def test_an_existing_pods_missing_claim_is_not_counted() -> None:
    plugin = _plugin(*_objects([EBS], 0, "csinode", 1))
    node_info = _node([lambda: _pvc_pod("gone")])
    assert plugin.filter(CycleState(), csi_ebs_one(), node_info) is None


def test_events_to_register() -> None:
    events = NodeVolumeLimits(None, None).events_to_register()  # type: ignore[arg-type]

    def covered(event: Any) -> bool:
        return any(e.event.matches(event) for e in events)

    for event in (
        CSI_NODE_ADD,
        CSI_NODE_UPDATE,
        ASSIGNED_POD_DELETE,
        PVC_ADD,
        VOLUME_ATTACHMENT_DELETE,
    ):
        assert covered(event), event
    assert not covered(PVC_UPDATE)


@pytest.mark.parametrize(
    ("kubernetes_id", "volume_id"),
    [
        ("vol-123", "vol-123"),
        ("aws://us-east-1a/vol-123", "vol-123"),
        ("aws:///vol-123", "vol-123"),
    ],
)
def test_ebs_volume_ids_translate_as_csi_translation_lib_does(
    kubernetes_id: str, volume_id: str
) -> None:
    assert ebs_volume_id(kubernetes_id) == volume_id


def test_an_ebs_inline_volume_that_does_not_translate_is_an_error() -> None:
    plugin = _plugin(*_objects(IN_TREE_AND_CSI, 0, "csinode", 2))
    status = plugin.filter(CycleState(), _ebs_inline("aws://zone/not-a-volume"), _node([]))
    assert status is not None and status.code == Code.ERROR
    assert status.message() == (
        "converting volume(ebs) from inline to csi: failed to translate Kubernetes ID to EBS "
        "Volume ID Invalid format for AWS volume (aws://zone/not-a-volume)"
    )


def test_gce_pd_handles_name_the_pvs_zone_or_region() -> None:
    zone = "topology.kubernetes.io/zone"
    assert gce_volume_id("d", None) == "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d"
    assert gce_volume_id("d", {}) == "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d"
    assert (
        gce_volume_id("d", {zone: "us-east1-b"}) == "projects/UNSPECIFIED/zones/us-east1-b/disks/d"
    )
    assert (
        gce_volume_id("d", {zone: "us-east1-b__us-east1-c"})
        == "projects/UNSPECIFIED/regions/us-east1/disks/d"
    )


def test_an_inline_gce_pd_and_its_csi_pv_are_one_volume() -> None:
    handle = "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-1"
    csi_pv = _pv("gce-pv", GCE)
    csi_pv["spec"]["csi"]["volumeHandle"] = handle
    plugin = _plugin(
        *_objects([GCE], 0, "csinode", 1), csi_pv, claim("gce", klass=None, volume="gce-pv")
    )
    inline = make_pod("inline", volumes=[{"name": "pd", "gcePersistentDisk": {"pdName": "disk-1"}}])
    assert plugin.filter(CycleState(), inline, _node([lambda: _pvc_pod("gce")])) is None


# -- end to end -----------------------------------------------------------------------------

DRIVER = EBS
EBS_CLASS = storage_class("ebs", mode="Immediate", provisioner=DRIVER)


def _csi_pv(name: str, handle: str, claim_name: str) -> dict[str, Any]:
    body = pv(
        name, klass="ebs", claim_ref=claim_name, csi={"driver": DRIVER, "volumeHandle": handle}
    )
    body["spec"].pop("local")
    return body


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


def test_a_volume_attachment_end_to_end_fills_the_node() -> None:
    """A simulate file's VolumeAttachment holds n1's one slot: the pod goes to n2."""
    attachment = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": "va-a"},
        "spec": {"attacher": DRIVER, "nodeName": "n1", "source": {"persistentVolumeName": "pv-a"}},
    }
    objects = [
        node("n1"),
        node("n2"),
        EBS_CLASS,
        csi_node("n1", DRIVER, 1),
        claim("a", klass="ebs", volume="pv-a", bound=True),
        _csi_pv("pv-a", "vol-a", "a"),
        claim("b", klass="ebs", volume="pv-b", bound=True),
        _csi_pv("pv-b", "vol-b", "b"),
        attachment,
    ]
    busy = pod("busy", cpu="3")
    busy["spec"]["nodeName"] = "n2"
    placed = run(*objects, busy, pod("new", "b", cpu="1"))
    assert placed["new"].node == "n2"
