"""PodTopologySpread building blocks shared by filtering and scoring (upstream common.go)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from multisched.cache import LabelSelector, NodeInfo, PodInfo, Requirement, Snapshot
from multisched.cache.workloads import (
    CONTROLLER_KINDS,
    ControllerSelector,
    WorkloadStore,
    group_version,
)

from .._node_affinity_required import RequiredNodeAffinity

HONOR = "Honor"


class SpreadSelector:
    """A compiled label selector with upstream's two special cases.

    ``nothing``: a nil labelSelector (matches no pod, not even the incoming one).
    ``empty``: no requirements at all (matches every pod, but upstream counts no pods
    with it; only the incoming pod's self-match sees it as matching).
    """

    __slots__ = ("empty", "key", "label_set", "match_labels", "nothing", "requirements")

    def __init__(
        self,
        match_labels: tuple[tuple[str, str], ...],
        requirements: tuple[Requirement, ...],
        nothing: bool = False,
    ) -> None:
        self.match_labels = match_labels
        self.requirements = requirements
        self.nothing = nothing
        self.empty = not nothing and not match_labels and not requirements
        #: matchLabels as (key, value) pairs: ``label_set <= labels.items()`` is a C-level check.
        self.label_set = frozenset(match_labels)
        #: Identifies what the selector matches (requirements are ANDed, order is irrelevant).
        self.key: tuple[frozenset[tuple[str, str]], frozenset[tuple[str, str, frozenset[str]]]] = (
            self.label_set,
            frozenset((r.key, r.op, r.values) for r in requirements),
        )

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> SpreadSelector:
        """Raises ``SelectorError`` on a selector the API server would refuse."""
        if raw is None:
            return _NOTHING
        sel = LabelSelector.parse(raw)
        return cls(sel.match_labels, sel.requirements)

    def with_labels(self, extra: Mapping[str, str]) -> SpreadSelector:
        """AND ``extra`` (matchLabelKeys values) into the selector; Nothing stays Nothing."""
        if self.nothing or not extra:
            return self
        return SpreadSelector(tuple(extra.items()) + self.match_labels, self.requirements)

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for req in self.requirements:  # noqa: SIM110 - per-pod hot path, no generator
            if not req.matches(labels):
                return False
        return True


_NOTHING = SpreadSelector((), (), nothing=True)
_EMPTY = SpreadSelector((), ())


class Constraint:
    """Upstream ``topologySpreadConstraint``: a pod's constraint with its selector compiled."""

    __slots__ = (
        "honor_node_affinity",
        "honor_node_taints",
        "max_skew",
        "min_domains",
        "selector",
        "topology_key",
    )

    def __init__(
        self,
        max_skew: int,
        topology_key: str,
        selector: SpreadSelector,
        min_domains: int = 1,
        honor_node_affinity: bool = True,
        honor_node_taints: bool = False,
    ) -> None:
        self.max_skew = max_skew
        self.topology_key = topology_key
        self.selector = selector
        self.min_domains = min_domains
        self.honor_node_affinity = honor_node_affinity
        self.honor_node_taints = honor_node_taints

    def with_selector(self, selector: SpreadSelector) -> Constraint:
        return Constraint(
            self.max_skew,
            self.topology_key,
            selector,
            self.min_domains,
            self.honor_node_affinity,
            self.honor_node_taints,
        )


def filter_constraints(
    raws: Iterable[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str
) -> list[Constraint]:
    """The constraints with ``whenUnsatisfiable == action`` (``filterTopologySpreadConstraints``).

    matchLabelKeys: the pod's values of those keys are ANDed into the selector. Unset
    minDomains is 1, nodeAffinityPolicy defaults to Honor and nodeTaintsPolicy to Ignore.
    """
    out = []
    for raw in raws:
        if raw.get("whenUnsatisfiable") != action:
            continue
        selector = SpreadSelector.parse(raw.get("labelSelector"))
        keys = raw.get("matchLabelKeys")
        if keys:
            extra = {k: pod_labels[k] for k in keys if k in pod_labels}
            selector = selector.with_labels(extra)
        min_domains = raw.get("minDomains")
        out.append(
            Constraint(
                int(raw.get("maxSkew") or 0),
                raw.get("topologyKey") or "",
                selector,
                1 if min_domains is None else int(min_domains),
                raw.get("nodeAffinityPolicy", HONOR) in (None, HONOR),
                raw.get("nodeTaintsPolicy") == HONOR,
            )
        )
    return out


def default_selector(pod: PodInfo, workloads: WorkloadStore | None) -> SpreadSelector:
    """Upstream ``helper.DefaultSelector``: the labels of every Service of the pod's namespace
    that selects it, merged, and then its controller's selector (a ReplicationController's
    merged in, a ReplicaSet's or StatefulSet's requirements added). A controller the store
    does not hold adds nothing, as a lister's NotFound does; without a store (a plugin built
    with no cluster) the selector is empty."""
    if workloads is None:
        return _EMPTY
    label_set: dict[str, str] = {}
    for selector in workloads.service_selectors(pod.namespace):
        if selector.matches(pod.labels):
            label_set.update(selector.match_labels)
    requirements: tuple[Requirement, ...] = ()
    extra: tuple[tuple[str, str], ...] = ()
    controller = _controller(pod, workloads)
    if controller is not None and controller.usable:
        if controller.merge:
            label_set.update(controller.match_labels)
        else:
            extra, requirements = controller.match_labels, controller.requirements
    if not label_set and not extra and not requirements:
        return _EMPTY
    return SpreadSelector(tuple(label_set.items()) + extra, requirements)


def _controller(pod: PodInfo, workloads: WorkloadStore) -> ControllerSelector | None:
    """The selector of the pod's controller (``metav1.GetControllerOf``: the first owner
    reference marked controller), if it is a kind ``DefaultSelector`` follows and known."""
    for ref in pod.owner_references:
        if ref.get("controller"):
            gv = group_version(str(ref.get("apiVersion") or ""))
            kind = CONTROLLER_KINDS.get((*gv, str(ref.get("kind") or ""))) if gv else None
            if kind is None:
                return None
            return workloads.controller(kind, pod.namespace, str(ref.get("name") or ""))
    return None


def build_default_constraints(
    defaults: Sequence[Mapping[str, Any]],
    pod: PodInfo,
    action: str,
    workloads: WorkloadStore | None,
) -> list[Constraint]:
    """``buildDefaultConstraints``: the defaults with this action, all using the pod's
    default selector; none when the selector would be empty."""
    constraints = filter_constraints(defaults, pod.labels, action)
    if not constraints:
        return []
    selector = default_selector(pod, workloads)
    if selector.empty:
        return []
    return [c.with_selector(selector) for c in constraints]


def node_has_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``: every topology key is a label of the node."""
    for c in constraints:  # noqa: SIM110 - per-node hot path, no generator
        if c.topology_key not in labels:
            return False
    return True


def count_matching(pods: Sequence[PodInfo], selector: SpreadSelector, namespace: str) -> int:
    """``countPodsMatchSelector``: same-namespace, non-terminating pods the selector matches."""
    if selector.empty or selector.nothing:
        return 0
    count = 0
    if not selector.requirements:  # the common matchLabels-only selector
        wanted = selector.label_set
        for p in pods:
            if p.namespace == namespace and wanted <= p.labels.items() and not p.terminating:
                count += 1
        return count
    matches = selector.matches
    for p in pods:
        if p.namespace == namespace and not p.terminating and matches(p.labels):
            count += 1
    return count


def honors_taints(constraints: Sequence[Constraint]) -> bool:
    """Whether some constraint counts only nodes whose taints the pod tolerates
    (nodeTaintsPolicy: Honor): the cache's per-node counts are not kept by tolerations."""
    return any(c.honor_node_taints for c in constraints)


def affinity_filters(
    constraints: Sequence[Constraint], required: RequiredNodeAffinity
) -> list[bool]:
    """Per constraint, whether it counts only the nodes the pod's node affinity selects."""
    narrowed = not required.selects_all
    return [narrowed and c.honor_node_affinity for c in constraints]


def live_counts(snapshot: Snapshot, selector: SpreadSelector, namespace: str) -> dict[str, int]:
    """``count_matching`` for every node at once, from the cache's index: node name ->
    same-namespace, non-terminating pods the selector matches (nodes with none left out)."""
    if selector.empty or selector.nothing:
        return {}
    first = selector.match_labels[0] if selector.match_labels else None
    return snapshot.selector_counts(namespace, selector.key, selector.matches, first).live()


class PodCountMemo:
    """``count_matching`` results per node, reused while the node's pods stay the same.

    A workload's replicas are scheduled one after another with the same selector, so the
    counts over all nodes barely change between their cycles. ``NodeInfo.generation``
    changes whenever a pod is added to or removed from the node (clones included), so a
    count is valid exactly as long as the generation it was taken at.
    """

    __slots__ = ("_by_node",)

    def __init__(self) -> None:
        self._by_node: dict[str, tuple[int, dict[tuple[str, Any], int]]] = {}

    def count(self, node: NodeInfo, selector: SpreadSelector, namespace: str) -> int:
        if selector.empty or selector.nothing:
            return 0
        entry = self._by_node.get(node.name)
        if entry is None or entry[0] != node.generation:
            entry = self._by_node[node.name] = (node.generation, {})
        counts = entry[1]
        key = (namespace, selector.key)
        n = counts.get(key)
        if n is None:
            n = counts[key] = count_matching(node.pods, selector, namespace)
        return n

    def trim(self, node_count: int) -> None:
        """Forget everything once removed nodes could make up half the entries."""
        if len(self._by_node) > 2 * node_count + 16:
            self._by_node.clear()
