"""Counts of the cache's pods per node, kept current as pods are assumed, bound and removed.

PodTopologySpread and InterPodAffinity ask every cycle how many pods a label selector
matches on each node, and which existing pods' affinity terms select the incoming pod.
Scanning every pod of every node for that costs O(pods) per cycle, so the answers are kept
here instead and a cycle reads only the nodes that hold matching pods:

- ``SelectorIndex``: per (namespace, selector) asked for, the matching pods per node.
  Selectors are registered on first use (one scan of the cache) and the least recently
  used are dropped beyond ``MAX_SELECTORS``.
- ``TermIndex``: the existing pods' affinity terms, grouped by what they select, with the
  pods holding each term per node (upstream scans ``PodsWithAffinity`` for these).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping

from .pod_info import AffinityTerm, PodInfo

Matcher = Callable[[Mapping[str, str]], bool]

#: Registered selectors kept at most; each costs a label check per pod event of its namespace.
MAX_SELECTORS = 512


def _bump(counts: dict[str, int], name: str, delta: int) -> None:
    n = counts.get(name, 0) + delta
    if n:
        counts[name] = n
    else:
        del counts[name]


class SelectorCounts:
    """The pods of one namespace a selector matches, per node name (only nonzero counts)."""

    __slots__ = ("first_label", "matches", "namespace", "per_node", "terminating", "used")

    def __init__(self, namespace: str, matches: Matcher, first_label: tuple[str, str] | None):
        self.namespace = namespace
        self.matches = matches
        #: A (key, value) every matching pod carries: the pod events worth checking.
        self.first_label = first_label
        self.per_node: dict[str, int] = {}
        #: The matching pods that are terminating (PodTopologySpread does not count them).
        self.terminating: dict[str, int] = {}
        self.used = 0

    def live(self) -> dict[str, int]:
        """Matching pods that are not terminating, per node."""
        if not self.terminating:
            return self.per_node
        out = dict(self.per_node)
        for name, n in self.terminating.items():
            _bump(out, name, -n)
        return out

    def add(self, pod: PodInfo, delta: int) -> None:
        _bump(self.per_node, pod.node_name, delta)
        if pod.terminating:
            _bump(self.terminating, pod.node_name, delta)


class SelectorIndex:
    __slots__ = ("_by_label", "_entries", "_general", "_pods", "_tick")

    def __init__(self, pods: Callable[[], Iterable[PodInfo]]) -> None:
        #: The cache's pods, scanned once when a selector is registered.
        self._pods = pods
        self._entries: dict[tuple[str, Hashable], SelectorCounts] = {}
        #: (namespace, key, value) -> entries whose selector requires that label.
        self._by_label: dict[tuple[str, str, str], list[SelectorCounts]] = {}
        #: namespace -> entries without a required label (matchExpressions only).
        self._general: dict[str, list[SelectorCounts]] = {}
        self._tick = 0

    def __len__(self) -> int:
        return len(self._entries)

    def counts(
        self,
        namespace: str,
        key: Hashable,
        matches: Matcher,
        first_label: tuple[str, str] | None,
    ) -> SelectorCounts:
        """The counts of the pods in ``namespace`` that ``matches``; ``key`` identifies the
        selector and ``first_label`` is one label it requires (None if it requires none)."""
        self._tick += 1
        entry = self._entries.get((namespace, key))
        if entry is None:  # registered now: one scan of the cache
            if len(self._entries) >= MAX_SELECTORS:
                self._evict()
            entry = SelectorCounts(namespace, matches, first_label)
            for pod in self._pods():
                if pod.namespace == namespace and matches(pod.labels):
                    entry.add(pod, 1)
            self._entries[(namespace, key)] = entry
            self._bucket(entry).append(entry)
        entry.used = self._tick
        return entry

    def _bucket(self, entry: SelectorCounts) -> list[SelectorCounts]:
        if entry.first_label is None:
            return self._general.setdefault(entry.namespace, [])
        k, v = entry.first_label
        return self._by_label.setdefault((entry.namespace, k, v), [])

    def _evict(self) -> None:
        """Drop the least recently used half: a workload's selectors are asked for in runs."""
        ranked = sorted(self._entries.items(), key=lambda kv: kv[1].used)
        for key, entry in ranked[: len(ranked) // 2]:
            del self._entries[key]
            bucket = self._bucket(entry)
            bucket.remove(entry)

    def on_pod(self, pod: PodInfo, delta: int) -> None:
        """``pod`` joined (+1) or left (-1) its node."""
        if not self._entries:
            return
        namespace = pod.namespace
        labels = pod.labels
        by_label = self._by_label
        if by_label:
            for k, v in labels.items():
                entries = by_label.get((namespace, k, v))
                if entries:
                    for entry in entries:
                        if entry.matches(labels):
                            entry.add(pod, delta)
        general = self._general.get(namespace)
        if general:
            for entry in general:
                if entry.matches(labels):
                    entry.add(pod, delta)


class TermCounts:
    """Existing pods holding one affinity term (with one weight), per node name."""

    __slots__ = ("per_node", "term", "weight")

    def __init__(self, term: AffinityTerm, weight: int) -> None:
        self.term = term
        self.weight = weight
        self.per_node: dict[str, int] = {}


TermTable = dict[Hashable, TermCounts]


class TermIndex:
    """The existing pods' pod (anti-)affinity terms, by kind, grouped by what they select."""

    __slots__ = ("affinity", "anti_affinity", "preferred_affinity", "preferred_anti_affinity")

    def __init__(self) -> None:
        self.affinity: TermTable = {}
        self.anti_affinity: TermTable = {}
        self.preferred_affinity: TermTable = {}
        self.preferred_anti_affinity: TermTable = {}

    def on_pod(self, pod: PodInfo, delta: int) -> None:
        if not pod.has_affinity:
            return
        node = pod.node_name
        for term in pod.affinity_terms:
            _count_term(self.affinity, term, 0, node, delta)
        for term in pod.anti_affinity_terms:
            _count_term(self.anti_affinity, term, 0, node, delta)
        for w in pod.preferred_affinity_terms:
            _count_term(self.preferred_affinity, w.term, w.weight, node, delta)
        for w in pod.preferred_anti_affinity_terms:
            _count_term(self.preferred_anti_affinity, w.term, w.weight, node, delta)


def _count_term(table: TermTable, term: AffinityTerm, weight: int, node: str, delta: int) -> None:
    key = (term.key, weight)
    entry = table.get(key)
    if entry is None:
        entry = table[key] = TermCounts(term, weight)
    _bump(entry.per_node, node, delta)
    if not entry.per_node:
        del table[key]
