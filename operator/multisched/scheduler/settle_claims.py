"""kube-controller-manager's resourceclaim controller, as it leaves a pod before scheduling.

For each of a pod's ``spec.resourceClaims`` that names a ResourceClaimTemplate and has no
entry in ``status.resourceClaimStatuses``, the controller creates a ResourceClaim from the
template (owned by the pod, annotated with the pod's claim name, named
``<pod>-<claim>-<5 random characters>``) and records it in the pod's status, sorted by
claim name (upstream ``pkg/controller/resourceclaim``: ``syncPod``, ``handleClaim``). A
claim the pod already owns for that entry (created, status not yet written) is reused.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

Obj = dict[str, Any]

RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_CLAIM_TEMPLATE = "ResourceClaimTemplate"
CLAIM_KINDS = (RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE)
ANN_POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"

#: apimachinery's ``utilrand.String`` alphabet (no vowels, no look-alikes).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
#: Room for "-" and 5 random characters in a 63-character name (upstream's maxBaseLen).
_MAX_BASE_LEN = 57


def generate_name(pod: str, claim: str) -> str:
    """The claim's generateName: ``<pod>-<claim>-``, both parts cut in proportion when too
    long (upstream keeps the claim name readable rather than letting the API server cut
    from the end)."""
    base = f"{pod}-{claim}-"
    if len(base) <= _MAX_BASE_LEN:
        return base
    return (
        pod[: len(pod) * _MAX_BASE_LEN // len(base)]
        + "-"
        + claim[: len(claim) * _MAX_BASE_LEN // len(base)]
    )


def _suffix(namespace: str, pod: str, claim: str) -> str:
    """The API server's 5 random characters, drawn from the pod and claim names so a run
    is repeatable."""
    digest = hashlib.sha256(f"{namespace}/{pod}/{claim}".encode()).digest()
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in digest[:5])


class ClaimController:
    """The claims and templates of the input; ``sync_pod`` is the controller's pass."""

    def __init__(self, objects: Sequence[tuple[str, Obj]]) -> None:
        self.templates: dict[tuple[str, str], Obj] = {}
        self.claims: list[Obj] = []
        for kind, obj in objects:
            meta = obj.get("metadata") or {}
            key = (str(meta.get("namespace") or "default"), str(meta.get("name")))
            if kind == RESOURCE_CLAIM_TEMPLATE:
                self.templates[key] = obj
            elif kind == RESOURCE_CLAIM:
                self.claims.append(obj)
        #: Claims this pass created, in order.
        self.created: list[Obj] = []
        #: Pod key -> the template of each created claim, for the report.
        self.sources: dict[str, str] = {}

    def sync_pod(self, pod: Obj) -> Obj:
        """The pod with the claims it needs created and recorded; the same object when
        nothing was to do (no template claims, all recorded, or a template missing:
        upstream retries then, and the pod waits)."""
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return pod
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        recorded = {str(s.get("name")) for s in status.get("resourceClaimStatuses") or ()}
        namespace = str(meta.get("namespace") or "default")
        new: dict[str, str] = {}
        for entry in spec.get("resourceClaims") or ():
            name, template = str(entry.get("name")), entry.get("resourceClaimTemplateName")
            if not template or name in recorded:
                continue
            claim = self._owned(pod, name) or self._create(pod, name, str(template))
            if claim is None:
                return pod  # upstream stops at the first failing claim; nothing is written
            new[name] = str(claim["metadata"]["name"])
        if not new:
            return pod
        merged = {
            str(s.get("name")): s.get("resourceClaimName")
            for s in status.get("resourceClaimStatuses") or ()
            if s.get("resourceClaimName")
        }
        merged.update(new)
        statuses = [{"name": n, "resourceClaimName": merged[n]} for n in sorted(merged)]
        self.sources[f"{namespace}/{meta.get('name')}"] = ", ".join(
            f"{n} from {self._source(pod, n)}" for n in new
        )
        return {**pod, "status": {**status, "resourceClaimStatuses": statuses}}

    def _source(self, pod: Obj, name: str) -> str:
        for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
            if entry.get("name") == name:
                return f"the template {entry.get('resourceClaimTemplateName')}"
        return "its template"

    def _owned(self, pod: Obj, claim_name: str) -> Obj | None:
        """``findPodResourceClaim``: a claim owned by the pod, annotated with this claim."""
        uid = _uid(pod)
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        for claim in self.claims:
            meta = claim.get("metadata") or {}
            if str(meta.get("namespace") or "default") != namespace:
                continue
            owners = meta.get("ownerReferences") or ()
            if not any(o.get("uid") == uid and o.get("controller") for o in owners):
                continue
            if (meta.get("annotations") or {}).get(ANN_POD_CLAIM_NAME) == claim_name:
                return claim
        return None

    def _create(self, pod: Obj, claim_name: str, template_name: str) -> Obj | None:
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        template = self.templates.get((namespace, template_name))
        if template is None:
            return None
        pod_name = str(meta.get("name"))
        base = generate_name(pod_name, claim_name)
        name = base + _suffix(namespace, pod_name, claim_name)
        spec = template.get("spec") or {}
        tmeta: Mapping[str, Any] = spec.get("metadata") or {}
        claim_meta: Obj = {
            "name": name,
            "generateName": base,
            "namespace": namespace,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{RESOURCE_CLAIM}/{namespace}/{name}")),
            "annotations": {**(tmeta.get("annotations") or {}), ANN_POD_CLAIM_NAME: claim_name},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod_name,
                    "uid": _uid(pod),
                    "controller": True,
                }
            ],
        }
        if tmeta.get("labels"):
            claim_meta["labels"] = dict(tmeta["labels"])
        claim: Obj = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": RESOURCE_CLAIM,
            "metadata": claim_meta,
            "spec": spec.get("spec") or {},
        }
        self.claims.append(claim)
        self.created.append(claim)
        return claim


def _uid(pod: Mapping[str, Any]) -> str:
    """The pod's uid as the engine names it (PodInfo: ``namespace/name`` when unset)."""
    meta = pod.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
