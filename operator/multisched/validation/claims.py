"""kube-apiserver's rules for the DRA claim kinds simulate reads (``resource.k8s.io/v1``).

Only the object's metadata is checked here beyond the schema; the device requests' own
rules (``ValidateResourceClaim``'s spec) come with the DRA allocator (issue 42), which is
also what reads them.
"""

from __future__ import annotations

from typing import Any

from .core import Errors, Obj, _map, validate_meta
from .names import is_dns1123_subdomain

RESOURCE_API = "resource.k8s.io/v1"


def validate_claim_meta(obj: Obj) -> list[str]:
    """``ValidateObjectMeta`` of a ResourceClaim or ResourceClaimTemplate (namespaced)."""
    errs = Errors()
    validate_meta(errs, _map(obj.get("metadata")), True, is_dns1123_subdomain)
    return list(errs)


CLAIM_RULES: dict[str, tuple[tuple[str, ...], Any]] = {
    "ResourceClaim": ((RESOURCE_API,), validate_claim_meta),
    "ResourceClaimTemplate": ((RESOURCE_API,), validate_claim_meta),
}
