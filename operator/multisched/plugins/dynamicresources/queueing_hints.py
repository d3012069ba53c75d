"""DynamicResources' queueing hints (upstream ``isSchedulableAfterClaimChange`` and
``isSchedulableAfterTargetPodUpdate``). Both read the pod's claims from the DRA store, which
the feed updates before it raises the event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from multisched.cache import PodInfo
from multisched.cache.dra import DraStore
from multisched.framework.events import QueueingHint

from .._hints import is_target_pod
from .claims import ClaimUnavailable, allocation_of, claim_uid, pod_resource_claims


def is_schedulable_after_claim_change(
    store: DraStore,
    pod: PodInfo,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
) -> QueueingHint:
    """A claim was added, changed or deleted: the pod may go on when one of its own claims
    appeared or changed status, or when any claim released its devices."""
    if new is None:
        if old is None:
            # The final state is unknown: the allocation may have come and gone unseen.
            return QueueingHint.QUEUE
        # Deleted with its final state known: only an allocated claim frees devices (we
        # see every allocation removed, the assume cache gives us our own writes).
        return QueueingHint.QUEUE if allocation_of(old) is not None else QueueingHint.QUEUE_SKIP
    try:
        claims = pod_resource_claims(pod, store)
    except ClaimUnavailable:
        return QueueingHint.QUEUE_SKIP
    if old is not None and allocation_of(old) is not None and allocation_of(new) is None:
        return QueueingHint.QUEUE  # deallocated: devices free for any pod
    uid = claim_uid(new)
    if not any(claim_uid(c) == uid for c in claims):
        return QueueingHint.QUEUE_SKIP  # not a claim the pod waits for
    if old is None:
        return QueueingHint.QUEUE  # the pod's claim got created
    # Nothing in the status changed: the driver added its finalizer, say.
    if (old.get("status") or {}) == (new.get("status") or {}):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def is_schedulable_after_target_pod_update(
    store: DraStore, pod: PodInfo, old: PodInfo | None, new: PodInfo
) -> QueueingHint:
    """The pod's status now names the claims generated for it: it goes on once all of them
    can be found."""
    if not is_target_pod(pod, new):
        return QueueingHint.QUEUE_SKIP
    try:
        pod_resource_claims(new, store)
    except ClaimUnavailable:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE
