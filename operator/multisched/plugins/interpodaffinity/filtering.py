"""InterPodAffinity hard constraints (upstream filtering.go): topology-pair counts for Filter.

Counts are keyed by ``(topologyKey, value)`` as upstream ``topologyToMatchedTermCount``;
zero entries are dropped so an empty dict means "nothing matched anywhere", which the
self-affinity special case relies on.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence

from multisched.cache import AffinityTerm, NodeInfo, PodInfo, Snapshot

#: Namespace name -> its labels (``Snapshot.namespace_labels``).
NamespaceLabels = Callable[[str], Mapping[str, str]]
TopologyCounts = dict[tuple[str, str], int]


def incoming_term_matches(term: AffinityTerm, pod: PodInfo, ns_labels: NamespaceLabels) -> bool:
    """Whether an existing ``pod`` is selected by a term of the pod being scheduled.

    Upstream unrolls the incoming pod's namespaceSelector into the namespaces it selects
    (an empty selector stays "all namespaces"); looking up the existing pod's namespace
    labels here selects the same pods.
    """
    if pod.namespace in term.namespaces:
        return term.selector.matches(pod.labels)
    selector = term.namespace_selector
    if selector is None:
        return False
    if selector.is_empty() or selector.matches(ns_labels(pod.namespace)):
        return term.selector.matches(pod.labels)
    return False


def matches_all(terms: Sequence[AffinityTerm], pod: PodInfo, ns_labels: NamespaceLabels) -> bool:
    """Upstream ``podMatchesAllAffinityTerms``: false for no terms."""
    if not terms:
        return False
    return all(incoming_term_matches(t, pod, ns_labels) for t in terms)


def add_count(counts: TopologyCounts, labels: Mapping[str, str], key: str, delta: int) -> None:
    value = labels.get(key)
    if value is None:
        return
    pair = (key, value)
    total = counts.get(pair, 0) + delta
    if total:
        counts[pair] = total
    else:
        counts.pop(pair, None)


def counted_nodes(
    node_map: Mapping[str, NodeInfo], per_node: Mapping[str, int]
) -> Iterator[tuple[Mapping[str, str], int]]:
    """(labels, pods) of each node in ``per_node`` (node name -> pods) that is in the snapshot."""
    for name, n in per_node.items():
        node = node_map.get(name)
        if node is not None:
            yield node.labels, n


def add_node_counts(
    counts: TopologyCounts, node_map: Mapping[str, NodeInfo], per_node: Mapping[str, int], key: str
) -> None:
    """``add_count`` for each pod counted in ``per_node`` (no generator: this runs per node
    holding a matching pod, per term, per cycle)."""
    find = node_map.get
    for name, n in per_node.items():
        node = find(name)
        if node is not None:
            add_count(counts, node.labels, key, n)


def term_counts(snapshot: Snapshot, term: AffinityTerm, namespace: str) -> dict[str, int]:
    """The pods of ``namespace`` the term's label selector matches, per node."""
    selector = term.selector
    first = selector.match_labels[0] if selector.match_labels else None
    return snapshot.selector_counts(namespace, selector.key, selector.matches, first).per_node


def _pods_matching_all(snapshot: Snapshot, terms: Sequence[AffinityTerm]) -> dict[str, int]:
    """Per node, the pods every one of ``terms`` selects (``podMatchesAllAffinityTerms``)."""
    namespaces = frozenset.intersection(*(t.namespaces for t in terms))
    selectors = tuple(t.selector for t in terms)
    first = next((s.match_labels[0] for s in selectors if s.match_labels), None)
    if len(selectors) == 1:  # the common case: shares its counts with spread and other terms
        key: Hashable = selectors[0].key
        matches = selectors[0].matches
    else:
        key = ("all", tuple(s.key for s in selectors))

        def matches(labels: Mapping[str, str]) -> bool:
            return all(s.matches(labels) for s in selectors)

    out: dict[str, int] = {}
    for namespace in namespaces:
        per_node = snapshot.selector_counts(namespace, key, matches, first).per_node
        for name, n in per_node.items():
            out[name] = out.get(name, 0) + n
    return out


def _blocked(counts: TopologyCounts) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for (key, value), count in counts.items():
        if count > 0:
            out.setdefault(key, set()).add(value)
    return out


class PreFilterState:
    """Upstream ``preFilterState``; ``clone`` copies the counts (preemption edits them)."""

    __slots__ = (
        "_blocked",
        "affinity_counts",
        "affinity_terms",
        "anti_affinity_counts",
        "anti_affinity_terms",
        "existing_anti_affinity_counts",
        "matches_own_affinity",
        "namespace_labels",
        "ns_labels",
        "pod",
    )

    def __init__(self, pod: PodInfo, ns_labels: NamespaceLabels) -> None:
        self.pod = pod
        self.ns_labels = ns_labels
        #: Labels of the incoming pod's namespace, for existing pods' terms.
        self.namespace_labels: Mapping[str, str] = ns_labels(pod.namespace)
        self.affinity_terms = pod.affinity_terms
        self.anti_affinity_terms = pod.anti_affinity_terms
        #: The pod matches all its own required affinity terms (self-affinity special case).
        self.matches_own_affinity = matches_all(pod.affinity_terms, pod, ns_labels)
        #: Pairs where existing pods' required anti-affinity terms select the incoming pod.
        self.existing_anti_affinity_counts: TopologyCounts = {}
        #: Pairs with existing pods matching all the incoming pod's affinity terms.
        self.affinity_counts: TopologyCounts = {}
        #: Pairs with existing pods matching one of the incoming pod's anti-affinity terms.
        self.anti_affinity_counts: TopologyCounts = {}
        #: ``existing_anti_affinity_counts`` as topology key -> blocked values (built on use).
        self._blocked: dict[str, set[str]] | None = None

    def clone(self) -> PreFilterState:
        twin = PreFilterState.__new__(PreFilterState)
        twin.pod = self.pod
        twin.ns_labels = self.ns_labels
        twin.namespace_labels = self.namespace_labels
        twin.affinity_terms = self.affinity_terms
        twin.anti_affinity_terms = self.anti_affinity_terms
        twin.matches_own_affinity = self.matches_own_affinity
        twin.existing_anti_affinity_counts = dict(self.existing_anti_affinity_counts)
        twin.affinity_counts = dict(self.affinity_counts)
        twin.anti_affinity_counts = dict(self.anti_affinity_counts)
        twin._blocked = None
        return twin

    def count_existing_anti_affinity(self, nodes: Sequence[NodeInfo]) -> None:
        """Existing pods' required anti-affinity terms that select the incoming pod."""
        pod, ns = self.pod, self.namespace_labels
        counts = self.existing_anti_affinity_counts
        for node in nodes:
            labels = node.labels
            for existing in node.pods_with_required_anti_affinity:
                for term in existing.anti_affinity_terms:
                    if term.matches(pod, ns):
                        add_count(counts, labels, term.topology_key, 1)

    def count_incoming(self, nodes: Sequence[NodeInfo]) -> None:
        """Existing pods selected by the incoming pod's required (anti-)affinity terms."""
        if not self.affinity_terms and not self.anti_affinity_terms:
            return
        for node in nodes:
            for existing in node.pods:
                self._update_incoming(existing, node.labels, 1)

    def count_existing_anti_affinity_indexed(self, snapshot: Snapshot) -> None:
        """``count_existing_anti_affinity`` from the cache's index of existing terms: each
        distinct term is matched against the incoming pod once."""
        pod, ns = self.pod, self.namespace_labels
        counts = self.existing_anti_affinity_counts
        node_map = snapshot.node_info_map
        for entry in snapshot.terms.anti_affinity.values():
            term = entry.term
            if term.matches(pod, ns):
                add_node_counts(counts, node_map, entry.per_node, term.topology_key)

    def count_incoming_indexed(self, snapshot: Snapshot) -> bool:
        """``count_incoming`` from the cache's per-node counts; False (nothing counted) when
        a term selects namespaces by label, which the counts are not kept by."""
        terms = (*self.affinity_terms, *self.anti_affinity_terms)
        if any(t.namespace_selector is not None for t in terms):
            return False
        node_map = snapshot.node_info_map
        if self.affinity_terms:
            # An existing pod counts for affinity when it matches every term.
            per_node = _pods_matching_all(snapshot, self.affinity_terms)
            for term in self.affinity_terms:
                add_node_counts(self.affinity_counts, node_map, per_node, term.topology_key)
        for term in self.anti_affinity_terms:
            for namespace in term.namespaces:
                per_node = term_counts(snapshot, term, namespace)
                add_node_counts(self.anti_affinity_counts, node_map, per_node, term.topology_key)
        return True

    def _update_incoming(self, existing: PodInfo, labels: Mapping[str, str], delta: int) -> None:
        ns_labels = self.ns_labels
        if self.affinity_terms and matches_all(self.affinity_terms, existing, ns_labels):
            for term in self.affinity_terms:
                add_count(self.affinity_counts, labels, term.topology_key, delta)
        for term in self.anti_affinity_terms:
            if incoming_term_matches(term, existing, ns_labels):
                add_count(self.anti_affinity_counts, labels, term.topology_key, delta)

    def update_with_pod(self, existing: PodInfo, node: NodeInfo, delta: int) -> None:
        """Upstream ``updateWithPod``: ``existing`` joins (+1) or leaves (-1) ``node``."""
        labels = node.labels
        pod, ns = self.pod, self.namespace_labels
        self._blocked = None
        for term in existing.anti_affinity_terms:
            if term.matches(pod, ns):
                add_count(self.existing_anti_affinity_counts, labels, term.topology_key, delta)
        self._update_incoming(existing, labels, delta)

    def satisfies_affinity(self, labels: Mapping[str, str]) -> bool:
        pods_exist = True
        counts = self.affinity_counts
        for term in self.affinity_terms:
            value = labels.get(term.topology_key)
            if value is None:
                # All topology labels must exist on the node, even for self-affinity.
                return False
            if counts.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        if pods_exist:
            return True
        # The first pod of a group with affinity to itself may go anywhere the topology
        # exists, as long as no other pod matches yet.
        return not counts and self.matches_own_affinity

    def satisfies_anti_affinity(self, labels: Mapping[str, str]) -> bool:
        counts = self.anti_affinity_counts
        if not counts:
            return True
        for term in self.anti_affinity_terms:
            value = labels.get(term.topology_key)
            if value is not None and counts.get((term.topology_key, value), 0) > 0:
                return False
        return True

    def anti_affinity_blocked(self) -> dict[str, set[str]]:
        """``satisfies_anti_affinity`` as topology key -> the values a node must not have."""
        return _blocked(self.anti_affinity_counts)

    def existing_blocked(self) -> dict[str, set[str]]:
        """``satisfies_existing_anti_affinity`` as topology key -> the values a node must
        not have (kept until the counts change)."""
        if self._blocked is None:
            self._blocked = _blocked(self.existing_anti_affinity_counts)
        return self._blocked

    def satisfies_existing_anti_affinity(self, labels: Mapping[str, str]) -> bool:
        blocked = self.existing_blocked()
        for key, values in blocked.items():  # noqa: SIM110 - per-node hot path, no generator
            if labels.get(key) in values:
                return False
        return True
