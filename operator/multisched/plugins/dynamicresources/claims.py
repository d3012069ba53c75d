"""A pod's ResourceClaims: which claim each ``spec.resourceClaims`` entry names (upstream
``resourceclaim.Name``, ``IsForPod``, ``IsReservedForPod``), looked up in the DRA store
(``foreachPodResourceClaim``), and the claims of one cycle (``claims.go``'s
``claimStore``).

Claims are the API's dicts, read-only: a claim the plugin changes is copied first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from multisched.cache import PodInfo
from multisched.cache.dra import DraStore

Obj = dict[str, Any]

#: ``resourceapi.Finalizer``: set before an allocation is written, so a claim in use is not
#: deleted under the pod.
FINALIZER = "resource.kubernetes.io/delete-protection"
#: ``resourceapi.FirstAvailableDeviceRequestMaxSize``: the scoring base of a subrequest.
FIRST_AVAILABLE_MAX_SIZE = 8


class ClaimUnavailable(Exception):
    """A claim the pod names cannot be used now (not created, gone, being deleted, not the
    pod's): the text is upstream's error, the pod waits for a claim or pod event."""


def claim_name(pod: PodInfo, entry: Mapping[str, Any]) -> tuple[str | None, bool]:
    """Upstream ``resourceclaim.Name``: the claim's name (None: the controller generated no
    claim, which is valid) and whether the claim must be checked to be the pod's own."""
    direct = entry.get("resourceClaimName")
    if direct is not None:
        return str(direct), False
    if entry.get("resourceClaimTemplateName") is not None:
        name = entry.get("name")
        for status in (pod.raw.get("status") or {}).get("resourceClaimStatuses") or ():
            if status.get("name") == name:
                generated = status.get("resourceClaimName")
                return (None if generated is None else str(generated)), True
        raise ClaimUnavailable(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
    raise ClaimUnavailable(
        f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{entry.get("name")}": '
        "none of the supported fields are set"
    )


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def claim_ref(claim: Mapping[str, Any]) -> str:
    """``klog.KObj(claim)``: ``namespace/name``."""
    meta = _meta(claim)
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def claim_uid(claim: Mapping[str, Any]) -> str:
    return str(_meta(claim).get("uid") or "")


def check_for_pod(pod: PodInfo, claim: Mapping[str, Any]) -> None:
    """Upstream ``resourceclaim.IsForPod`` (PodGroup owners off: DRAWorkloadResourceClaims
    is off by default in v1.37)."""
    meta = _meta(claim)
    ref = claim_ref(claim)
    if (meta.get("namespace") or "") != pod.namespace:
        raise ClaimUnavailable(
            f"ResourceClaim {ref} is not in the same namespace as Pod {pod.namespace}/{pod.name}"
        )
    controlled = any(
        o.get("controller") and o.get("uid") == pod.uid for o in meta.get("ownerReferences") or ()
    )
    if not controlled:
        raise ClaimUnavailable(
            f"ResourceClaim {ref} was not created for Pod {pod.namespace}/{pod.name} "
            "(Pod is not owner)"
        )


def is_reserved_for_pod(pod: PodInfo, claim: Mapping[str, Any]) -> bool:
    """Upstream ``resourceclaim.IsReservedForPod`` (PodGroup reservations off)."""
    uid = pod.uid
    return any(r.get("uid") == uid for r in (claim.get("status") or {}).get("reservedFor") or ())


def pod_reference(pod: PodInfo) -> Obj:
    """The ``reservedFor`` entry for the pod (``claimStore.getBinding``; the core API group
    is empty and omitted)."""
    return {"resource": "pods", "name": pod.name, "uid": pod.uid}


def pod_resource_claims(pod: PodInfo, store: DraStore) -> list[Obj]:
    """Upstream ``foreachPodResourceClaim``: every claim the pod names, in spec order,
    skipping entries the controller generated no claim for; raises ``ClaimUnavailable``."""
    claims: list[Obj] = []
    for entry in pod.resource_claims:
        name, must_check_owner = claim_name(pod, entry)
        if name is None:
            continue
        claim = store.get_claim(pod.namespace, name)
        if claim is None:
            # The assume cache's NotFoundError.
            raise ClaimUnavailable(f'could not find ResourceClaim "{pod.namespace}/{name}"')
        if _meta(claim).get("deletionTimestamp") is not None:
            raise ClaimUnavailable(f'resourceclaim "{name}" is being deleted')
        if must_check_owner:
            check_for_pod(pod, claim)
        claims.append(claim)
    return claims


def allocation_of(claim: Mapping[str, Any]) -> Obj | None:
    allocation: Obj | None = (claim.get("status") or {}).get("allocation")
    return allocation or None


class ClaimStore:
    """Upstream ``claimStore``: the pod's claims of one cycle, user claims first, then (once
    DRAExtendedResource is ported) the special claim for extended resources backed by
    devices. ``set`` replaces a claim by the version PreBind wrote."""

    __slots__ = ("claims", "num_user_owned")

    def __init__(self, claims: list[Obj], extended_resource_claim: Obj | None = None) -> None:
        self.claims = claims
        self.num_user_owned = len(claims)
        if extended_resource_claim is not None:
            self.claims.append(extended_resource_claim)

    def empty(self) -> bool:
        return not self.claims

    def __len__(self) -> int:
        return len(self.claims)

    def all(self) -> Iterator[tuple[int, Obj]]:
        return iter(enumerate(self.claims))

    def all_user_claims(self) -> Iterator[tuple[int, Obj]]:
        return iter(enumerate(self.claims[: self.num_user_owned]))

    def to_allocate(self) -> Iterator[tuple[int, Obj]]:
        """Claims without an allocation, with their index among all claims."""
        return ((i, c) for i, c in enumerate(self.claims) if allocation_of(c) is None)

    def extended_resource_claim(self) -> Obj | None:
        if self.num_user_owned == len(self.claims):
            return None
        return self.claims[self.num_user_owned]

    def no_user_claim(self) -> bool:
        return self.num_user_owned == 0

    def get(self, index: int) -> Obj:
        return self.claims[index]

    def set(self, index: int, claim: Obj) -> None:
        self.claims[index] = claim
