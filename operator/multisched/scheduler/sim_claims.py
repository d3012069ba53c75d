"""The API server's side of DynamicResources' claim writes, for ``simulate`` and ``explain``
(no API server runs there): a PUT of a ResourceClaim or of its status is stored with the
next resourceVersion and fed back to the scheduler, as the informer would bring it.

As the API server does, a status PUT changes only the status, a plain PUT all but it.
"""

from __future__ import annotations

from typing import Any

from multisched.cache.dra import DraStore
from multisched.cache.volumes import resource_version
from multisched.meta import object_key

Obj = dict[str, Any]


class ClaimNotFound(Exception):
    """The claim is not in the store (the API server's 404)."""

    status = 404


def write_claim(store: DraStore, claim: Obj, status_only: bool) -> Obj:
    """The claim as the API server would store ``claim``'s PUT (``status_only``: the status
    subresource); raises ``ClaimNotFound``. The caller feeds the result to the engine."""
    key = object_key(claim)
    stored = store.claims.get_api_obj(key)
    if stored is None:
        raise ClaimNotFound(f'resourceclaims.resource.k8s.io "{key.split("/")[-1]}" not found')
    if status_only:
        updated = {**stored, "status": claim.get("status") or {}}
    else:
        updated = {**claim, "status": stored.get("status") or {}}
    version = max(resource_version(stored), resource_version(claim)) + 1
    meta = dict(updated.get("metadata") or {})
    meta["resourceVersion"] = str(version)
    return {**updated, "metadata": meta}


__all__ = ["ClaimNotFound", "write_claim"]
