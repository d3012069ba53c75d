"""``CoschedulingArgs`` (scheduler-plugins ``apis/config``, v1 defaults)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from pydantic.alias_generators import to_camel

from .._label_validation import invalid

DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
DEFAULT_POD_GROUP_BACKOFF_SECONDS = 0
_DEFAULTS = {
    "permit_waiting_time_seconds": DEFAULT_PERMIT_WAITING_TIME_SECONDS,
    "pod_group_backoff_seconds": DEFAULT_POD_GROUP_BACKOFF_SECONDS,
}


class CoschedulingArgs(BaseModel):
    """How long a gang's assumed members wait at Permit for the rest, and how long a gang
    that failed is kept out of PreFilter (0: not at all)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True
    )

    permit_waiting_time_seconds: int = DEFAULT_PERMIT_WAITING_TIME_SECONDS
    pod_group_backoff_seconds: int = DEFAULT_POD_GROUP_BACKOFF_SECONDS

    @field_validator("permit_waiting_time_seconds", "pod_group_backoff_seconds", mode="before")
    @classmethod
    def _null_is_default(cls, value: Any, info: Any) -> Any:
        # Both are *int64 upstream: null is unset, which v1 defaulting fills in.
        return _DEFAULTS[info.field_name] if value is None else value

    @model_validator(mode="after")
    def _validate(self) -> CoschedulingArgs:
        # Upstream's New() refuses it ("parse arguments failed"); permitWaitingTimeSeconds
        # has no check upstream.
        if self.pod_group_backoff_seconds < 0:
            raise ValueError(
                invalid(
                    "podGroupBackoffSeconds",
                    self.pod_group_backoff_seconds,
                    "PodGroupBackoffSeconds cannot be negative",
                )
            )
        return self
