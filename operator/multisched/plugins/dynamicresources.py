"""DynamicResources: a stand-in for upstream's ``dynamicresources`` plugin, which allocates
the devices of a pod's ResourceClaims (dynamic resource allocation, DRA).

multisched does not allocate claims yet. So that v1.37's default profile loads and a pod
with claims is never bound to a node nobody allocated its devices on, PreFilter refuses
such a pod (UnschedulableAndUnresolvable: it stays Pending with the message below); every
other pod is skipped. ``DynamicResourcesArgs`` are read and checked as upstream's
``ValidateDynamicResourcesArgs`` with v1.37's default gates (DRASchedulerFilterTimeout,
DRADeviceBindingConditions and DRAResourceClaimDeviceStatus on); they change nothing here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from pydantic.alias_generators import to_camel

from multisched.cache import NodeInfo, PodInfo
from multisched.config.durations import parse_duration
from multisched.framework import CycleState, Handle, PreFilterResult, Status
from multisched.framework.events import ClusterEvent
from multisched.framework.status import SKIP

from ._label_validation import aggregate, invalid_shown

NAME = "DynamicResources"
ERR_CLAIMS_NOT_ALLOCATED = "pod uses resource claims, which multisched does not allocate yet"
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


class DynamicResources:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = DynamicResourcesArgs

    def __init__(self, args: DynamicResourcesArgs | None, handle: Handle | None) -> None:
        pass

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        # No cluster event makes multisched allocate claims: a refused pod waits for the
        # unschedulable pool's periodic flush (or its own update), not every event.
        return ()

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not (pod.raw.get("spec") or {}).get("resourceClaims"):
            return None, SKIP
        return None, Status.unresolvable(ERR_CLAIMS_NOT_ALLOCATED)

    def pre_filter_extensions(self) -> None:
        return None


PLUGIN = DynamicResources
