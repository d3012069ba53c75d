"""The input as a cluster's API server and controllers leave it before kube-scheduler looks.

A file holds objects as written; on a cluster, creating them changes some at once, and
kube-scheduler only ever sees the result:

- the API server, at create: a claim's and a PV's status is dropped (the PV controller
  derives it); a claim without a class gets the default StorageClass (the
  DefaultStorageClass admission plugin); a pod's matchLabelKeys and mismatchLabelKeys
  are merged into its pod affinity terms' and topology spread constraints' selectors;
- kube-controller-manager's PV controller (``settle_volumes``): bindings written in the
  file are completed, unbound Immediate claims are bound or provisioned;
- its resourceclaim controller (``settle_claims``): the ResourceClaims pods ask for from
  ResourceClaimTemplates are created and recorded in the pods' status.

Objects a cluster stored (``trusted``: ``--from-cluster``; in a file, those with the
``creationTimestamp`` only an API server writes: a snapshot's) went through the API server
already, so only the controller runs on them, and on a settled cluster it changes nothing;
the ideal provisioner leaves their claims to the cluster's own provisioners.
Each change is kept as a ``Settlement`` (what changed and why) for the report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from multisched.cache.volumes import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS
from multisched.meta import object_key
from multisched.plugins.volumebinding.pv_helpers import BETA_STORAGE_CLASS
from multisched.validation.core import with_label_keys

from .settle_claims import RESOURCE_CLAIM, ClaimController
from .settle_volumes import PVController

Obj = dict[str, Any]

ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
ANN_BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"

#: Who makes each kind of change (the ``by`` of a Settlement, the note's subject).
BY_API_SERVER = "kube-apiserver"
BY_PV_CONTROLLER = "kube-controller-manager's PV controller"
BY_PROVISIONER = "the ideal provisioner"
BY_CLAIM_CONTROLLER = "kube-controller-manager's resourceclaim controller"

#: Why a phase changed when no binding did: the API server keeps no status a file writes.
_DERIVED = "the status a file writes is dropped at create; the PV controller derives it"

_AFFINITY_TERMS = (
    ("podAffinity", "requiredDuringSchedulingIgnoredDuringExecution", False),
    ("podAffinity", "preferredDuringSchedulingIgnoredDuringExecution", True),
    ("podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", False),
    ("podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", True),
)


class Settlement:
    """One object changed by settling: ``object`` ("Kind ns/name"), the fields that
    changed, who changed them and why. ``kind`` groups the report's notes."""

    __slots__ = ("by", "changed", "kind", "object", "why")

    def __init__(self, kind: str, obj: str, changed: list[str], by: str, why: str) -> None:
        self.kind = kind
        self.object = obj
        self.changed = changed
        self.by = by
        self.why = why

    def as_record(self) -> dict[str, Any]:
        return {"object": self.object, "changed": self.changed, "by": self.by, "why": self.why}


class Settled:
    """The settled objects, and what settling changed."""

    def __init__(
        self,
        storage: list[tuple[str, Obj]],
        pods: list[tuple[str, Obj]],
        changes: list[Settlement],
        claims: list[tuple[str, Obj]],
    ) -> None:
        self.storage = storage
        self.pods = pods
        self.changes = changes
        #: ResourceClaims and templates, with the claims the controller created.
        self.claims = claims


def settle(
    storage: Sequence[tuple[str, Obj]],
    pods: Sequence[tuple[str, Obj]],
    trusted: bool,
    claims: Sequence[tuple[str, Obj]] = (),
) -> Settled:
    """``storage`` and ``claims``: (kind, object) as loaded; ``pods``: (label, object)."""
    changes: list[Settlement] = []

    def created(obj: Mapping[str, Any]) -> bool:
        return not trusted and not _stored(obj)

    controller = PVController(_created_storage(storage, created, changes), created)
    controller.settle()
    out_storage = _controller_changes(storage, controller, changes)
    out_pods = [
        _created_pod(label, raw, changes) if created(raw) else (label, raw) for label, raw in pods
    ]
    # The resourceclaim controller works on stored pods too: a pod waits for its claims.
    claim_controller = ClaimController(claims)
    out_pods = [(label, _claims_created(raw, claim_controller, changes)) for label, raw in out_pods]
    out_claims = [*claims, *((RESOURCE_CLAIM, c) for c in claim_controller.created)]
    return Settled(out_storage, out_pods, changes, out_claims)


def _claims_created(raw: Obj, controller: ClaimController, changes: list[Settlement]) -> Obj:
    before = len(controller.created)
    out = controller.sync_pod(raw)
    if out is raw:
        return raw
    key = _pod_key(raw)
    for claim in controller.created[before:]:
        changes.append(
            Settlement(
                "claim-created",
                f"{RESOURCE_CLAIM} {object_key(claim)}",
                ["created"],
                BY_CLAIM_CONTROLLER,
                f"the pod {key} asks for it: "
                + str(claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"]),
            )
        )
    changes.append(
        Settlement(
            "claim-status",
            f"Pod {key}",
            ["status.resourceClaimStatuses"],
            BY_CLAIM_CONTROLLER,
            f"records the claims created for it ({controller.sources.get(key, '')})",
        )
    )
    return out


def _stored(obj: Mapping[str, Any]) -> bool:
    """An object an API server stored (a snapshot's, ``kubectl get -o yaml``'s) carries
    the creation time it set; a written one does not (one it would overwrite)."""
    return bool((obj.get("metadata") or {}).get("creationTimestamp"))


# -- the API server, at create ---------------------------------------------------------------


def _created_storage(
    storage: Sequence[tuple[str, Obj]],
    created: Callable[[Mapping[str, Any]], bool],
    changes: list[Settlement],
) -> list[tuple[str, Obj]]:
    """The objects being ``created``: status dropped (the controller derives it again) and
    the default class given. Stored ones are as stored."""
    default = _default_class([obj for kind, obj in storage if kind == STORAGE_CLASS])
    return [
        (kind, _created(kind, obj, default, changes) if created(obj) else obj)
        for kind, obj in storage
    ]


def _created(kind: str, obj: Obj, default: str, changes: list[Settlement]) -> Obj:
    if kind not in (PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM):
        return obj
    out = {**obj, "status": {"phase": "Pending"}}
    if kind == PERSISTENT_VOLUME_CLAIM and default and _without_class(obj):
        out["spec"] = {**(obj.get("spec") or {}), "storageClassName": default}
        changes.append(
            Settlement(
                "default-class",
                f"{kind} {object_key(obj)}",
                ["spec.storageClassName"],
                BY_API_SERVER,
                "the claim names no class: the DefaultStorageClass admission plugin gives "
                f"it the default, {default}",
            )
        )
    return out


def _without_class(claim: Mapping[str, Any]) -> bool:
    notes = (claim.get("metadata") or {}).get("annotations") or {}
    return (
        BETA_STORAGE_CLASS not in notes
        and (claim.get("spec") or {}).get("storageClassName") is None
    )


def _default_class(classes: Sequence[Mapping[str, Any]]) -> str:
    """``GetDefaultClass``: of the classes marked default, the newest (a later document is
    created later), then the first by name."""
    marked = []
    for i, klass in enumerate(classes):
        meta = klass.get("metadata") or {}
        notes = meta.get("annotations") or {}
        if "true" in (notes.get(ANN_DEFAULT_CLASS), notes.get(ANN_BETA_DEFAULT_CLASS)):
            stamp = str(meta.get("creationTimestamp") or "")
            marked.append((stamp, i, str(meta.get("name") or "")))
    if not marked:
        return ""
    newest = max((stamp, i) for stamp, i, _ in marked)[0]
    return min(name for stamp, _, name in marked if stamp == newest) if newest else marked[-1][2]


def _created_pod(label: str, raw: Obj, changes: list[Settlement]) -> tuple[str, Obj]:
    """The pod strategy's create-time merge of matchLabelKeys (In) and mismatchLabelKeys
    (NotIn) into pod affinity terms, and of matchLabelKeys into topology spread selectors
    (MatchLabelKeysInPodAffinity, MatchLabelKeysInPodTopologySpreadSelectorMerge: on)."""
    spec = raw.get("spec") or {}
    labels = (raw.get("metadata") or {}).get("labels") or {}
    changed: list[str] = []
    affinity = spec.get("affinity")
    new_affinity = dict(affinity) if isinstance(affinity, Mapping) else {}
    for kind, field, weighted in _AFFINITY_TERMS:
        terms = (new_affinity.get(kind) or {}).get(field)
        if not terms:
            continue
        merged = []
        for i, entry in enumerate(terms):
            term = (entry.get("podAffinityTerm") or {}) if weighted else entry
            new_term = _merged(term, labels, "mismatchLabelKeys")
            if new_term is not term:
                path = f"{kind}.{field}[{i}]" + (".podAffinityTerm" if weighted else "")
                changed.append(f"spec.affinity.{path}.labelSelector")
            merged.append({**entry, "podAffinityTerm": new_term} if weighted else new_term)
        new_affinity[kind] = {**new_affinity[kind], field: merged}
    constraints = []
    for i, constraint in enumerate(spec.get("topologySpreadConstraints") or ()):
        constraints.append(_merged(constraint, labels))
        if constraints[-1] is not constraint:
            changed.append(f"spec.topologySpreadConstraints[{i}].labelSelector")
    if not changed:
        return label, raw
    new_spec = dict(spec)
    if isinstance(affinity, Mapping):
        new_spec["affinity"] = new_affinity
    if constraints:
        new_spec["topologySpreadConstraints"] = constraints
    changes.append(
        Settlement(
            "label-keys",
            f"Pod {_pod_key(raw)}",
            changed,
            BY_API_SERVER,
            "the pod's values of matchLabelKeys/mismatchLabelKeys are merged into the "
            "label selectors at create",
        )
    )
    return label, {**raw, "spec": new_spec}


def _pod_key(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _merged(holder: Obj, labels: Mapping[str, Any], mismatch: str = "") -> Obj:
    """``holder`` (a pod affinity term or spread constraint) with its label keys merged
    into its selector by validation's own merge; the same object when nothing merges."""
    keys = [(holder.get("matchLabelKeys") or [], "In")]
    if mismatch:
        keys.append((holder.get(mismatch) or [], "NotIn"))
    selector = with_label_keys(holder.get("labelSelector"), keys, labels)
    if selector is holder.get("labelSelector"):
        return holder
    return {**holder, "labelSelector": selector}


# -- the PV controller ---------------------------------------------------------------------------


def _controller_changes(
    loaded: Sequence[tuple[str, Obj]], controller: PVController, changes: list[Settlement]
) -> list[tuple[str, Obj]]:
    """The storage objects after the controller, in input order (provisioned PVs after
    the rest), each change compared with the object as loaded."""
    out = []
    for kind, obj in loaded:
        if kind == PERSISTENT_VOLUME:
            name = str((obj.get("metadata") or {}).get("name"))
            after = controller.volumes[name]
        elif kind == PERSISTENT_VOLUME_CLAIM:
            after = controller.claims[object_key(obj)]
        else:
            out.append((kind, obj))
            continue
        fields = _changed_fields(obj, after, kind == PERSISTENT_VOLUME_CLAIM)
        if not fields:
            out.append((kind, obj))  # as loaded: nothing downstream sees a difference
            continue
        if "spec.storageClassName" in fields and _without_class(obj):
            fields.remove("spec.storageClassName")  # the API server's, said already
        if fields:
            key = f"{kind} {object_key(obj)}"
            why = "; ".join(controller.why.get(key, ())) or _DERIVED
            changes.append(
                Settlement(_change_kind(kind, fields), key, fields, BY_PV_CONTROLLER, why)
            )
        out.append((kind, after))
    for name, claim in controller.provisioned.items():
        pv = controller.volumes[name]
        out.append((PERSISTENT_VOLUME, pv))
        changes.append(
            Settlement(
                "provisioned",
                f"{PERSISTENT_VOLUME} {name}",
                ["created"],
                BY_PROVISIONER,
                f"provisioned for the claim {claim}; "
                + "; ".join(controller.why.get(f"{PERSISTENT_VOLUME} {name}", ())),
            )
        )
    return out


def _change_kind(kind: str, fields: list[str]) -> str:
    if kind == PERSISTENT_VOLUME_CLAIM and "spec.volumeName" in fields:
        return "bound"
    if any("bind-completed" in f or "claimRef" in f for f in fields):
        return "bound"
    return "phase"


def _changed_fields(before: Mapping[str, Any], after: Mapping[str, Any], claim: bool) -> list[str]:
    """The fields that differ: annotations one by one, spec and status field by field. A
    claim written without a phase is Pending (what the API server makes it)."""
    out = []
    b_notes = (before.get("metadata") or {}).get("annotations") or {}
    a_notes = (after.get("metadata") or {}).get("annotations") or {}
    for key in sorted(set(b_notes) | set(a_notes)):
        if b_notes.get(key) != a_notes.get(key):
            out.append(f"metadata.annotations[{key}]")
    for part in ("spec", "status"):
        b, a = before.get(part) or {}, after.get(part) or {}
        if claim and part == "status":
            b = {"phase": "Pending", **b}
        for key in sorted(set(b) | set(a)):
            if b.get(key) != a.get(key):
                out.append(f"{part}.{key}")
    return out
