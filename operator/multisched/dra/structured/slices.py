"""ResourceSlices read once: the per-slice and per-device data every allocation needs.

Upstream converts each slice per ``Allocate`` call (draapi); here a slice is read once into
slotted objects and kept as long as the same slice object is listed, so an Allocator built
for the next pod reuses the previous one's (slices are never changed in place: the store
replaces them). CEL results are kept on the device, per expression: they depend on
nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from multisched.cache.labels import NodeSelector, SelectorError

from .consumable_capacity import DeviceCapacity
from .quantity import QuantityError, go_amount, quantity_text
from .types import AllocationError, DeviceID

_PREVENTING_EFFECTS = ("NoSchedule", "NoExecute")


class CompiledNodeSelector:
    """A raw ``v1.NodeSelector`` and its parsed form (or why it does not parse)."""

    __slots__ = ("error", "raw", "selector")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.selector: NodeSelector | None = None
        self.error = ""
        try:
            self.selector = NodeSelector.parse(raw)
        except (SelectorError, KeyError, TypeError, AttributeError) as err:
            self.error = str(err) or type(err).__name__


def compile_node_selector(raw: Mapping[str, Any] | None) -> CompiledNodeSelector | None:
    return None if raw is None else CompiledNodeSelector(raw)


class Device:
    """One device of a slice, with what the allocator reads of it precomputed."""

    __slots__ = (
        "_capacity",
        "_plain_capacity",
        "all_nodes",
        "allow_multiple_allocations",
        "binding_conditions",
        "binding_failure_conditions",
        "binds_to_node",
        "cel",
        "consumes_counters",
        "id",
        "name",
        "node_name",
        "node_selector",
        "raw",
        "slice",
        "taints",
    )

    def __init__(self, raw: Mapping[str, Any], slice_: Slice) -> None:
        self.raw = raw
        self.slice = slice_
        self.name: str = raw.get("name", "")
        self.id = DeviceID(slice_.driver, slice_.pool, self.name)
        self.allow_multiple_allocations = bool(raw.get("allowMultipleAllocations"))
        self.binding_conditions: list[str] = list(raw.get("bindingConditions") or ())
        self.binding_failure_conditions: list[str] = list(raw.get("bindingFailureConditions") or ())
        self.binds_to_node = bool(raw.get("bindsToNode"))
        self.node_name: str | None = raw.get("nodeName")
        self.all_nodes = bool(raw.get("allNodes"))
        self.node_selector = compile_node_selector(raw.get("nodeSelector"))
        # Only known effects prevent allocation, others (including None) are ignored.
        self.taints = [t for t in raw.get("taints") or () if t.get("effect") in _PREVENTING_EFFECTS]
        self.consumes_counters: list[tuple[str, dict[str, Decimal]]] = [
            (c.get("counterSet", ""), _counters(c.get("counters"), self.id))
            for c in raw.get("consumesCounters") or ()
        ]
        self._capacity: dict[str, DeviceCapacity] | None = None
        self._plain_capacity: bool | None = None
        #: CEL expression -> whether this device matches it.
        self.cel: dict[str, bool] = {}

    @property
    def capacity(self) -> dict[str, DeviceCapacity]:
        """The parsed ``capacity`` (read on first use: only consumable capacity needs it)."""
        if self._capacity is None:
            try:
                self._capacity = {
                    name: DeviceCapacity(cap)
                    for name, cap in (self.raw.get("capacity") or {}).items()
                }
            except QuantityError as err:
                raise AllocationError(f"device {self.id}: capacity: {err}") from None
        return self._capacity

    @property
    def plain_capacity(self) -> bool:
        """No capacity has a request policy or is negative: a request for no capacity then
        consumes each whole, which fits exactly when nothing else holds any of it."""
        plain = self._plain_capacity
        if plain is None:
            plain = self._plain_capacity = all(
                c.policy is None and c.value.amount >= 0 for c in self.capacity.values()
            )
        return plain

    def uses_compatibility_groups(self) -> bool:
        return any(c.get("compatibilityGroups") for c in self.raw.get("consumesCounters") or ())


def _counters(raw: Mapping[str, Any] | None, owner: object) -> dict[str, Decimal]:
    out = {}
    for name, counter in (raw or {}).items():
        try:
            out[name] = go_amount(quantity_text(counter.get("value", "0")))
        except QuantityError as err:
            raise AllocationError(f"{owner}: counter {name}: {err}") from None
    return out


class Slice:
    """One ResourceSlice's spec, read once."""

    __slots__ = (
        "all_nodes",
        "devices",
        "driver",
        "generation",
        "name",
        "node_name",
        "node_selector",
        "per_device_node_selection",
        "pool",
        "raw",
        "shared_counters",
        "slice_count",
        "uses_compatibility_groups",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        spec = raw.get("spec") or {}
        pool = spec.get("pool") or {}
        self.name: str = (raw.get("metadata") or {}).get("name", "")
        self.driver: str = spec.get("driver", "")
        self.pool: str = pool.get("name", "")
        self.generation: int = int(pool.get("generation") or 0)
        self.slice_count: int = int(pool.get("resourceSliceCount") or 0)
        self.node_name: str | None = spec.get("nodeName")
        self.all_nodes = bool(spec.get("allNodes"))
        self.node_selector = compile_node_selector(spec.get("nodeSelector"))
        #: None when unset (upstream distinguishes unset from false).
        self.per_device_node_selection: bool | None = spec.get("perDeviceNodeSelection")
        owner = f"resource slice {self.name}"
        self.shared_counters: list[tuple[str, dict[str, Decimal]]] = [
            (cs.get("name", ""), _counters(cs.get("counters"), owner))
            for cs in spec.get("sharedCounters") or ()
        ]
        self.devices = tuple(Device(d, self) for d in spec.get("devices") or ())
        self.uses_compatibility_groups = any(d.uses_compatibility_groups() for d in self.devices)

    def __repr__(self) -> str:
        return f"Slice({self.name})"


class SliceIndex:
    """All slices, by node name (node-local ones) and by pool."""

    __slots__ = ("by_pool", "on_node", "pools_by_node", "raw", "shared", "slices")

    def __init__(self, raw: Sequence[Mapping[str, Any]], previous: SliceIndex | None) -> None:
        self.raw = tuple(raw)
        known: dict[int, Slice] = {}
        if previous is not None:
            known = {id(s.raw): s for s in previous.slices}
        self.slices: list[Slice] = []
        self.on_node: dict[str, list[Slice]] = {}
        self.shared: list[Slice] = []
        self.by_pool: dict[tuple[str, str], list[Slice]] = {}
        #: Node name -> (node object, features, what the allocator gathered for it): a
        #: node's pools depend only on these slices, the node and the features.
        self.pools_by_node: dict[str, tuple[Any, Any, Any]] = {}
        for obj in self.raw:
            parsed = known.get(id(obj))
            if parsed is None or parsed.raw is not obj:
                parsed = _read(obj)
            self.slices.append(parsed)
            if parsed.node_name:
                self.on_node.setdefault(parsed.node_name, []).append(parsed)
            else:
                self.shared.append(parsed)
            self.by_pool.setdefault((parsed.driver, parsed.pool), []).append(parsed)

    def same(self, raw: Sequence[Mapping[str, Any]]) -> bool:
        return len(raw) == len(self.raw) and all(a is b for a, b in zip(raw, self.raw, strict=True))


def _read(obj: Mapping[str, Any]) -> Slice:
    try:
        return Slice(obj)
    except (ValueError, TypeError, AttributeError) as err:  # not an API server's object
        name = (obj.get("metadata") or {}).get("name", "")
        raise AllocationError(f"resource slice {name}: {err}") from None


#: The latest index (one element at most): the next Allocator most likely lists the same.
_LAST: list[SliceIndex] = []


def slice_index(raw: Sequence[Mapping[str, Any]]) -> SliceIndex:
    """The index of these slices: the previous one when they are the same objects, else a
    new one that reuses the previous one's slices that are still listed."""
    previous = _LAST[0] if _LAST else None
    if previous is not None and previous.same(raw):
        return previous
    _LAST[:] = [SliceIndex(raw, previous)]
    return _LAST[0]
