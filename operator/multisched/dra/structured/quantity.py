"""Quantities as the allocator handles them: an exact amount, and the text Go would print.

Consumed capacity is written to the allocation result, so a quantity keeps what
``resource.Quantity.String()`` shows for it (the request's own text when canonical, else
the canonical form in the quantity's format).
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_UP, Decimal, localcontext
from typing import Any

from multisched.validation.go_quantity import GoQuantity, quantity_text
from multisched.validation.quantity import (
    MAX_QUANTITY,
    QuantityError,
    interpret_suffix,
    parse_quantity,
    split_quantity,
)

__all__ = ["MAX_QUANTITY", "Qty", "QuantityError", "go_amount", "quantity_text"]


_NANO = Decimal("1e-9")


def go_amount(text: str) -> Decimal:
    """``ParseQuantity``'s exact amount: rounded up to 1n; past 2^63-1 only binary-SI
    amounts are capped (decimal ones stay exact, as in Go's inf.Dec)."""
    amount = parse_quantity(text, bounded=False)  # validates; caps every format
    if abs(amount) >= MAX_QUANTITY:
        positive, num, denom, suffix = split_quantity(text)
        base, exponent = interpret_suffix(suffix)
        # Beyond any real capacity, keep the cap rather than build a huge number.
        if base == 10 and len(num.lstrip("0")) + exponent <= 64:
            with localcontext() as ctx:
                ctx.prec = len(num) + len(denom) + 80
                amount = Decimal(f"{num or '0'}.{denom or '0'}").scaleb(exponent)
            amount = amount if positive else -amount
    if amount.as_tuple().exponent < -9:  # type: ignore[operator]
        with localcontext() as ctx:
            ctx.prec = 100
            amount = amount.quantize(_NANO, rounding=ROUND_UP)
    return amount


class Qty:
    """One quantity: ``amount`` (exact, base units) and the Go text it prints as."""

    __slots__ = ("_go", "_text", "amount")

    def __init__(self, amount: Decimal, go: GoQuantity | None = None, text: str = "") -> None:
        self.amount = amount
        self._go = go
        self._text = text

    @classmethod
    def parse(cls, raw: Any) -> Qty:
        """A quantity from an API object (string, or a YAML number); QuantityError if bad."""
        text = quantity_text(raw)
        return cls(go_amount(text), text=text)

    @classmethod
    def whole(cls, value: int, fmt: str) -> Qty:
        """``resource.NewQuantity(value, format)``."""
        return cls(Decimal(value), GoQuantity(value=value, scale=0, format=fmt))

    @classmethod
    def milli(cls, value: int, fmt: str) -> Qty:
        """``resource.NewMilliQuantity(value, format)``."""
        return cls(Decimal(value).scaleb(-3), GoQuantity(value=value, scale=-3, format=fmt))

    def _go_quantity(self) -> GoQuantity:
        if self._go is None:
            self._go = GoQuantity.parse(self._text)
        return self._go

    @property
    def format(self) -> str:
        return self._go_quantity().format

    def string(self) -> str:
        """``Quantity.String()``."""
        return self._go_quantity().string()

    def value(self) -> int:
        """``Quantity.Value()``: whole units, rounded up."""
        return int(self.amount.to_integral_value(ROUND_CEILING))

    def milli_value(self) -> int:
        """``Quantity.MilliValue()``: milli-units, rounded up."""
        return int((self.amount * 1000).to_integral_value(ROUND_CEILING))

    def __repr__(self) -> str:
        return f"Qty({self.string()})"
