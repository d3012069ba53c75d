"""Consumable capacity arithmetic: upstream's incubating/consumable_capacity_test.go
(TestConsumableCapacity's subtests), on multisched.dra.structured.consumable_capacity."""

from __future__ import annotations

from typing import Any

import pytest

from multisched.dra.structured.consumable_capacity import (
    CapacityRangeError,
    DeviceCapacity,
    RequestPolicy,
    ValidRange,
    cmp_request_over_capacity,
    consumed_capacity,
    consumed_capacity_from_request,
    safe_milli_value,
    use_milli,
    violates_policy,
)
from multisched.dra.structured.quantity import Qty

MAX = "9223372036854775807"
MAX_P1 = "9223372036854775808"
TOO_BIG_FOR_MILLI = "9224372036854776E3"  # ~9.22e21
FRACTIONAL = {"min": "200m", "max": "1", "step": "100m"}


def capacity(value: str, policy: dict[str, Any] | None = None) -> DeviceCapacity:
    raw: dict[str, Any] = {"value": value}
    if policy is not None:
        raw["requestPolicy"] = policy
    return DeviceCapacity(raw)


def test_get_consumed_capacity_from_request() -> None:
    requests = {"capacity-0": Qty.parse("1"), "dummy": Qty.parse("1")}
    capacities = {
        # With a request and a default: the request.
        "capacity-0": capacity("2", {"default": "2", "validRange": {"min": "1"}}),
        # No request, a default: the default.
        "capacity-1": capacity("2", {"default": "1", "validRange": {"min": "1"}}),
        # No request, no policy: the whole capacity.
        "dummy": capacity("1"),
    }
    consumed = consumed_capacity_from_request(requests, capacities, False)
    assert {name: q.amount for name, q in consumed.items()} == {
        "capacity-0": 1,
        "capacity-1": 1,
        "dummy": 1,
    }


CALCULATE: dict[str, tuple[str | None, str, dict[str, Any], bool, str | None]] = {
    # name: (requested, capacity value, policy, fractional, expected; None = error)
    "empty": (None, "1", {}, False, "1"),
    "request-above-maxint64-is-rejected": (
        "18446744073709551619",
        "18446744073709551619",
        {"default": "0", "validRange": {"min": "0", "step": "3"}},
        False,
        None,
    ),
    "rounded-value-above-maxint64-is-rejected": (
        MAX,
        MAX_P1,
        {"default": "0", "validRange": {"min": "0", "step": "2"}},
        False,
        None,
    ),
    "max-safe-boundary-rounds-to-maxint64": (
        "9223372036854775806",
        MAX,
        {"default": "1", "validRange": {"min": "1", "step": "2"}},
        False,
        MAX,
    ),
    "min in range": (None, "2", {"default": "1", "validRange": {"min": "1"}}, False, "1"),
    "default in set": (None, "2", {"default": "1", "validValues": ["1"]}, False, "1"),
    "more than min in range": ("2", "2", {"default": "1", "validRange": {"min": "1"}}, False, "2"),
    "less than min in range": ("1", "2", {"default": "1", "validRange": {"min": "2"}}, False, "2"),
    "with step (round up)": (
        "2",
        "3",
        {"default": "1", "validRange": {"min": "1", "step": "2"}},
        False,
        "3",
    ),
    "with step (no remaining)": (
        "2",
        "2",
        {"default": "1", "validRange": {"min": "1", "step": "1"}},
        False,
        "2",
    ),
    "fractional step round up (0.25 to 0.3)": (
        "250m",
        "1",
        {"default": "200m", "validRange": FRACTIONAL},
        True,
        "300m",
    ),
    "fractional step already aligned (0.4 = min+2*step)": (
        "400m",
        "1",
        {"default": "200m", "validRange": FRACTIONAL},
        True,
        "400m",
    ),
    "valid value in set": ("2", "3", {"default": "1", "validValues": ["1", "2", "3"]}, False, "2"),
    "set (round up)": ("2", "3", {"default": "1", "validValues": ["1", "3"]}, False, "3"),
    "larger than set": ("3", "3", {"default": "1", "validValues": ["1", "2"]}, False, "3"),
    "fractional-step-request-not-milli-representable-is-rejected": (
        TOO_BIG_FOR_MILLI,
        TOO_BIG_FOR_MILLI,
        {"default": "1", "validRange": {"min": "100m", "step": "100m"}},
        True,
        None,
    ),
    "fractional-step-rounded-value-passes-milli-range-is-rejected": (
        "9223372036854775806m",
        "9223372036854775807m",
        {"default": "100m", "validRange": {"min": "100m", "step": "100m"}},
        True,
        None,
    ),
}


@pytest.mark.parametrize("name", CALCULATE)
def test_calculate_consumed_capacity(name: str) -> None:
    requested, value, policy, fractional, expected = CALCULATE[name]
    requests = None if requested is None else {"c": Qty.parse(requested)}
    cap = capacity(value, policy)
    if expected is None:
        with pytest.raises(CapacityRangeError) as err:
            consumed_capacity("c", requests, cap, fractional)
        assert str(err.value).startswith(
            'capacity "c": capacity request cannot be represented in the device\'s range '
            "arithmetic: "
        )
    else:
        assert (
            consumed_capacity("c", requests, cap, fractional).amount == Qty.parse(expected).amount
        )


def test_rounded_value_prints_as_go_does() -> None:
    """NewMilliQuantity(300, step's format) prints "300m"; a whole result NewQuantity's."""
    cap = capacity("1", {"default": "200m", "validRange": FRACTIONAL})
    assert consumed_capacity("c", {"c": Qty.parse("250m")}, cap, True).string() == "300m"
    cap = capacity("8Gi", {"validRange": {"min": "1Gi", "step": "1Gi"}})
    assert consumed_capacity("c", {"c": Qty.parse("1500Mi")}, cap, False).string() == "2Gi"


VIOLATES: dict[str, tuple[str, dict[str, Any] | None, bool, bool]] = {
    # name: (requested, policy, fractional, violates)
    "no constraint": ("1", None, False, False),
    "less than maximum": (
        "1",
        {"default": "1", "validRange": {"min": "1", "max": "2"}},
        False,
        False,
    ),
    "more than maximum": (
        "2",
        {"default": "1", "validRange": {"min": "1", "max": "1"}},
        False,
        True,
    ),
    "in set": ("1", {"default": "1", "validValues": ["1"]}, False, False),
    "not in set": ("2", {"default": "1", "validValues": ["1"]}, False, True),
    "fractional step aligned (0.3 = min+1*step)": (
        "300m",
        {"default": "200m", "validRange": FRACTIONAL},
        True,
        False,
    ),
    "fractional step not aligned (0.25 is not a multiple of 0.1 from 0.2)": (
        "250m",
        {"default": "200m", "validRange": FRACTIONAL},
        True,
        True,
    ),
    "requested value overflows milli representation": (
        TOO_BIG_FOR_MILLI,
        {"default": "1", "validRange": {"min": "1", "step": "1"}},
        True,
        True,
    ),
}


@pytest.mark.parametrize("name", VIOLATES)
def test_violate_capacity_request_policy(name: str) -> None:
    requested, policy, fractional, expected = VIOLATES[name]
    parsed = None if policy is None else RequestPolicy(policy)
    assert violates_policy(Qty.parse(requested), parsed, fractional) is expected


@pytest.mark.parametrize(
    ("text", "milli"), [("1", 1000), ("100m", 100), (TOO_BIG_FOR_MILLI, None), ("1n", None)]
)
def test_safe_milli_value(text: str, milli: int | None) -> None:
    assert safe_milli_value(Qty.parse(text)) == milli


USE_MILLI: dict[str, tuple[dict[str, str], bool, bool]] = {
    "fractional disabled": (FRACTIONAL, False, False),
    "all fractional, fits in milli": (FRACTIONAL, True, True),
    "all integer, fits in milli (no hasFractional gate any more)": (
        {"min": "1", "max": "3", "step": "1"},
        True,
        True,
    ),
    "min overflows milli, falls back to integer": (
        {"min": TOO_BIG_FOR_MILLI, "step": "1"},
        True,
        False,
    ),
    "step too small (sub-milli)": ({"min": "1", "step": "0"}, True, False),
}


@pytest.mark.parametrize("name", USE_MILLI)
def test_use_milli(name: str) -> None:
    valid_range, fractional, expected = USE_MILLI[name]
    assert use_milli(ValidRange(valid_range), fractional) is expected


def test_cmp_request_over_capacity_fatal_beats_soft() -> None:
    """A request the range arithmetic cannot represent aborts even when another capacity
    of the device already refuses the request."""
    capacities = {
        "capacity-0": capacity("1"),  # a request of 2 over-fills it: soft
        "capacity-1": capacity(MAX_P1, {"validRange": {"min": "0", "step": "2"}}),
    }
    requests = {"capacity-0": Qty.parse("2"), "capacity-1": Qty.parse(MAX)}
    for order in (capacities, dict(reversed(capacities.items()))):
        with pytest.raises(CapacityRangeError, match="passes MaxInt64"):
            cmp_request_over_capacity({}, requests, order, {}, False)


def test_cmp_request_over_capacity_counts_allocated_and_allocating() -> None:
    capacities = {"memory": capacity("10Gi")}
    requests = {"memory": Qty.parse("4Gi")}
    gib = Qty.parse("1Gi").amount
    assert cmp_request_over_capacity({}, requests, capacities, None, False)
    assert cmp_request_over_capacity({"memory": 3 * gib}, requests, capacities, {}, False)
    assert not cmp_request_over_capacity(
        {"memory": 3 * gib}, requests, capacities, {"memory": 4 * gib}, False
    )
    # A capacity the device does not have: skip the device, no error.
    assert not cmp_request_over_capacity({}, {"other": Qty.parse("1")}, capacities, None, False)
