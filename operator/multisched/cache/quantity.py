"""Kubernetes resource quantities ("100m", "1Gi", "1e3") to integers.

CPU is kept in millicores and everything else in base units, as kube-scheduler's
``framework.Resource`` does, so the hot path only compares ints. Parsing is the validation
room's (upstream grammar, bounded time); values past Quantity's documented 2^63-1 are capped
there, so an object the API server accepted is always read, however large it is.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal
from functools import lru_cache

from multisched.validation.quantity import QuantityError
from multisched.validation.quantity import parse_quantity as _parse

__all__ = ["QuantityError", "parse_quantity", "to_int", "to_milli"]


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a quantity into an exact Decimal of base units (capped at +-(2^63-1))."""
    try:
        return _parse(value, bounded=False)
    except QuantityError as exc:
        raise QuantityError(f"invalid quantity {value!r}: {exc}") from None


def to_milli(value: str | int | float) -> int:
    """Milli-units rounded up, as ``resource.Quantity.MilliValue`` does (used for CPU)."""
    if isinstance(value, str):
        return _milli_of_text(value)
    return int((parse_quantity(value) * 1000).to_integral_value(ROUND_CEILING))


def to_int(value: str | int | float) -> int:
    """Whole units rounded up, as ``resource.Quantity.Value`` does (memory, storage, counts)."""
    if isinstance(value, str):
        return _int_of_text(value)
    return int(parse_quantity(value).to_integral_value(ROUND_CEILING))


# Pods repeat a handful of quantity strings ("100m", "1Gi"): parse each once.
@lru_cache(maxsize=4096)
def _milli_of_text(text: str) -> int:
    return int((parse_quantity(text) * 1000).to_integral_value(ROUND_CEILING))


@lru_cache(maxsize=4096)
def _int_of_text(text: str) -> int:
    return int(parse_quantity(text).to_integral_value(ROUND_CEILING))
