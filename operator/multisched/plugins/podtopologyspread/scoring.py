"""PodTopologySpread soft constraints (upstream scoring.go).

PreScore counts matching pods per topology domain over all nodes, for the domains the
candidate nodes are in; hostname constraints are counted per node in Score instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import repeat
from operator import add, attrgetter

from multisched.cache import NodeInfo, PodInfo, Snapshot

from .._label_values import label_values, looked_up, positions_missing
from .._node_affinity_required import RequiredNodeAffinity
from .._untolerated_taint import untolerated_taint
from .args import LABEL_HOSTNAME
from .common import (
    Constraint,
    PodCountMemo,
    affinity_filters,
    honors_taints,
    live_counts,
    node_has_keys,
)

_NAME = attrgetter("name")


class PreScoreState:
    __slots__ = (
        "constraints",
        "host_counts",
        "ignored_nodes",
        "is_hostname",
        "pod_counts",
        "weights",
    )

    def __init__(self, constraints: list[Constraint]) -> None:
        self.constraints = constraints
        #: Candidate nodes missing some topology key: scored 0.
        self.ignored_nodes: set[str] = set()
        #: Per constraint, matching pods per topology value (values of candidate nodes only).
        self.pod_counts: list[dict[str, int]] = [{} for _ in constraints]
        #: Per constraint, ``topologyNormalizingWeight`` of its number of domains.
        self.weights: list[float] = []
        self.is_hostname = [c.topology_key == LABEL_HOSTNAME for c in constraints]
        #: Per hostname constraint, matching pods per node name from the cache's index
        #: (None: Score counts the node's pods itself).
        self.host_counts: list[dict[str, int] | None] = [None for _ in constraints]

    def clone(self) -> PreScoreState:
        return self


def topology_normalizing_weight(size: int) -> float:
    """log(size + 2): counts in topologies with many domains weigh more."""
    return math.log(size + 2)


def compute_pre_score_state(
    constraints: list[Constraint],
    pod: PodInfo,
    filtered_nodes: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo],
    require_all_topologies: bool,
    memo: PodCountMemo,
) -> PreScoreState:
    """``initPreScoreState`` over the candidates, then the counts over every node."""
    s = _init_pre_score_state(constraints, filtered_nodes, require_all_topologies)
    counted = [(i, c) for i, c in enumerate(constraints) if not s.is_hostname[i]]
    if not counted:
        return s
    required = RequiredNodeAffinity(pod)
    namespace = pod.namespace
    tolerations = pod.tolerations
    for node in all_nodes:
        labels = node.labels
        if require_all_topologies and not node_has_keys(labels, constraints):
            continue
        for i, c in counted:
            if c.honor_node_affinity and not required.matches(node):
                continue
            if c.honor_node_taints and untolerated_taint(node, tolerations) is not None:
                continue
            domain = s.pod_counts[i]
            value = labels.get(c.topology_key, "")
            if value in domain:
                domain[value] += memo.count(node, c.selector, namespace)
    return s


def indexed_pre_score_state(
    constraints: list[Constraint],
    pod: PodInfo,
    filtered_nodes: Sequence[NodeInfo],
    snapshot: Snapshot,
    require_all_topologies: bool,
) -> PreScoreState | None:
    """``compute_pre_score_state`` from the cache's per-node counts; None when a constraint
    honors taints (as ``indexed_pre_filter_state``)."""
    if honors_taints(constraints):
        return None
    required = RequiredNodeAffinity(pod)
    filtered = affinity_filters(constraints, required)
    s = _init_pre_score_state(constraints, filtered_nodes, require_all_topologies, snapshot)
    node_map = snapshot.node_info_map
    for i, c in enumerate(constraints):
        per_node = live_counts(snapshot, c.selector, pod.namespace)
        if s.is_hostname[i]:
            s.host_counts[i] = per_node
            continue
        domain, key, narrowed = s.pod_counts[i], c.topology_key, filtered[i]
        for name, n in per_node.items():
            node = node_map.get(name)
            if node is None:
                continue
            labels = node.labels
            if require_all_topologies and not node_has_keys(labels, constraints):
                continue
            if narrowed and not required.matches(node):
                continue
            value = labels.get(key, "")
            if value in domain:
                domain[value] += n
    return s


def _init_pre_score_state(
    constraints: list[Constraint],
    filtered_nodes: Sequence[NodeInfo],
    require_all_topologies: bool,
    snapshot: Snapshot | None = None,
) -> PreScoreState:
    """The candidates' domains (counts at 0), the ignored candidates and the weights."""
    s = PreScoreState(constraints)
    values = [label_values(snapshot, c.topology_key, filtered_nodes) for c in constraints]
    # A candidate missing a topology key is ignored (when every key is required).
    missing: set[int] = set()
    if require_all_topologies:
        for column in values:
            missing.update(positions_missing(column))
        s.ignored_nodes.update(filtered_nodes[j].name for j in missing)
    for i, column in enumerate(values):
        if s.is_hostname[i]:
            continue
        kept = [v for j, v in enumerate(column) if j not in missing] if missing else column
        domain: dict[str | None, int] = dict.fromkeys(kept, 0)
        if None in domain:  # the node lacks the key: its domain is ""
            del domain[None]
            domain[""] = 0
        s.pod_counts[i] = domain  # type: ignore[assignment]
    candidates = len(filtered_nodes) - len(s.ignored_nodes)
    s.weights = [
        topology_normalizing_weight(candidates if s.is_hostname[i] else len(s.pod_counts[i]))
        for i in range(len(constraints))
    ]
    return s


def _round_half_away(x: float) -> int:
    """Go's ``math.Round`` (Python's ``round`` rounds half to even)."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def score_node(s: PreScoreState, pod: PodInfo, node: NodeInfo, memo: PodCountMemo) -> int:
    if node.name in s.ignored_nodes:
        return 0
    labels = node.labels
    total = 0.0
    for i, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            continue
        if s.is_hostname[i]:
            host = s.host_counts[i]
            if host is None:
                count = memo.count(node, c.selector, pod.namespace)
            else:
                count = host.get(node.name, 0)
        else:
            count = s.pod_counts[i].get(value, 0)
        total += count * s.weights[i] + (c.max_skew - 1)
    return _round_half_away(total)


def score_nodes(
    s: PreScoreState,
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    memo: PodCountMemo,
    snapshot: Snapshot | None = None,
) -> list[int]:
    """``score_node`` for every node: one pass per constraint, each node's terms added in
    constraint order as ``score_node`` adds them (so the floats round alike)."""
    totals = [0.0] * len(nodes)
    for i, c in enumerate(s.constraints):
        weight, extra = s.weights[i], c.max_skew - 1
        host = s.host_counts[i]
        values = label_values(snapshot, c.topology_key, nodes)
        counts: list[int]
        if not s.is_hostname[i]:
            counts = looked_up(values, s.pod_counts[i])
        elif host is not None:
            counts = list(map(host.get, map(_NAME, nodes), repeat(0)))
        else:
            counts = [
                0 if v is None else memo.count(node, c.selector, pod.namespace)
                for node, v in zip(nodes, values, strict=True)
            ]
        totals = [
            t if v is None else t + n * weight + extra
            for t, n, v in zip(totals, counts, values, strict=True)
        ]
    # Go's math.Round: for totals >= 0 (the usual case: counts, weights and maxSkew - 1 are)
    # that is floor(x + 0.5), mapped at C speed.
    if min(totals, default=0.0) >= 0:
        out = list(map(math.floor, map(add, totals, repeat(0.5))))
    else:
        out = [_round_half_away(t) for t in totals]
    ignored = s.ignored_nodes
    if ignored:
        for j, node in enumerate(nodes):
            if node.name in ignored:
                out[j] = 0
    return out


def normalize(
    s: PreScoreState, nodes: Sequence[NodeInfo], scores: list[int], max_node_score: int
) -> None:
    """Fewer matching pods scores higher: ``max * (maxScore + minScore - s) / maxScore``."""
    ignored = s.ignored_nodes
    if not ignored:  # every node counts: whole-list passes
        if not scores:
            return
        low, high = min(scores), max(scores)
        high = high if high > 0 else 0
        if high == 0:
            scores[:] = [max_node_score] * len(scores)
        else:
            scores[:] = [max_node_score * (high + low - x) // high for x in scores]
        return
    valid = [i for i, node in enumerate(nodes) if node.name not in ignored]
    if len(valid) != len(scores):
        kept = set(valid)
        for i in range(len(scores)):
            if i not in kept:
                scores[i] = 0
    if not valid:
        return
    min_score = min(scores[i] for i in valid)
    max_score = max(0, *(scores[i] for i in valid))
    for i in valid:
        if max_score == 0:
            scores[i] = max_node_score
        else:
            scores[i] = max_node_score * (max_score + min_score - scores[i]) // max_score
