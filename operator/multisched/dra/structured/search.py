"""One ``Allocate`` call's search state and backtracking (upstream's ``allocator`` type:
allocateOne, allocateDevice, rollbackDevice, isSelectable, checkAvailableCounters)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Protocol

from multisched.dra.cel import SelectorError, compile_selector

from .constraint import Constraint
from .consumable_capacity import (
    CapacityRangeError,
    cmp_request_over_capacity,
    consumed_capacity_from_request,
)
from .pools import NodeView, Pool, matches
from .quantity import Qty
from .requests import ALL, Request, RequestData
from .slices import Device
from .types import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocatedState,
    AllocationError,
    DeviceID,
    Features,
    generate_share_id,
)

_DEADLINE = "filter operation aborted: context deadline exceeded"
_NO_SUCH_KEY_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
    "with has() for optional fields"
)
_START = (0, 0, 0)

CounterSets = dict[str, dict[str, Decimal]]
RequestKey = tuple[int, int, int]  # claim, request, subrequest


class Owner(Protocol):
    """What a search reads of its Allocator."""

    features: Features
    allocated_state: AllocatedState
    get_device_class: Callable[[str], Mapping[str, Any] | None]
    shared_in_use: set[tuple[str, str, str]]
    available_counters: dict[tuple[str, str], CounterSets]
    num_allocate_one_invocations: int

    def is_allocated(self, device_id: tuple[str, str, str]) -> bool: ...


class ResultMaxSizeExceeded(Exception):
    """``errAllocationResultMaxSizeExceeded``: backtrack further (not an error to report)."""


class DeviceResult:
    """``internalDeviceResult``: one device picked for a request or subrequest."""

    __slots__ = ("admin_access", "consumed_capacity", "device", "parent", "request", "share_id")

    def __init__(
        self,
        request: Request,
        parent: Request | None,
        device: Device,
        share_id: str | None,
        consumed_capacity: dict[str, Qty] | None,
    ) -> None:
        self.request = request
        self.parent = parent
        self.device = device
        self.share_id = share_id
        self.consumed_capacity = consumed_capacity
        self.admin_access = True if request.admin_access else None

    def request_name(self) -> str:
        return f"{self.parent.name}/{self.request.name}" if self.parent else self.request.name


class Rollback:
    """``deviceRollbackState``: what allocating one device changed, to undo it."""

    __slots__ = (
        "base_name",
        "capacity_entry_existed",
        "capacity_inserted",
        "constraints_added",
        "consumed",
        "counters_reserved",
        "device_marked",
        "previous_num_results",
        "result_added",
        "sub_name",
    )

    def __init__(self, base: str, sub: str, counters_reserved: bool, num_results: int) -> None:
        self.base_name = base
        self.sub_name = sub
        self.counters_reserved = counters_reserved
        self.previous_num_results = num_results
        self.constraints_added = 0
        self.device_marked = False
        self.capacity_inserted = False
        self.capacity_entry_existed = False
        self.result_added = False
        self.consumed: dict[str, Decimal] = {}


class Search:
    """The state of one ``Allocate`` call."""

    __slots__ = (
        "allocating_capacity",
        "allocating_devices",
        "claim_requests",
        "claims",
        "configured",
        "constraints",
        "consumed_counters",
        "deadline",
        "features",
        "kobjs",
        "matches",
        "node",
        "owner",
        "pools",
        "request_data",
        "results",
    )

    def __init__(
        self,
        owner: Owner,
        node: NodeView,
        claims: Sequence[Mapping[str, Any]],
        pools: list[Pool],
        deadline: float | None,
    ) -> None:
        self.owner = owner
        self.features = owner.features
        self.node = node
        self.claims = claims
        self.kobjs: list[str] = []
        self.claim_requests: list[list[Mapping[str, Any]]] = []
        #: Per claim: it or a class of its requests has device configuration.
        self.configured: list[bool] = []
        self.pools = pools
        self.deadline = deadline
        #: (device, request key) -> selectable: the selectors do not depend on the search.
        self.matches: dict[tuple[Device, RequestKey], bool] = {}
        self.constraints: list[list[Constraint]] = []
        self.request_data: dict[RequestKey, RequestData] = {}
        #: Counters consumed by the devices being allocated, per pool and counter set.
        self.consumed_counters: dict[tuple[str, str], CounterSets] = {}
        #: Device -> indices of the claims it is being allocated for.
        self.allocating_devices: dict[DeviceID, set[int]] = {}
        #: Device -> capacity the shares being allocated consume.
        self.allocating_capacity: dict[DeviceID, dict[str, Decimal]] = {}
        self.results: list[list[DeviceResult]] = [[] for _ in claims]

    def run(self) -> bool:
        return self.allocate_one(0, 0, 0, 0, False, _START)

    # The search.

    def allocate_one(
        self, ci: int, ri: int, si: int, di: int, sub_request: bool, start: tuple[int, int, int]
    ) -> bool:
        """``allocateOne``: True when this and everything after it got allocated.

        ``sub_request``: working on one particular subrequest (no recursion into the
        alternatives). ``start``: where in pools/slices/devices the candidates for the next
        device of the same request begin."""
        self.owner.num_allocate_one_invocations += 1
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise AllocationError(_DEADLINE)
        if ci >= len(self.claims):
            return True  # the first full solution wins
        if ri >= len(self.claim_requests[ci]):
            try:
                return self.allocate_one(ci + 1, 0, 0, 0, False, _START)
            except ResultMaxSizeExceeded:
                # Another allocation for an earlier claim may let a later subrequest fit.
                return False
        data = self.request_data[(ci, ri, si)]
        if not sub_request and data.parent is not None:
            return self._allocate_first_available(ci, ri, di, data)

        request = data.request
        all_devices = request.allocation_mode == ALL
        if all_devices and not data.all_devices:
            return False  # at least one device is required
        if di >= data.num_devices:
            return self.allocate_one(ci, ri + 1, 0, 0, False, _START)
        if data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE - len(self.results[ci]):
            raise ResultMaxSizeExceeded

        if all_devices:
            # The devices are known: only check that each can be had, in order.
            device, pool = data.all_devices[di]
            state = self.allocate_device(ci, ri, si, device, pool, must=True)
            if state is None:
                return False
            return self._descend(ci, ri, si, di + 1, sub_request, _START, device, pool, state)
        return self._allocate_from_pools(ci, ri, si, di, sub_request, start, data)

    def _allocate_first_available(self, ci: int, ri: int, di: int, data: RequestData) -> bool:
        """Try the subrequests in order; the first that works is the one allocated."""
        all_exceeded = True
        sub = 0
        while (ci, ri, sub) in self.request_data:
            try:
                done = self.allocate_one(ci, ri, sub, di, True, _START)
            except ResultMaxSizeExceeded:
                sub += 1  # a later subrequest may need fewer devices
                continue
            all_exceeded = False
            if done:
                data.selected_sub_request_index = sub
                return True
            sub += 1
        if all_exceeded:
            raise ResultMaxSizeExceeded
        return False

    def _allocate_from_pools(
        self,
        ci: int,
        ri: int,
        si: int,
        di: int,
        sub_request: bool,
        start: tuple[int, int, int],
        data: RequestData,
    ) -> bool:
        request = data.request
        admin = request.admin_access
        consumable = self.features.consumable_capacity
        key = (ci, ri, si)
        pools = self.pools
        start_pool, start_slice, start_device = start
        for pi in range(start_pool, len(pools)):
            pool = pools[pi]
            # Not from invalid or incomplete pools, but other pools may do.
            if pool.is_incomplete or pool.is_invalid:
                continue
            slices = pool.slices_targeting_node
            for sli in range(start_slice if pi == start_pool else 0, len(slices)):
                devices = slices[sli].devices
                first = start_device if pi == start_pool and sli == start_slice else 0
                for dvi in range(first, len(devices)):
                    device = devices[dvi]
                    # Checking for "in use" is cheap and thus gets done first.
                    if admin:
                        if ci in self.allocating_devices.get(device.id, ()):
                            continue
                    elif self.device_in_use(device.id):
                        continue
                    if not self.is_selectable(key, data, device):
                        continue
                    if consumable:
                        try:
                            fits = self.capacity_fits(request, device)
                        except CapacityRangeError as err:
                            raise AllocationError(
                                f"claim {self.kobjs[ci]}, request {request.name}: checking "
                                f"capacity for device {device.id}: {err}"
                            ) from None
                        if not fits:
                            continue
                    state = self.allocate_device(ci, ri, si, device, pool, must=False)
                    if state is None:
                        continue
                    nxt = (pi, sli, dvi + 1)
                    if self._descend(ci, ri, si, di + 1, sub_request, nxt, device, pool, state):
                        return True
        return False

    def _descend(
        self,
        ci: int,
        ri: int,
        si: int,
        di: int,
        sub_request: bool,
        start: tuple[int, int, int],
        device: Device,
        pool: Pool,
        state: Rollback,
    ) -> bool:
        """Continue with the next device; undo this one if that finds no solution."""
        try:
            done = self.allocate_one(ci, ri, si, di, sub_request, start)
        except BaseException:
            self.rollback(ci, device, pool, state)
            raise
        if not done:
            self.rollback(ci, device, pool, state)
        return done

    # One device.

    def allocate_device(
        self, ci: int, ri: int, si: int, device: Device, pool: Pool, must: bool
    ) -> Rollback | None:
        """``allocateDevice``: check availability and constraints of a selectable device and
        record it as allocated; None when it cannot be had. ``must``: the caller wants
        exactly this device, so a violated constraint is an error."""
        data = self.request_data[(ci, ri, si)]
        request = data.request
        features = self.features
        device_id = device.id
        multiple = features.consumable_capacity and device.allow_multiple_allocations
        admin = request.admin_access
        if not multiple and admin and ci in self.allocating_devices.get(device_id, ()):
            return None
        if not admin and self.device_in_use(device_id):
            return None
        if not features.partitionable_devices and device.consumes_counters:
            return None
        # A shared device in use has its counters charged already.
        skip_counters = multiple and self.device_capacity_in_use(device_id)
        reserved = False
        if not skip_counters and device.consumes_counters:
            if not self.check_available_counters(device, pool):
                return None
            reserved = True
        if data.parent is None:
            state = Rollback(request.name, "", reserved, len(self.results[ci]))
        else:
            state = Rollback(data.parent.name, request.name, reserved, len(self.results[ci]))

        if features.device_taints and request.taint_prevents_allocation(device):
            self.rollback(ci, device, pool, state)
            return None
        for constraint in self.constraints[ci]:
            if not constraint.add(state.base_name, state.sub_name, device):
                self.rollback(ci, device, pool, state)
                if must:
                    raise AllocationError(
                        f"claim {self.kobjs[ci]}, request {request.name}: cannot add device "
                        f"{device_id} because a claim constraint would not be satisfied"
                    )
                return None
            state.constraints_added += 1

        if not multiple:
            self.allocating_devices.setdefault(device_id, set()).add(ci)
            state.device_marked = True
        consumed: dict[str, Qty] | None = None
        share_id = None
        if features.consumable_capacity:
            taken = self._take_capacity(ci, request, device, pool, state, multiple)
            if taken is None:
                return None
            consumed, share_id = taken
        self.results[ci].append(DeviceResult(request, data.parent, device, share_id, consumed))
        state.result_added = True
        return state

    def _take_capacity(
        self, ci: int, request: Request, device: Device, pool: Pool, state: Rollback, multiple: bool
    ) -> tuple[dict[str, Qty] | None, str | None] | None:
        """Recheck the capacity and, for a shared device, charge this share's part: (its
        consumed capacity, its share id); None (rolled back) when it does not fit."""
        try:
            fits = self.capacity_fits(request, device)
        except CapacityRangeError as err:
            self.rollback(ci, device, pool, state)
            raise AllocationError(
                f"claim {self.kobjs[ci]}, request {request.name}: rechecking capacity for "
                f"device {device.id}: {err}"
            ) from None
        if not fits:
            self.rollback(ci, device, pool, state)
            return None
        if not multiple:
            return None, None
        try:
            consumed = consumed_capacity_from_request(
                request.capacity_requests, device.capacity, self.features.fractional_capacity_range
            )
        except CapacityRangeError as err:
            self.rollback(ci, device, pool, state)
            raise AllocationError(
                f"claim {self.kobjs[ci]}, request {request.name}: computing consumed capacity "
                f"for device {device.id}: {err}"
            ) from None
        # An earlier share's entry also marks the device as shared: rollback keeps it.
        state.capacity_entry_existed = device.id in self.allocating_capacity
        amounts = {name: q.amount for name, q in consumed.items()}
        entry = self.allocating_capacity.setdefault(device.id, {})
        for name, amount in amounts.items():
            entry[name] = entry.get(name, Decimal(0)) + amount
        state.capacity_inserted = True
        state.consumed = amounts
        return (consumed or None), generate_share_id()

    def rollback(self, ci: int, device: Device, pool: Pool, state: Rollback) -> None:
        """``rollbackDevice``: undo ``allocate_device``, in reverse order."""
        if state.result_added:
            del self.results[ci][state.previous_num_results :]
        device_id = device.id
        if state.capacity_inserted:
            entry = self.allocating_capacity.get(device_id)
            if entry is not None:
                for name, amount in state.consumed.items():
                    if name in entry:
                        entry[name] -= amount
                if not any(entry.values()):
                    del self.allocating_capacity[device_id]
            if state.capacity_entry_existed and device_id not in self.allocating_capacity:
                self.allocating_capacity[device_id] = {}
        if state.device_marked:
            self.allocating_devices[device_id].discard(ci)
        constraints = self.constraints[ci]
        for i in range(state.constraints_added - 1, -1, -1):
            constraints[i].remove(state.base_name, state.sub_name, device)
        if state.counters_reserved:
            self.deallocate_counters(device, pool)

    def device_in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.owner.allocated_state.allocated_devices or bool(
            self.allocating_devices.get(device_id)
        )

    def device_capacity_in_use(self, device_id: DeviceID) -> bool:
        return (
            device_id in self.owner.allocated_state.aggregated_capacity
            or device_id in self.owner.shared_in_use
            or device_id in self.allocating_capacity
        )

    def capacity_fits(self, request: Request, device: Device) -> bool:
        """The alloc's ``CmpRequestOverCapacity``: against what is allocated and allocating."""
        device_id = device.id
        current = self.owner.allocated_state.aggregated_capacity.get(device_id) or {}
        if (
            not request.capacity_requests
            and not current
            and not self.allocating_capacity.get(device_id)
            and device.plain_capacity
        ):
            return True  # what cmp_request_over_capacity finds, without the arithmetic
        return cmp_request_over_capacity(
            current,
            request.capacity_requests,
            device.capacity,
            self.allocating_capacity.get(device_id),
            self.features.fractional_capacity_range,
        )

    # Selectors.

    def is_selectable(self, key: RequestKey, data: RequestData, device: Device) -> bool:
        """``isSelectable``: the class's and the request's selectors, then per-device node
        selection. Cached per (device, request)."""
        if not self.features.device_binding_and_status and device.binding_conditions:
            return False  # devices with binding conditions need the feature
        cache_key = (device, key)
        cached = self.matches.get(cache_key)
        if cached is not None:
            return cached
        selectable = True
        device_class = data.device_class
        if device_class is not None:
            selectors = (device_class.get("spec") or {}).get("selectors") or ()
            selectable = self._selectors_match(key[0], device, device_class, selectors)
        if selectable:
            selectable = self._selectors_match(key[0], device, None, data.request.selectors)
        if selectable and device.slice.per_device_node_selection:
            selectable = matches(
                self.node, device.node_name, device.all_nodes, device.node_selector
            )
        self.matches[cache_key] = selectable
        return selectable

    def _selectors_match(
        self,
        ci: int,
        device: Device,
        device_class: Mapping[str, Any] | None,
        selectors: Sequence[Mapping[str, Any]],
    ) -> bool:
        """``selectorsMatch``: all CEL selectors must match (results kept on the device)."""
        for i, selector in enumerate(selectors):
            expression = (selector.get("cel") or {}).get("expression", "")
            result = device.cel.get(expression)
            if result is None:
                owner = (
                    f"class {(device_class.get('metadata') or {}).get('name', '')}"
                    if device_class is not None
                    else f"claim {self.kobjs[ci]}"
                )
                try:
                    compiled = compile_selector(expression)
                except SelectorError as err:
                    raise AllocationError(
                        f"{owner}: selector #{i}: CEL compile error: {err}"
                    ) from None
                raw = device.raw
                try:
                    result = compiled.matches(
                        device.id.driver,
                        raw.get("attributes") or {},
                        raw.get("capacity") or {},
                        device.allow_multiple_allocations,
                    )
                except Exception as err:
                    message = str(err)
                    if "no such key:" in message:
                        message += _NO_SUCH_KEY_HINT
                    raise AllocationError(
                        f"{owner}: selector #{i} on device {device.id}: CEL runtime error: "
                        f"{message}"
                    ) from None
                device.cel[expression] = result
            if not result:
                return False
        return True

    # Shared counters (partitionable devices).

    def check_available_counters(self, device: Device, pool: Pool) -> bool:
        """``checkAvailableCounters``: charge the device's counters; False (and nothing
        charged) when some counter set would be overdrawn."""
        available = self.owner.available_counters.get(pool.id)
        if available is None:
            available = self._available_counters(pool)
            self.owner.available_counters[pool.id] = available
        consumed = self.consumed_counters.setdefault(pool.id, {})
        for set_name, counters in device.consumes_counters:
            counter_set = consumed.setdefault(set_name, {})
            for name, value in counters.items():
                counter_set[name] = counter_set.get(name, Decimal(0)) + value
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, value in counters.items():
                if value < used.get(name, 0):
                    self.deallocate_counters(device, pool)
                    return False
        return True

    def _available_counters(self, pool: Pool) -> CounterSets:
        """The pool's counter sets less what its allocated devices consume (may go
        negative: then nothing is available)."""
        available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
        for slices in (pool.slices_targeting_node, pool.slices_not_targeting_node):
            for s in slices:
                for d in s.devices:
                    if not d.consumes_counters or not self.owner.is_allocated(d.id):
                        continue
                    for set_name, counters in d.consumes_counters:
                        counter_set = available.get(set_name)
                        if counter_set is None:
                            continue
                        for name, value in counters.items():
                            if name in counter_set:
                                counter_set[name] -= value
        return available

    def deallocate_counters(self, device: Device, pool: Pool) -> None:
        consumed = self.consumed_counters[pool.id]
        for set_name, counters in device.consumes_counters:
            counter_set = consumed[set_name]
            for name, value in counters.items():
                counter_set[name] -= value
