"""The API server's rules for the storage objects the volume plugins read: PersistentVolume
and PersistentVolumeClaim (``pkg/apis/core/validation``), StorageClass, CSINode, CSIDriver,
CSIStorageCapacity and VolumeAttachment (``pkg/apis/storage/validation``), for the fields
scheduling reads, in upstream's order and words.
"""

from __future__ import annotations

import posixpath
from typing import Any

from .core import (
    IS_NOT_POSITIVE,
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
from .go_quantity import GoQuantity, go_resource_list, quantity_text
from .names import (
    duplicate,
    forbidden,
    invalid,
    is_dns1123_label,
    is_dns1123_subdomain,
    not_supported,
    required,
)
from .quantity import QuantityError, parse_quantity

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
#: A StorageClass cannot ask for Recycle.
CLASS_RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
HOST_PATH_TYPES = (
    "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
    "Socket",
)  # fmt: skip
AZURE_CACHING_MODES = ("None", "ReadOnly", "ReadWrite")
AZURE_DISK_KINDS = ("Dedicated", "Managed", "Shared")
#: ``PersistentVolumeSource``'s members in the order ``ValidatePersistentVolumeSpec`` tries them.
PV_SOURCES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd",
    "quobyte", "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume",
    "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi",
)  # fmt: skip
#: Upstream's paths where they are not the field's name (its slips, kept): for the "more
#: than 1 volume type" error, and for the source's own checks.
FORBIDDEN_PATHS = {"cephfs": "cephFS"}
CHECKS_PATHS = {"gcePersistentDisk": "persistentDisk"}
#: ``checkMountOption``: the sources that may carry the mount-options annotation.
MOUNT_OPTION_SOURCES = (
    "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "nfs", "rbd", "quobyte", "iscsi",
    "cinder", "cephfs", "azureFile", "vsphereVolume", "azureDisk", "photonPersistentDisk",
)  # fmt: skip
MOUNT_OPTION_ANNOTATION = "volume.beta.kubernetes.io/mount-options"
MAX_PARAMETERS = 512
MAX_PARAMETERS_SIZE = 256 * (1 << 10)
CSI_DRIVER_NAME_MAX = 63


def _too_long(path: str, limit: int) -> str:
    """``field.TooLong``: the value itself is not printed."""
    return f"{path}: Too long: must have at most {limit} bytes"


def _resource_list(errs: Errors, resources: Obj, path: str) -> dict[str, GoQuantity] | None:
    """Each quantity of a ``ResourceList`` in Go's form; None when one does not parse (the
    API server's decoder refuses the object then, so no rule runs)."""
    out: dict[str, GoQuantity] = {}
    for name, value in resources.items():
        text = quantity_text(value)
        try:
            parse_quantity(text)
        except QuantityError as exc:
            errs.append(invalid(f"{path}[{name}]", text, str(exc)))
            continue
        out[str(name)] = GoQuantity.parse(text)
    return out if len(out) == len(resources) else None


# -- PersistentVolume and PersistentVolumeClaim ------------------------------------------


def _access_modes(errs: Errors, modes: list[Any], path: str) -> None:
    """The access modes' loop shared by volumes and claims (ReadWriteOncePod is on in 1.28)."""
    once_pod = others = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(not_supported(path, mode, ACCESS_MODES))
        if mode == "ReadWriteOncePod":
            once_pod = True
        elif mode in ACCESS_MODES:
            others = True
    if once_pod and others:
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))


def _class_name(errs: Errors, spec: Obj) -> None:
    name = _str(spec.get("storageClassName"))
    if name:
        errs.name("spec.storageClassName", name, is_dns1123_subdomain)


def _volume_mode(errs: Errors, spec: Obj) -> None:
    mode = spec.get("volumeMode")  # defaulted to Filesystem when absent
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(not_supported("spec.volumeMode", mode, VOLUME_MODES))


def _no_backsteps(errs: Errors, target: str, path: str) -> None:
    """``validatePathNoBacksteps``."""
    if ".." in target.split("/"):
        errs.append(invalid(path, target, "must not contain '..'"))


def _host_path(errs: Errors, source: Obj, path: str) -> None:
    if _local(errs, source, path):
        kind = source.get("type")
        if kind is not None and kind not in HOST_PATH_TYPES:
            errs.append(not_supported(f"{path}.type", kind, HOST_PATH_TYPES))


def _local(errs: Errors, source: Obj, path: str) -> bool:
    """A path, without backsteps; False when there is none (nothing more is checked)."""
    target = _str(source.get("path"))
    if not target:
        errs.append(required(f"{path}.path"))
        return False
    _no_backsteps(errs, target, f"{path}.path")
    return True


def _disk(id_field: str) -> Any:
    """The GCE and AWS disks: an ID and a partition."""

    def check(errs: Errors, source: Obj, path: str) -> None:
        if not _str(source.get(id_field)):
            errs.append(required(f"{path}.{id_field}"))
        partition = source.get("partition")
        if _int(partition) and not 0 <= partition <= 255:
            # Upstream's message says 1, its check allows 0.
            errs.append(
                invalid(f"{path}.partition", partition, "must be between 1 and 255, inclusive")
            )

    return check


def _rbd(errs: Errors, source: Obj, path: str) -> None:
    if not _items(source.get("monitors")):
        errs.append(required(f"{path}.monitors"))
    if not _str(source.get("image")):
        errs.append(required(f"{path}.image"))


def _cinder(errs: Errors, source: Obj, path: str) -> None:
    if not _str(source.get("volumeID")):
        errs.append(required(f"{path}.volumeID"))
    ref = source.get("secretRef")
    if ref is not None:
        for part in ("name", "namespace"):
            if not _str(_map(ref).get(part)):
                errs.append(required(f"{path}.secretRef.{part}"))


def _azure_disk(errs: Errors, source: Obj, path: str) -> None:
    if not _str(source.get("diskName")):
        errs.append(required(f"{path}.diskName"))
    uri = _str(source.get("diskURI"))
    if not uri:
        errs.append(required(f"{path}.diskURI"))
    caching = source.get("cachingMode", "ReadWrite")  # upstream's defaults
    if caching is not None and caching not in AZURE_CACHING_MODES:
        errs.append(not_supported(f"{path}.cachingMode", caching, AZURE_CACHING_MODES))
    kind = source.get("kind", "Shared")
    if kind is None:
        return
    if kind not in AZURE_DISK_KINDS:
        errs.append(not_supported(f"{path}.kind", kind, AZURE_DISK_KINDS))
    if kind == "Managed" and not uri.startswith("/subscriptions/"):
        managed = "/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"  # noqa: E501
        errs.append(not_supported(f"{path}.diskURI", uri, (managed,), typed=False))
    if kind != "Managed" and not uri.startswith("https://"):
        blob = "https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"
        errs.append(not_supported(f"{path}.diskURI", uri, (blob,), typed=False))


def _secret_reference(errs: Errors, ref: Obj, path: str) -> None:
    """``validatePVSecretReference``."""
    name, namespace = _str(ref.get("name")), _str(ref.get("namespace"))
    if not name:
        errs.append(required(f"{path}.name"))
    else:
        errs.name(f"{path}.name", name, is_dns1123_subdomain)
    if not namespace:
        errs.append(required(f"{path}.namespace"))
    else:
        errs.name(f"{path}.namespace", namespace, is_dns1123_label)


def _csi_driver_name(errs: Errors, driver: str, path: str) -> None:
    """``ValidateCSIDriverName``."""
    if not driver:
        errs.append(required(path))
    if len(driver) > CSI_DRIVER_NAME_MAX:
        errs.append(_too_long(path, CSI_DRIVER_NAME_MAX))
    for msg in is_dns1123_subdomain(driver.lower()):
        errs.append(invalid(path, driver, msg))


def _csi(errs: Errors, source: Obj, path: str) -> None:
    """``validateCSIPersistentVolumeSource``, ``ValidateCSIDriverName`` first."""
    _csi_driver_name(errs, _str(source.get("driver")), f"{path}.driver")
    if not _str(source.get("volumeHandle")):
        errs.append(required(f"{path}.volumeHandle"))
    for ref in (
        "controllerPublishSecretRef",
        "controllerExpandSecretRef",
        "nodePublishSecretRef",
        "nodeExpandSecretRef",
    ):
        if source.get(ref) is not None:
            _secret_reference(errs, _map(source.get(ref)), f"{path}.{ref}")


#: The sources whose own fields are checked: the ones scheduling reads. The others count
#: toward "one volume type" only.
_SOURCE_CHECKS = {
    "hostPath": _host_path,
    "gcePersistentDisk": _disk("pdName"),
    "awsElasticBlockStore": _disk("volumeID"),
    "rbd": _rbd,
    "cinder": _cinder,
    "azureDisk": _azure_disk,
    "local": _local,
    "csi": _csi,
}


def _capacity(errs: Errors, capacity: Any) -> None:
    """The capacity: storage alone, each amount positive."""
    resources = _map(capacity)
    if not resources:
        errs.append(required("spec.capacity"))
    amounts = _resource_list(errs, resources, "spec.capacity")
    if amounts is None:
        return
    if "storage" not in amounts or len(amounts) > 1:
        listed = go_resource_list(amounts if capacity is not None else None)
        errs.append(f'spec.capacity: Unsupported value: {listed}: supported values: "storage"')
    for name, amount in amounts.items():
        path = f"spec.capacity[{name}]"
        if amount.int_value() < 0:  # validateBasicResource
            errs.append(invalid(path, amount.int_value(), "must be a valid resource quantity"))
        if amount.sign() <= 0:
            errs.append(invalid(path, amount.string(), IS_NOT_POSITIVE))


def validate_persistent_volume(obj: Obj) -> list[str]:
    """``ValidatePersistentVolume`` (``ValidatePersistentVolumeSpec``, not inline) and the
    registry's mount-options check."""
    errs = Errors()
    meta = _map(obj.get("metadata"))
    validate_meta(errs, meta, False, is_dns1123_subdomain)
    spec = _map(obj.get("spec"))
    modes = _items(spec.get("accessModes"))
    if not modes:
        errs.append(required("spec.accessModes"))
    _access_modes(errs, modes, "spec.accessModes")
    _capacity(errs, spec.get("capacity"))
    policy = _str(spec.get("persistentVolumeReclaimPolicy"))
    if policy and policy not in RECLAIM_POLICIES:
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
    count = 0
    for field in PV_SOURCES:
        if spec.get(field) is None:
            continue
        # Upstream counts a flexVolume without asking whether another came first.
        if count and field != "flexVolume":
            path = f"spec.{FORBIDDEN_PATHS.get(field, field)}"
            errs.append(forbidden(path, "may not specify more than 1 volume type"))
            continue
        count += 1
        check = _SOURCE_CHECKS.get(field)
        if check is not None:
            check(errs, _map(spec.get(field)), f"spec.{CHECKS_PATHS.get(field, field)}")
        if field == "local" and affinity is None:
            errs.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    if not count:
        errs.append(required("spec", "must specify a volume type"))
    host_path = spec.get("hostPath")
    if host_path is not None and policy == "Recycle":
        cleaned = posixpath.normpath(_str(_map(host_path).get("path")))
        if cleaned.startswith("//"):  # Go's path.Clean keeps one
            cleaned = "/" + cleaned.lstrip("/")
        if cleaned == "/":
            errs.append(
                forbidden(
                    "spec.persistentVolumeReclaimPolicy",
                    "may not be 'recycle' for a hostPath mount of '/'",
                )
            )
    _class_name(errs, spec)
    _volume_mode(errs, spec)
    annotations = _map(meta.get("annotations"))
    if MOUNT_OPTION_ANNOTATION in annotations and not any(
        spec.get(s) is not None for s in MOUNT_OPTION_SOURCES
    ):
        errs.append(
            forbidden(
                f"metadata.annotations.{MOUNT_OPTION_ANNOTATION}",
                "may not specify mount options for this volume type",
            )
        )
    return errs


def validate_persistent_volume_claim(obj: Obj) -> list[str]:
    """``ValidatePersistentVolumeClaim``: modes, selector, the storage request, class, mode."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), True, is_dns1123_subdomain)
    spec = _map(obj.get("spec"))
    modes = _items(spec.get("accessModes"))
    if not modes:
        errs.append(required("spec.accessModes", "at least 1 access mode is required"))
    if spec.get("selector") is not None:
        validate_label_selector(errs, spec.get("selector"), "spec.selector")
    _access_modes(errs, modes, "spec.accessModes")
    resources = _map(spec.get("resources"))
    # Every quantity must decode; only the storage request is validated, under this path.
    _resource_list(errs, _map(resources.get("limits")), "spec.resources.limits")
    requests = _resource_list(errs, _map(resources.get("requests")), "spec.resources.requests")
    path = "spec.resources[storage]"
    if "storage" not in _map(resources.get("requests")):
        errs.append(required(path))
    elif requests is not None and requests["storage"].sign() <= 0:
        errs.append(invalid(path, requests["storage"].string(), IS_NOT_POSITIVE))
    _class_name(errs, spec)
    _volume_mode(errs, spec)
    return errs


# -- StorageClass ------------------------------------------------------------------------


def _parameters(errs: Errors, params: Obj) -> None:
    """``validateParameters``: at most 512, no empty key, 256 KiB in all."""
    if len(params) > MAX_PARAMETERS:
        errs.append(_too_long("parameters", MAX_PARAMETERS))
        return
    size = 0
    for key, value in params.items():
        if not key:
            errs.append(invalid("parameters", key, "field can not be empty."))
        size += len(str(key).encode()) + len(_str(value).encode())
    if size > MAX_PARAMETERS_SIZE:
        errs.append(_too_long("parameters", MAX_PARAMETERS_SIZE))


def _allowed_topologies(errs: Errors, topologies: Any) -> None:
    """``validateAllowedTopologies``. Upstream makes its list of terms seen with one empty
    entry per term before appending to it, so a term without requirements is always a
    "duplicate" (of those, and of any earlier empty term; one line, once reported)."""
    terms = _items(topologies)
    seen: list[dict[str, frozenset[Any]]] = [{} for _ in terms]
    for i, term in enumerate(terms):
        path = f"allowedTopologies[{i}].matchLabelExpressions"
        exprs: dict[str, frozenset[Any]] = {}
        # ValidateTopologySelectorTerm: an empty list is allowed here.
        for j, raw in enumerate(_items(_map(term).get("matchLabelExpressions"))):
            req_path, req = f"{path}[{j}]", _map(raw)
            values = _items(req.get("values"))
            if not values:
                errs.append(required(f"{req_path}.values"))
            value_set: set[Any] = set()
            for k, value in enumerate(values):
                if value in value_set:
                    errs.append(duplicate(f"{req_path}.values[{k}]", value))
                value_set.add(value)
            key = _str(req.get("key"))
            errs.label_name(f"{req_path}.key", key)
            if key in exprs:
                errs.append(duplicate(f"{req_path}.key", key))
            exprs[key] = frozenset(value_set)
        errs.extend(duplicate(path, "") for earlier in seen if earlier == exprs)
        seen.append(exprs)


def validate_storage_class(obj: Obj) -> list[str]:
    """``ValidateStorageClass``, after the v1 defaults (Delete, Immediate)."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), False, is_dns1123_subdomain)
    provisioner = _str(obj.get("provisioner"))
    if not provisioner:
        errs.append(required("provisioner"))
    else:
        lowered = provisioner.lower()  # upstream checks, and prints, it lower-cased
        errs.label_name("provisioner", lowered)
    _parameters(errs, _map(obj.get("parameters")))
    policy = obj.get("reclaimPolicy")
    if policy and policy not in CLASS_RECLAIM_POLICIES:
        errs.append(not_supported("reclaimPolicy", policy, CLASS_RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is not None and mode not in BINDING_MODES:
        errs.append(not_supported("volumeBindingMode", mode, BINDING_MODES))
    _allowed_topologies(errs, obj.get("allowedTopologies"))
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


def validate_volume_attachment(obj: Obj) -> list[str]:
    """``ValidateVolumeAttachment``: the attacher, exactly one source, the node's name (an
    inline volume spec is not checked: NodeVolumeLimits counts only PV-backed ones)."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), False, is_dns1123_subdomain)
    spec = _map(obj.get("spec"))
    _csi_driver_name(errs, _str(spec.get("attacher")), "spec.attacher")
    source = _map(spec.get("source"))
    pv_name, inline = source.get("persistentVolumeName"), source.get("inlineVolumeSpec")
    one_of = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
    if inline is None and pv_name is None:
        errs.append(required("spec.source", one_of))
    elif inline is not None and pv_name is not None:
        errs.append(forbidden("spec.source", one_of))
    elif pv_name is not None and not _str(pv_name):
        errs.append(
            required(
                "spec.source.persistentVolumeName", "must specify non empty persistentVolumeName"
            )
        )
    node_name = _str(spec.get("nodeName"))
    for msg in is_dns1123_subdomain(node_name):
        errs.append(invalid("spec.nodeName", node_name, msg))
    if _str(pv_name):
        for msg in is_dns1123_subdomain(_str(pv_name)):
            errs.append(invalid("spec.source.persistentVolumeName", _str(pv_name), msg))
    return errs


STORAGE_RULES: dict[str, tuple[tuple[str, ...], Any]] = {
    "PersistentVolume": (("v1",), validate_persistent_volume),
    "PersistentVolumeClaim": (("v1",), validate_persistent_volume_claim),
    "StorageClass": (("storage.k8s.io/v1",), validate_storage_class),
    "CSINode": (("storage.k8s.io/v1",), validate_csi_node),
    "CSIDriver": (("storage.k8s.io/v1",), validate_csi_driver),
    "CSIStorageCapacity": (("storage.k8s.io/v1",), validate_csi_storage_capacity),
    "VolumeAttachment": (("storage.k8s.io/v1",), validate_volume_attachment),
}
