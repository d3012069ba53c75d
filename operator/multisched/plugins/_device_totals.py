"""Devices counted as an extended resource for scoring (DRAExtendedResource, GA in v1.37):
upstream ``noderesources/resource_allocation.go``, ``getDRAPreScoredParams`` and
``calculateDRAResourceTotals``.

A scoring resource such as ``example.com/gpu`` that a node does not advertise but a
DeviceClass backs is scored from the class's devices on the node: how many there are, and
how many claims (or in-flight allocations) hold. Built once per PreScore: slices are
indexed by node name, and each (resource, node) is counted once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from multisched.cache import NodeInfo
from multisched.cache.dra import DraStore
from multisched.dra.cel import CompiledSelector, SelectorError, compile_selector
from multisched.dra.structured import AllocationError, node_matches

from ._resource_allocation import KIND_SCALAR, Entry, is_dra_extended_resource_name

logger = logging.getLogger(__name__)

DeviceKey = tuple[str, str, str]


class DeviceTotals:
    """Upstream ``draPreScoreState``: the allocated devices and the slices, for one cycle.
    Call it as ``DeviceTotals`` of ``usage``: (resource, node) -> (devices, allocated)."""

    __slots__ = ("_allocated", "_by_node", "_classes", "_counted", "_elsewhere")

    def __init__(self, store: DraStore, classes: Mapping[str, Mapping[str, Any]]) -> None:
        self._classes = classes
        devices, shared, capacity = store.allocated_devices()
        # ``IsDeviceAllocated``, precomputed: dedicated, shared, or with consumed capacity.
        self._allocated: set[DeviceKey] = devices | {s[:3] for s in shared} | set(capacity)
        self._by_node: dict[str, list[Mapping[str, Any]]] = {}
        self._elsewhere: list[Mapping[str, Any]] = []
        for slice_ in store.list_slices():
            spec = slice_.get("spec") or {}
            name = spec.get("nodeName")
            if name and not (
                spec.get("perDeviceNodeSelection")
                or spec.get("allNodes")
                or spec.get("nodeSelector") is not None
            ):
                self._by_node.setdefault(str(name), []).append(slice_)
            else:
                self._elsewhere.append(slice_)
        self._counted: dict[tuple[str, str], tuple[int, int]] = {}

    def __call__(self, resource: str, node: NodeInfo) -> tuple[int, int]:
        """``calculateDRAExtendedResourceAllocatableRequest``; (0, 0) when no class backs
        ``resource`` or a selector fails (logged, as upstream)."""
        key = (resource, node.name)
        counted = self._counted.get(key)
        if counted is None:
            device_class = self._classes.get(resource)
            counted = (0, 0)
            if device_class is not None:
                try:
                    counted = self._count(node, device_class)
                except (AllocationError, SelectorError) as exc:
                    logger.error(
                        "Failed to calculate DRA resource capacity and allocated for node %s, "
                        "resource %s: %s",
                        node.name,
                        resource,
                        exc,
                    )
            self._counted[key] = counted
        return counted

    def _count(self, node: NodeInfo, device_class: Mapping[str, Any]) -> tuple[int, int]:
        """``calculateDRAResourceTotals``: the class's devices on the node, and how many of
        them are allocated."""
        selectors = _selectors(device_class)
        total = allocated = 0
        for slice_ in (*self._by_node.get(node.name, ()), *self._elsewhere):
            spec = slice_.get("spec") or {}
            devices = _node_devices(node, spec)
            if not devices:
                continue
            driver = str(spec.get("driver") or "")
            pool = str((spec.get("pool") or {}).get("name") or "")
            for device in devices:
                if selectors and not _matches(selectors, driver, device):
                    continue
                total += 1
                if (driver, pool, str(device.get("name") or "")) in self._allocated:
                    allocated += 1
        return total, allocated


def device_totals(store: DraStore, entries: Sequence[Entry]) -> DeviceTotals | None:
    """Upstream ``getDRAPreScoredParams``: the cycle's device counts when a scored
    resource is one a DeviceClass backs; None otherwise (nothing for DRA to add)."""
    if not store.device_classes:
        return None
    classes: dict[str, Mapping[str, Any]] = {}
    for kind, name, _, _ in entries:
        if kind != KIND_SCALAR or not is_dra_extended_resource_name(name):
            continue
        device_class = store.device_class_for_extended_resource(name)
        if device_class is not None:
            classes[name] = device_class
    return DeviceTotals(store, classes) if classes else None


def _node_devices(node: NodeInfo, spec: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The slice's devices available on ``node``: per device with perDeviceNodeSelection,
    else the whole slice by its nodeName, allNodes or nodeSelector (upstream's order)."""
    name = node.name
    devices: Sequence[Mapping[str, Any]] = spec.get("devices") or ()
    if spec.get("perDeviceNodeSelection"):
        out = []
        for device in devices:
            device_node = str(device.get("nodeName") or "")
            all_nodes = bool(device.get("allNodes"))
            selector = device.get("nodeSelector")
            if (
                all_nodes
                or (device_node and device_node == name)
                or (
                    selector is not None
                    and node_matches(node.raw, device_node, all_nodes, selector)
                )
            ):
                out.append(device)
        return out
    slice_node = str(spec.get("nodeName") or "")
    all_nodes = bool(spec.get("allNodes"))
    selector = spec.get("nodeSelector")
    if not all_nodes and slice_node != name and selector is not None:
        if not node_matches(node.raw, slice_node, all_nodes, selector):
            return ()
    elif not all_nodes and slice_node and slice_node != name:
        return ()
    return devices


def _selectors(device_class: Mapping[str, Any]) -> list[CompiledSelector]:
    """The class's CEL selectors, compiled (``celCache``); a bad one raises SelectorError."""
    out = []
    for selector in (device_class.get("spec") or {}).get("selectors") or ():
        expression = (selector.get("cel") or {}).get("expression")
        if expression is not None:
            out.append(_compiled(str(expression)))
    return out


@lru_cache(maxsize=256)
def _compiled(expression: str) -> CompiledSelector:
    return compile_selector(expression)


def _matches(selectors: Sequence[CompiledSelector], driver: str, device: Mapping[str, Any]) -> bool:
    """``deviceMatchesClass``: every selector holds for the device."""
    attributes = device.get("attributes") or {}
    capacity = device.get("capacity") or {}
    return all(s.matches(driver, attributes, capacity) for s in selectors)
