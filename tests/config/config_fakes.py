"""A fake plugin catalog mirroring the built-ins' extension points (upstream plugins)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from multisched.config import ResolvedConfig, SchedulerProfileSpec, resolve


class _Args(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class DefaultPreemptionArgs(_Args):
    min_candidate_nodes_percentage: int = Field(default=10, ge=0, le=100)
    min_candidate_nodes_absolute: int = Field(default=100, ge=0)


class InterPodAffinityArgs(_Args):
    hard_pod_affinity_weight: int = Field(default=1, ge=0, le=100)


class CustomSortArgs(_Args):
    reverse: bool = False


@dataclass(frozen=True)
class FakePlugin:
    name: str
    extension_points: frozenset[str]
    args_model: type[BaseModel] | None = None


def plugin(name: str, *points: str, args: type[BaseModel] | None = None) -> FakePlugin:
    return FakePlugin(name, frozenset(points), args)


BUILTINS = (
    plugin("SchedulingGates", "preEnqueue"),
    plugin("PrioritySort", "queueSort"),
    plugin("NodeName", "filter"),
    plugin("NodeUnschedulable", "filter"),
    plugin("TaintToleration", "filter", "preScore", "score"),
    plugin("NodeAffinity", "preFilter", "filter", "preScore", "score"),
    plugin("NodePorts", "preFilter", "filter"),
    plugin("NodeResourcesFit", "preFilter", "filter", "preScore", "score"),
    plugin("VolumeRestrictions", "preFilter", "filter"),
    plugin("NodeVolumeLimits", "preFilter", "filter"),
    plugin("VolumeBinding", "preFilter", "filter", "preScore", "score", "reserve", "preBind"),
    plugin("VolumeZone", "preFilter", "filter"),
    plugin("PodTopologySpread", "preFilter", "filter", "preScore", "score"),
    plugin(
        "InterPodAffinity", "preFilter", "filter", "preScore", "score", args=InterPodAffinityArgs
    ),
    plugin("DynamicResources", "preFilter"),
    plugin("DefaultPreemption", "postFilter", args=DefaultPreemptionArgs),
    plugin("NodeResourcesBalancedAllocation", "preScore", "score"),
    plugin("ImageLocality", "score"),
    plugin("DefaultBinder", "bind"),
)

#: Extra plugins for custom-plugin cases.
CUSTOM = (
    plugin("CustomFilter", "filter"),
    plugin("CustomScore", "preScore", "score"),
    plugin("CustomSort", "queueSort", args=CustomSortArgs),
    plugin("CustomBinder", "bind"),
)


def catalog(*extra: FakePlugin) -> dict[str, FakePlugin]:
    return {p.name: p for p in (*BUILTINS, *CUSTOM, *extra)}


CATALOG = catalog()


def resolve_spec(spec: dict[str, Any], cat: dict[str, FakePlugin] | None = None) -> ResolvedConfig:
    return resolve(SchedulerProfileSpec.model_validate(spec), CATALOG if cat is None else cat)


def resolve_profile(profile: dict[str, Any]) -> ResolvedConfig:
    return resolve_spec({"profiles": [profile]})
