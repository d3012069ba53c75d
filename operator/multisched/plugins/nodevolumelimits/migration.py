"""In-tree volume plugins that kube 1.28 migrates to CSI drivers, by default (the
csi-translation-lib names), and whether a node has migrated one (``isCSIMigrationOn``).

Portworx and RBD migrate only behind feature gates that are off in v1.28, so they are left
out, as upstream leaves them out with the gates off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: ``storage.alpha.kubernetes.io/migrated-plugins`` on a CSINode lists what it migrated.
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"

#: Inline/PV source field -> (in-tree plugin name, CSI driver name, the volume's handle field).
IN_TREE: dict[str, tuple[str, str, str]] = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com", "volumeID"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "pdName"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com", "diskURI"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org", "volumeID"),
}
#: In-tree provisioner (a StorageClass's) -> CSI driver name.
CSI_NAME_OF = {plugin: driver for plugin, driver, _ in IN_TREE.values()}


def migrated_on_node(csi_node: Mapping[str, Any] | None, plugin: str) -> bool:
    """``isCSIMigrationOn``: the plugin migrates by default and the node's CSINode says so."""
    if csi_node is None or plugin not in CSI_NAME_OF:
        return False
    notes = (csi_node.get("metadata") or {}).get("annotations") or {}
    listed = str(notes.get(MIGRATED_PLUGINS_ANNOTATION) or "")
    return plugin in listed.split(",")


def in_tree_source(source: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(in-tree plugin, CSI driver, volume handle) of a migratable volume source (an inline
    volume, or a PV's spec), else None. The handle only has to tell volumes apart."""
    for field, (plugin, driver, handle_field) in IN_TREE.items():
        found = source.get(field)
        if found is not None:
            return plugin, driver, str(found.get(handle_field) or "")
    return None
