"""NodeVolumeLimits (upstream ``nodevolumelimits/csi.go``): the CSI volumes a node may
attach, per driver, from its CSINode's ``allocatable.count`` (or an ``attachable-volumes-*``
allocatable resource); in-tree volumes count under their CSI driver where the node migrated
them. A volume two pods share counts once.

A pod with no claim, generic ephemeral or migratable inline volume is skipped.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from multisched.cache import NodeInfo, PodInfo
from multisched.cache.volumes import CSI_NODE, VolumeStore
from multisched.framework import CycleState, Handle, PreFilterResult, Status
from multisched.framework.status import SKIP
from multisched.queue.events import ADD, DELETE, POD, ClusterEvent

from .migration import CSI_NAME_OF, in_tree_source, migrated_on_node

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
CSI_ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
ATTACHABLE_PREFIX = "attachable-volumes-"
RESOURCE_NAME_LENGTH_LIMIT = 63


class LookupFailed(Exception):
    """The new pod names a claim that cannot be read (an error status, as upstream)."""


def csi_attach_limit_key(driver: str) -> str:
    """``GetCSIAttachLimitKey``: long driver names are cut and hashed to fit a resource name."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= RESOURCE_NAME_LENGTH_LIMIT:
        digest = hashlib.sha1(driver.encode()).hexdigest()[:16]
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + digest
    return CSI_ATTACH_LIMIT_PREFIX + driver


class NodeVolumeLimits:
    name = NAME

    def __init__(self, args: object, handle: Handle) -> None:
        self.handle = handle
        #: Unbound claims get a volume handle no real volume has (upstream's random prefix).
        self.random_prefix = secrets.token_hex(16)

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (ClusterEvent(CSI_NODE, ADD), ClusterEvent(POD, DELETE))

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
        new: dict[str, str] = {}
        try:
            self._attachable(store, pod, csi_node, True, new)
        except LookupFailed as exc:
            return Status.error(str(exc))
        if not new:
            return None
        limits = volume_limits(node, csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for other in node.pods:
            if other.volumes:
                self._attachable(store, other, csi_node, False, attached)
        attached_count: dict[str, int] = {}
        for unique, key in attached.items():
            new.pop(unique, None)
            attached_count[key] = attached_count.get(key, 0) + 1
        new_count: dict[str, int] = {}
        for key in new.values():
            new_count[key] = new_count.get(key, 0) + 1
        for key, count in new_count.items():
            limit = limits.get(key)
            if limit is not None and attached_count.get(key, 0) + count > limit:
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
        """``filterAttachableVolumes``: unique volume name -> its limit key."""
        for volume in pod.volumes:
            claim_ref = volume.get("persistentVolumeClaim")
            if claim_ref is not None:
                claim_name = str(claim_ref.get("claimName") or "")
            elif volume.get("ephemeral") is not None:
                claim_name = f"{pod.name}-{volume.get('name') or ''}"
            else:
                self._inline(volume, csi_node, out)
                continue
            if not claim_name:
                if new_pod:
                    raise LookupFailed("PersistentVolumeClaim had no name")
                continue
            claim = store.pvcs.get_api_obj(f"{pod.namespace}/{claim_name}")
            if claim is None:
                if new_pod:
                    raise LookupFailed(
                        f"looking up PVC {pod.namespace}/{claim_name}: persistentvolumeclaim "
                        f'"{claim_name}" not found'
                    )
                continue
            driver, handle = self._driver_info(store, csi_node, claim)
            if driver and handle:
                out[f"{driver}/{handle}"] = csi_attach_limit_key(driver)

    @staticmethod
    def _inline(
        volume: Mapping[str, Any], csi_node: Mapping[str, Any] | None, out: dict[str, str]
    ) -> None:
        source = in_tree_source(volume)
        if source is None:
            return
        plugin, driver, handle = source
        if migrated_on_node(csi_node, plugin) and handle:
            out[f"{driver}/{handle}"] = csi_attach_limit_key(driver)

    def _driver_info(
        self, store: VolumeStore, csi_node: Mapping[str, Any] | None, claim: Mapping[str, Any]
    ) -> tuple[str, str]:
        """``getCSIDriverInfo``: the bound PV's CSI driver and handle (in-tree PVs through
        migration), or for an unbound claim, its class's provisioner."""
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
        if source is None or not migrated_on_node(csi_node, source[0]):
            return "", ""
        return source[1], source[2]

    def _driver_from_class(
        self, store: VolumeStore, csi_node: Mapping[str, Any] | None, claim: Mapping[str, Any]
    ) -> tuple[str, str]:
        meta = claim.get("metadata") or {}
        notes = meta.get("annotations") or {}
        spec = claim.get("spec") or {}
        class_name = str(
            notes.get("volume.beta.kubernetes.io/storage-class")
            or spec.get("storageClassName")
            or ""
        )
        klass = store.get_storage_class(class_name) if class_name else None
        if klass is None:
            return "", ""
        handle = f"{self.random_prefix}-{meta.get('namespace')}/{meta.get('name')}"
        provisioner = str(klass.get("provisioner") or "")
        if provisioner in CSI_NAME_OF:
            if not migrated_on_node(csi_node, provisioner):
                return "", ""
            return CSI_NAME_OF[provisioner], handle
        return provisioner, handle


def volume_limits(node: NodeInfo, csi_node: Mapping[str, Any] | None) -> dict[str, int]:
    """``getVolumeLimits``: attachable-volume resources of the node, then each CSINode
    driver's ``allocatable.count`` (which wins)."""
    limits = {
        name: value
        for name, value in node.allocatable.scalar.items()
        if name.startswith(ATTACHABLE_PREFIX)
    }
    if csi_node is not None:
        for driver in (csi_node.get("spec") or {}).get("drivers") or ():
            count = (driver.get("allocatable") or {}).get("count")
            if isinstance(count, int):
                limits[csi_attach_limit_key(str(driver.get("name") or ""))] = count
    return limits
