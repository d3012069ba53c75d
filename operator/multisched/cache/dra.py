"""The DRA objects DynamicResources reads, and the devices claims hold (upstream
``dynamicresources/dra_manager.go`` and ``allocateddevices.go``, as data).

ResourceClaims go through an assume cache, as upstream's: PreBind writes a claim's
allocation and assumes the API's answer, so the next pod's PreFilter sees the devices
taken before the informer brings the update. Between Reserve and that write an allocation
is *in flight* (``signal_claim_pending_allocation``): its devices count as taken too.

Which devices are taken is read once per pod cycle, so it is kept incrementally, as
upstream's ``allocatedDevices`` keeps it from the assume cache's events: every change of a
claim's visible version (informer event, assume, restore) removes the old version's
devices and adds the new one's. Counts, not sets: two claims naming one device (which only
an inconsistent cluster has) leave it taken until both let go, where upstream's set would
forget it at the first.

The other kinds are only ever read: plain dicts by key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from multisched.meta import object_key

from .device_taints import PatchedSlices
from .quantity import QuantityError, parse_quantity
from .volumes import AssumeCache

Obj = dict[str, Any]
DeviceKey = tuple[str, str, str]
SharedKey = tuple[str, str, str, str]

#: Kinds, as their ClusterEvent resources and informer feeds name them.
DEVICE_CLASS = "DeviceClass"
RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_CLAIM_TEMPLATE = "ResourceClaimTemplate"
RESOURCE_SLICE = "ResourceSlice"
#: Cluster-scoped; taints devices of the slices (device_taints.py).
DEVICE_TAINT_RULE = "DeviceTaintRule"
DRA_KINDS = (
    DEVICE_CLASS,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_SLICE,
    DEVICE_TAINT_RULE,
)
#: Kinds whose objects live in a namespace (keyed ``namespace/name``).
NAMESPACED_DRA_KINDS = frozenset({RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE})
#: The extended resource every DeviceClass stands for, whatever its spec says
#: (``resourceapi.ResourceDeviceClassPrefix``).
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"


class _InFlight:
    """An allocation made in Reserve and not yet written, and the pods sharing it."""

    __slots__ = ("claim", "sharers")

    def __init__(self, claim: Obj) -> None:
        self.claim = claim
        self.sharers = 1


class ClaimDevices:
    """What one claim's ``status.allocation`` takes (upstream ``foreachAllocatedDevice``):
    dedicated devices; with consumable capacity, shares (results with a ``shareID``) and
    the capacity they consume. Results with admin access take nothing."""

    __slots__ = ("capacity", "dedicated", "shared")

    def __init__(self, claim: Mapping[str, Any] | None) -> None:
        self.dedicated: list[DeviceKey] = []
        self.shared: list[SharedKey] = []
        self.capacity: list[tuple[DeviceKey, dict[str, Decimal]]] = []
        allocation = ((claim or {}).get("status") or {}).get("allocation")
        if not allocation:
            return
        for result in (allocation.get("devices") or {}).get("results") or ():
            if result.get("adminAccess"):
                continue
            device = (
                str(result.get("driver") or ""),
                str(result.get("pool") or ""),
                str(result.get("device") or ""),
            )
            share = result.get("shareID")
            if share is None:
                self.dedicated.append(device)
                continue
            self.shared.append((*device, str(share)))
            consumed = result.get("consumedCapacity")
            if consumed:
                self.capacity.append((device, _quantities(consumed)))

    def __bool__(self) -> bool:
        return bool(self.dedicated or self.shared)


def _quantities(consumed: Mapping[str, Any]) -> dict[str, Decimal]:
    out = {}
    for name, value in consumed.items():
        try:
            out[str(name)] = parse_quantity(value)
        except (QuantityError, TypeError):
            continue  # the API server validated it; a bad simulate file counts it as none
    return out


class AllocatedDevices:
    """Devices, shares and consumed capacity over a set of claims, kept under changes."""

    __slots__ = ("capacity", "devices", "revision", "shared")

    def __init__(self) -> None:
        #: Device -> how many claims take it.
        self.devices: dict[DeviceKey, int] = {}
        self.shared: dict[SharedKey, int] = {}
        #: Device -> quantity name -> the sum its shares consume (zeros dropped).
        self.capacity: dict[DeviceKey, dict[str, Decimal]] = {}
        #: Bumped by every change (upstream's revision).
        self.revision = 0

    def apply(self, taken: ClaimDevices, sign: int) -> None:
        if not taken:
            return
        self.revision += 1
        _count(self.devices, taken.dedicated, sign)
        _count(self.shared, taken.shared, sign)
        for device, consumed in taken.capacity:
            add_capacity(self.capacity, device, consumed, sign)


def _count(counts: dict[Any, int], keys: Iterable[Any], sign: int) -> None:
    for key in keys:
        left = counts.get(key, 0) + sign
        if left > 0:
            counts[key] = left
        else:
            counts.pop(key, None)


def add_capacity(
    sums: dict[DeviceKey, dict[str, Decimal]],
    device: DeviceKey,
    consumed: Mapping[str, Decimal],
    sign: int = 1,
) -> None:
    """Add (``sign`` -1: take away) one share's consumption to a device's sums; a device
    whose sums are all zero is dropped, as upstream's ``ConsumedCapacityCollection``."""
    total = sums.get(device)
    if total is None:
        total = sums[device] = {}
    for name, value in consumed.items():
        left = total.get(name, Decimal(0)) + sign * value
        if left:
            total[name] = left
        else:
            total.pop(name, None)
    if not total:
        del sums[device]


class DraStore:
    """DeviceClasses, ResourceClaims (assume cache), ResourceClaimTemplates,
    ResourceSlices and DeviceTaintRules, the in-flight allocations, and the devices they
    all take."""

    def __init__(self) -> None:
        self.claims = AssumeCache(RESOURCE_CLAIM, on_change=self._claim_changed)
        self.device_classes: dict[str, Obj] = {}
        self.templates: dict[str, Obj] = {}
        self.slices: dict[str, Obj] = {}
        #: Bumped on any ResourceSlice or DeviceClass change, and a DeviceTaintRule change
        #: that retaints a slice: what a reader derived from them (per-node device lists,
        #: say) is stale once it moves.
        self.slices_revision = 0
        self._slice_list: list[Obj] | None = None
        self.taint_rules: dict[str, Obj] = {}
        #: The slices as the DeviceTaintRules taint them (upstream's slice tracker).
        self._patched = PatchedSlices()
        #: Told ``(old, new)`` of a slice a DeviceTaintRule change retainted, as upstream's
        #: tracker sends a ResourceSlice update: the scheduler sets it to its queue.
        self.on_slice_retainted: Callable[[Obj, Obj], None] | None = None
        #: Extended resource name -> DeviceClass; None until read after a class change.
        self._extended: dict[str, Obj] | None = None
        self._in_flight: dict[str, _InFlight] = {}
        self._allocated = AllocatedDevices()
        #: Told ``(old, new)`` of a claim the scheduler itself assumed or restored (not of
        #: the informer's changes, whose feed raises their events): upstream's claim
        #: events come from the assume cache, so PreBind's write moves the pods waiting
        #: for that claim. The scheduler sets it to its queue.
        self.on_claim_assumed: Callable[[Obj, Obj], None] | None = None
        self._feeding = False

    # -- informer side ----------------------------------------------------------------------

    def upsert(self, kind: str, obj: Obj) -> bool:
        """An object of ``kind`` from the API (or a simulate file); False when the assume
        cache kept a newer version of a claim."""
        if kind == RESOURCE_CLAIM:
            self._feeding = True
            try:
                return self.claims.on_upsert(obj)
            finally:
                self._feeding = False
        key = object_key(obj)
        self._plain(kind)[key] = obj
        self._changed(kind, key, obj)
        return True

    def delete(self, kind: str, obj: Mapping[str, Any]) -> None:
        if kind == RESOURCE_CLAIM:
            self._feeding = True
            try:
                self.claims.on_delete(obj)
            finally:
                self._feeding = False
            return
        key = object_key(obj)
        if self._plain(kind).pop(key, None) is not None:
            self._changed(kind, key, None)

    def load(self, kind: str, objs: Iterable[Obj]) -> None:
        for obj in objs:
            self.upsert(kind, obj)

    def objects(self, kind: str) -> list[Obj]:
        """Every object of ``kind`` as readers see it (assumed claims included)."""
        if kind == RESOURCE_CLAIM:
            return self.claims.list()
        return list(self._plain(kind).values())

    def get(self, kind: str, key: str) -> Obj | None:
        """The object readers see under ``key`` (a claim's assumed version, if any)."""
        if kind == RESOURCE_CLAIM:
            return self.claims.get(key)
        return self._plain(kind).get(key)

    def has(self, kind: str, key: str) -> bool:
        if kind == RESOURCE_CLAIM:
            return key in self.claims
        return key in self._plain(kind)

    def is_empty(self) -> bool:
        """No DRA object at all: DynamicResources has nothing to look at."""
        return not (len(self.claims) or self.slices or self.device_classes or self.templates)

    def _plain(self, kind: str) -> dict[str, Obj]:
        if kind == DEVICE_CLASS:
            return self.device_classes
        if kind == RESOURCE_SLICE:
            return self.slices
        if kind == RESOURCE_CLAIM_TEMPLATE:
            return self.templates
        if kind == DEVICE_TAINT_RULE:
            return self.taint_rules
        raise KeyError(f"not a DRA kind: {kind}")

    def _changed(self, kind: str, key: str, obj: Obj | None) -> None:
        if kind == RESOURCE_SLICE:
            if self._patched:
                self._patched.slice_changed(key, obj)
            self._slice_list = None
            self.slices_revision += 1
        elif kind == DEVICE_TAINT_RULE:
            retainted = self._patched.rule_changed(key, obj, self.slices)
            if retainted:
                self._slice_list = None
                self.slices_revision += 1
                if self.on_slice_retainted is not None:
                    for old, new in retainted:
                        self.on_slice_retainted(old, new)
        elif kind == DEVICE_CLASS:
            self._extended = None
            self.slices_revision += 1

    # -- readers ----------------------------------------------------------------------------

    def get_claim(self, namespace: str, name: str) -> Obj | None:
        """The latest version: assumed if the scheduler assumed one, else the API's."""
        return self.claims.get(f"{namespace}/{name}")

    def get_device_class(self, name: str) -> Obj | None:
        return self.device_classes.get(name)

    def get_template(self, namespace: str, name: str) -> Obj | None:
        return self.templates.get(f"{namespace}/{name}")

    def list_slices(self) -> list[Obj]:
        """Every ResourceSlice, with the DeviceTaintRules' taints (upstream
        ``ListWithDeviceTaintRules``); the same list until that changes (do not mutate it)."""
        if self._slice_list is None:
            if self._patched.patched:
                visible = self._patched.visible
                self._slice_list = [visible(k, s) for k, s in self.slices.items()]
            else:
                self._slice_list = list(self.slices.values())
        return self._slice_list

    def device_class_for_extended_resource(self, resource_name: str) -> Obj | None:
        """The DeviceClass an extended resource stands for (upstream
        ``ExtendedResourceCache``): a class's ``spec.extendedResourceName``, or
        ``deviceclass.resource.kubernetes.io/<class>``. Two classes naming the same
        resource: the newer one, then the lower name (a migration between classes)."""
        if self._extended is None:
            self._extended = _extended_resources(self.device_classes.values())
        return self._extended.get(resource_name)

    # -- in-flight allocations ------------------------------------------------------------

    def signal_claim_pending_allocation(self, uid: str, allocated_claim: Obj) -> None:
        """Reserve allocated ``allocated_claim`` (its uid: ``uid``); its devices count as
        taken until the write or Unreserve. A claim already in flight gains a sharer; one
        the cache already shows allocated is not put in flight (the pod's cycle state was
        stale). Upstream's special in-memory extended-resource claim is never looked up."""
        entry = self._in_flight.get(uid)
        if entry is not None:
            entry.sharers += 1
            return
        meta = allocated_claim.get("metadata") or {}
        name = str(meta.get("name") or "")
        if name != SPECIAL_CLAIM_NAME:
            cached = self.get_claim(str(meta.get("namespace") or ""), name)
            cached_meta = (cached or {}).get("metadata") or {}
            if (
                cached is not None
                and cached_meta.get("uid") == uid
                and (cached.get("status") or {}).get("allocation")
            ):
                return
        self._in_flight[uid] = _InFlight(allocated_claim)
        self._allocated.revision += 1

    def remove_claim_pending_allocation(self, uid: str, force: bool = False) -> bool:
        """The allocation was written, or Unreserve gave it up: True when it left (its last
        sharer went, or ``force``), as upstream's ``MaybeRemoveClaimPendingAllocation``."""
        entry = self._in_flight.get(uid)
        if entry is None:
            return False
        if force or entry.sharers == 1:
            del self._in_flight[uid]
            self._allocated.revision += 1
            return True
        entry.sharers -= 1
        return False

    def claim_has_pending_allocation(self, uid: str) -> bool:
        return uid in self._in_flight

    def get_pending_allocation(self, uid: str) -> Obj | None:
        """The in-flight allocation result of claim ``uid`` (None when none)."""
        entry = self._in_flight.get(uid)
        if entry is None:
            return None
        allocation: Obj | None = (entry.claim.get("status") or {}).get("allocation")
        return allocation

    # -- allocated devices ------------------------------------------------------------------

    @property
    def allocated_revision(self) -> int:
        """Moves whenever ``allocated_devices`` may answer differently."""
        return self._allocated.revision

    def allocated_devices(
        self, consumable_capacity: bool = True
    ) -> tuple[set[DeviceKey], set[SharedKey], dict[DeviceKey, dict[str, Decimal]]]:
        """Upstream ``GatherAllocatedState``: the devices the claims' allocations take
        (assumed versions included) and the in-flight ones'; with ``consumable_capacity``
        (on by default in v1.37) shares apart, with their consumed capacity summed per
        device; without it, a shared device counts as taken. Fresh copies."""
        allocated = self._allocated
        devices = set(allocated.devices)
        shared = set(allocated.shared)
        capacity = {device: dict(sums) for device, sums in allocated.capacity.items()}
        for entry in self._in_flight.values():
            taken = ClaimDevices(entry.claim)
            devices.update(taken.dedicated)
            shared.update(taken.shared)
            for device, consumed in taken.capacity:
                add_capacity(capacity, device, consumed)
        if not consumable_capacity:
            devices.update((driver, pool, device) for driver, pool, device, _ in shared)
            return devices, set(), {}
        return devices, shared, capacity

    def _claim_changed(self, old: Obj | None, new: Obj | None) -> None:
        """The assume cache's event: the old version's devices go, the new one's come."""
        if old is not None:
            self._allocated.apply(ClaimDevices(old), -1)
        if new is not None:
            self._allocated.apply(ClaimDevices(new), 1)
        if (
            not self._feeding
            and old is not None
            and new is not None
            and self.on_claim_assumed is not None
        ):
            self.on_claim_assumed(old, new)


#: Upstream's in-memory claim for a pod's extended resources backed by devices
#: (``specialClaimInMemName``): never in the assume cache.
SPECIAL_CLAIM_NAME = "<extended-resources>"


def _extended_resources(classes: Iterable[Obj]) -> dict[str, Obj]:
    out: dict[str, Obj] = {}
    explicit: dict[str, tuple[str, str]] = {}
    for cls in classes:
        meta = cls.get("metadata") or {}
        name = str(meta.get("name") or "")
        out[DEVICE_CLASS_RESOURCE_PREFIX + name] = cls
        resource = (cls.get("spec") or {}).get("extendedResourceName")
        if not resource:
            continue
        created = str(meta.get("creationTimestamp") or "")  # RFC 3339: orders as text
        held = explicit.get(resource)
        if held is None or created > held[0] or (created == held[0] and name < held[1]):
            explicit[resource] = (created, name)
            out[resource] = cls
    return out
