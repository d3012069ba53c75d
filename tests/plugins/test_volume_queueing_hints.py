"""The volume plugins' queueing hints, from upstream's tests: volumebinding
(TestIsSchedulableAfter{CSINode,PersistentVolumeClaim,StorageClass,CSIStorageCapacity,
CSIDriver}Change), volumerestrictions (Test_isSchedulableAfter{AssignedPodDeleted,
PersistentVolumeClaimChange}), volumezone (TestIsSchedulableAfter{PersistentVolumeClaimAdded,
StorageClassAdded,PersistentVolumeChange}) and nodevolumelimits (TestCSILimits{,AddedPVC,
DeletedVolumeAttachment,AfterCSINodeUpdated}QHint)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_pod
from multisched.cache import PodInfo
from multisched.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    UPDATE,
    UPDATE_NODE_LABEL,
    QueueingHint,
)
from multisched.plugins import volumerestrictions as vr
from multisched.plugins import volumezone as vz
from multisched.plugins.nodevolumelimits import csi as nvl
from multisched.plugins.volumebinding import VolumeBinding
from multisched.plugins.volumebinding import queueing_hints as vb

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
ZONE = "topology.kubernetes.io/zone"


def pod(
    name: str = "pod-a", namespace: str = "default", *volumes: dict[str, Any], node: str = ""
) -> PodInfo:
    return make_pod(name, namespace=namespace, volumes=list(volumes), node_name=node)


def pvc_vol(claim: str) -> dict[str, Any]:
    return {"name": claim, "persistentVolumeClaim": {"claimName": claim}}


def ephemeral(name: str) -> dict[str, Any]:
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}


def obj(name: str = "", namespace: str | None = None, **fields: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    for key in ("labels", "annotations"):
        if key in fields:
            meta[key] = fields.pop(key)
    return {"metadata": meta, **fields}


def claim(name: str, namespace: str = "default") -> dict[str, Any]:
    return obj(name, namespace, spec={})


# -- VolumeBinding -------------------------------------------------------------------------


def migrated(value: str) -> dict[str, Any]:
    return obj("csinode-a", annotations={vb.MIGRATED_PLUGINS_ANNOTATION: value})


CSI_NODE_CASES = [
    ("CSINode is newly created", None, obj("csinode-a"), Q),
    ("CSINode's migrated-plugins annotations is added", migrated("test1"),
     migrated("test1, test2"), Q),
    ("CSINode's migrated-plugins annotation is updated", migrated("test1"), migrated("test2"), Q),
    ("CSINode is updated but migrated-plugins annotation gets unchanged", migrated("test1"),
     migrated("test1"), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new", "want"), [c[1:] for c in CSI_NODE_CASES], ids=[c[0] for c in CSI_NODE_CASES]
)
def test_volume_binding_is_schedulable_after_csi_node_change(
    old: Any, new: Any, want: QueueingHint
) -> None:
    assert vb.is_schedulable_after_csi_node_change(pod(), old, new) is want


PVC_CASES = [
    ("pod has no pvc or ephemeral volumes", pod("pod-a", "default", {"name": "e", "emptyDir": {}}),
     claim("pvc-b"), claim("pvc-b"), SKIP),
    ("pvc with the same name as the one used by the pod in a different namespace is modified",
     pod("pod-a", "ns-a", pvc_vol("pvc-a"), pvc_vol("pvc-b")), None, claim("pvc-b"), SKIP),
    ("pod has no pvc that is being modified", pod("pod-a", "default", pvc_vol("pvc-a"),
     pvc_vol("pvc-c")), claim("pvc-b"), claim("pvc-b"), SKIP),
    ("pod has no generic ephemeral volume that is being modified",
     pod("pod-a", "default", ephemeral("ephemeral-a"), ephemeral("ephemeral-c")),
     claim("pod-a-ephemeral-b"), claim("pod-a-ephemeral-b"), SKIP),
    ("pod has the pvc that is being modified", pod("pod-a", "default", pvc_vol("pvc-a"),
     pvc_vol("pvc-b")), claim("pvc-b"), claim("pvc-b"), Q),
    ("pod has the generic ephemeral volume that is being modified",
     pod("pod-a", "default", ephemeral("ephemeral-a"), ephemeral("ephemeral-b")),
     claim("pod-a-ephemeral-b"), claim("pod-a-ephemeral-b"), Q),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pending", "old", "new", "want"), [c[1:] for c in PVC_CASES], ids=[c[0] for c in PVC_CASES]
)
def test_volume_binding_is_schedulable_after_persistent_volume_claim_change(
    pending: PodInfo, old: Any, new: Any, want: QueueingHint
) -> None:
    assert vb.is_schedulable_after_persistent_volume_claim_change(pending, old, new) is want


HOSTNAME_TOPOLOGY = [
    {"matchLabelExpressions": [{"key": "kubernetes.io/hostname", "values": ["node-a"]}]}
]
SC_CASES = [
    ("When a new StorageClass is created, it returns Queue", None, obj("sc-a"), Q),
    ("When the AllowedTopologies are changed, it returns Queue", obj("sc-a"),
     obj("sc-a", allowedTopologies=HOSTNAME_TOPOLOGY), Q),
    ("When there are no changes to the StorageClass, it returns QueueSkip", obj("sc-a"),
     obj("sc-a"), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new", "want"), [c[1:] for c in SC_CASES], ids=[c[0] for c in SC_CASES]
)
def test_volume_binding_is_schedulable_after_storage_class_change(
    old: Any, new: Any, want: QueueingHint
) -> None:
    assert vb.is_schedulable_after_storage_class_change(pod(), old, new) is want


def cap(capacity: int | None = None, maximum: int | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if capacity is not None:
        fields["capacity"] = str(capacity)
    if maximum is not None:
        fields["maximumVolumeSize"] = str(maximum)
    return obj("cap-a", **fields)


CAPACITY_CASES = [
    ("When a new CSIStorageCapacity is created, it returns Queue", None, cap(), Q),
    ("When the volume limit is increase(Capacity set), it returns Queue", cap(), cap(100), Q),
    ("When the volume limit is increase(MaximumVolumeSize set), it returns Queue", cap(),
     cap(maximum=100), Q),
    ("When the volume limit is increase(Capacity increase), it returns Queue", cap(50), cap(100),
     Q),
    ("When the volume limit is increase(MaximumVolumeSize unset), it returns Queue",
     cap(100, 50), cap(100), Q),
    ("When the volume limit is increase(MaximumVolumeSize increase), it returns Queue",
     cap(100, 50), cap(100, 60), Q),
    ("When there are no changes to the CSIStorageCapacity, it returns QueueSkip", cap(100, 50),
     cap(100, 50), SKIP),
    ("When the volume limit is equal(Capacity), it returns QueueSkip", cap(100), cap(100), SKIP),
    ("When the volume limit is equal(MaximumVolumeSize unset), it returns QueueSkip",
     cap(100, 50), cap(50), SKIP),
    ("When the volume limit is decrease(Capacity), it returns QueueSkip", cap(100), cap(90),
     SKIP),
    ("When the volume limit is decrease(MaximumVolumeSize), it returns QueueSkip",
     cap(maximum=100), cap(maximum=90), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new", "want"), [c[1:] for c in CAPACITY_CASES], ids=[c[0] for c in CAPACITY_CASES]
)
def test_volume_binding_is_schedulable_after_csi_storage_capacity_change(
    old: Any, new: Any, want: QueueingHint
) -> None:
    assert vb.is_schedulable_after_csi_storage_capacity_change(pod(), old, new) is want


def driver(name: str, storage_capacity: bool | None) -> dict[str, Any]:
    spec = {} if storage_capacity is None else {"storageCapacity": storage_capacity}
    return obj(name, spec=spec)


def with_csi(name: str) -> PodInfo:
    return pod("pod-a", "default", {"name": "v", "csi": {"driver": name}})


DRIVER_CASES = [
    ("pod has no CSIDriver", pod(), driver("test1", None), driver("test1", True), SKIP),
    ("driver name in pod and csidriver name are different", with_csi("test1"),
     driver("test2", True), driver("test2", False), SKIP),
    ("original StorageCapacity is nil", with_csi("test1"), driver("test1", None),
     driver("test1", None), SKIP),
    ("original StorageCapacity is false", with_csi("test1"), driver("test1", False),
     driver("test1", False), SKIP),
    ("modified StorageCapacity is nil", with_csi("test1"), driver("test1", True),
     driver("test1", None), Q),
    ("modified StorageCapacity is true", with_csi("test1"), driver("test1", True),
     driver("test1", True), SKIP),
    ("modified StorageCapacity is false", with_csi("test1"), driver("test1", True),
     driver("test1", False), Q),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pending", "old", "new", "want"),
    [c[1:] for c in DRIVER_CASES],
    ids=[c[0] for c in DRIVER_CASES],
)
def test_volume_binding_is_schedulable_after_csi_driver_change(
    pending: PodInfo, old: Any, new: Any, want: QueueingHint
) -> None:
    assert vb.is_schedulable_after_csi_driver_change(pending, old, new) is want


@pytest.mark.parametrize(
    "hint",
    [
        vb.is_schedulable_after_csi_node_change,
        vb.is_schedulable_after_persistent_volume_claim_change,
        vb.is_schedulable_after_storage_class_change,
        vb.is_schedulable_after_csi_storage_capacity_change,
        vb.is_schedulable_after_csi_driver_change,
        vz.is_schedulable_after_persistent_volume_claim_change,
        vz.is_schedulable_after_storage_class_added,
        vz.is_schedulable_after_persistent_volume_change,
        nvl.is_schedulable_after_pvc_added,
        nvl.is_schedulable_after_csi_node_updated,
    ],
)
def test_unexpected_objects_raise_so_the_queue_requeues(hint: Any) -> None:
    """Upstream's "unexpected objects are passed" / "type conversion error" cases: the
    hint fails, and the queue counts a failing hint as Queue."""
    with pytest.raises(AttributeError):
        hint(with_csi("test1"), object(), "not-an-object")


# -- VolumeRestrictions --------------------------------------------------------------------

GCE = {"name": "d", "gcePersistentDisk": {"pdName": "foo"}}
GCE2 = {"name": "d", "gcePersistentDisk": {"pdName": "bar"}}
AWS = {"name": "d", "awsElasticBlockStore": {"volumeID": "foo"}}
AWS2 = {"name": "d", "awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {
    "name": "d",
    "rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"},
}
RBD2 = {
    "name": "d",
    "rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"},
}
ISCSI = {
    "name": "d",
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2016-12.server:storage.target01",
        "lun": 0,
    },
}
ISCSI2 = {
    "name": "d",
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2017-12.server:storage.target01",
        "lun": 0,
    },
}
DELETED_CASES = [
    ("queue-new-object-gcedisk-conflict", GCE, GCE, Q),
    ("skip-new-object-gcedisk-no-conflict", GCE, GCE2, SKIP),
    ("queue-new-object-awsdisk-conflict", AWS, AWS, Q),
    ("skip-new-object-awsdisk-no-conflict", AWS, AWS2, SKIP),
    ("queue-new-object-rbddisk-conflict", RBD, RBD, Q),
    ("skip-new-object-rbddisk-no-conflict", RBD, RBD2, SKIP),
    ("queue-new-object-iscsidisk-conflict", ISCSI, ISCSI, Q),
    ("skip-new-object-iscsidisk-no-conflict", ISCSI, ISCSI2, SKIP),
    ("queue-has-same-claim", pvc_vol("claim-rwop"), pvc_vol("claim-rwop"), Q),
    ("skip-no-same-claim", pvc_vol("claim-1-rwop"), pvc_vol("claim-2-rwop"), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mine", "theirs", "want"), [c[1:] for c in DELETED_CASES], ids=[c[0] for c in DELETED_CASES]
)
def test_volume_restrictions_is_schedulable_after_assigned_pod_deleted(
    mine: dict[str, Any], theirs: dict[str, Any], want: QueueingHint
) -> None:
    pending, deleted = pod("pod1", "default", mine), pod("pod2", "default", theirs)
    assert vr.is_schedulable_after_assigned_pod_deleted(pending, deleted, None) is want


def test_volume_restrictions_skips_a_pod_deleted_in_another_namespace() -> None:
    pending, deleted = pod("pod1", "default", GCE), pod("pod2", "other", GCE)
    assert vr.is_schedulable_after_assigned_pod_deleted(pending, deleted, None) is SKIP


ONE_PVC = pod("pod-with-one-pvc", "default", pvc_vol("claim-with-rwx-1"), node="node-1")
TWO_PVCS = pod("pod-with-two-pvcs", "default", pvc_vol("claim-with-rwx-1"),
               pvc_vol("claim-with-rwx-2"), node="node-1")  # fmt: skip
OTHER_NS = pod("pod-with-one-pvc", "kube-system", pvc_vol("claim-with-rwx-1"))
RWX_1 = obj("claim-with-rwx-1", "default", spec={"accessModes": ["ReadWriteMany"]})
RWX_2 = obj("claim-with-rwx-2", "default", spec={"accessModes": ["ReadWriteMany"]})
RESTRICTIONS_PVC_CASES = [
    ("queue-new-object-pvc-belong-pod", TWO_PVCS, RWX_1, Q),
    ("skip-new-object-unused", ONE_PVC, RWX_2, SKIP),
    ("skip-nil-old-object", ONE_PVC, RWX_2, SKIP),
    ("skip-new-object-not-belong-pod", ONE_PVC, RWX_2, SKIP),
    ("skip-new-object-namespace-not-equal-pod", OTHER_NS, RWX_1, SKIP),
]


@pytest.mark.parametrize(
    ("pending", "new", "want"),
    [c[1:] for c in RESTRICTIONS_PVC_CASES],
    ids=[c[0] for c in RESTRICTIONS_PVC_CASES],
)
def test_volume_restrictions_is_schedulable_after_persistent_volume_claim_added(
    pending: PodInfo, new: dict[str, Any], want: QueueingHint
) -> None:
    assert vr.is_schedulable_after_persistent_volume_claim_added(pending, None, new) is want


# -- VolumeZone ----------------------------------------------------------------------------


def bound(name: str, namespace: str, volume_name: str) -> dict[str, Any]:
    return obj(name, namespace, spec={"volumeName": volume_name})


WITH_PVC_1 = pod("pod_1", "default", pvc_vol("PVC_1"))
ZONE_PVC_CASES = [
    ("pvc-was-added-but-pod-refers-no-pvc", pod("pod_1"), None, bound("PVC_1", "default", "Vol_1"),
     SKIP),
    ("pvc-was-added-and-pod-was-bound-to-different-pvc", pod("pod_1", "default", pvc_vol("PVC_2")),
     None, bound("PVC_1", "default", "Vol_1"), SKIP),
    ("pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns", WITH_PVC_1, None,
     bound("PVC_1", "ns1", "Vol_1"), SKIP),
    ("pvc-was-added-and-pod-was-bound-to-the-pvc", WITH_PVC_1, None,
     bound("PVC_1", "default", "Vol_1"), Q),
    ("pvc-was-updated-and-pod-was-bound-to-the-pvc", WITH_PVC_1, bound("PVC_1", "default", ""),
     bound("PVC_1", "default", "Vol_1"), Q),
    ("pvc-was-updated-but-pod-refers-no-pvc", pod("pod_1"), bound("PVC_1", "default", ""),
     bound("PVC_1", "default", "Vol_1"), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pending", "old", "new", "want"),
    [c[1:] for c in ZONE_PVC_CASES],
    ids=[c[0] for c in ZONE_PVC_CASES],
)
def test_volume_zone_is_schedulable_after_persistent_volume_claim_change(
    pending: PodInfo, old: Any, new: Any, want: QueueingHint
) -> None:
    assert vz.is_schedulable_after_persistent_volume_claim_change(pending, old, new) is want


@pytest.mark.parametrize(
    ("new", "want"),
    [
        pytest.param(obj("SC_1"), SKIP, id="sc-doesn't-have-volume-binding-mode"),
        pytest.param(
            obj("SC_1", volumeBindingMode="WaitForFirstConsumer"),
            Q,
            id="new-sc-is-wait-for-first-consumer-mode",
        ),
    ],
)
def test_volume_zone_is_schedulable_after_storage_class_added(
    new: dict[str, Any], want: QueueingHint
) -> None:
    assert vz.is_schedulable_after_storage_class_added(WITH_PVC_1, None, new) is want


def pv(**labels: str) -> dict[str, Any]:
    return obj("Vol_1", labels=labels)


ZONE_A_AND_GA = {BETA_ZONE: "us-west1-a", ZONE: "zone"}
PV_CASES = [
    ("new-pv-was-added", None, pv(**{BETA_ZONE: "us-west1-b"}), Q),
    ("pv-was-updated-and-changed-topology", pv(**{BETA_ZONE: "us-west1-a"}),
     pv(**{BETA_ZONE: "us-west1-b"}), Q),
    ("pv-was-updated-and-added-topology-label", pv(**{BETA_ZONE: "us-west1-a"}),
     pv(**ZONE_A_AND_GA), Q),
    ("pv-was-updated-but-no-topology-is-changed", pv(**ZONE_A_AND_GA), pv(**ZONE_A_AND_GA), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new", "want"), [c[1:] for c in PV_CASES], ids=[c[0] for c in PV_CASES]
)
def test_volume_zone_is_schedulable_after_persistent_volume_change(
    old: Any, new: Any, want: QueueingHint
) -> None:
    assert vz.is_schedulable_after_persistent_volume_change(WITH_PVC_1, old, new) is want


# -- NodeVolumeLimits ----------------------------------------------------------------------

EBS_POD = pod("p", "default", pvc_vol("csi-ebs.csi.aws.com-2"))
LIMITS_DELETED_CASES = [
    ("return a Queue when a deleted pod has a PVC", pod("d", "default", pvc_vol("placeholder"),
     node="csiNode"), Q),
    ("return a Queue when a deleted pod has a inline migratable volume",
     pod("d", "default", {"name": "e", "awsElasticBlockStore": {}}, node="csiNode"), Q),
    ("return a QueueSkip when a deleted pod doesn't have any volume", pod("d", node="csiNode"),
     SKIP),
    ("return a QueueSkip when a deleted pod is not scheduled.",
     pod("d", "default", pvc_vol("csi-ebs.csi.aws.com-0")), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("deleted", "want"),
    [c[1:] for c in LIMITS_DELETED_CASES],
    ids=[c[0] for c in LIMITS_DELETED_CASES],
)
def test_csi_limits_qhint(deleted: PodInfo, want: QueueingHint) -> None:
    assert nvl.is_schedulable_after_assigned_pod_deleted(EBS_POD, deleted, None) is want


ADDED_PVC_CASES = [
    ("a pod isn't in the same namespace as an added PVC", pod("p", "ns1"), claim("", "ns2"), SKIP),
    ("a pod is in the same namespace as an added PVC", pod("p", "ns1", pvc_vol("pvc1")),
     claim("pvc1", "ns1"), Q),
    ("a pod has an ephemeral volume related to an added PVC",
     pod("pod1", "ns1", ephemeral("ephemeral")), claim("pod1-ephemeral", "ns1"), Q),
    ("a pod doesn't have the same PVC as an added PVC", pod("p", "ns1", pvc_vol("pvc1")),
     claim("pvc2", "ns1"), SKIP),
    ("a pod doesn't have any PVC attached", pod("p", "ns1"), claim("pvc2", "ns1"), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pending", "added", "want"),
    [c[1:] for c in ADDED_PVC_CASES],
    ids=[c[0] for c in ADDED_PVC_CASES],
)
def test_csi_limits_added_pvc_qhint(
    pending: PodInfo, added: dict[str, Any], want: QueueingHint
) -> None:
    assert nvl.is_schedulable_after_pvc_added(pending, None, added) is want


def attachment(attacher: str, inline_driver: str = "") -> dict[str, Any]:
    source: dict[str, Any] = (
        {"inlineVolumeSpec": {"csi": {"driver": inline_driver}}}
        if inline_driver
        else {"persistentVolumeName": "pv1"}
    )
    spec = {"nodeName": "fake-node", "attacher": attacher, "source": source}
    return obj("volumeattachment1", spec=spec)


EBS_INLINE = {"name": "e", "awsElasticBlockStore": {"volumeID": "test"}}
GCE_INLINE = {"name": "g", "gcePersistentDisk": {"pdName": "test"}}
EBS_DRIVER = "ebs.csi.aws.com"
VA_CASES = [
    ("a pod has PVC when VolumeAttachment is deleting", pod("p", "ns1", pvc_vol("pvc1")),
     attachment("test.storage.gke.io"), Q),
    ("a pod has an Inline Migratable volume (AWSEBSDriver) when VolumeAttachment (AWSEBSDriver) "
     "is deleting (match)", pod("p", "ns1", EBS_INLINE), attachment(EBS_DRIVER, EBS_DRIVER), Q),
    ("a pod has an Inline Migratable volume (GCEPDDriver) when VolumeAttachment (AWSEBSDriver) "
     "is deleting (no match)", pod("p", "ns1", GCE_INLINE), attachment(EBS_DRIVER, EBS_DRIVER),
     SKIP),
    ("a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment "
     "(AWSEBSDriver) is deleting", pod("p", "ns1", EBS_INLINE, pvc_vol("pvc1")),
     attachment(EBS_DRIVER, EBS_DRIVER), Q),
    ("a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment "
     "(AWSEBSDriver)  is deleting", pod("p", "ns1", EBS_INLINE, pvc_vol("pvc1")),
     attachment("test.storage.gke.io"), Q),
    ("a pod has no PVC when VolumeAttachment is deleting", pod("p", "ns1"),
     attachment("test.storage.gke.io"), SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pending", "deleted", "want"), [c[1:] for c in VA_CASES], ids=[c[0] for c in VA_CASES]
)
def test_csi_limits_deleted_volume_attachment_qhint(
    pending: PodInfo, deleted: dict[str, Any], want: QueueingHint
) -> None:
    assert nvl.is_schedulable_after_volume_attachment_deleted(pending, deleted, None) is want


def csi_node(count: int) -> dict[str, Any]:
    drivers = [{"name": EBS_DRIVER, "nodeID": "test-node", "allocatable": {"count": count}}]
    return obj("test-node", spec={"drivers": drivers})


@pytest.mark.parametrize(
    ("before", "after", "want"),
    [
        pytest.param(1, 2, Q, id="limit raised, queue"),
        pytest.param(2, 1, SKIP, id="limit decreased, skip queueing"),
        pytest.param(1, 1, SKIP, id="limit unchanged, skip queueing"),
    ],
)
def test_csi_limits_after_csi_node_updated_qhint(
    before: int, after: int, want: QueueingHint
) -> None:
    pending = pod("test-pod", "ns1", pvc_vol("csi-ebs.csi.aws.com-0"))
    assert (
        nvl.is_schedulable_after_csi_node_updated(pending, csi_node(before), csi_node(after))
        is want
    )


# -- Registrations -------------------------------------------------------------------------


def _registrations(plugin: Any) -> list[tuple[str, int, Any]]:
    return [(r.event.resource, r.event.action, r.hint) for r in plugin.events_to_register()]


def test_volume_binding_registers_v1_37s_events() -> None:
    assert _registrations(VolumeBinding(None, None)) == [
        ("StorageClass", ADD | UPDATE, vb.is_schedulable_after_storage_class_change),
        ("PersistentVolumeClaim", ADD | UPDATE,
         vb.is_schedulable_after_persistent_volume_claim_change),
        ("PersistentVolume", ADD | UPDATE, None),
        (NODE, ADD | UPDATE_NODE_LABEL, None),
        ("CSINode", ADD | UPDATE, vb.is_schedulable_after_csi_node_change),
        ("CSIDriver", UPDATE, vb.is_schedulable_after_csi_driver_change),
        ("CSIStorageCapacity", ADD | UPDATE, vb.is_schedulable_after_csi_storage_capacity_change),
    ]  # fmt: skip


def test_volume_restrictions_registers_v1_37s_events() -> None:
    assert _registrations(vr.VolumeRestrictions(None, None)) == [  # type: ignore[arg-type]
        (POD, DELETE, vr.is_schedulable_after_assigned_pod_deleted),
        (NODE, ADD, None),
        ("PersistentVolumeClaim", ADD, vr.is_schedulable_after_persistent_volume_claim_added),
    ]


def test_volume_zone_registers_v1_37s_events() -> None:
    assert _registrations(vz.VolumeZone(None, None)) == [  # type: ignore[arg-type]
        ("StorageClass", ADD, vz.is_schedulable_after_storage_class_added),
        (NODE, ADD | UPDATE_NODE_LABEL, None),
        ("PersistentVolumeClaim", ADD | UPDATE,
         vz.is_schedulable_after_persistent_volume_claim_change),
        ("PersistentVolume", ADD | UPDATE, vz.is_schedulable_after_persistent_volume_change),
    ]  # fmt: skip


def test_node_volume_limits_registers_v1_37s_events() -> None:
    assert _registrations(nvl.NodeVolumeLimits(None, None)) == [  # type: ignore[arg-type]
        ("CSINode", ADD, None),
        ("CSINode", UPDATE, nvl.is_schedulable_after_csi_node_updated),
        (POD, DELETE, nvl.is_schedulable_after_assigned_pod_deleted),
        ("PersistentVolumeClaim", ADD, nvl.is_schedulable_after_pvc_added),
        ("VolumeAttachment", DELETE, nvl.is_schedulable_after_volume_attachment_deleted),
    ]
