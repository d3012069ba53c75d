"""Kubernetes resource quantities ("100m", "1Gi", "1e3") to integers.

CPU is kept in millicores and everything else in base units, as kube-scheduler's
``framework.Resource`` does, so the hot path only compares ints.
"""

from __future__ import annotations

import functools
from decimal import ROUND_CEILING, Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}


class QuantityError(ValueError):
    """A quantity string that Kubernetes would not accept."""


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a quantity into an exact Decimal of base units."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, int | float):
        return Decimal(str(value))
    text = value.strip()
    if not text:
        raise QuantityError("empty quantity")
    for suffix in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"):
        if text.endswith(suffix):
            return _number(text[: -len(suffix)], value) * _BINARY[suffix]
    if text[-1] in "numkMGTPE":
        return _number(text[:-1], value) * _DECIMAL[text[-1]]
    return _number(text, value)


def _number(text: str, original: object) -> Decimal:
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise QuantityError(f"invalid quantity {original!r}") from None
    if not number.is_finite():
        raise QuantityError(f"invalid quantity {original!r}")
    return number


def to_milli(value: str | int | float) -> int:
    """Milli-units rounded up, as ``resource.Quantity.MilliValue`` does (used for CPU)."""
    if type(value) is str:
        return _milli_of_text(value)
    return int((parse_quantity(value) * 1000).to_integral_value(ROUND_CEILING))


def to_int(value: str | int | float) -> int:
    """Whole units rounded up, as ``resource.Quantity.Value`` does (memory, storage, counts)."""
    if type(value) is str:
        return _int_of_text(value)
    return int(parse_quantity(value).to_integral_value(ROUND_CEILING))


# A cluster repeats a few quantity strings ("100m", "128Mi") across tens of thousands of
# pods; Decimal parsing was a third of reading them. Strings only: True == 1 as a key.
@functools.lru_cache(maxsize=4096)
def _milli_of_text(value: str) -> int:
    return int((parse_quantity(value) * 1000).to_integral_value(ROUND_CEILING))


@functools.lru_cache(maxsize=4096)
def _int_of_text(value: str) -> int:
    return int(parse_quantity(value).to_integral_value(ROUND_CEILING))
