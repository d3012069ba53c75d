"""Object metadata as the API server writes it: the key an object is stored under and the
``metav1.Time``/``MicroTime`` strings.

The lowest room, beside ``validation`` and ``transport``: only the standard library, so the
cache, the informers, simulate and the operator all share these.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping
from typing import Any

_TIME = "%Y-%m-%dT%H:%M:%SZ"
_MICRO_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` for namespaced objects, ``name`` otherwise (client-go's
    ``MetaNamespaceKeyFunc``)."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def format_time(moment: datetime.datetime) -> str:
    """A ``metav1.Time``: RFC 3339 in UTC, whole seconds."""
    return moment.astimezone(datetime.UTC).strftime(_TIME)


def time_at(seconds: float) -> str:
    """The ``metav1.Time`` of a POSIX timestamp."""
    return format_time(datetime.datetime.fromtimestamp(seconds, datetime.UTC))


class _SecondStamp:
    """The ``metav1.Time`` of the current second, formatted once per second: a pod's
    Scheduled event takes two, and formatting is most of their cost."""

    __slots__ = ("second", "text")

    def __init__(self) -> None:
        self.second = -1
        self.text = ""

    def __call__(self) -> str:
        second = int(time.time())
        if second != self.second:
            self.text = time_at(second)
            self.second = second
        return self.text


#: A ``metav1.Time`` of now (seconds).
now_time = _SecondStamp()


def now_micro_time() -> str:
    """A ``metav1.MicroTime``: always six fractional digits, as the API server parses it."""
    return datetime.datetime.now(datetime.UTC).strftime(_MICRO_TIME)
