"""The scheduler cache: nodes, bound and assumed pods, and the snapshot a cycle reads.

A pod is *assumed* on its node the moment a cycle picks that node, so the next cycle sees
its requests before the API server confirms the binding; the watch confirms it (the bound
pod is observed) or the binder forgets it (binding failed). Once the binding is sent
(``finish_binding``) an assumption gets a deadline: if the watch never confirms it,
``cleanup_assumed_pods`` drops it then (upstream's assumed-pod expiry).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .groups import GroupStore
from .node_info import ImageStateSummary, NodeInfo
from .pod_info import PodInfo
from .resources import Resource
from .volumes import VolumeStore

_NO_DEADLINE = float("inf")


class Snapshot:
    """What one scheduling cycle reads. Lists are rebuilt only when the node set changes."""

    __slots__ = (
        "_affinity_list",
        "_anti_affinity_list",
        "_cache",
        "node_info_list",
        "node_info_map",
    )

    def __init__(self, cache: Cache) -> None:
        self._cache = cache
        self.node_info_list: list[NodeInfo] = []
        self.node_info_map: dict[str, NodeInfo] = {}
        self._affinity_list: list[NodeInfo] | None = None
        self._anti_affinity_list: list[NodeInfo] | None = None

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

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        return self._cache.namespaces.get(namespace, {})

    @property
    def pdbs(self) -> list[dict[str, Any]]:
        return list(self._cache.pdbs.values())

    @property
    def volumes(self) -> VolumeStore:
        """PVs, claims, StorageClasses and CSI objects, with the binder's assumptions."""
        return self._cache.volumes

    def namespace_requests(self, namespace: str) -> Resource:
        """What the pods of ``namespace`` on nodes request (assumed pods included)."""
        return self._cache.namespace_requests.get(namespace) or Resource()

    @property
    def groups(self) -> GroupStore:
        """PodGroups, ElasticQuotas and the pods of each group."""
        return self._cache.groups

    def _invalidate_pod_lists(self) -> None:
        self._affinity_list = None
        self._anti_affinity_list = None


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
        #: PodGroups, ElasticQuotas and the pods of each group (the gang and quota plugins).
        self.groups = GroupStore()
        #: Requests of the pods on nodes (assumed ones included), per namespace: what
        #: CapacityScheduling charges against an ElasticQuota.
        self.namespace_requests: dict[str, Resource] = {}
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
            info.set_node(raw)
        self._add_images(info)
        if name not in self._known_nodes:
            self._known_nodes[name] = None
            # A new node goes last, as a rebuild would put it. A fresh list (a C-speed copy)
            # leaves lists that readers hold unchanged; the map is only looked up, so it
            # grows in place. Rebuilding both made adding 5,000 nodes quadratic.
            snap = self.snapshot
            snap.node_info_list = [*snap.node_info_list, info]
            snap.node_info_map[name] = info
        self.snapshot._invalidate_pod_lists()
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
        snap.node_info_list = [self._nodes[n] for n in self._known_nodes]
        snap.node_info_map = {n.name: n for n in snap.node_info_list}
        snap._invalidate_pod_lists()

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
        self._node_for(node_name).add_pod(assumed)
        self._charge(assumed, 1)
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
        self._node_for(pod.node_name).add_pod(pod)
        self._charge(pod, 1)
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

    def _charge(self, pod: PodInfo, sign: int) -> None:
        used = self.namespace_requests.get(pod.namespace)
        if used is None:
            used = self.namespace_requests[pod.namespace] = Resource()
        used.add(pod.requests, sign)

    def _drop_from_node(self, pod: PodInfo) -> None:
        self._charge(pod, -1)
        info = self._nodes.get(pod.node_name)
        if info is None:
            return
        info.remove_pod(pod)
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
