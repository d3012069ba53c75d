"""kube-apiserver's rules for the DRA device kinds simulate reads (``resource.k8s.io/v1``):
DeviceClass, ResourceSlice and DeviceTaintRule (``pkg/apis/resource/validation``:
``ValidateDeviceClass``, ``ValidateResourceSlice``, ``ValidateDeviceTaintRule``), for what
the allocator relies on: names, the pool, where the devices are, device names, taints. A
selector's CEL expression is compiled by the allocator, which reports a bad one as
upstream's scheduler reports a stored one; attribute, capacity and counter details are the
schema's to check.
"""

from __future__ import annotations

from typing import Any

from .core import (
    Errors,
    Obj,
    _items,
    _map,
    _str,
    is_extended_resource,
    validate_meta,
    validate_node_selector,
)
from .names import (
    duplicate,
    go_json,
    invalid,
    invalid_shown,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_long_name,
    not_supported,
    required,
)
from .storage import _csi_driver_name

RESOURCE_API = "resource.k8s.io/v1"
#: ``resource.DeviceSelectorsMaxSize``, ``DeviceConfigMaxSize``.
MAX_SELECTORS = 32
MAX_CONFIGS = 32
#: ``ResourceSliceMaxDevices``, and with taints, counters or list attributes.
MAX_DEVICES = 128
MAX_DEVICES_ADVANCED = 64
POOL_NAME_MAX = 253
#: A list-valued device attribute (``DeviceAttribute``'s list fields).
_LIST_VALUES = frozenset({"ints", "bools", "strings", "versions"})
_NODE_FIELDS = "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`"
_DEVICE_NODE_FIELDS = "`nodeName`, `nodeSelector`, or `allNodes`"


def _too_many(path: str, count: int, limit: int) -> str:
    """``field.TooMany``."""
    return f"{path}: Too many: {count}: must have at most {limit} items"


def validate_device_class(obj: Obj) -> list[str]:
    """``ValidateDeviceClass``: a long name; selectors each with a CEL expression; a valid
    extended resource name."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), False, is_long_name)
    spec = _map(obj.get("spec"))
    selectors = _items(spec.get("selectors"))
    if len(selectors) > MAX_SELECTORS:
        errs.append(_too_many("spec.selectors", len(selectors), MAX_SELECTORS))
    else:
        for i, selector in enumerate(selectors):
            if _map(selector).get("cel") is None:
                errs.append(required(f"spec.selectors[{i}].cel"))
    configs = _items(spec.get("config"))
    if len(configs) > MAX_CONFIGS:
        errs.append(_too_many("spec.config", len(configs), MAX_CONFIGS))
    name = spec.get("extendedResourceName")
    if isinstance(name, str) and not is_extended_resource(name):
        errs.append(
            invalid("spec.extendedResourceName", name, "must be a valid extended resource name")
        )
    return list(errs)


def validate_resource_slice(obj: Obj) -> list[str]:
    """``ValidateResourceSlice``: driver, pool, exactly one way of naming the nodes, and
    uniquely named devices (each placed itself when ``perDeviceNodeSelection``)."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), False, is_dns1123_subdomain)
    spec = _map(obj.get("spec"))
    _csi_driver_name(errs, _str(spec.get("driver")), "spec.driver")
    _pool(errs, _map(spec.get("pool")), "spec.pool")
    set_fields = _node_fields(errs, spec, "spec", device=False)
    if not set_fields:
        errs.append(required("spec", f"exactly one of {_NODE_FIELDS} is required"))
    elif len(set_fields) > 1:
        errs.append(
            invalid_shown(
                "spec",
                f'"{{{", ".join(set_fields)}}}"',
                f"exactly one of {_NODE_FIELDS} is required, but multiple fields are set",
            )
        )
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errs.append(invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    _devices(errs, spec, "spec.devices")
    return list(errs)


def _pool(errs: Errors, pool: Obj, path: str) -> None:
    """``validateResourcePool``."""
    _pool_name(errs, _str(pool.get("name")), f"{path}.name")
    count = pool.get("resourceSliceCount")
    if not isinstance(count, int) or count <= 0:
        errs.append(invalid(f"{path}.resourceSliceCount", count or 0, "must be greater than zero"))
    generation = pool.get("generation")
    if isinstance(generation, int) and generation < 0:
        errs.append(
            invalid(f"{path}.generation", generation, "must be greater than or equal to zero")
        )


def _pool_name(errs: Errors, name: str, path: str) -> None:
    """``validatePoolName``: each /-separated part a DNS subdomain."""
    if not name:
        errs.append(required(path))
        return
    if len(name) > POOL_NAME_MAX:
        errs.append(f"{path}: Too long: may not be more than {POOL_NAME_MAX} bytes")
    for part in name.split("/"):
        for msg in is_dns1123_subdomain(part):
            errs.append(invalid(path, part, msg))


def _node_fields(errs: Errors, spec: Obj, path: str, device: bool) -> list[str]:
    """Which of nodeName, nodeSelector, allNodes (and, for a slice, perDeviceNodeSelection)
    are set, checking each."""
    set_fields = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if node_name:
            set_fields.append("`nodeName`")
            errs.name(f"{path}.nodeName", _str(node_name), is_dns1123_subdomain)
        else:
            detail = (
                "must not be empty"
                if device
                else "must be either unset or set to a non-empty string"
            )
            errs.append(invalid(f"{path}.nodeName", "", detail))
    selector = spec.get("nodeSelector")
    if selector is not None:
        set_fields.append("`nodeSelector`")
        validate_node_selector(errs, selector, f"{path}.nodeSelector")
        terms = _items(_map(selector).get("nodeSelectorTerms"))
        if not device and len(terms) != 1:
            errs.append(
                invalid_shown(
                    f"{path}.nodeSelector.nodeSelectorTerms",
                    go_json(terms),
                    "must have exactly one node selector term",
                )
            )
    flags = ("allNodes",) if device else ("allNodes", "perDeviceNodeSelection")
    for flag in flags:
        value = spec.get(flag)
        if value is None:
            continue
        if value is True:
            set_fields.append(f"`{flag}`")
        else:
            errs.append(invalid(f"{path}.{flag}", value, "must be either unset or set to true"))
    return set_fields


def _devices(errs: Errors, spec: Obj, path: str) -> None:
    devices = _items(spec.get("devices"))
    advanced = any(
        _map(d).get("taints") or _map(d).get("consumesCounters") for d in devices
    ) or any(
        isinstance(a, dict) and any(k in _LIST_VALUES for k in a)
        for d in devices
        for a in _map(_map(d).get("attributes")).values()
    )
    limit = MAX_DEVICES_ADVANCED if advanced else MAX_DEVICES
    if len(devices) > limit:
        errs.append(_too_many(path, len(devices), limit))
        return
    per_device = spec.get("perDeviceNodeSelection") is True
    for i, raw in enumerate(devices):
        device = _map(raw)
        errs.name(f"{path}[{i}].name", _str(device.get("name")), is_dns1123_label)
        _device_nodes(errs, device, f"{path}[{i}]", per_device)
        for j, taint in enumerate(_items(device.get("taints"))):
            _device_taint(errs, _map(taint), f"{path}[{i}].taints[{j}]")
    # ``validateSet``: duplicates after every item's own problems.
    seen: set[str] = set()
    for i, raw in enumerate(devices):
        name = _str(_map(raw).get("name"))
        if name in seen:
            errs.append(duplicate(f"{path}[{i}]", name))
        seen.add(name)


def _device_nodes(errs: Errors, device: Obj, path: str, per_device: bool) -> None:
    placed = [k for k in ("nodeName", "nodeSelector", "allNodes") if device.get(k) is not None]
    if not per_device:
        if placed:
            errs.append(
                invalid_shown(
                    path,
                    "null",
                    "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
                )
            )
        return
    set_fields = _node_fields(errs, device, path, device=True)
    if len(set_fields) == 1:
        return
    detail = (
        f"exactly one of {_DEVICE_NODE_FIELDS} is required when `perDeviceNodeSelection` "
        "is set to true in the ResourceSlice spec"
    )
    if not set_fields:
        errs.append(required(path, detail))
    else:
        errs.append(invalid_shown(path, f'"{{{", ".join(set_fields)}}}"', detail))


def validate_device_taint_rule(obj: Obj) -> list[str]:
    """``ValidateDeviceTaintRule``: a DNS subdomain name, a selector naming a valid driver,
    pool and device where it names them, and a valid taint."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), False, is_dns1123_subdomain)
    spec = _map(obj.get("spec"))
    selector = spec.get("deviceSelector")
    if isinstance(selector, dict):
        path = "spec.deviceSelector"
        if selector.get("driver") is not None:
            _csi_driver_name(errs, _str(selector["driver"]), f"{path}.driver")
        if selector.get("pool") is not None:
            _pool_name(errs, _str(selector["pool"]), f"{path}.pool")
        if selector.get("device") is not None:
            errs.name(f"{path}.device", _str(selector["device"]), is_dns1123_label)
    _device_taint(errs, _map(spec.get("taint")), "spec.taint")
    return list(errs)


def _device_taint(errs: Errors, taint: Obj, path: str) -> None:
    """``validateDeviceTaint``: a qualified key, a label value, a known effect."""
    errs.label_name(f"{path}.key", _str(taint.get("key")))
    value = taint.get("value")
    if value:
        errs.label_value(f"{path}.value", value)
    effect = taint.get("effect")
    if not effect:
        errs.append(required(f"{path}.effect"))
    elif effect not in DEVICE_TAINT_EFFECTS:
        errs.append(not_supported(f"{path}.effect", effect, DEVICE_TAINT_EFFECTS))


#: ``validDeviceTaintEffects``, sorted as upstream lists them.
DEVICE_TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")

DEVICE_RULES: dict[str, tuple[tuple[str, ...], Any]] = {
    "DeviceClass": ((RESOURCE_API,), validate_device_class),
    "ResourceSlice": ((RESOURCE_API,), validate_resource_slice),
    "DeviceTaintRule": ((RESOURCE_API,), validate_device_taint_rule),
}
