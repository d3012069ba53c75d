"""InterPodAffinity soft constraints (upstream scoring.go): topology scores for Score."""

from __future__ import annotations

from collections.abc import Mapping

from multisched.cache import NodeInfo, PodInfo, Snapshot, WeightedAffinityTerm

from .filtering import NamespaceLabels, counted_nodes, incoming_term_matches, term_counts

ScoreMap = dict[str, dict[str, int]]


def _add_score(scores: ScoreMap, labels: Mapping[str, str], key: str, delta: int) -> None:
    value = labels.get(key)
    if value is None:
        return
    by_value = scores.get(key)
    if by_value is None:
        by_value = scores[key] = {}
    by_value[value] = by_value.get(value, 0) + delta


class PreScoreState:
    """Upstream ``preScoreState``: topologyKey -> value -> summed weights."""

    __slots__ = ("topology_score",)

    def __init__(self) -> None:
        self.topology_score: ScoreMap = {}

    def clone(self) -> PreScoreState:
        # Scoring state is never edited after PreScore (upstream returns itself too).
        return self


class ScoreCounter:
    """Accumulates one cycle's topology scores (upstream ``processExistingPod``)."""

    __slots__ = (
        "hard_weight",
        "ns_labels",
        "pod",
        "pod_ns_labels",
        "preferred",
        "preferred_anti",
        "scores",
    )

    def __init__(self, pod: PodInfo, ns_labels: NamespaceLabels, hard_weight: int) -> None:
        self.pod = pod
        self.ns_labels = ns_labels
        self.pod_ns_labels = ns_labels(pod.namespace)
        self.hard_weight = hard_weight
        self.preferred: tuple[WeightedAffinityTerm, ...] = pod.preferred_affinity_terms
        self.preferred_anti: tuple[WeightedAffinityTerm, ...] = pod.preferred_anti_affinity_terms
        self.scores: ScoreMap = {}

    def process(self, existing: PodInfo, labels: Mapping[str, str]) -> None:
        scores, ns_labels = self.scores, self.ns_labels
        # The incoming pod's preferred terms select existing pods.
        for w in self.preferred:
            if incoming_term_matches(w.term, existing, ns_labels):
                _add_score(scores, labels, w.term.topology_key, w.weight)
        for w in self.preferred_anti:
            if incoming_term_matches(w.term, existing, ns_labels):
                _add_score(scores, labels, w.term.topology_key, -w.weight)
        # Existing pods' terms select the incoming pod (symmetry).
        pod, pod_ns = self.pod, self.pod_ns_labels
        if self.hard_weight > 0:
            for term in existing.affinity_terms:
                if term.matches(pod, pod_ns):
                    _add_score(scores, labels, term.topology_key, self.hard_weight)
        for w in existing.preferred_affinity_terms:
            if w.term.matches(pod, pod_ns):
                _add_score(scores, labels, w.term.topology_key, w.weight)
        for w in existing.preferred_anti_affinity_terms:
            if w.term.matches(pod, pod_ns):
                _add_score(scores, labels, w.term.topology_key, -w.weight)


def _add_node_scores(
    scores: ScoreMap,
    node_map: Mapping[str, NodeInfo],
    per_node: Mapping[str, int],
    key: str,
    weight: int,
) -> None:
    for labels, n in counted_nodes(node_map, per_node):
        _add_score(scores, labels, key, weight * n)


def indexed_scores(pod: PodInfo, snapshot: Snapshot, hard_weight: int) -> ScoreMap | None:
    """What ``ScoreCounter.process`` sums over every existing pod, from the cache's per-node
    counts and its index of existing terms; None when one of the pod's preferred terms
    selects namespaces by label, which the counts are not kept by."""
    preferred = (*pod.preferred_affinity_terms, *pod.preferred_anti_affinity_terms)
    if any(w.term.namespace_selector is not None for w in preferred):
        return None
    scores: ScoreMap = {}
    node_map = snapshot.node_info_map
    for sign, weighted in (
        (1, pod.preferred_affinity_terms),
        (-1, pod.preferred_anti_affinity_terms),
    ):
        for w in weighted:
            term = w.term
            for namespace in term.namespaces:
                per_node = term_counts(snapshot, term, namespace)
                _add_node_scores(scores, node_map, per_node, term.topology_key, sign * w.weight)
    # Existing pods' terms that select the incoming pod (symmetry), each distinct term once.
    pod_ns = snapshot.namespace_labels(pod.namespace)
    terms = snapshot.terms
    tables = [(terms.preferred_affinity, 1), (terms.preferred_anti_affinity, -1)]
    if hard_weight > 0:
        tables.insert(0, (terms.affinity, 0))
    for table, sign in tables:
        for entry in table.values():
            if entry.term.matches(pod, pod_ns):
                weight = hard_weight if sign == 0 else sign * entry.weight
                _add_node_scores(scores, node_map, entry.per_node, entry.term.topology_key, weight)
    return scores
