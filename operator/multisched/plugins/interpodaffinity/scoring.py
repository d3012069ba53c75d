"""InterPodAffinity soft constraints (upstream scoring.go): topology scores for Score."""

from __future__ import annotations

from collections.abc import Mapping

from multisched.cache import PodInfo, WeightedAffinityTerm

from .filtering import NamespaceLabels, incoming_term_matches

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
