"""The API server's rules for the storage objects the volume plugins read: PersistentVolume
and PersistentVolumeClaim (``pkg/apis/core/validation``), StorageClass, CSINode, CSIDriver
and CSIStorageCapacity (``pkg/apis/storage/validation``), for the fields scheduling reads,
with upstream's wording.
"""

from __future__ import annotations

from typing import Any

from .core import (
    Errors,
    Obj,
    _int,
    _items,
    _map,
    _str,
    quantity,
    validate_label_selector,
    validate_meta,
    validate_node_selector,
)
from .names import invalid, is_dns1123_subdomain, not_supported, required

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
#: ``PersistentVolumeSource``'s members: exactly one names where the volume lives.
PV_SOURCES = (
    "gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "iscsi",
    "cinder", "cephfs", "fc", "flocker", "flexVolume", "azureFile", "vsphereVolume", "quobyte",
    "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "local", "storageos", "csi",
)  # fmt: skip


def _access_modes(errs: Errors, modes: Any, path: str, required_too: bool) -> None:
    listed = _items(modes)
    if not listed and required_too:
        errs.append(required(path, ""))
    for mode in listed:
        if mode not in ACCESS_MODES:
            errs.append(not_supported(path, mode, ACCESS_MODES))
    if "ReadWriteOncePod" in listed and len(listed) > 1:
        errs.append(invalid(path, listed, "may not use ReadWriteOncePod with other access modes"))


def _storage(errs: Errors, resources: Any, path: str, what: str) -> None:
    value = _map(resources).get("storage")
    if value is None:
        errs.append(required(f"{path}[storage]", ""))
        return
    amount = quantity(errs, value, f"{path}[storage]")
    if amount is not None and amount <= 0:
        errs.append(invalid(f"{path}[storage]", value, f"must be greater than zero ({what})"))


def validate_persistent_volume(obj: Obj) -> list[str]:
    """``ValidatePersistentVolume`` for capacity, modes, the one source, node affinity."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), False, is_dns1123_subdomain)
    spec = _map(obj.get("spec"))
    _access_modes(errs, spec.get("accessModes"), "spec.accessModes", True)
    capacity = _map(spec.get("capacity"))
    if not capacity:
        errs.append(required("spec.capacity", ""))
    else:
        _storage(errs, capacity, "spec.capacity", "capacity")
    sources = [s for s in PV_SOURCES if spec.get(s) is not None]
    if not sources:
        errs.append(required("spec", "must specify a volume type"))
    elif len(sources) > 1:
        errs.append(f"spec.{sources[1]}: Forbidden: may not specify more than 1 volume type")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(not_supported("spec.volumeMode", mode, VOLUME_MODES))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy is not None and policy not in RECLAIM_POLICIES:
        errs.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES))
    affinity = spec.get("nodeAffinity")
    if affinity is not None:
        required_terms = _map(affinity).get("required")
        if required_terms is None:
            errs.append(
                required("spec.nodeAffinity.required", "must specify required node constraints")
            )
        else:
            validate_node_selector(errs, required_terms, "spec.nodeAffinity.required")
    if "local" in sources and affinity is None:
        errs.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    return errs


def validate_persistent_volume_claim(obj: Obj) -> list[str]:
    """``ValidatePersistentVolumeClaim``: modes, the storage request, selector, volume mode."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), True, is_dns1123_subdomain)
    spec = _map(obj.get("spec"))
    _access_modes(errs, spec.get("accessModes"), "spec.accessModes", True)
    requests = _map(_map(spec.get("resources")).get("requests"))
    _storage(errs, requests, "spec.resources.requests", "request")
    if spec.get("selector") is not None:
        validate_label_selector(errs, spec.get("selector"), "spec.selector")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(not_supported("spec.volumeMode", mode, VOLUME_MODES))
    return errs


def validate_storage_class(obj: Obj) -> list[str]:
    """``ValidateStorageClass``: a provisioner, a known binding mode, topology terms."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), False, is_dns1123_subdomain)
    if not _str(obj.get("provisioner")):
        errs.append(required("provisioner", ""))
    mode = obj.get("volumeBindingMode")
    if mode is not None and mode not in BINDING_MODES:
        errs.append(not_supported("volumeBindingMode", mode, BINDING_MODES))
    for i, term in enumerate(_items(obj.get("allowedTopologies"))):
        path = f"allowedTopologies[{i}].matchLabelExpressions"
        exprs = _items(_map(term).get("matchLabelExpressions"))
        if not exprs:
            errs.append(required(path, "must contain at least one requirement"))
        for j, expr in enumerate(exprs):
            expr_path = f"{path}[{j}]"
            errs.label_name(f"{expr_path}.key", _str(_map(expr).get("key")))
            if not _items(_map(expr).get("values")):
                errs.append(required(f"{expr_path}.values", "must specify as least one value"))
    return errs


def validate_csi_node(obj: Obj) -> list[str]:
    """``ValidateCSINode``: driver names, node IDs and non-negative allocatable counts."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), False, is_dns1123_subdomain)
    seen: set[str] = set()
    for i, driver in enumerate(_items(_map(obj.get("spec")).get("drivers"))):
        path = f"spec.drivers[{i}]"
        name = _str(_map(driver).get("name"))
        if not name:
            errs.append(required(f"{path}.name", ""))
        elif name in seen:
            errs.append(f'{path}.name: Duplicate value: "{name}"')
        seen.add(name)
        if not _str(_map(driver).get("nodeID")):
            errs.append(required(f"{path}.nodeID", ""))
        count = _map(_map(driver).get("allocatable")).get("count")
        if _int(count) and count < 0:
            errs.append(
                invalid(f"{path}.allocatable.count", count, "must be greater than or equal to 0")
            )
    return errs


def validate_csi_driver(obj: Obj) -> list[str]:
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), False, is_dns1123_subdomain)
    return errs


def validate_csi_storage_capacity(obj: Obj) -> list[str]:
    """``ValidateCSIStorageCapacity``: a class name, capacities, the node topology."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), True, is_dns1123_subdomain)
    klass = _str(obj.get("storageClassName"))
    if not klass:
        errs.append(required("storageClassName", ""))
    else:
        errs.name("storageClassName", klass, is_dns1123_subdomain)
    for field in ("capacity", "maximumVolumeSize"):
        if obj.get(field) is not None:
            quantity(errs, obj.get(field), field)
    if obj.get("nodeTopology") is not None:
        validate_label_selector(errs, obj.get("nodeTopology"), "nodeTopology")
    return errs


STORAGE_RULES: dict[str, tuple[tuple[str, ...], Any]] = {
    "PersistentVolume": (("v1",), validate_persistent_volume),
    "PersistentVolumeClaim": (("v1",), validate_persistent_volume_claim),
    "StorageClass": (("storage.k8s.io/v1",), validate_storage_class),
    "CSINode": (("storage.k8s.io/v1",), validate_csi_node),
    "CSIDriver": (("storage.k8s.io/v1",), validate_csi_driver),
    "CSIStorageCapacity": (("storage.k8s.io/v1",), validate_csi_storage_capacity),
}
