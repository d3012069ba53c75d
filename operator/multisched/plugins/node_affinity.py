"""NodeAffinity: nodeSelector and required node affinity as a filter, preferred terms as a score.

Follows upstream ``nodeaffinity/node_affinity.go``; ``addedAffinity`` from the args is
enforced on every pod of the profile on top of the pod's own affinity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel

from multisched.cache import NodeInfo, NodeSelector, NodeSelectorTerm, PodInfo
from multisched.framework import MAX_NODE_SCORE, CycleState, Handle, PreFilterResult, Status
from multisched.framework.events import (
    ADD,
    NODE,
    UPDATE_NODE_LABEL,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)

from ._label_validation import aggregate, node_selector_term_errors
from ._node_affinity_required import RequiredNodeAffinity
from ._normalize import default_normalize_score

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_OBJECT_NAME_FIELD = "metadata.name"


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True
    )


class NodeSelectorRequirement(_Model):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTermModel(_Model):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelectorModel(_Model):
    node_selector_terms: list[NodeSelectorTermModel] = []


class PreferredSchedulingTerm(_Model):
    weight: int
    preference: NodeSelectorTermModel


class AddedNodeAffinity(_Model):
    """v1.NodeAffinity as it appears in ``NodeAffinityArgs.addedAffinity``."""

    required_during_scheduling_ignored_during_execution: NodeSelectorModel | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class NodeAffinityArgs(_Model):
    """Upstream ``NodeAffinityArgs``; validated like ``ValidateNodeAffinityArgs``."""

    added_affinity: AddedNodeAffinity | None = None

    @model_validator(mode="after")
    def _validate(self) -> NodeAffinityArgs:
        added = self.added_affinity
        if added is None:
            return self
        errs: list[str] = []
        base = "addedAffinity"
        required = added.required_during_scheduling_ignored_during_execution
        if required is not None:
            path = f"{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            for i, term in enumerate(required.node_selector_terms):
                errs += node_selector_term_errors(f"{path}[{i}]", _raw(term))
        path = f"{base}.preferredDuringSchedulingIgnoredDuringExecution"
        for i, pref in enumerate(added.preferred_during_scheduling_ignored_during_execution):
            # Upstream skips weight-0 terms entirely, even malformed ones.
            if pref.weight != 0:
                errs += node_selector_term_errors(f"{path}[{i}]", _raw(pref.preference))
        if errs:
            raise ValueError(aggregate(errs))
        return self


def _raw(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True)


def _pod_node_names(selector: NodeSelector) -> frozenset[str] | None:
    """Nodes the required terms pin by ``metadata.name In``; None when any term does not.

    Terms are ORed, requirements within a term ANDed; an empty set means the terms conflict.
    """
    names: set[str] = set()
    for term in selector.terms:
        term_names: set[str] | None = None
        for req in term.fields:
            if req.key == _OBJECT_NAME_FIELD and req.op == "In":
                term_names = set(req.values) if term_names is None else term_names & req.values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


def _required_matches(pod: PodInfo, node: NodeInfo) -> bool:
    """``RequiredNodeAffinity(pod).matches(node)`` without building it (hints run for every
    pooled pod on every node event)."""
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    affinity = pod.required_node_affinity
    return affinity is None or affinity.matches(labels, node.name)


class NodeAffinity:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = NodeAffinityArgs

    def __init__(self, args: NodeAffinityArgs | None, handle: Handle | None) -> None:
        args = args or NodeAffinityArgs()
        self._added_node_selector: NodeSelector | None = None
        self._added_preferred: tuple[tuple[int, NodeSelectorTerm], ...] = ()
        # Upstream keeps an (empty) preferred-terms object whenever any terms were given.
        self._has_added_preferred = False
        added = args.added_affinity
        if added is not None:
            required = added.required_during_scheduling_ignored_during_execution
            if required is not None:
                self._added_node_selector = NodeSelector.parse(_raw(required))
            preferred = added.preferred_during_scheduling_ignored_during_execution
            self._has_added_preferred = bool(preferred)
            self._added_preferred = tuple(
                (p.weight, NodeSelectorTerm.parse(_raw(p.preference)))
                for p in preferred
                if p.weight != 0
            )

    # -- PreFilter / Filter ----------------------------------------------------------------

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # Only a node's labels decide affinity.
        return (
            ClusterEventWithHint(
                ClusterEvent(NODE, ADD | UPDATE_NODE_LABEL), self.is_schedulable_after_node_change
            ),
        )

    def is_schedulable_after_node_change(
        self, pod: PodInfo, old: NodeInfo | None, new: NodeInfo
    ) -> QueueingHint:
        """Upstream ``isSchedulableAfterNodeChange``: the node now matches the profile's
        addedAffinity and the pod's selector and required affinity, and did not before (or
        is new)."""
        added = self._added_node_selector
        if added is not None and not added.matches(new.labels, new.name):
            return QueueingHint.QUEUE_SKIP
        if not _required_matches(pod, new):
            return QueueingHint.QUEUE_SKIP
        if old is not None and _required_matches(pod, old):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        affinity = pod.required_node_affinity
        if affinity is None and self._added_node_selector is None and not pod.node_selector:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, RequiredNodeAffinity(pod))
        if affinity is None or not affinity.terms:
            return None, None
        names = _pod_node_names(affinity)
        if names is None:
            return None, None
        if not names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(names), None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        added = self._added_node_selector
        if added is not None and not added.matches(node.labels, node.name):
            return Status.unresolvable(ERR_REASON_ENFORCED)
        required: RequiredNodeAffinity | None = state.get(PRE_FILTER_STATE_KEY)
        if required is None:  # PreFilter disabled in this profile
            required = RequiredNodeAffinity(pod)
        if not required.matches(node):
            return Status.unresolvable(ERR_REASON_POD)
        return None

    # -- PreScore / Score ------------------------------------------------------------------

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        # The pod's preferred terms are already parsed on PodInfo; nothing to precompute.
        if not pod.preferred_node_affinity and not self._has_added_preferred:
            return Status.skip()
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        labels, name = node.labels, node.name
        count = 0
        for weight, term in self._added_preferred:
            if term.matches(labels, name):
                count += weight
        for weight, term in pod.preferred_node_affinity:
            if term.matches(labels, name):
                count += weight
        return count

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None


PLUGIN = NodeAffinity
