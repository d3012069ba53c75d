"""The claim writes of PreBind and Unreserve (upstream ``bindClaim`` and Unreserve's
reservedFor patch), through ``ClusterClient.update_claim``/``update_claim_status``.

A conflict (409: the claim changed since it was read) is retried with the store's latest
version, five attempts in all as client-go's ``retry.DefaultRetry``; upstream GETs the
claim from the API server there, the store is what the informer last brought.
"""

from __future__ import annotations

import logging
from typing import Any

from multisched.cache import PodInfo
from multisched.cache.dra import DraStore
from multisched.framework import ClusterClient
from multisched.meta import now_time

from .claims import FINALIZER, ClaimStore, allocation_of, claim_ref, pod_reference
from .extended import (
    ExtendedResources,
    create_extended_resource_claim_in_api,
    is_special_claim,
    patch_pod_extended_resource_claim_status,
    wait_for_extended_claim_in_assume_cache,
)

logger = logging.getLogger(__name__)

Obj = dict[str, Any]

#: ``retry.DefaultRetry.Steps``.
RETRY_STEPS = 5


class BindError(Exception):
    """PreBind could not record a claim: the text is upstream's error, ``cause`` the API's."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


def _is_conflict(exc: BaseException) -> bool:
    return getattr(exc, "status", None) == 409


def _latest(store: DraStore, claim: Obj) -> Obj:
    meta = claim.get("metadata") or {}
    latest = store.get_claim(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    if latest is None:
        raise BindError(
            f"get updated claim {claim_ref(claim)} after conflict: could not find "
            f'ResourceClaim "{claim_ref(claim)}"'
        )
    return latest


def _copy(claim: Obj) -> Obj:
    """The claim with its own metadata and status dicts (the nested rest is only read)."""
    return {
        **claim,
        "metadata": dict(claim.get("metadata") or {}),
        "status": dict(claim.get("status") or {}),
    }


async def bind_claim(
    client: ClusterClient, store: DraStore, claim: Obj, allocation: Obj | None, pod: PodInfo
) -> Obj:
    """Write ``allocation`` (Reserve's, None for a claim allocated already) and the pod's
    reservation into the claim; the finalizer first, in a plain update, so that a claim
    in use cannot go. Returns the stored claim; raises ``BindError``."""
    last: BindError | None = None
    for attempt in range(RETRY_STEPS):
        if attempt:
            claim = _latest(store, claim)
        try:
            return await _write(client, claim, allocation, pod)
        except BindError as exc:
            if exc.cause is None or not _is_conflict(exc.cause):
                raise
            last = exc
    assert last is not None
    raise last


async def _write(client: ClusterClient, claim: Obj, allocation: Obj | None, pod: PodInfo) -> Obj:
    ref = claim_ref(claim)
    if (claim.get("metadata") or {}).get("deletionTimestamp") is not None:
        raise BindError(f"claim {ref} got deleted in the meantime")
    claim = _copy(claim)
    if allocation is not None:
        if allocation_of(claim) is not None:
            raise BindError(f"claim {ref} got allocated elsewhere in the meantime")
        finalizers = list(claim["metadata"].get("finalizers") or ())
        if FINALIZER not in finalizers:  # set already if an earlier attempt was cut short
            claim["metadata"]["finalizers"] = [*finalizers, FINALIZER]
            try:
                claim = _copy(await client.update_claim(claim))
            except Exception as exc:
                raise BindError(f"add finalizer to claim {ref}: {exc}", exc) from None
        claim["status"]["allocation"] = allocation
    status = claim["status"]
    # Added without checking: the API server refuses what is not allowed (the limit).
    status["reservedFor"] = [*(status.get("reservedFor") or ()), pod_reference(pod)]
    # DRADeviceBindingConditions: the binding timeout counts from this moment.
    current = status.get("allocation")
    if not current:
        raise BindError(f"claim {ref} got deallocated elsewhere in the meantime")
    if not current.get("allocationTimestamp"):
        status["allocation"] = {**current, "allocationTimestamp": now_time()}
    try:
        return await client.update_claim_status(claim)
    except Exception as exc:
        what = "allocation and reservation" if allocation is not None else "reservation"
        raise BindError(f"add {what} to claim {ref}: {exc}", exc) from None


async def bind_extended_claim(
    client: ClusterClient,
    store: DraStore,
    claims: ClaimStore,
    index: int,
    allocation: Obj | None,
    pod: PodInfo,
    node_name: str,
    state: ExtendedResources,
) -> None:
    """Upstream ``bindClaim`` for the special claim: created first (from this node's
    variant) if it is still in memory, then written as any claim, then waited for in the
    assume cache, and named in the pod's ``status.extendedResourceClaimStatus``. ``claims``
    holds each version written, for Unreserve to delete."""
    claim = claims.get(index)
    if is_special_claim(claim):
        claim = await create_extended_resource_claim_in_api(client, node_name, state)
        claims.set(index, claim)
    updated = await bind_claim(client, store, claim, allocation, pod)
    claims.set(index, updated)
    await wait_for_extended_claim_in_assume_cache(store, updated)
    await patch_pod_extended_resource_claim_status(client, pod, updated, node_name, state)


async def remove_reservation(
    client: ClusterClient, store: DraStore, claim: Obj, pod_uid: str
) -> None:
    """Unreserve: take the pod out of the claim's ``reservedFor`` (upstream: a strategic
    merge patch deleting its entry; here the latest claim is written without it). Failures
    are only logged: the next attempt of the pod finds the reservation and goes on."""
    for attempt in range(RETRY_STEPS):
        if attempt:
            try:
                claim = _latest(store, claim)
            except BindError:
                return  # gone: nothing left to unreserve
        status = claim.get("status") or {}
        reserved = status.get("reservedFor") or []
        kept = [r for r in reserved if r.get("uid") != pod_uid]
        if len(kept) == len(reserved):
            return
        try:
            await client.update_claim_status({**claim, "status": {**status, "reservedFor": kept}})
            return
        except Exception as exc:  # logged, as upstream's: a background task must not raise
            if not _is_conflict(exc):
                logger.warning("unreserve of resourceclaim %s failed: %s", claim_ref(claim), exc)
                return
    logger.warning("unreserve of resourceclaim %s failed: conflicts", claim_ref(claim))
