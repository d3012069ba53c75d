"""Go ``time.ParseDuration`` strings ("15s", "1m30s", "1.5h") as used by metav1.Duration."""

from __future__ import annotations

import re

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PIECE = re.compile(r"(\d+\.?\d*|\.\d+)([a-zµμ]+)")
#: Go's Duration is an int64 of nanoseconds (about 2562047h).
MAX_SECONDS = (2**63 - 1) / 1e9
_WHOLE = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)[a-zµμ]+)+")


def parse_duration(text: str) -> float:
    """Seconds in ``text``; ValueError with an actionable message if Go would reject it."""
    if text in ("0", "+0", "-0"):
        return 0.0
    if not _WHOLE.fullmatch(text):
        raise ValueError(f"invalid duration {text!r}; use a Go duration such as '15s' or '1m30s'")
    total = 0.0
    for number, unit in _PIECE.findall(text):
        if unit not in _UNIT_SECONDS:
            raise ValueError(
                f"invalid duration {text!r}: unknown unit {unit!r} (use ns, us, ms, s, m or h)"
            )
        total += float(number) * _UNIT_SECONDS[unit]
    if total > MAX_SECONDS:
        raise ValueError(f"invalid duration {text!r}: out of range (at most 2562047h)")
    return -total if text.startswith("-") else total
