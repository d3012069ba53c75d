"""In-tree volume plugins csi-translation-lib v1.37 translates to CSI drivers, and whether a
node counts one's volumes under its CSI driver (``isCSIMigrationOn``).

v1.37 counts five of them (EBS, GCE PD, Azure Disk, Cinder, Portworx) on any node that has a
CSINode, without reading the CSINode's ``storage.alpha.kubernetes.io/migrated-plugins``
annotation as v1.28 did: their migration is GA and locked on. Azure File and vSphere volumes
are migratable too, so they keep a pod from being skipped in PreFilter, but are never counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

AWS_EBS = "kubernetes.io/aws-ebs"
GCE_PD = "kubernetes.io/gce-pd"
AZURE_DISK = "kubernetes.io/azure-disk"
CINDER = "kubernetes.io/cinder"
PORTWORX = "kubernetes.io/portworx-volume"

#: Inline/PV source field -> (in-tree plugin name, CSI driver name, the volume's handle field).
IN_TREE: dict[str, tuple[str, str, str]] = {
    "awsElasticBlockStore": (AWS_EBS, "ebs.csi.aws.com", "volumeID"),
    "gcePersistentDisk": (GCE_PD, "pd.csi.storage.gke.io", "pdName"),
    "azureDisk": (AZURE_DISK, "disk.csi.azure.com", "diskURI"),
    "cinder": (CINDER, "cinder.csi.openstack.org", "volumeID"),
    "portworxVolume": (PORTWORX, "pxd.portworx.com", "volumeID"),
    "azureFile": ("kubernetes.io/azure-file", "file.csi.azure.com", "shareName"),
    "vsphereVolume": ("kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com", "volumePath"),
}
#: In-tree plugin (a StorageClass's provisioner) -> CSI driver name.
CSI_NAME_OF = {plugin: driver for plugin, driver, _ in IN_TREE.values()}
#: ``isCSIMigrationOn``'s plugins.
COUNTED = frozenset({AWS_EBS, GCE_PD, AZURE_DISK, CINDER, PORTWORX})

_GCE_ZONAL = "projects/UNSPECIFIED/zones/{}/disks/{}"
_GCE_REGIONAL = "projects/UNSPECIFIED/regions/{}/disks/{}"
_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
_ZONE = "topology.kubernetes.io/zone"


class TranslationError(ValueError):
    """An in-tree volume csi-translation-lib cannot translate (upstream's words)."""


def migration_on(csi_node: Mapping[str, Any] | None, plugin: str) -> bool:
    """``isCSIMigrationOn``: the node has a CSINode and the plugin is one v1.37 counts."""
    return csi_node is not None and plugin in COUNTED


def in_tree_source(source: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """(field, its source) of a migratable in-tree volume source (an inline volume, or a PV's
    spec), else None (``IsInlineMigratable`` / ``IsPVMigratable``)."""
    for field in IN_TREE:
        found = source.get(field)
        if found is not None:
            return field, found
    return None


def translate(
    field: str, source: Mapping[str, Any], pv_labels: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """(CSI driver, volume handle) the translator gives the volume: an inline volume, or a
    PV's source with the PV's labels (a GCE PD's handle names the PV's zone or region)."""
    _, driver, handle_field = IN_TREE[field]
    handle = str(source.get(handle_field) or "")
    if field == "awsElasticBlockStore":
        return driver, ebs_volume_id(handle)
    if field == "gcePersistentDisk":
        return driver, gce_volume_id(handle, pv_labels)
    return driver, handle


def ebs_volume_id(kubernetes_id: str) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``: ``aws://zone/vol-...`` -> ``vol-...``."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id  # a bare volume ID
    volume = urlsplit(kubernetes_id).path.strip("/")
    if not volume.startswith("vol-") or "/" in volume:
        raise TranslationError(
            "failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS "
            f"volume ({kubernetes_id})"
        )
    return volume


def gce_volume_id(pd_name: str, pv_labels: Mapping[str, str] | None) -> str:
    """The translated handle: zone UNSPECIFIED inline; a PV's zone label names its zone, or
    its region when it lists several zones."""
    if pv_labels is None:
        return _GCE_ZONAL.format("UNSPECIFIED", pd_name)
    zones = (pv_labels.get(_BETA_ZONE) or pv_labels.get(_ZONE) or "").split("__")
    if len(zones) == 1 and zones[0]:
        return _GCE_ZONAL.format(zones[0], pd_name)
    if len(zones) > 1:
        regions = set()
        for zone in zones:
            parts = zone.split("-")
            if len(parts) != 3:
                raise TranslationError(
                    "failed to get region from zones: zone in unexpected format, expected: "
                    f"{{locale}}-{{region}}-{{zone}}, got: {zone}"
                )
            regions.add("-".join(parts[:2]))
        if len(regions) != 1:
            raise TranslationError("failed to get region from zones: multiple regions")
        return _GCE_REGIONAL.format(regions.pop(), pd_name)
    return _GCE_ZONAL.format("UNSPECIFIED", pd_name)
