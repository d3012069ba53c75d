"""``framework.Status``: the result of a plugin call.

Success is ``None`` on the hot path (as upstream's nil status), so a passing filter costs
no allocation; everything else is a ``Status``.
"""

from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    #: An internal error; the pod is retried with backoff.
    ERROR = 1
    #: The node does not fit now, but preemption might help.
    UNSCHEDULABLE = 2
    #: The node does not fit and preemption cannot change that.
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    #: A Permit plugin holds the pod.
    WAIT = 4
    #: The plugin has nothing to do for this pod (PreFilter/PreScore/Bind).
    SKIP = 5
    #: The pod waits for something other than cluster state to change.
    PENDING = 6

    @property
    def label(self) -> str:
        """Upstream's spelling (``Success``, ``UnschedulableAndUnresolvable``...) for metrics."""
        return self.name.title().replace("_", "")


class Status:
    __slots__ = ("cause", "code", "plugin", "reasons")

    def __init__(
        self, code: Code, *reasons: str, plugin: str = "", cause: BaseException | None = None
    ) -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.plugin = plugin
        #: The exception behind an error status (upstream ``AsStatus(err)`` keeps it): the
        #: binding cycle reads a refused or unanswered binding from it.
        self.cause = cause

    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE, *reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)

    @classmethod
    def error(cls, message: str) -> Status:
        return cls(Code.ERROR, message)

    @classmethod
    def from_exception(cls, exc: BaseException, message: str = "") -> Status:
        """An error status carrying ``exc`` (its text, unless ``message`` is given)."""
        return cls(Code.ERROR, message or str(exc) or type(exc).__name__, cause=exc)

    @classmethod
    def skip(cls) -> Status:
        return cls(Code.SKIP)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending (upstream ``IsRejected``)."""
        return self.code in (
            Code.UNSCHEDULABLE,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            Code.PENDING,
        )

    def with_plugin(self, plugin: str) -> Status:
        if not self.plugin:
            self.plugin = plugin
        return self

    def message(self) -> str:
        return ", ".join(self.reasons)

    def __repr__(self) -> str:
        who = f" from {self.plugin}" if self.plugin else ""
        return f"Status({self.code.name}{who}: {self.message()!r})"


class PluginError(Exception):
    """Raised by a Score plugin (or any plugin) for an internal error; becomes Code.ERROR."""


def code_label(status: Status | None) -> str:
    return "Success" if status is None else status.code.label


def as_status(status: Status | None) -> Status:
    return status if status is not None else Status(Code.SUCCESS)


#: A shared Skip for the hot path (a pod none of a plugin's work concerns): the runtime only
#: reads a Skip, never marks it, so one object serves every cycle.
SKIP = Status(Code.SKIP)
