"""A node's first NoSchedule/NoExecute taint the pod does not tolerate (upstream
``v1helper.FindMatchingUntoleratedTaint`` with ``DoNotScheduleTaintsFilterFunc``).

Shared by TaintToleration (its filter) and PodTopologySpread (nodeTaintsPolicy: Honor).
"""

from __future__ import annotations

from collections.abc import Sequence

from multisched.cache import NodeInfo, Taint, Toleration

#: Only these effects keep pods off a node; PreferNoSchedule only lowers the score.
FILTERED_EFFECTS = ("NoSchedule", "NoExecute")


def untolerated_taint(node: NodeInfo, tolerations: Sequence[Toleration]) -> Taint | None:
    """``node``'s first NoSchedule/NoExecute taint that none of ``tolerations`` match."""
    for taint in node.taints:
        if taint.effect not in FILTERED_EFFECTS:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None
