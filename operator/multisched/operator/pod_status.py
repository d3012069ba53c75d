"""A pod's status patch waiting in the recorder: its PodScheduled=False and its nomination go
out together, in one patch, as upstream's ``updatePod`` writes both at once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from multisched.cache import PodInfo
from multisched.meta import now_time


class PendingStatus:
    """The latest pod object, and the PodScheduled=False (reason, message) and nomination
    ("" clears) to write, if any."""

    __slots__ = ("condition", "nominated", "pod")

    def __init__(self, pod: PodInfo) -> None:
        self.pod = pod
        self.condition: tuple[str, str] | None = None
        self.nominated: str | None = None

    def patch(self) -> dict[str, Any]:
        """The status fields to write ({}: nothing); the condition is left out when the pod
        already has it."""
        pod = self.pod
        patch: dict[str, Any] = {}
        # Written whatever ``pod`` says: it may predate this scheduler's own last write.
        if self.nominated is not None:
            patch["nominatedNodeName"] = self.nominated or None
        if self.condition is not None:
            generation = int((pod.raw.get("metadata") or {}).get("generation") or 0)
            status = pod.raw.get("status") or {}
            condition = pod_scheduled_false(status, *self.condition, generation)
            if condition is not None:
                patch["conditions"] = [condition]
        return patch

    def keep_unless_newer(self, newer: PendingStatus) -> None:
        """``newer`` was queued while this one failed to go out: it keeps what it does not
        set itself."""
        newer.condition = newer.condition or self.condition
        if newer.nominated is None:
            newer.nominated = self.nominated


def pod_scheduled_false(
    status: Mapping[str, Any], reason: str, message: str, generation: int = 0
) -> dict[str, Any] | None:
    """The PodScheduled=False condition to write, or None when the pod already has it.

    ``observedGeneration`` is the pod's generation (PodObservedGenerationTracking, GA in
    v1.35); as upstream's ``UpdatePodCondition``, a change of it alone writes nothing."""
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
    }
    return changed_condition(status, condition, generation)


def disruption_target(pod: Mapping[str, Any], scheduler_name: str) -> dict[str, Any] | None:
    """The DisruptionTarget condition that marks a preemption victim (upstream
    ``PreemptPod``, naming the preemptor's scheduler), or None when it has it already."""
    condition = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": f"{scheduler_name}: preempting to accommodate a higher priority pod",
    }
    generation = int((pod.get("metadata") or {}).get("generation") or 0)
    return changed_condition(pod.get("status") or {}, condition, generation)


def changed_condition(
    status: Mapping[str, Any], condition: dict[str, Any], generation: int
) -> dict[str, Any] | None:
    """Upstream ``UpdatePodCondition``: ``condition`` as it is to be written, its
    ``lastTransitionTime`` kept while its status does not change, or None when the pod
    already has it (same status, reason and message)."""
    current = next(
        (c for c in status.get("conditions") or () if c.get("type") == condition["type"]),
        None,
    )
    keys = ("status", "reason", "message")
    if current is not None and all(current.get(k) == condition[k] for k in keys):
        return None
    since = (
        current.get("lastTransitionTime")
        if current is not None and current.get("status") == condition["status"]
        else None
    )
    return {
        **condition,
        "lastTransitionTime": since or now_time(),
        **({"observedGeneration": generation} if generation else {}),
    }
