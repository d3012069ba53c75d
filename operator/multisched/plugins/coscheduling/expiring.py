"""Names that expire: the go-cache instances upstream keeps of permitted and backed-off
groups, with its semantics (an entry lives until ``now > expiry``; ``add`` leaves a live
entry's expiry alone; a zero TTL means the cache's default, a negative one never expires)."""

from __future__ import annotations

from collections.abc import Callable

_NEVER = float("inf")


class ExpiringNames:
    __slots__ = ("_clock", "_default_ttl", "_expiry")

    def __init__(self, clock: Callable[[], float], default_ttl: float) -> None:
        self._clock = clock
        self._default_ttl = default_ttl
        self._expiry: dict[str, float] = {}

    def add(self, name: str, ttl: float) -> None:
        if name in self:
            return
        if ttl == 0:
            ttl = self._default_ttl
        self._expiry[name] = self._clock() + ttl if ttl > 0 else _NEVER

    def __contains__(self, name: str) -> bool:
        expiry = self._expiry.get(name)
        if expiry is None:
            return False
        if self._clock() > expiry:
            del self._expiry[name]
            return False
        return True

    def delete(self, name: str) -> None:
        self._expiry.pop(name, None)
