"""``NodeInfo``: a node plus the aggregate of the pods on it (bound and assumed)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from .declared_features import node_declared_features
from .pod_info import PodInfo, Taint
from .quantity import QuantityError
from .resources import Resource

_generation = itertools.count(1)

BIND_ALL_HOST_IP = "0.0.0.0"


class NodeError(ValueError):
    """A node object the scheduler cannot read."""


class ImageStateSummary:
    """An image on a node: its size and on how many nodes it is present (for ImageLocality)."""

    __slots__ = ("num_nodes", "size")

    def __init__(self, size: int, num_nodes: int) -> None:
        self.size = size
        self.num_nodes = num_nodes


class HostPortInfo:
    """Used host ports by IP, with upstream's 0.0.0.0 wildcard conflict rules."""

    __slots__ = ("by_ip",)

    def __init__(self) -> None:
        self.by_ip: dict[str, dict[tuple[str, int], int]] = {}

    def add(self, ip: str, protocol: str, port: int) -> None:
        used = self.by_ip.setdefault(ip or BIND_ALL_HOST_IP, {})
        key = (protocol or "TCP", port)
        used[key] = used.get(key, 0) + 1

    def remove(self, ip: str, protocol: str, port: int) -> None:
        ip = ip or BIND_ALL_HOST_IP
        used = self.by_ip.get(ip)
        key = (protocol or "TCP", port)
        if used is None or key not in used:
            return
        used[key] -= 1
        if not used[key]:
            del used[key]
            if not used:
                del self.by_ip[ip]

    def conflicts(self, ip: str, protocol: str, port: int) -> bool:
        if port <= 0:
            return False
        ip = ip or BIND_ALL_HOST_IP
        key = (protocol or "TCP", port)
        if ip == BIND_ALL_HOST_IP:
            return any(key in used for used in self.by_ip.values())
        for candidate in (BIND_ALL_HOST_IP, ip):
            used = self.by_ip.get(candidate)
            if used is not None and key in used:
                return True
        return False

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_ip.values())


class NodeInfo:
    """Scheduler-side state of one node. ``generation`` bumps on every change."""

    __slots__ = (
        "allocatable",
        "declared_features",
        "generation",
        "image_states",
        "index",
        "labels",
        "name",
        "non_zero_cpu",
        "non_zero_memory",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "pvc_ref_counts",
        "raw",
        "requested",
        "taints",
        "unschedulable",
        "used_ports",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.raw: dict[str, Any] = {}
        self.labels: dict[str, str] = {}
        self.taints: tuple[Taint, ...] = ()
        self.unschedulable = False
        #: ``status.declaredFeatures`` as a set of the known features (declared_features.py).
        self.declared_features = 0
        self.allocatable = Resource()
        self.requested = Resource()
        self.non_zero_cpu = 0
        self.non_zero_memory = 0
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        #: ``namespace/claim`` -> pods on this node using that claim (upstream PVCRefCounts).
        self.pvc_ref_counts: dict[str, int] = {}
        #: Image name -> summary; filled by the cache, which knows every node's images.
        self.image_states: dict[str, ImageStateSummary] = {}
        #: Position in the snapshot's node list (-1: not in it, as a clone is not).
        self.index = -1
        self.generation = next(_generation)

    @classmethod
    def from_node(cls, raw: Mapping[str, Any]) -> NodeInfo:
        info = cls((raw.get("metadata") or {}).get("name") or "")
        info.set_node(raw)
        return info

    def set_node(self, raw: Mapping[str, Any]) -> None:
        """(Re)read the Node object; pods on it are kept."""
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        try:
            allocatable = Resource.from_list(status.get("allocatable") or status.get("capacity"))
        except QuantityError as exc:
            raise NodeError(f"node {meta.get('name')}: status.allocatable: {exc}") from exc
        self.raw = dict(raw)
        self.labels = dict(meta.get("labels") or {})
        self.taints = tuple(Taint.parse(t) for t in spec.get("taints") or ())
        self.unschedulable = bool(spec.get("unschedulable"))
        self.declared_features = node_declared_features(status)
        self.allocatable = allocatable
        self.generation = next(_generation)

    @property
    def node_images(self) -> list[tuple[tuple[str, ...], int]]:
        """``status.images`` as (names, sizeBytes)."""
        status = self.raw.get("status") or {}
        return [
            (tuple(img.get("names") or ()), int(img.get("sizeBytes") or 0))
            for img in status.get("images") or ()
        ]

    def add_pod(self, pod: PodInfo) -> None:
        self.pods.append(pod)
        if pod.has_affinity:
            self.pods_with_affinity.append(pod)
        if pod.anti_affinity_terms:
            self.pods_with_required_anti_affinity.append(pod)
        self._account(pod, 1)

    def remove_pod(self, pod: PodInfo) -> bool:
        """Remove by UID; False if the pod was not on this node."""
        for i, existing in enumerate(self.pods):
            if existing.uid == pod.uid:
                del self.pods[i]
                break
        else:
            return False
        _remove_uid(self.pods_with_affinity, pod.uid)
        _remove_uid(self.pods_with_required_anti_affinity, pod.uid)
        self._account(existing, -1)
        return True

    def _account(self, pod: PodInfo, sign: int) -> None:
        self.requested.add(pod.requests, sign)
        self.requested.allowed_pod_number += sign
        self.non_zero_cpu += sign * pod.non_zero_cpu
        self.non_zero_memory += sign * pod.non_zero_memory
        for ip, protocol, port in pod.host_ports:
            if sign > 0:
                self.used_ports.add(ip, protocol, port)
            else:
                self.used_ports.remove(ip, protocol, port)
        if pod.claim_keys:
            counts = self.pvc_ref_counts
            for key in pod.claim_keys:
                left = counts.get(key, 0) + sign
                if left > 0:
                    counts[key] = left
                else:
                    counts.pop(key, None)
        self.generation = next(_generation)

    def clone(self) -> NodeInfo:
        """A copy whose pod list and aggregates can change without touching this one."""
        twin = NodeInfo.__new__(NodeInfo)
        twin.name = self.name
        twin.raw = self.raw
        twin.labels = self.labels
        twin.taints = self.taints
        twin.unschedulable = self.unschedulable
        twin.declared_features = self.declared_features
        twin.allocatable = self.allocatable
        twin.requested = self.requested.clone()
        twin.non_zero_cpu = self.non_zero_cpu
        twin.non_zero_memory = self.non_zero_memory
        twin.pods = list(self.pods)
        twin.pods_with_affinity = list(self.pods_with_affinity)
        twin.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        twin.used_ports = HostPortInfo()
        for ip, used in self.used_ports.by_ip.items():
            twin.used_ports.by_ip[ip] = dict(used)
        twin.pvc_ref_counts = dict(self.pvc_ref_counts)
        twin.image_states = self.image_states
        twin.index = -1
        twin.generation = self.generation
        return twin

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"


def _remove_uid(pods: list[PodInfo], uid: str) -> None:
    for i, existing in enumerate(pods):
        if existing.uid == uid:
            del pods[i]
            return
