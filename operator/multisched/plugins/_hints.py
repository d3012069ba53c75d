"""Small pieces the built-in plugins' queueing hints share.

Until the framework tells a pod event's target from other pods' (upstream's ``TargetPod``
and ``AssignedPod`` resources), the plugins register ``Pod`` and their hints tell them apart.
"""

from __future__ import annotations

from multisched.cache import PodInfo


def is_target_pod(pod: PodInfo, new: PodInfo | None) -> bool:
    """Whether the pod event is an update of ``pod`` itself (upstream ``TargetPod``)."""
    return new is not None and new.uid == pod.uid


def is_assigned(pod: PodInfo | None) -> bool:
    """Bound or nominated: what it holds on a node counts (upstream's deleted-pod check).
    An unknown pod (a delete sent without its object) may have held anything."""
    return pod is None or bool(pod.node_name or pod.nominated_node_name)
