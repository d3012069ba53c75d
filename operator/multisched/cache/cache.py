"""The scheduler cache: nodes, bound and assumed pods, and the snapshot a cycle reads.

A pod is *assumed* on its node the moment a cycle picks that node, so the next cycle sees
its requests before the API server confirms the binding; the watch confirms it (the bound
pod is observed) or the binder forgets it (binding failed). Once the binding is sent
(``finish_binding``) an assumption gets a deadline: if the watch never confirms it,
``cleanup_assumed_pods`` drops it then (upstream's assumed-pod expiry).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from .columns import lookup_all
from .dra import DraStore
from .groups import GroupStore
from .node_info import ImageStateSummary, NodeInfo
from .pod_counts import Matcher, SelectorCounts, SelectorIndex, TermIndex
from .pod_info import PodInfo
from .resources import Resource
from .volumes import VolumeStore
from .workloads import WorkloadStore

_NO_DEADLINE = float("inf")
#: Sets of topology domains kept at most (per set of keys and node affinity asked for), and
#: label columns (per key).
MAX_DOMAIN_SETS = 64


class Snapshot:
    """What one scheduling cycle reads. Lists are rebuilt only when the node set changes."""

    __slots__ = (
        "_affinity_list",
        "_anti_affinity_list",
        "_cache",
        "_columns",
        "_domains",
        "_marks",
        "log_epoch",
        "node_info_list",
        "node_info_map",
        "node_log",
    )

    def __init__(self, cache: Cache) -> None:
        self._cache = cache
        self.node_info_list: list[NodeInfo] = []
        self.node_info_map: dict[str, NodeInfo] = {}
        self._affinity_list: list[NodeInfo] | None = None
        self._anti_affinity_list: list[NodeInfo] | None = None
        #: topology keys -> per key, its values on the nodes carrying every one of the keys.
        self._domains: dict[tuple[tuple[str, ...], Hashable], list[dict[str, int]]] = {}
        #: label key -> each listed node's value of it (None: the node lacks it).
        self._columns: dict[str, dict[NodeInfo, str | None]] = {}
        #: Indexes (``NodeInfo.index``) of the nodes changed, in order, since the node list
        #: was last rebuilt (``log_epoch`` counts rebuilds): what per-node values kept
        #: between cycles must recompute.
        self.node_log: list[int] = []
        self.log_epoch = 0
        #: What ``any_node`` answered, per question, until a Node object changes.
        self._marks: dict[Callable[[NodeInfo], object], bool] = {}

    def get(self, name: str) -> NodeInfo | None:
        return self.node_info_map.get(name)

    def __len__(self) -> int:
        return len(self.node_info_list)

    def have_pods_with_affinity_list(self) -> list[NodeInfo]:
        if self._affinity_list is None:
            self._affinity_list = [n for n in self.node_info_list if n.pods_with_affinity]
        return self._affinity_list

    def have_pods_with_required_anti_affinity_list(self) -> list[NodeInfo]:
        if self._anti_affinity_list is None:
            self._anti_affinity_list = [
                n for n in self.node_info_list if n.pods_with_required_anti_affinity
            ]
        return self._anti_affinity_list

    def any_node(self, mark: Callable[[NodeInfo], object]) -> bool:
        """Whether ``mark`` (a read of a Node's own fields, as ``attrgetter("taints")``) is
        truthy for some node, kept until a Node object changes: most clusters have no
        cordoned or tainted node, and the Filter and Score plugins that look for one asked
        each of a cycle's nodes, three times a cycle."""
        found = self._marks.get(mark)
        if found is None:
            found = self._marks[mark] = any(map(mark, self.node_info_list))
        return found

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        return self._cache.namespaces.get(namespace, {})

    def selector_counts(
        self,
        namespace: str,
        key: Hashable,
        matches: Matcher,
        first_label: tuple[str, str] | None,
    ) -> SelectorCounts:
        """The pods of ``namespace`` that ``matches``, per node, kept current by the cache."""
        return self._cache.selector_index.counts(namespace, key, matches, first_label)

    def has_image(self, name: str) -> bool:
        """Whether some node reports the image ``name`` (as ``NodeInfo.image_states`` keys it)."""
        return name in self._cache._images

    @property
    def terms(self) -> TermIndex:
        """The existing pods' pod (anti-)affinity terms, per node."""
        return self._cache.term_index

    def topology_domains(
        self,
        keys: tuple[str, ...],
        accept: Callable[[NodeInfo], bool] | None = None,
        accept_key: Hashable = None,
    ) -> list[dict[str, int]]:
        """For each of ``keys``, its values on the nodes that carry all of ``keys`` (and that
        ``accept`` accepts, if given; ``accept_key`` names what it accepts), each mapped to
        0: a fresh copy is the caller's to fill. Kept until a node's labels or the node set
        change."""
        cache_key = (keys, accept_key)
        domains = self._domains.get(cache_key)
        if domains is None:
            domains = [{} for _ in keys]
            for node in self.node_info_list:
                labels = node.labels
                values = [labels.get(k) for k in keys]
                if None in values or (accept is not None and not accept(node)):
                    continue
                for domain, value in zip(domains, values, strict=True):
                    domain[value] = 0  # type: ignore[index]
            if len(self._domains) >= MAX_DOMAIN_SETS:
                self._domains.clear()
            self._domains[cache_key] = domains
        return [dict(d) for d in domains]

    def label_values(self, key: str, nodes: Sequence[NodeInfo]) -> list[str | None]:
        """Each of ``nodes``' value of label ``key`` (None where it lacks it), read from a
        column kept until a node's labels or the node set change: one C-level lookup per
        node, where reading each node's labels is several Python steps."""
        column = self._columns.get(key)
        if column is None:
            if len(self._columns) >= MAX_DOMAIN_SETS:
                self._columns.clear()
            column = self._columns[key] = {n: n.labels.get(key) for n in self.node_info_list}
        try:
            return lookup_all(column, nodes)
        except KeyError:  # a clone, or a node of another cache: read its labels
            return [column[n] if n in column else n.labels.get(key) for n in nodes]

    @property
    def pdbs(self) -> list[dict[str, Any]]:
        return list(self._cache.pdbs.values())

    @property
    def volumes(self) -> VolumeStore:
        """PVs, claims, StorageClasses and CSI objects, with the binder's assumptions."""
        return self._cache.volumes

    @property
    def dra(self) -> DraStore:
        """DeviceClasses, ResourceClaims (with assumptions and in-flight allocations),
        templates, ResourceSlices, and the devices the claims take."""
        return self._cache.dra

    def namespace_requests(self, namespace: str) -> Resource:
        """What the pods of ``namespace`` on nodes request (assumed pods included)."""
        return self._cache.namespace_requests.get(namespace) or Resource()

    @property
    def workloads(self) -> WorkloadStore:
        """The selectors of Services, ReplicaSets, StatefulSets and ReplicationControllers."""
        return self._cache.workloads

    @property
    def groups(self) -> GroupStore:
        """PodGroups, ElasticQuotas and the pods of each group."""
        return self._cache.groups

    def _invalidate_pod_lists(self) -> None:
        self._affinity_list = None
        self._anti_affinity_list = None

    def _invalidate_domains(self) -> None:
        if self._domains:
            self._domains = {}
        if self._columns:
            self._columns = {}

    def _invalidate_marks(self) -> None:
        if self._marks:
            self._marks = {}

    def _changed(self, node: NodeInfo) -> None:
        index = node.index
        if index < 0:
            return
        log = self.node_log
        log.append(index)
        if len(log) > 4 * len(self.node_info_list) + 256:
            self._restart_log()

    def _restart_log(self) -> None:
        self.node_log = []
        self.log_epoch += 1


class Cache:
    """Nodes and pods by name/UID; every mutation keeps the snapshot valid."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeInfo] = {}
        #: Nodes the API has told us about (pods may name nodes not seen yet).
        self._known_nodes: dict[str, None] = {}
        self._pods: dict[str, PodInfo] = {}
        #: Assumed pod uid -> deadline (inf while its binding is still under way).
        self._assumed: dict[str, float] = {}
        self._images: dict[str, ImageStateSummary] = {}
        self._image_nodes: dict[str, set[str]] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        self.pdbs: dict[str, dict[str, Any]] = {}
        self.volumes = VolumeStore()
        #: DRA's objects (the DynamicResources plugin, and NodeResourcesFit's device-backed
        #: extended resources).
        self.dra = DraStore()
        #: PodGroups, ElasticQuotas and the pods of each group (the gang and quota plugins).
        self.groups = GroupStore()
        #: Services and pod controllers: PodTopologySpread's default selectors.
        self.workloads = WorkloadStore()
        #: Requests of the pods on nodes (assumed ones included), per namespace: what
        #: CapacityScheduling charges against an ElasticQuota.
        self.namespace_requests: dict[str, Resource] = {}
        #: Pods per node that PodTopologySpread's and InterPodAffinity's selectors match,
        #: and the existing pods' affinity terms per node.
        self.selector_index = SelectorIndex(self._pods.values)
        self.term_index = TermIndex()
        self.snapshot = Snapshot(self)

    # -- nodes ---------------------------------------------------------------------------

    def add_node(self, raw: Mapping[str, Any]) -> NodeInfo:
        """Add or update a Node object."""
        name = (raw.get("metadata") or {}).get("name") or ""
        info = self._nodes.get(name)
        if info is None:
            info = NodeInfo.from_node(raw)
            self._nodes[name] = info
        else:
            self._remove_images(info)
            labels = info.labels
            info.set_node(raw)
            if info.labels != labels:
                self.snapshot._invalidate_domains()
        self._add_images(info)
        if name not in self._known_nodes:
            self.snapshot._invalidate_domains()
            self._known_nodes[name] = None
            # A new node goes last, as a rebuild would put it. A fresh list (a C-speed copy)
            # leaves lists that readers hold unchanged; the map is only looked up, so it
            # grows in place. Rebuilding both made adding 5,000 nodes quadratic.
            snap = self.snapshot
            info.index = len(snap.node_info_list)
            snap.node_info_list = [*snap.node_info_list, info]
            snap.node_info_map[name] = info
        self.snapshot._changed(info)
        self.snapshot._invalidate_pod_lists()
        self.snapshot._invalidate_marks()
        return info

    update_node = add_node

    def remove_node(self, name: str) -> None:
        info = self._nodes.get(name)
        if info is None:
            return
        self._remove_images(info)
        self._known_nodes.pop(name, None)
        if info.pods:
            # Pods still name the node; keep their accounting until they go (upstream).
            info.raw = {}
        else:
            del self._nodes[name]
        self._rebuild_node_list()

    def _rebuild_node_list(self) -> None:
        snap = self.snapshot
        for info in snap.node_info_list:
            info.index = -1  # a removed node's info may live on, out of the list
        snap.node_info_list = [self._nodes[n] for n in self._known_nodes]
        for i, info in enumerate(snap.node_info_list):
            info.index = i
        snap.node_info_map = {n.name: n for n in snap.node_info_list}
        snap._invalidate_pod_lists()
        snap._invalidate_domains()
        snap._invalidate_marks()
        snap._restart_log()

    def _add_images(self, info: NodeInfo) -> None:
        info.image_states = {}
        for names, size in info.node_images:
            for name in names:
                nodes = self._image_nodes.setdefault(name, set())
                nodes.add(info.name)
                state = self._images.get(name)
                if state is None:
                    state = self._images[name] = ImageStateSummary(size, 0)
                state.num_nodes = len(nodes)
                info.image_states[name] = state

    def _remove_images(self, info: NodeInfo) -> None:
        for name in info.image_states:
            nodes = self._image_nodes.get(name)
            if nodes is None:
                continue
            nodes.discard(info.name)
            self._images[name].num_nodes = len(nodes)
            if not nodes:
                del self._image_nodes[name]
                del self._images[name]
        info.image_states = {}

    @property
    def node_count(self) -> int:
        return len(self._known_nodes)

    # -- pods ----------------------------------------------------------------------------

    def _node_for(self, name: str) -> NodeInfo:
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo(name)
        return info

    def assume_pod(self, pod: PodInfo, node_name: str) -> PodInfo:
        """Count ``pod`` on ``node_name`` now; returns the assumed copy (nodeName set)."""
        if pod.uid in self._pods:
            raise ValueError(f"pod {pod.key} is already in the cache")
        assumed = _with_node(pod, node_name)
        node = self._node_for(node_name)
        node.add_pod(assumed)
        self.snapshot._changed(node)
        self._charge(assumed, 1)
        self._count(assumed, 1)
        self._pods[pod.uid] = assumed
        self._assumed[pod.uid] = _NO_DEADLINE
        self._pod_lists_changed(pod)
        return assumed

    def forget_pod(self, pod: PodInfo) -> None:
        """Undo an assumption (binding failed); a confirmed pod is left alone."""
        if self._assumed.pop(pod.uid, None) is None:
            return
        existing = self._pods.pop(pod.uid)
        self._drop_from_node(existing)

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def finish_binding(self, uid: str, deadline: float) -> None:
        """The binding was sent (or its outcome is unknown): expire the assumption at
        ``deadline`` unless the watch confirms it first."""
        if uid in self._assumed:
            self._assumed[uid] = deadline

    def cleanup_assumed_pods(self, now: float) -> list[PodInfo]:
        """Drop assumptions whose deadline passed; returns them (their room is free again)."""
        expired = [uid for uid, deadline in self._assumed.items() if deadline <= now]
        out = []
        for uid in expired:
            del self._assumed[uid]
            pod = self._pods.pop(uid)
            self._drop_from_node(pod)
            out.append(pod)
        return out

    def add_pod(self, pod: PodInfo) -> None:
        """A bound pod was observed: confirm its assumption or add it."""
        if not pod.node_name:
            return
        existing = self._pods.get(pod.uid)
        if existing is not None:
            self._assumed.pop(pod.uid, None)
            self._drop_from_node(existing)
        node = self._node_for(pod.node_name)
        node.add_pod(pod)
        self.snapshot._changed(node)
        self._charge(pod, 1)
        self._count(pod, 1)
        self._pods[pod.uid] = pod
        self._pod_lists_changed(pod)

    update_pod = add_pod

    def remove_pod(self, uid: str) -> PodInfo | None:
        existing = self._pods.pop(uid, None)
        if existing is None:
            return None
        self._assumed.pop(uid, None)
        self._drop_from_node(existing)
        return existing

    def get_pod(self, uid: str) -> PodInfo | None:
        return self._pods.get(uid)

    def pods(self) -> Iterable[PodInfo]:
        return self._pods.values()

    def sizes(self) -> dict[str, int]:
        """Assumed pods, pods (assumed ones included) and nodes (those pods name but the API
        has not shown yet included), as upstream's ``cache_size`` counts them."""
        return {
            "assumed_pods": len(self._assumed),
            "pods": len(self._pods),
            "nodes": len(self._nodes),
        }

    def _charge(self, pod: PodInfo, sign: int) -> None:
        used = self.namespace_requests.get(pod.namespace)
        if used is None:
            used = self.namespace_requests[pod.namespace] = Resource()
        used.add(pod.requests, sign)

    def _count(self, pod: PodInfo, delta: int) -> None:
        self.selector_index.on_pod(pod, delta)
        self.term_index.on_pod(pod, delta)

    def _drop_from_node(self, pod: PodInfo) -> None:
        self._charge(pod, -1)
        self._count(pod, -1)
        info = self._nodes.get(pod.node_name)
        if info is None:
            return
        info.remove_pod(pod)
        self.snapshot._changed(info)
        if not info.pods and info.name not in self._known_nodes:
            del self._nodes[info.name]
        self._pod_lists_changed(pod)

    def _pod_lists_changed(self, pod: PodInfo) -> None:
        """The snapshot's lists of nodes with (anti-)affinity pods change only with such a
        pod; keeping them for other pods spares rebuilding them (a scan of every node)
        after every assume and bind."""
        if pod.has_affinity:
            self.snapshot._invalidate_pod_lists()

    # -- other objects the plugins read --------------------------------------------------

    def set_namespace(self, name: str, labels: Mapping[str, str] | None) -> None:
        if labels is None:
            self.namespaces.pop(name, None)
        else:
            self.namespaces[name] = dict(labels)

    def set_pdb(self, key: str, raw: Mapping[str, Any] | None) -> None:
        if raw is None:
            self.pdbs.pop(key, None)
        else:
            self.pdbs[key] = dict(raw)


def _with_node(pod: PodInfo, node_name: str) -> PodInfo:
    """A shallow copy of ``pod`` bound to ``node_name`` (the original stays queued as is)."""
    twin = PodInfo.__new__(PodInfo)
    for slot in PodInfo.__slots__:
        setattr(twin, slot, getattr(pod, slot))
    twin.node_name = node_name
    return twin
