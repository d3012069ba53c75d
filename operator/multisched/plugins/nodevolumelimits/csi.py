"""NodeVolumeLimits (upstream v1.37 ``nodevolumelimits/csi.go``): the CSI volumes a node may
attach, per driver, from its CSINode's ``allocatable.count``; in-tree volumes count under
their CSI driver (``migration``). A volume two pods share counts once, and so does one a
VolumeAttachment already holds on the node.

v1.37 differs from v1.28: limits come from the CSINode alone, keyed by driver name (a node's
``attachable-volumes-csi-*`` allocatable no longer counts); the node's VolumeAttachments count
towards them; a new pod's missing claim is UnschedulableAndUnresolvable rather than an error;
and a CSIDriver with ``preventPodSchedulingIfMissing`` keeps pods off nodes whose CSINode does
not list it (VolumeLimitScaling, beta and on in v1.37).

A pod with no claim, generic ephemeral or migratable inline volume is skipped.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from multisched.cache import NodeInfo, PodInfo
from multisched.cache.volumes import (
    CSI_NODE,
    PERSISTENT_VOLUME_CLAIM,
    VOLUME_ATTACHMENT,
    VolumeStore,
)
from multisched.framework import CycleState, Handle, PreFilterResult, Status
from multisched.framework.events import (
    ADD,
    DELETE,
    POD,
    UPDATE,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from multisched.framework.status import SKIP

from .._hints import is_assigned
from ..volumebinding.binder import claim_names, ephemeral_owner_error
from .migration import (
    CSI_NAME_OF,
    IN_TREE,
    TranslationError,
    in_tree_source,
    migration_on,
    translate,
)

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def driver_not_installed(driver: str) -> str:
    return f"{driver} CSI driver is not installed on the node"


class LookupFailed(Exception):
    """A pod's volume that cannot be counted: an error status, as upstream, or for the new
    pod's claim that does not exist (``not_found``), UnschedulableAndUnresolvable."""

    def __init__(self, message: str, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


class NodeVolumeLimits:
    name = NAME

    def __init__(self, args: object, handle: Handle) -> None:
        self.handle = handle
        #: Unbound claims get a volume handle no real volume has (upstream's random prefix).
        self.random_prefix = secrets.token_hex(16)

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        return (
            # Any new CSINode may fit a pod its absence kept out: no hint.
            ClusterEventWithHint(ClusterEvent(CSI_NODE, ADD)),
            ClusterEventWithHint(
                ClusterEvent(CSI_NODE, UPDATE), is_schedulable_after_csi_node_updated
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, DELETE), is_schedulable_after_assigned_pod_deleted
            ),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ADD), is_schedulable_after_pvc_added
            ),
            ClusterEventWithHint(
                ClusterEvent(VOLUME_ATTACHMENT, DELETE),
                is_schedulable_after_volume_attachment_deleted,
            ),
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        for volume in pod.volumes:
            if (
                volume.get("persistentVolumeClaim") is not None
                or volume.get("ephemeral") is not None
                or in_tree_source(volume) is not None
            ):
                return None, None
        return None, SKIP

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        store = self.handle.snapshot.volumes
        csi_node = store.get_csi_node(node.name)
        new: dict[str, str] = {}  # unique volume name -> its CSI driver
        try:
            self._attachable(store, pod, csi_node, True, new)
        except LookupFailed as exc:
            return Status.unresolvable(str(exc)) if exc.not_found else Status.error(str(exc))
        if not new:
            return None
        for driver in new.values():
            if not driver_installed(store, driver, csi_node):
                return Status.unschedulable(driver_not_installed(driver))
        limits = volume_limits(csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        try:
            for other in node.pods:
                if other.volumes:
                    self._attachable(store, other, csi_node, False, attached)
        except LookupFailed as exc:
            return Status.error(str(exc))
        attached_count: dict[str, int] = {}
        for unique, driver in attached.items():
            new.pop(unique, None)
            attached_count[driver] = attached_count.get(driver, 0) + 1
        for unique, driver in node_volume_attachments(store, node.name).items():
            if unique not in attached:
                attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def _attachable(
        self,
        store: VolumeStore,
        pod: PodInfo,
        csi_node: Mapping[str, Any] | None,
        new_pod: bool,
        out: dict[str, str],
    ) -> None:
        """``filterAttachableVolumes``: unique volume name (driver/handle) -> its driver."""
        for volume in pod.volumes:
            claim_ref = volume.get("persistentVolumeClaim")
            ephemeral = False
            if claim_ref is not None:
                claim_name = str(claim_ref.get("claimName") or "")
            elif volume.get("ephemeral") is not None:
                claim_name = f"{pod.name}-{volume.get('name') or ''}"
                ephemeral = True
            else:
                _inline(volume, csi_node, out)
                continue
            if not claim_name:
                raise LookupFailed("PersistentVolumeClaim had no name")
            claim = store.pvcs.get_api_obj(f"{pod.namespace}/{claim_name}")
            if claim is None:
                if new_pod:  # it cannot run without the claim
                    raise LookupFailed(
                        f"looking up PVC {pod.namespace}/{claim_name}: persistentvolumeclaim "
                        f'"{claim_name}" not found',
                        not_found=True,
                    )
                continue  # no telling whether it counts on this node
            if ephemeral:
                problem = ephemeral_owner_error(pod, claim)
                if problem is not None:
                    raise LookupFailed(problem)
            driver, handle = self._driver_info(store, csi_node, claim)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver

    def _driver_info(
        self, store: VolumeStore, csi_node: Mapping[str, Any] | None, claim: Mapping[str, Any]
    ) -> tuple[str, str]:
        """``getCSIDriverInfo``: the bound PV's CSI driver and handle (in-tree PVs through
        translation), or for an unbound claim or a missing PV, its class's provisioner."""
        spec = claim.get("spec") or {}
        pv_name = str(spec.get("volumeName") or "")
        pv = store.pvs.get_api_obj(pv_name) if pv_name else None
        if pv is None:
            return self._driver_from_class(store, csi_node, claim)
        pv_spec = pv.get("spec") or {}
        csi = pv_spec.get("csi")
        if csi is not None:
            return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        source = in_tree_source(pv_spec)
        if source is None or not migration_on(csi_node, IN_TREE[source[0]][0]):
            return "", ""
        labels = (pv.get("metadata") or {}).get("labels") or {}
        try:
            return translate(source[0], source[1], labels)
        except TranslationError:
            return "", ""  # upstream logs it and does not count the volume

    def _driver_from_class(
        self, store: VolumeStore, csi_node: Mapping[str, Any] | None, claim: Mapping[str, Any]
    ) -> tuple[str, str]:
        """``getCSIDriverInfoFromSC``: a claim without a class must bind before scheduling
        (Immediate), so it is not counted."""
        meta = claim.get("metadata") or {}
        notes = meta.get("annotations") or {}
        if BETA_STORAGE_CLASS_ANNOTATION in notes:
            class_name = str(notes[BETA_STORAGE_CLASS_ANNOTATION] or "")
        else:
            class_name = str((claim.get("spec") or {}).get("storageClassName") or "")
        klass = store.get_storage_class(class_name) if class_name else None
        if klass is None:
            return "", ""
        handle = f"{self.random_prefix}-{meta.get('namespace')}/{meta.get('name')}"
        provisioner = str(klass.get("provisioner") or "")
        if provisioner in CSI_NAME_OF:
            if not migration_on(csi_node, provisioner):
                return "", ""
            return CSI_NAME_OF[provisioner], handle
        return provisioner, handle


def _inline(
    volume: Mapping[str, Any], csi_node: Mapping[str, Any] | None, out: dict[str, str]
) -> None:
    """``checkAttachableInlineVolume``: a migratable inline volume counts where its plugin's
    migration is on."""
    source = in_tree_source(volume)
    if source is None or not migration_on(csi_node, IN_TREE[source[0]][0]):
        return
    try:
        driver, handle = translate(*source)
    except TranslationError as exc:
        raise LookupFailed(
            f"converting volume({volume.get('name') or ''}) from inline to csi: {exc}"
        ) from None
    out[f"{driver}/{handle}"] = driver


def driver_installed(store: VolumeStore, driver: str, csi_node: Mapping[str, Any] | None) -> bool:
    """``checkCSIDriverOnNode``: only a CSIDriver that opts in with
    ``preventPodSchedulingIfMissing`` must be listed by the node's CSINode."""
    csi_driver = store.get_csi_driver(driver)
    if csi_driver is None or not (csi_driver.get("spec") or {}).get(
        "preventPodSchedulingIfMissing"
    ):
        return True
    if csi_node is None:
        return False
    return any(d.get("name") == driver for d in (csi_node.get("spec") or {}).get("drivers") or ())


def volume_limits(csi_node: Mapping[str, Any] | None) -> dict[str, int]:
    """``getVolumeLimits``: each CSINode driver's ``allocatable.count``, by driver name; a
    driver without one has no limit."""
    if csi_node is None:
        return {}
    limits = {}
    for driver in (csi_node.get("spec") or {}).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if isinstance(count, int):
            limits[str(driver.get("name") or "")] = count
    return limits


def node_volume_attachments(store: VolumeStore, node_name: str) -> dict[str, str]:
    """``getNodeVolumeAttachmentInfo``: the CSI volumes attached to the node, by unique name
    (attacher/handle) -> attacher; an attachment without an attacher or a CSI PV is skipped."""
    out = {}
    for va in store.volume_attachments_on(node_name):
        spec = va.get("spec") or {}
        attacher = str(spec.get("attacher") or "")
        pv_name = (spec.get("source") or {}).get("persistentVolumeName")
        if not attacher or pv_name is None:
            continue
        pv = store.pvs.get_api_obj(str(pv_name))
        csi = (pv.get("spec") or {}).get("csi") if pv is not None else None
        if csi is None:
            continue
        out[f"{attacher}/{csi.get('volumeHandle') or ''}"] = attacher
    return out


# -- Queueing hints ------------------------------------------------------------------------


def is_schedulable_after_assigned_pod_deleted(
    pod: PodInfo, old: PodInfo | None, new: object
) -> QueueingHint:
    """A pod on a node (or nominated) with a volume this plugin counts frees a slot."""
    if old is None or not old.volumes or not is_assigned(old):
        return QueueingHint.QUEUE_SKIP
    for vol in old.volumes:
        if (
            vol.get("persistentVolumeClaim") is not None
            or vol.get("ephemeral") is not None
            or in_tree_source(vol) is not None
        ):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_pvc_added(
    pod: PodInfo, old: object, new: Mapping[str, Any]
) -> QueueingHint:
    """A claim the pod uses (named, or its generic ephemeral volume's) was created."""
    meta = new.get("metadata") or {}
    if meta.get("namespace") != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    name = meta.get("name")
    for claim, _ in claim_names(pod):
        if claim == name:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_volume_attachment_deleted(
    pod: PodInfo, old: Mapping[str, Any] | None, new: object
) -> QueueingHint:
    """Any claim may be the detached volume's; an inline volume only if its CSI driver is
    the attacher. An untranslatable inline volume raises (the queue then requeues)."""
    attacher = ((old or {}).get("spec") or {}).get("attacher")
    for vol in pod.volumes:
        if vol.get("persistentVolumeClaim") is not None:
            return QueueingHint.QUEUE
        found = in_tree_source(vol)
        if found is not None and translate(*found)[0] == attacher:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_csi_node_updated(
    pod: PodInfo, old: Mapping[str, Any], new: Mapping[str, Any]
) -> QueueingHint:
    """Some driver's attach limit went up (a driver new to the CSINode counts from 0)."""
    before = _driver_counts(old)
    for driver, count in _driver_counts(new).items():
        if count > before.get(driver, 0):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _driver_counts(csi_node: Mapping[str, Any]) -> dict[str, int]:
    out = {}
    for d in (csi_node.get("spec") or {}).get("drivers") or ():
        count = (d.get("allocatable") or {}).get("count")
        out[str(d.get("name") or "")] = int(count) if count is not None else 0
    return out
