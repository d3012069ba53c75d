"""Device binding conditions (DRADeviceBindingConditions with DRAResourceClaimDeviceStatus,
both on in v1.37): a device may ask the scheduler to wait in PreBind until its driver
reports it ready (``bindingConditions`` true in the claim's ``status.devices``), and to
give up when a ``bindingFailureConditions`` entry turns true or ``bindingTimeout`` passes
since the allocation was written."""

from __future__ import annotations

import datetime
import json
from collections.abc import Awaitable, Callable, Mapping
from time import monotonic
from typing import Any

from multisched.cache.dra import DraStore
from multisched.framework import Status

from .claims import ClaimStore, ClaimUnavailable, allocation_of, claim_ref

#: How often PreBind looks at the devices' binding conditions (upstream's poll interval).
BINDING_POLL_SECONDS = 5.0
#: Upstream ``ErrDeviceBindingTimeout`` and ``ErrDeviceBindingFailed``.
ERR_DEVICE_BINDING_TIMEOUT = "device binding timeout"
ERR_DEVICE_BINDING_FAILED = "device binding failed"


class BindingFailed(Exception):
    """A binding failure condition is true, or the binding timed out: the text is
    upstream's wrapped error."""


def _results(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    allocation = allocation_of(claim) or {}
    results: list[Mapping[str, Any]] = (allocation.get("devices") or {}).get("results") or []
    return results


def _device_status(claim: Mapping[str, Any], result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Upstream ``getAllocatedDeviceStatus``: the claim's status entry for the device."""
    for device in (claim.get("status") or {}).get("devices") or ():
        if (
            device.get("device") == result.get("device")
            and device.get("driver") == result.get("driver")
            and device.get("pool") == result.get("pool")
        ):
            status: Mapping[str, Any] = device
            return status
    return None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == kind:
            found: Mapping[str, Any] = cond
            return found
    return None


def is_claim_ready_for_binding(claim: Mapping[str, Any]) -> bool:
    """Upstream ``isClaimReadyForBinding``: every binding condition of every allocated device
    true (trivially so without any); raises ``BindingFailed`` when a failure condition is."""
    if allocation_of(claim) is None:
        return False
    name = (claim.get("metadata") or {}).get("name") or ""
    for result in _results(claim):
        conditions = result.get("bindingConditions") or ()
        if not conditions:
            continue
        status = _device_status(claim, result)
        if status is None:
            return False
        for kind in result.get("bindingFailureConditions") or ():
            failed = _condition(status, kind)
            if failed is not None and failed.get("status") == "True":
                # Go's %q of the message.
                message = json.dumps(str(failed.get("message") or ""), ensure_ascii=False)
                raise BindingFailed(
                    f"{ERR_DEVICE_BINDING_FAILED}: claim={name}, "
                    f"reason={failed.get('reason') or ''}, message={message}"
                )
        for kind in conditions:
            cond = _condition(status, kind)
            if cond is None or cond.get("status") != "True":
                return False
    return True


def _parse_time(text: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def is_claim_timeout(
    claim: Mapping[str, Any], binding_timeout: float, now: datetime.datetime | None = None
) -> bool:
    """Upstream ``isClaimTimeout``: a device with binding conditions was allocated longer
    than ``binding_timeout`` seconds ago (``status.allocation.allocationTimestamp``)."""
    allocation = allocation_of(claim)
    if allocation is None or not allocation.get("allocationTimestamp"):
        return False
    stamp = _parse_time(str(allocation["allocationTimestamp"]))
    if stamp is None:
        return False
    now = now or datetime.datetime.now(datetime.UTC)
    expired = stamp + datetime.timedelta(seconds=binding_timeout) < now
    return expired and any(r.get("bindingConditions") is not None for r in _results(claim))


def has_binding_conditions(claims: list[dict[str, Any]]) -> bool:
    """Upstream ``hasBindingConditions``: PreBind has to wait for a device."""
    return any(r.get("bindingConditions") for claim in claims for r in _results(claim))


async def wait_for_binding_conditions(
    store: DraStore,
    claims: ClaimStore,
    binding_timeout: float,
    sleep: Callable[[float], Awaitable[Any]],
) -> Status | None:
    """PreBind's wait (upstream's ``PollUntilContextTimeout`` over ``isPodReadyForBinding``):
    at once, then every 5 s until ``binding_timeout``; each look reads the claims anew."""
    if not has_binding_conditions(claims.claims):
        return None
    deadline = monotonic() + binding_timeout
    while True:
        try:
            if _is_pod_ready_for_binding(store, claims, binding_timeout):
                return None
        except (BindingFailed, ClaimUnavailable) as exc:
            return Status.error(str(exc))
        left = deadline - monotonic()
        if left < BINDING_POLL_SECONDS:
            # The deadline comes before the next look.
            await sleep(max(left, 0.0))
            return Status.error(f"{ERR_DEVICE_BINDING_TIMEOUT}: context deadline exceeded")
        await sleep(BINDING_POLL_SECONDS)


def _is_pod_ready_for_binding(store: DraStore, claims: ClaimStore, binding_timeout: float) -> bool:
    for index, claim in claims.all():
        meta = claim.get("metadata") or {}
        latest = store.get_claim(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if latest is None:
            raise ClaimUnavailable(f'could not find ResourceClaim "{claim_ref(claim)}"')
        claims.set(index, latest)
        if not is_claim_ready_for_binding(latest):
            if is_claim_timeout(latest, binding_timeout):
                raise BindingFailed(f"{ERR_DEVICE_BINDING_TIMEOUT}: claim={meta.get('name')}")
            return False
    return True
