"""``DynamicResourcesArgs``, read and checked as upstream's ``ValidateDynamicResourcesArgs``
with v1.37's default gates (DRASchedulerFilterTimeout, DRADeviceBindingConditions and
DRAResourceClaimDeviceStatus on)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from pydantic.alias_generators import to_camel

from multisched.config.durations import parse_duration

from .._label_validation import aggregate, invalid_shown

#: Upstream ``DynamicResourcesFilterTimeoutDefault`` and ``...BindingTimeoutDefault``, as
#: kube-scheduler --write-config-to spells them.
DEFAULT_FILTER_TIMEOUT = "10s"
DEFAULT_BINDING_TIMEOUT = "10m0s"


class DynamicResourcesArgs(BaseModel):
    """Upstream ``DynamicResourcesArgs``: Go durations (metav1.Duration), null or absent
    meaning the default."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True
    )

    filter_timeout: str = DEFAULT_FILTER_TIMEOUT
    binding_timeout: str = DEFAULT_BINDING_TIMEOUT

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        return {k: v for k, v in data.items() if v is not None}

    @field_validator("filter_timeout", "binding_timeout")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)  # as decoding a metav1.Duration, before validation
        return value

    @model_validator(mode="after")
    def _validate(self) -> DynamicResourcesArgs:
        # field.Invalid prints a metav1.Duration unquoted (its String()).
        errs = []
        if parse_duration(self.filter_timeout) < 0:
            errs.append(
                invalid_shown("filterTimeout", self.filter_timeout, "must be zero or positive")
            )
        if parse_duration(self.binding_timeout) < 1:
            errs.append(
                invalid_shown("bindingTimeout", self.binding_timeout, "must be at least 1 second")
            )
        if errs:
            raise ValueError(aggregate(errs))
        return self

    def filter_seconds(self) -> float:
        """The allocation deadline per Filter call; 0 turns it off."""
        return parse_duration(self.filter_timeout)

    def binding_seconds(self) -> float:
        """How long PreBind waits for a device's binding conditions."""
        return parse_duration(self.binding_timeout)
