"""NodeResourcesBalancedAllocation: favour nodes whose resource usage fractions stay even.

Follows upstream ``noderesources/balanced_allocation.go``: score = (1 - std) * MaxNodeScore
over requested/allocatable of the configured resources (plain requests, not the non-zero
defaults). PreScore skips pods that request none of those resources, as upstream does to
keep best-effort pods from piling onto one node.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import ClassVar

from pydantic import BaseModel, Field, field_validator, model_validator

from multisched.cache import NodeInfo, PodInfo
from multisched.framework import CycleState, Handle, Status

from ._batch import snapshot_of
from ._label_validation import aggregate, duplicate, invalid
from ._node_values import NodeValues
from ._resource_allocation import (
    ArgsModel,
    Entry,
    NullableList,
    ResourceSpec,
    balanced,
    balanced_nodes,
    default_resources,
    pod_requests,
    resolve_specs,
    score_entries,
)

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


class NodeResourcesBalancedAllocationArgs(ArgsModel):
    """Upstream ``NodeResourcesBalancedAllocationArgs`` (v1 default: cpu and memory)."""

    resources: NullableList[ResourceSpec] = Field(default_factory=default_resources)

    @field_validator("resources")
    @classmethod
    def _default_resources(cls, value: list[ResourceSpec]) -> list[ResourceSpec]:
        return value or default_resources()

    @model_validator(mode="after")
    def _validate(self) -> NodeResourcesBalancedAllocationArgs:
        """Upstream ``ValidateNodeResourcesBalancedAllocationArgs``."""
        errs: list[str] = []
        seen: set[str] = set()
        for i, res in enumerate(self.resources):
            if res.name in seen:
                errs.append(duplicate(f"resources[{i}].name", res.name))
            else:
                seen.add(res.name)
            if res.weight != 1:
                errs.append(invalid(f"resources[{i}].weight", res.weight, "must be 1"))
        if errs:
            raise ValueError(aggregate(errs))
        return self


class PreScoreState:
    """The pod's requests for the configured resources (upstream
    ``balancedAllocationPreScoreState``)."""

    __slots__ = ("entries",)

    def __init__(self, entries: tuple[Entry, ...]) -> None:
        self.entries = entries


class NodeResourcesBalancedAllocation:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = NodeResourcesBalancedAllocationArgs

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None, handle: Handle) -> None:
        args = args or NodeResourcesBalancedAllocationArgs()
        self._specs = resolve_specs(args.resources, use_requested=True)
        self._handle = handle
        #: Scores per request, kept while a node is unchanged.
        self._scores: NodeValues[int] = NodeValues()

    def _entries(self, pod: PodInfo) -> tuple[Entry, ...] | None:
        """Scoring entries, or None for a pod that requests none of the resources."""
        requests = pod_requests(self._specs, pod)
        if not any(requests):
            return None
        return score_entries(self._specs, requests)

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        entries = self._entries(pod)
        if entries is None:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(entries))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is not None:
            return balanced(s.entries, node)
        entries = self._entries(pod)
        return 0 if entries is None else balanced(entries, node)

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """``score`` for every node at once (the framework's batch path)."""
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        entries = s.entries if s is not None else self._entries(pod)
        if entries is None:
            return [0] * len(nodes)
        return self._scores.values(
            snapshot_of(self._handle), entries, nodes, partial(balanced_nodes, entries)
        )


PLUGIN = NodeResourcesBalancedAllocation
