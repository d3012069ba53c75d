"""REST coordinates of the kinds plugins read besides pods and nodes, by kind name: the
operator's informers and the live commands' listings read the same ones."""

from __future__ import annotations

from multisched.transport import Resource

STORAGE: dict[str, Resource] = {
    "PersistentVolume": Resource("", "v1", "persistentvolumes"),
    "PersistentVolumeClaim": Resource("", "v1", "persistentvolumeclaims"),
    "StorageClass": Resource("storage.k8s.io", "v1", "storageclasses"),
    "CSINode": Resource("storage.k8s.io", "v1", "csinodes"),
    "CSIDriver": Resource("storage.k8s.io", "v1", "csidrivers"),
    "CSIStorageCapacity": Resource("storage.k8s.io", "v1", "csistoragecapacities"),
    "VolumeAttachment": Resource("storage.k8s.io", "v1", "volumeattachments"),
}

#: Dynamic resource allocation (DynamicResources), by kind name. Every supported server
#: (v1.35+) serves resource.k8s.io/v1; an older one does not, and its kinds read as none.
DRA: dict[str, Resource] = {
    "DeviceClass": Resource("resource.k8s.io", "v1", "deviceclasses"),
    "ResourceClaim": Resource("resource.k8s.io", "v1", "resourceclaims"),
    "ResourceClaimTemplate": Resource("resource.k8s.io", "v1", "resourceclaimtemplates"),
    "ResourceSlice": Resource("resource.k8s.io", "v1", "resourceslices"),
    # Served in v1 from v1.37 on: an older server's rules read as none.
    "DeviceTaintRule": Resource("resource.k8s.io", "v1", "devicetaintrules"),
}

#: scheduler-plugins' kinds (Coscheduling, CapacityScheduling), by kind name: optional,
#: their CRDs may not be installed.
GROUPS: dict[str, Resource] = {
    "PodGroup": Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups"),
    "ElasticQuota": Resource("scheduling.x-k8s.io", "v1alpha1", "elasticquotas"),
}

#: Services and pod controllers: PodTopologySpread's default selectors (upstream
#: ``helper.DefaultSelector``).
WORKLOADS: dict[str, Resource] = {
    "Service": Resource("", "v1", "services"),
    "ReplicationController": Resource("", "v1", "replicationcontrollers"),
    "ReplicaSet": Resource("apps", "v1", "replicasets"),
    "StatefulSet": Resource("apps", "v1", "statefulsets"),
}
