"""``resource.Quantity`` as apimachinery parses it ("100m", "1Gi", "1e3"), in bounded time.

The grammar and the error strings are upstream's (``parseQuantityString`` and the suffixer).
Quantity documents that no quantity may exceed 2^63-1 in magnitude; a value beyond that is
refused here (``bounded=True``, what validation uses) or capped (what the engine uses for
objects the API server already accepted). The bound is checked on the exponent before any
arithmetic, so ``1e999999999`` costs no more than ``1``.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from functools import lru_cache

#: Upstream's wording, regex included.
ERR_FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
ERR_SUFFIX = "unable to parse quantity's suffix"
ERR_TOO_LARGE = "must be no more than 2^63-1 (9223372036854775807) in magnitude"

MAX_QUANTITY = 2**63 - 1
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
#: Past this many decimal digits of integer part a value is surely over MAX_QUANTITY (19 digits).
_MAX_DIGITS = 19
_MIN_EXPONENT = -30  # below 1e-30 every value rounds up to the same 1n

#: The suffixer's tables: decimal SI suffixes to powers of 10, binary SI ones to powers of 2.
DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12}
DECIMAL_SUFFIXES.update({"P": 15, "E": 18})
BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


class QuantityError(ValueError):
    """A quantity Kubernetes would not accept; ``str()`` is upstream's message."""


def split_quantity(text: str) -> tuple[bool, str, str, str]:
    """``parseQuantityString``: (positive, integer digits, fraction digits, suffix)."""
    pos, end = 0, len(text)
    positive = True
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos]
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos != end:
        raise QuantityError(ERR_FORMAT_WRONG)
    return positive, num, denom, text[suffix_start:]


def interpret_suffix(suffix: str) -> tuple[int, int]:
    """The suffixer: (base, exponent) for "", SI, binary SI and e/E exponents."""
    if suffix in DECIMAL_SUFFIXES:
        return 10, DECIMAL_SUFFIXES[suffix]
    if suffix in BINARY_SUFFIXES:
        return 2, BINARY_SUFFIXES[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:].lstrip("+-")
        if digits and set(digits) <= _DIGITS and suffix[1:].count("-") + suffix[1:].count("+") <= 1:
            exponent = int(suffix[1:]) if len(digits) <= 19 else 2**63
            if -(2**63) <= exponent < 2**63:
                return 10, exponent
    raise QuantityError(ERR_SUFFIX)


def parse_quantity(value: object, *, bounded: bool = True) -> Decimal:
    """The exact value of a quantity (string, or a YAML/JSON number) in base units.

    ``bounded``: refuse magnitudes over 2^63-1; otherwise cap them there.
    """
    if type(value) is str:
        return _parse_text(value, bounded)  # objects repeat a handful ("100m", "1Gi")
    return _parse(value, bounded)


@lru_cache(maxsize=4096)
def _parse_text(value: str, bounded: bool) -> Decimal:
    return _parse(value, bounded)  # an error is raised afresh each time, not cached


def _parse(value: object, bounded: bool) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(ERR_FORMAT_WRONG)
    text = value if isinstance(value, str) else repr(value)
    if not text:
        raise QuantityError(ERR_FORMAT_WRONG)
    positive, num, denom, suffix = split_quantity(text)
    base, exponent = interpret_suffix(suffix)
    digits = (num + denom).lstrip("0")
    if not digits:
        return Decimal(0)
    # Order of magnitude of the integer part, before any big arithmetic.
    whole = num.lstrip("0")
    magnitude = len(whole) if whole else len(denom.lstrip("0")) - len(denom)
    magnitude += exponent if base == 10 else (exponent * 3 + 9) // 10 + 1
    if magnitude > _MAX_DIGITS + 1:
        return _too_large(positive, bounded)
    if base == 10 and magnitude < _MIN_EXPONENT:
        # Rounds up to the smallest representable quantity, as upstream (1n).
        amount = Decimal("1e-9")
        return amount if positive else -amount
    with localcontext() as ctx:
        ctx.prec = len(num) + len(denom) + 40
        amount = Decimal(f"{num or '0'}.{denom or '0'}")
        amount = amount.scaleb(exponent) if base == 10 else amount * (2**exponent)
    if amount > MAX_QUANTITY:
        return _too_large(positive, bounded)
    return amount if positive else -amount


def _too_large(positive: bool, bounded: bool) -> Decimal:
    if bounded:
        raise QuantityError(ERR_TOO_LARGE)
    return Decimal(MAX_QUANTITY if positive else -MAX_QUANTITY)
