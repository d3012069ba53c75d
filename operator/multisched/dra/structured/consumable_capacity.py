"""Consumable capacity (DRAConsumableCapacity): ports incubating/consumable_capacity.go.

A device shared by several allocations (``allowMultipleAllocations``) gives each a part of
its capacity; the request policy decides how much a request really consumes.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from .quantity import MAX_QUANTITY, Qty
from .types import AllocationError

_NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"
_NEGATIVE = "capacity value is negative"


class CapacityRangeError(AllocationError):
    """A request the range arithmetic cannot represent, or a negative one: aborts."""


class ValidRange:
    __slots__ = ("max", "min", "step")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.min = _opt(raw.get("min"))
        self.max = _opt(raw.get("max"))
        self.step = _opt(raw.get("step"))


class RequestPolicy:
    __slots__ = ("default", "valid_range", "valid_values")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.default = _opt(raw.get("default"))
        values = raw.get("validValues")
        self.valid_values = None if values is None else [Qty.parse(v) for v in values]
        valid_range = raw.get("validRange")
        self.valid_range = None if valid_range is None else ValidRange(valid_range)


class DeviceCapacity:
    """One entry of a device's ``capacity``: its value and request policy."""

    __slots__ = ("policy", "value")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.value = Qty.parse(raw.get("value", "0"))
        policy = raw.get("requestPolicy")
        self.policy = None if policy is None else RequestPolicy(policy)


def _opt(raw: Any) -> Qty | None:
    return None if raw is None else Qty.parse(raw)


ConsumedCapacity = dict[str, Decimal]


def cmp_request_over_capacity(
    current: Mapping[str, Decimal],
    requests: Mapping[str, Qty] | None,
    capacity: Mapping[str, DeviceCapacity],
    allocating: Mapping[str, Decimal] | None,
    fractional: bool,
) -> bool:
    """``CmpRequestOverCapacity``: whether the request still fits the device's capacity.

    Raises CapacityRangeError for a request that must abort allocation (checked for every
    capacity first, so that the outcome does not depend on the order of capacities)."""
    if requests and any(name not in capacity for name in requests):
        return False  # another device may define it: skip this one
    consumed = {
        name: consumed_capacity(name, requests, cap, fractional) for name, cap in capacity.items()
    }
    for name, cap in capacity.items():
        amount = consumed[name]
        if violates_policy(amount, cap.policy, fractional):
            return False
        total = current.get(name, Decimal(0)) + amount.amount
        if allocating is not None and name in allocating:
            total += allocating[name]
        if total > cap.value.amount:
            return False
    return True


def consumed_capacity(
    name: str, requests: Mapping[str, Qty] | None, cap: DeviceCapacity, fractional: bool
) -> Qty:
    """``calculateConsumedCapacity`` with the negative check the callers do."""
    requested = requests.get(name) if requests else None
    try:
        amount = _calculate(requested, cap, fractional)
    except CapacityRangeError as err:
        raise CapacityRangeError(f'capacity "{name}": {err}') from None
    if amount.amount < 0:
        raise CapacityRangeError(f'capacity "{name}": {_NEGATIVE}')
    return amount


def consumed_capacity_from_request(
    requests: Mapping[str, Qty] | None, capacity: Mapping[str, DeviceCapacity], fractional: bool
) -> dict[str, Qty]:
    """``GetConsumedCapacityFromRequest``: what one share consumes of each capacity."""
    out = {}
    for name, cap in capacity.items():
        requested = requests.get(name) if requests else None
        try:
            out[name] = _calculate(requested, cap, fractional)
        except CapacityRangeError as err:
            raise CapacityRangeError(f'capacity "{name}": {err}') from None
    return out


def _calculate(requested: Qty | None, cap: DeviceCapacity, fractional: bool) -> Qty:
    policy = cap.policy
    if requested is None:
        # fillEmptyRequest: the policy's default, else the whole capacity.
        if policy is not None and policy.default is not None:
            return policy.default
        return cap.value
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return _round_up_range(requested, policy.valid_range, fractional)
    if policy.valid_values is not None:
        for valid in policy.valid_values:
            if requested.amount <= valid.amount:
                return valid
    return requested


def _round_up_range(requested: Qty, valid_range: ValidRange, fractional: bool) -> Qty:
    """``roundUpRange``: up to min, then up to the next step from min."""
    minimum, step = valid_range.min, valid_range.step
    assert minimum is not None
    if requested.amount < minimum.amount:
        return minimum
    if step is None:
        return requested
    if use_milli(valid_range, fractional):
        requested_milli = safe_milli_value(requested)
        if requested_milli is None:
            raise CapacityRangeError(
                f"{_NOT_REPRESENTABLE}: request {requested.string()} is not a representable "
                "milli value"
            )
        step_milli, min_milli = step.milli_value(), minimum.milli_value()
        n = _steps(requested_milli - min_milli, step_milli)
        if n > _go_div(MAX_QUANTITY - min_milli, step_milli):
            raise CapacityRangeError(
                f"{_NOT_REPRESENTABLE}: rounding request {requested.string()} up to the next "
                "step passes the milli-value range"
            )
        milli = min_milli + step_milli * n
        if milli % 1000 == 0:
            return Qty.whole(milli // 1000, step.format)
        return Qty.milli(milli, step.format)
    if requested.amount > MAX_QUANTITY:
        raise CapacityRangeError(
            f"{_NOT_REPRESENTABLE}: request {requested.string()} exceeds MaxInt64"
        )
    step_int, min_int = step.value(), minimum.value()
    n = _steps(requested.value() - min_int, step_int)
    if min_int >= 0 and step_int and n > _go_div(MAX_QUANTITY - min_int, step_int):
        raise CapacityRangeError(
            f"{_NOT_REPRESENTABLE}: rounding request {requested.string()} up to the next step "
            "passes MaxInt64"
        )
    return Qty.whole(min_int + step_int * n, step.format)


def _steps(added: int, step: int) -> int:
    """Steps of ``step`` to cover ``added`` (Go's truncating division, plus one if short)."""
    if step == 0:
        return 0  # Go would divide by zero; validation requires a positive step
    n = _go_div(added, step)
    return n + 1 if added - n * step != 0 else n


def _go_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def violates_policy(requested: Qty, policy: RequestPolicy | None, fractional: bool) -> bool:
    """``violatesPolicy``. The default always passes (compared by value here; upstream
    compares Quantity structs, which also tells "1Gi" from "1024Mi")."""
    if policy is None:
        return False
    if policy.default is not None and requested.amount == policy.default.amount:
        return False
    if policy.valid_range is not None:
        return _violates_range(requested, policy.valid_range, fractional)
    if policy.valid_values:
        return all(requested.amount != valid.amount for valid in policy.valid_values)
    return False


def _violates_range(requested: Qty, valid_range: ValidRange, fractional: bool) -> bool:
    if valid_range.max is not None and requested.amount > valid_range.max.amount:
        return True
    step = valid_range.step
    if step is None:
        return False
    minimum = valid_range.min
    if use_milli(valid_range, fractional):
        value = safe_milli_value(requested)
        if value is None:
            return True
        step_value = step.milli_value()
        min_value = minimum.milli_value() if minimum is not None else 0
    else:
        value = requested.value()
        step_value = step.value()
        min_value = minimum.value() if minimum is not None else 0
    # Must be a multiple of step from min.
    return step_value != 0 and abs(value - min_value) % abs(step_value) != 0


def use_milli(valid_range: ValidRange, fractional: bool) -> bool:
    """``useMilli``: the gate is on and min, max and step are exact milli values (step >= 1m)."""
    if not fractional:
        return False
    for index, q in enumerate((valid_range.min, valid_range.max, valid_range.step)):
        if q is None:
            continue
        milli = safe_milli_value(q)
        if milli is None or (index == 2 and milli < 1):
            return False
    return True


def safe_milli_value(q: Qty) -> int | None:
    """``safeMilliValue``: the milli value when lossless (and within int64), else None."""
    milli = q.amount * 1000
    if milli != milli.to_integral_value() or abs(milli) > MAX_QUANTITY:
        return None
    return int(milli)
