"""``PodTopologySpreadArgs`` with upstream v1 defaults and ``ValidatePodTopologySpreadArgs``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel

from .._label_validation import (
    aggregate,
    duplicate,
    forbidden,
    invalid,
    label_name_errors,
    not_supported,
    required,
)

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True
    )


class TopologySpreadConstraint(_Model):
    """v1.TopologySpreadConstraint as written in ``defaultConstraints``.

    Zero/empty defaults stand for Go's zero values so validation reports them as upstream.
    """

    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: dict[str, Any] | None = None
    min_domains: int | None = None
    node_affinity_policy: Literal["Honor", "Ignore"] | None = None
    node_taints_policy: Literal["Honor", "Ignore"] | None = None
    match_label_keys: list[str] = []

    def as_raw(self) -> dict[str, Any]:
        """The constraint as a pod spec would carry it."""
        return self.model_dump(by_alias=True, exclude_none=True)


#: Upstream ``systemDefaultConstraints``.
SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)


class PodTopologySpreadArgs(_Model):
    """Upstream ``PodTopologySpreadArgs`` (v1 default: defaultingType System)."""

    default_constraints: list[TopologySpreadConstraint] = []
    defaulting_type: str = SYSTEM_DEFAULTING

    @model_validator(mode="after")
    def _validate(self) -> PodTopologySpreadArgs:
        errs: list[str] = []
        kind = self.defaulting_type
        if kind not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            errs.append(not_supported("defaultingType", kind, (SYSTEM_DEFAULTING, LIST_DEFAULTING)))
        elif kind == SYSTEM_DEFAULTING and self.default_constraints:
            errs.append(invalid("defaultingType", kind, "when .defaultConstraints are not empty"))
        for i, c in enumerate(self.default_constraints):
            path = f"defaultConstraints[{i}]"
            if c.max_skew <= 0:
                errs.append(invalid(f"{path}.maxSkew", c.max_skew, "not in valid range (0, inf)"))
            if not c.topology_key:
                errs.append(required(f"{path}.topologyKey", "can not be empty"))
            else:
                errs += label_name_errors(f"{path}.topologyKey", c.topology_key)
            action = c.when_unsatisfiable
            if not action:
                errs.append(required(f"{path}.whenUnsatisfiable", "can not be empty"))
            elif action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
                errs.append(
                    not_supported(
                        f"{path}.whenUnsatisfiable", action, (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
                    )
                )
            if c.label_selector is not None:
                errs.append(
                    forbidden(
                        f"{path}.labelSelector",
                        "constraint must not define a selector, as they deduced for each pod",
                    )
                )
            for other in self.default_constraints[:i]:
                if (other.topology_key, other.when_unsatisfiable) == (c.topology_key, action):
                    errs.append(duplicate(path, f"{{{c.topology_key}, {action}}}"))
                    break
        if errs:
            raise ValueError(aggregate(errs))
        return self
