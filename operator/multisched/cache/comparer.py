"""The cache against the API (upstream ``internal/cache/debugger/comparer.go``).

kube-scheduler compares its cache with a fresh listing on SIGUSR2 and logs what is missed
(in the API, not in the cache) and redundant (in the cache, not in the API). Here the
same comparison also answers ``/debug/cache``. Assumed pods are the scheduler's own
decisions not yet confirmed: they are reported apart, not as redundant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .cache import Cache


@dataclass(slots=True)
class CacheDiff:
    missed_nodes: list[str] = field(default_factory=list)
    redundant_nodes: list[str] = field(default_factory=list)
    #: Pod keys (namespace/name) bound in the API, absent from the cache.
    missed_pods: list[str] = field(default_factory=list)
    #: Pod keys in the cache (confirmed, not assumed) that the API does not list.
    redundant_pods: list[str] = field(default_factory=list)
    #: Pod key -> (node in the cache, node in the API).
    moved_pods: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Pods the scheduler assumed and the API does not show bound yet.
    assumed_pods: list[str] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not (
            self.missed_nodes
            or self.redundant_nodes
            or self.missed_pods
            or self.redundant_pods
            or self.moved_pods
        )

    def lines(self) -> list[str]:
        """One line per finding, as the comparer logs them."""
        out = [
            f"{what}: {', '.join(items)}"
            for what, items in (
                ("missed nodes (in the API, not in the cache)", self.missed_nodes),
                ("redundant nodes (in the cache, not in the API)", self.redundant_nodes),
                ("missed pods", self.missed_pods),
                ("redundant pods", self.redundant_pods),
            )
            if items
        ]
        out += [
            f"pod {key} is on {cached} in the cache but on {actual} in the API"
            for key, (cached, actual) in sorted(self.moved_pods.items())
        ]
        if self.assumed_pods:
            out.append(f"assumed, not yet confirmed: {', '.join(self.assumed_pods)}")
        return out or ["cache and API agree"]


def compare(cache: Cache, nodes: set[str], pods: Mapping[str, tuple[str, str]]) -> CacheDiff:
    """``nodes``: the Node names listed; ``pods``: uid -> (key, nodeName) of the bound,
    unfinished pods listed (the assigned-pod informer's selection)."""
    diff = CacheDiff()
    cached_nodes = {info.name for info in cache.snapshot.node_info_list}
    diff.missed_nodes = sorted(nodes - cached_nodes)
    diff.redundant_nodes = sorted(cached_nodes - nodes)
    seen: set[str] = set()
    for pod in cache.pods():
        seen.add(pod.uid)
        listed = pods.get(pod.uid)
        if listed is None:
            (diff.assumed_pods if cache.is_assumed(pod.uid) else diff.redundant_pods).append(
                pod.key
            )
        elif listed[1] != pod.node_name:
            diff.moved_pods[pod.key] = (pod.node_name, listed[1])
    diff.missed_pods = sorted(key for uid, (key, _) in pods.items() if uid not in seen)
    diff.redundant_pods.sort()
    diff.assumed_pods.sort()
    return diff
