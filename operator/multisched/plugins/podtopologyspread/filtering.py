"""PodTopologySpread hard constraints (upstream filtering.go).

PreFilter counts matching pods per topology domain of every constraint over all nodes;
Filter is then a dict look-up per constraint. AddPod/RemovePod keep the counts and the
critical paths current while preemption dry-runs victims.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from itertools import compress, repeat
from operator import is_not, itemgetter
from typing import TypeVar

from multisched.cache import NodeInfo, PodInfo, Snapshot

from .._label_values import label_values, positions_in, positions_missing
from .._node_affinity_required import RequiredNodeAffinity
from .._untolerated_taint import untolerated_taint
from .common import (
    Constraint,
    PodCountMemo,
    affinity_filters,
    honors_taints,
    live_counts,
    node_has_keys,
)

_MAX_INT32 = 2**31 - 1

#: What ``failing_nodes`` marks a failing node with (the plugin passes its two statuses).
V = TypeVar("V")


class CriticalPaths:
    """The two domains with the fewest matching pods; ``num0`` is always the minimum.

    ``num1`` is >= ``num0`` but not necessarily the second minimum: enough because
    preemption only removes pods from one node per state copy (upstream's caveat).
    """

    __slots__ = ("num0", "num1", "value0", "value1")

    def __init__(self) -> None:
        self.value0 = ""
        self.num0 = _MAX_INT32
        self.value1 = ""
        self.num1 = _MAX_INT32

    def copy(self) -> CriticalPaths:
        twin = CriticalPaths.__new__(CriticalPaths)
        twin.value0, twin.num0, twin.value1, twin.num1 = (
            self.value0,
            self.num0,
            self.value1,
            self.num1,
        )
        return twin

    def update(self, value: str, num: int) -> None:
        if value == self.value0:
            self.num0 = num
        elif value == self.value1:
            self.num1 = num
        else:
            if num < self.num0:
                self.value1, self.num1 = self.value0, self.num0
                self.value0, self.num0 = value, num
            elif num < self.num1:
                self.value1, self.num1 = value, num
            return
        if self.num0 > self.num1:
            self.value0, self.num0, self.value1, self.num1 = (
                self.value1,
                self.num1,
                self.value0,
                self.num0,
            )


class PreFilterState:
    """Per constraint (by index): matching pods per topology value and the critical paths."""

    __slots__ = ("constraints", "critical_paths", "required", "self_match", "tp_value_to_match_num")

    def __init__(
        self,
        constraints: list[Constraint],
        tp_value_to_match_num: list[dict[str, int]],
        critical_paths: list[CriticalPaths],
        self_match: list[int],
        required: RequiredNodeAffinity,
    ) -> None:
        self.constraints = constraints
        self.tp_value_to_match_num = tp_value_to_match_num
        self.critical_paths = critical_paths
        #: 1 where the incoming pod matches the constraint's own selector.
        self.self_match = self_match
        self.required = required

    def clone(self) -> PreFilterState:
        """Counts and paths are copied (preemption mutates them); the rest is shared."""
        return PreFilterState(
            self.constraints,
            [dict(m) for m in self.tp_value_to_match_num],
            [p.copy() for p in self.critical_paths],
            self.self_match,
            self.required,
        )

    def min_match_num(self, i: int) -> int:
        """The global minimum of constraint ``i``: 0 while there are fewer than minDomains."""
        if len(self.tp_value_to_match_num[i]) < self.constraints[i].min_domains:
            return 0
        return self.critical_paths[i].num0

    def update_with_pod(
        self, updated: PodInfo, preemptor: PodInfo, node: NodeInfo, delta: int
    ) -> None:
        """``updateWithPod``: count ``updated`` in (delta=1) or out (delta=-1) on ``node``."""
        if updated.namespace != preemptor.namespace:
            return
        labels = node.labels
        constraints = self.constraints
        if not node_has_keys(labels, constraints):
            return
        for i, c in enumerate(constraints):
            if not c.selector.matches(updated.labels):
                continue
            if c.honor_node_affinity and not self.required.matches(node):
                continue
            if c.honor_node_taints and untolerated_taint(node, preemptor.tolerations) is not None:
                continue
            value = labels[c.topology_key]
            counts = self.tp_value_to_match_num[i]
            num = counts.get(value, 0) + delta
            counts[value] = num
            self.critical_paths[i].update(value, num)


def compute_pre_filter_state(
    constraints: list[Constraint], pod: PodInfo, nodes: Sequence[NodeInfo], memo: PodCountMemo
) -> PreFilterState:
    """``calPreFilterState`` over all nodes (not only those passing the filters)."""
    count = memo.count
    required = RequiredNodeAffinity(pod)
    need_affinity = any(c.honor_node_affinity for c in constraints)
    need_taints = any(c.honor_node_taints for c in constraints)
    tolerations = pod.tolerations
    namespace = pod.namespace
    counts: list[dict[str, int]] = [{} for _ in constraints]
    indexed = list(enumerate(constraints))
    for node in nodes:
        labels = node.labels
        if not node_has_keys(labels, constraints):
            continue
        affinity_ok = required.matches(node) if need_affinity else True
        taints_ok = untolerated_taint(node, tolerations) is None if need_taints else True
        for i, c in indexed:
            if (c.honor_node_affinity and not affinity_ok) or (
                c.honor_node_taints and not taints_ok
            ):
                continue
            value = labels[c.topology_key]
            domain = counts[i]
            domain[value] = domain.get(value, 0) + count(node, c.selector, namespace)
    paths = []
    for domain in counts:
        p = CriticalPaths()
        for value, num in domain.items():
            p.update(value, num)
        paths.append(p)
    self_match = [1 if c.selector.matches(pod.labels) else 0 for c in constraints]
    return PreFilterState(constraints, counts, paths, self_match, required)


def indexed_pre_filter_state(
    constraints: list[Constraint], pod: PodInfo, snapshot: Snapshot
) -> PreFilterState | None:
    """``compute_pre_filter_state`` from the cache's per-node counts: only the nodes holding
    matching pods are read. None when a constraint honors taints (nodeTaintsPolicy: Honor),
    which the counts are not kept by."""
    if honors_taints(constraints):
        return None
    required = RequiredNodeAffinity(pod)
    filtered = affinity_filters(constraints, required)
    keys = tuple(c.topology_key for c in constraints)
    everywhere = snapshot.topology_domains(keys) if not all(filtered) else []
    selected = (
        snapshot.topology_domains(keys, required.matches, required.key) if any(filtered) else []
    )
    counts = [selected[i] if f else everywhere[i] for i, f in enumerate(filtered)]
    node_map = snapshot.node_info_map
    for i, c in enumerate(constraints):
        per_node = live_counts(snapshot, c.selector, pod.namespace)
        if not per_node:
            continue
        key, domain, narrowed = c.topology_key, counts[i], filtered[i]
        for name, n in per_node.items():
            node = node_map.get(name)
            if node is None:
                continue
            labels = node.labels
            if node_has_keys(labels, constraints) and (not narrowed or required.matches(node)):
                domain[labels[key]] += n
    paths = [_critical_paths(domain) for domain in counts]
    self_match = [1 if c.selector.matches(pod.labels) else 0 for c in constraints]
    return PreFilterState(constraints, counts, paths, self_match, required)


def _critical_paths(domain: dict[str, int]) -> CriticalPaths:
    """The two smallest domains, as ``CriticalPaths.update`` over every domain finds them."""
    paths = CriticalPaths()
    if len(domain) <= 8:
        for value, num in domain.items():
            paths.update(value, num)
        return paths
    for value, num in heapq.nsmallest(2, domain.items(), key=itemgetter(1)):
        paths.update(value, num)
    return paths


def failing_nodes(
    state: PreFilterState,
    nodes: Sequence[NodeInfo],
    snapshot: Snapshot | None,
    skewed: V,
    unlabelled: V,
) -> dict[int, V]:
    """``fits`` for many nodes: index -> ``skewed`` (``fits`` 1) or ``unlabelled`` (2) for
    the nodes that fail. Each constraint judges all nodes at once (C-level passes over the
    nodes' topology values); a node keeps the verdict of the first constraint it fails, as
    ``fits`` stops there."""
    out: dict[int, V] = {}
    positions = range(len(nodes))
    for i, c in enumerate(state.constraints):
        # A node fails once its domain holds more than this many matching pods.
        allowed = c.max_skew + state.min_match_num(i) - state.self_match[i]
        values = label_values(snapshot, c.topology_key, nodes)
        found = dict.fromkeys(positions_missing(values), unlabelled)
        if allowed < 0:  # even an empty domain is over the limit
            labelled = compress(positions, map(is_not, values, repeat(None)))
            found.update(dict.fromkeys(labelled, skewed))
        else:
            over = {v for v, n in state.tp_value_to_match_num[i].items() if n > allowed}
            found.update(dict.fromkeys(positions_in(values, over), skewed))
        if found:
            found.update(out)  # an earlier constraint's verdict stands
            out = found
    return out


def fits(state: PreFilterState, node: NodeInfo) -> int:
    """0 if ``node`` satisfies every constraint, 1 if the skew is too large, 2 if a topology
    label is missing (the two upstream failure reasons)."""
    labels = node.labels
    counts = state.tp_value_to_match_num
    self_match = state.self_match
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return 2
        skew = counts[i].get(value, 0) + self_match[i] - state.min_match_num(i)
        if skew > c.max_skew:
            return 1
    return 0
