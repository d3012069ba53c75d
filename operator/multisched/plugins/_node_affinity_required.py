"""The pod's nodeSelector plus required node affinity (``nodeaffinity.RequiredNodeAffinity``).

Shared by NodeAffinity (its filter) and PodTopologySpread (nodeAffinityPolicy: Honor).
"""

from __future__ import annotations

from collections.abc import Hashable

from multisched.cache import NodeInfo, NodeSelector, PodInfo


class RequiredNodeAffinity:
    """Built once per cycle; ``matches`` is a few dict look-ups per node."""

    __slots__ = ("affinity", "key", "node_selector")

    def __init__(self, pod: PodInfo) -> None:
        self.node_selector: tuple[tuple[str, str], ...] = tuple(pod.node_selector.items())
        self.affinity: NodeSelector | None = pod.required_node_affinity
        #: Two pods with one key select the same nodes.
        self.key: Hashable = (
            self.node_selector,
            None
            if self.affinity is None
            else tuple(
                (
                    tuple((r.key, r.op, r.values) for r in term.expressions),
                    tuple((r.key, r.op, r.values) for r in term.fields),
                )
                for term in self.affinity.terms
            ),
        )

    @property
    def selects_all(self) -> bool:
        """Neither a nodeSelector nor required node affinity: every node matches."""
        return not self.node_selector and self.affinity is None

    def matches(self, node: NodeInfo) -> bool:
        labels = node.labels
        for key, value in self.node_selector:
            if labels.get(key) != value:
                return False
        affinity = self.affinity
        return affinity is None or affinity.matches(labels, node.name)

    def clone(self) -> RequiredNodeAffinity:
        """Immutable: preemption's CycleState copies may share it."""
        return self
