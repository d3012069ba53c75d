"""``CoschedulingArgs`` (scheduler-plugins ``apis/config``, v1 defaults, and
``validation.ValidateCoschedulingArgs`` as ``New`` runs it, v0.34.7)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from pydantic.alias_generators import to_camel

from .._label_validation import aggregate, invalid

DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
DEFAULT_POD_GROUP_BACKOFF_SECONDS = 0
DEFAULT_POD_GROUP_REJECT_PERCENTAGE = 10
_DEFAULTS = {
    "permit_waiting_time_seconds": DEFAULT_PERMIT_WAITING_TIME_SECONDS,
    "pod_group_backoff_seconds": DEFAULT_POD_GROUP_BACKOFF_SECONDS,
    "pod_group_reject_percentage": DEFAULT_POD_GROUP_REJECT_PERCENTAGE,
}


class CoschedulingArgs(BaseModel):
    """How long a gang's assumed members wait at Permit for the rest, how long a gang
    that failed is kept out of PreFilter (0: not at all), and the share of ``minMember``
    (percent) a gang may still miss when a member fails without being rejected whole."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True
    )

    permit_waiting_time_seconds: int = DEFAULT_PERMIT_WAITING_TIME_SECONDS
    pod_group_backoff_seconds: int = DEFAULT_POD_GROUP_BACKOFF_SECONDS
    pod_group_reject_percentage: int = DEFAULT_POD_GROUP_REJECT_PERCENTAGE

    @field_validator(
        "permit_waiting_time_seconds",
        "pod_group_backoff_seconds",
        "pod_group_reject_percentage",
        mode="before",
    )
    @classmethod
    def _null_is_default(cls, value: Any, info: Any) -> Any:
        # All are pointers upstream: null is unset, which v1 defaulting fills in.
        return _DEFAULTS[info.field_name] if value is None else value

    @model_validator(mode="after")
    def _validate(self) -> CoschedulingArgs:
        errs: list[str] = []
        for path, value in (
            ("permitWaitingTimeSeconds", self.permit_waiting_time_seconds),
            ("podGroupBackoffSeconds", self.pod_group_backoff_seconds),
        ):
            if value < 0:
                errs.append(invalid(path, value, "must be greater than 0"))
        percentage = self.pod_group_reject_percentage
        if not 0 <= percentage <= 100:
            errs.append(
                invalid("podGroupRejectPercentage", percentage, "must be between 0 and 100")
            )
        if errs:
            raise ValueError(aggregate(errs))
        return self
