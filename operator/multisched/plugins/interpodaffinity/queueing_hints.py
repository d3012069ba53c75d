"""InterPodAffinity's queueing hints (upstream ``interpodaffinity/plugin.go``).

The pooled pod's terms are precomputed on its PodInfo; like upstream's hints they match
with no namespace labels (a namespaceSelector term then selects by its namespaces, or
every namespace when the selector is empty).
"""

from __future__ import annotations

from collections.abc import Sequence

from multisched.cache import AffinityTerm, NodeInfo, PodInfo
from multisched.framework.events import QueueingHint

from .._hints import is_assigned, is_target_pod

QUEUE = QueueingHint.QUEUE
QUEUE_SKIP = QueueingHint.QUEUE_SKIP


def _matches_all(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms``: no terms match nothing."""
    if not terms:
        return False
    for t in terms:  # noqa: SIM110 - per-pooled-pod hot path, no generator
        if not t.matches(pod, None):
            return False
    return True


def _matches_any(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    for t in terms:  # noqa: SIM110 - per-pooled-pod hot path, no generator
        if t.matches(pod, None):
            return True
    return False


def is_schedulable_after_assigned_pod_change(
    pod: PodInfo, old: PodInfo | None, new: PodInfo | None
) -> QueueingHint:
    """An added pod matching all of ``pod``'s affinity terms, a deleted pod ``pod`` hated
    or that hated ``pod``, or a relabelled pod that starts matching the affinity or stops
    matching the anti-affinity. A pod on no node (nor nominated) changes nothing."""
    if (new is not None and not is_assigned(new)) or (old is not None and not is_assigned(old)):
        return QUEUE_SKIP
    terms, anti = pod.affinity_terms, pod.anti_affinity_terms
    if old is not None and new is not None:
        # One existing pod must satisfy all the affinity terms at once.
        if not _matches_all(terms, old) and _matches_all(terms, new):
            return QUEUE
        if _matches_any(anti, old) and not _matches_any(anti, new):
            return QUEUE
        return QUEUE_SKIP
    if new is not None:
        return QUEUE if _matches_all(terms, new) else QUEUE_SKIP
    if old is None:
        return QUEUE
    if _matches_any(anti, old) or _matches_any(old.anti_affinity_terms, pod):
        return QUEUE
    return QUEUE_SKIP


def is_schedulable_after_target_pod_update_label(
    pod: PodInfo, old: PodInfo | None, new: PodInfo | None
) -> QueueingHint:
    """The pod's own new labels may escape another pod's anti-affinity. The framework
    files every pod's update under Pod, so only the pod's own update counts here."""
    return QUEUE if is_target_pod(pod, new) else QUEUE_SKIP


def is_schedulable_after_node_change(
    pod: PodInfo, old: NodeInfo | None, new: NodeInfo | None
) -> QueueingHint:
    """A node that gains an affinity term's topology key or moves domain; for anti-affinity
    any new node, or one that loses the key or moves domain."""
    if new is None:
        return QUEUE
    labels = new.labels
    for term in pod.affinity_terms:
        key = term.topology_key
        if old is None:
            if key in labels:
                return QUEUE
            continue
        if key in labels and (key not in old.labels or old.labels[key] != labels[key]):
            return QUEUE
    for term in pod.anti_affinity_terms:
        if old is None:
            return QUEUE  # a node without the key always accepts; one with it may
        key = term.topology_key
        if key in old.labels and (key not in labels or old.labels[key] != labels[key]):
            return QUEUE
    return QUEUE_SKIP
