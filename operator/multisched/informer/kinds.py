"""REST coordinates of the storage kinds, by kind name: the operator's informers and the
live commands' listings read the same six (what the volume plugins need)."""

from __future__ import annotations

from multisched.transport import Resource

STORAGE: dict[str, Resource] = {
    "PersistentVolume": Resource("", "v1", "persistentvolumes"),
    "PersistentVolumeClaim": Resource("", "v1", "persistentvolumeclaims"),
    "StorageClass": Resource("storage.k8s.io", "v1", "storageclasses"),
    "CSINode": Resource("storage.k8s.io", "v1", "csinodes"),
    "CSIDriver": Resource("storage.k8s.io", "v1", "csidrivers"),
    "CSIStorageCapacity": Resource("storage.k8s.io", "v1", "csistoragecapacities"),
}

#: scheduler-plugins' kinds (Coscheduling, CapacityScheduling), by kind name: optional,
#: their CRDs may not be installed.
GROUPS: dict[str, Resource] = {
    "PodGroup": Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups"),
    "ElasticQuota": Resource("scheduling.x-k8s.io", "v1alpha1", "elasticquotas"),
}
