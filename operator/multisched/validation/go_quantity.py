"""``resource.Quantity`` as kube-apiserver holds and prints it: what its validation messages
show of a quantity (its canonical text, its whole value, its JSON), so that a refused
quantity reads as the API server's line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .names import go_json
from .quantity import (
    BINARY_SUFFIXES,
    DECIMAL_SUFFIXES,
    MAX_QUANTITY,
    interpret_suffix,
    split_quantity,
)

_DECIMAL_SUFFIX = {e: s for s, e in DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIX = {e // 10: s for s, e in BINARY_SUFFIXES.items()} | {0: ""}


def _away(n: int, digits: int) -> int:
    """``n / 10**digits`` rounded away from zero (``inf.RoundUp``, ``negativeScaleInt64``)."""
    q, r = divmod(abs(n), int(10**digits))
    q += r != 0
    return q if n >= 0 else -q


def _rescale(n: int, scale: int, new: int) -> int:
    """An unscaled ``n * 10**-scale`` at scale ``new``, rounded away from zero."""
    return _away(n, scale - new) if scale > new else n * 10 ** (new - scale)


def _wrap64(n: int) -> int:
    """``big.Int.Int64()``: the low 64 bits, as Go keeps them."""
    return (n + 2**63) % 2**64 - 2**63


def _strip(n: int, base: int) -> tuple[int, int]:
    """``removeInt64Factors``: ``n`` without its factors of ``base``, and how many."""
    times = 0
    while n and n % base == 0:
        n //= base
        times += 1
    return n, times


@dataclass(frozen=True)
class GoQuantity:
    """A ``resource.Quantity`` as validation sees it: ``ParseQuantity`` then the
    ``RoundUp(-3)`` of ``SetDefaults_ResourceList``. Fields are Go's: an ``int64Amount``
    (``value * 10**scale``), or ``milli`` for an ``infDecAmount`` (what the int64 form cannot
    hold, kept at scale 3 after the rounding), ``s`` the text kept when already canonical."""

    value: int = 0
    scale: int = 0
    milli: int | None = None
    s: str = ""
    format: str = "DecimalSI"

    @classmethod
    def parse(cls, text: str) -> GoQuantity:
        """``text`` must parse (``parse_quantity``): this only rebuilds Go's form of it."""
        if text == "0":
            return cls(s=text)
        positive, num, denom, suffix = split_quantity(text)
        num = num.lstrip("0") or "0"
        base, exponent = interpret_suffix(suffix)
        if base == 2:
            fmt = "BinarySI"
        else:
            fmt = "DecimalSI" if suffix in DECIMAL_SUFFIXES else "DecimalExponent"
        # The int64 fast path, when the digits surely fit.
        if base == 10:
            scale, mantissa, precision = exponent, 1, 18 - len(num) - len(denom)
        else:
            scale, mantissa = 0, 1 << exponent
            precision = -1 if denom else 15 - len(num) - exponent * 3 // 10 - 1
        scale -= len(denom)
        shifted = num + denom
        value = int(shifted) * mantissa
        if precision >= 0 and scale >= -9 and value <= MAX_QUANTITY:
            if base == 2:
                canonical = int(shifted) & 7 != 0
            else:
                canonical = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
            value = value if positive else -value
            if scale >= -3:
                return cls(value, scale, None, text if canonical else "", fmt)
            return cls(_away(value, -3 - scale), -3, None, "", fmt)
        # infDecAmount: exact, rounded up to 1n, binary capped at 2^63-1, then to 1m.
        unscaled, dec_scale = int(num + denom), len(denom)
        if base == 10:
            dec_scale -= exponent
        else:
            unscaled <<= exponent
        if unscaled:
            unscaled, dec_scale = _rescale(unscaled, dec_scale, 9), 9
        if fmt == "BinarySI":
            if unscaled > MAX_QUANTITY * 10**dec_scale:
                unscaled, dec_scale = MAX_QUANTITY, 0
            if 0 < unscaled < 10**dec_scale:
                fmt = "DecimalSI"
        milli = _rescale(unscaled if positive else -unscaled, dec_scale, 3)
        return cls(milli=milli, format=fmt)

    def sign(self) -> int:
        n = self.value if self.milli is None else self.milli
        return (n > 0) - (n < 0)

    def string(self) -> str:
        """``Quantity.String()``: the kept text, else the canonical form."""
        if self.s:
            return self.s
        mantissa, exponent = (self.value, self.scale) if self.milli is None else (self.milli, -3)
        if mantissa == 0:
            return "0"
        if exponent >= 0:
            whole, fraction = mantissa * int(10**exponent), 0
        else:
            whole, fraction = divmod(mantissa, int(10**-exponent))
        # Binary suffixes only for whole amounts of 1024 or more.
        if self.format == "BinarySI" and not fraction and abs(whole) >= 1024:
            amount, times = _strip(whole, 1024)
            return f"{amount}{_BINARY_SUFFIX[times]}"
        amount, times = _strip(mantissa, 10)
        exponent += times
        amount *= 10 ** (exponent % 3)
        exponent -= exponent % 3
        if self.format == "DecimalExponent":
            return f"{amount}e{exponent}" if exponent else str(amount)
        return f"{amount}{_DECIMAL_SUFFIX.get(exponent, '')}"

    def int_value(self) -> int:
        """``Quantity.Value()``: rounded away from zero; an amount past int64 wraps (Go's
        ``scaledValue`` divides the wrapped milli amount, toward zero, then adds one)."""
        if self.milli is None:
            if self.scale >= 0:
                return self.value * int(10**self.scale)
            return _away(self.value, -self.scale)
        if self.milli < MAX_QUANTITY:
            wrapped = _wrap64(self.milli)
            whole = abs(wrapped) // 1000 * (1 if wrapped >= 0 else -1)
            return whole + (wrapped != whole * 1000)
        whole, rest = divmod(self.milli, 1000)
        return _wrap64(whole) + (rest != 0)


def quantity_text(value: Any) -> str:
    """What the API server reads: kubectl sends a YAML number as Go's JSON encoder writes
    it (``1000.0`` as ``1000``, ``1e-07`` as ``1e-7``), and Quantity parses that text."""
    if isinstance(value, str):
        return value
    if not isinstance(value, float) or not math.isfinite(value):
        return repr(value)
    if value and not 1e-6 <= abs(value) < 1e21:
        return re.sub(r"e-0(\d)$", r"e-\1", repr(value))
    text = format(Decimal(repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def go_resource_list(resources: dict[str, GoQuantity] | None) -> str:
    """A ``core.ResourceList`` as JSON: keys sorted, each quantity its ``String()``; nil is
    null."""
    if resources is None:
        return "null"
    return go_json({k: resources[k].string() for k in sorted(resources)})
