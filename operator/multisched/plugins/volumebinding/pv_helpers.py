"""What the binder asks of PVs and claims: upstream's ``component-helpers/storage/volume``
(``pv_helpers.go``, ``helpers.go``) and ``volume/util.GetLocalPersistentVolumeNodeNames``.

Objects are the API's JSON dicts. A PV's node affinity is parsed once per object version
(``_affinity``): Filter asks it for every node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from multisched.cache import NodeSelector, SelectorError, to_int
from multisched.cache.quantity import QuantityError
from multisched.cache.volumes import pv_storage_class

Obj = Mapping[str, Any]

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
LABEL_HOSTNAME = "kubernetes.io/hostname"
FILESYSTEM = "Filesystem"


def meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def annotations_of(obj: Obj) -> Mapping[str, str]:
    return meta(obj).get("annotations") or {}


def claim_key(claim: Obj) -> str:
    return f"{meta(claim).get('namespace') or ''}/{meta(claim).get('name') or ''}"


def claim_class(claim: Obj) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation wins over the field."""
    beta = annotations_of(claim).get(BETA_STORAGE_CLASS)
    if beta is not None:
        return str(beta)
    return str(spec(claim).get("storageClassName") or "")


pv_class = pv_storage_class


def storage_of(resources: Mapping[str, Any] | None) -> int:
    """``Quantity.Value()`` of ``storage`` (0 when absent; bad quantities count as 0, the
    API server refuses them at the door)."""
    raw = (resources or {}).get("storage")
    if raw is None:
        return 0
    try:
        return to_int(raw)
    except QuantityError:
        return 0


def claim_request(claim: Obj) -> int:
    return storage_of((spec(claim).get("resources") or {}).get("requests"))


def pv_capacity(pv: Obj) -> int:
    return storage_of(spec(pv).get("capacity"))


def is_claim_fully_bound(claim: Obj) -> bool:
    """``isPVCFullyBound``: a volume named and the PV controller's bind-completed mark."""
    return bool(spec(claim).get("volumeName")) and ANN_BIND_COMPLETED in annotations_of(claim)


def is_volume_bound_to_claim(pv: Obj, claim: Obj) -> bool:
    ref = spec(pv).get("claimRef")
    if not ref:
        return False
    m = meta(claim)
    if ref.get("name") != m.get("name") or ref.get("namespace") != m.get("namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == m.get("uid")


def bind_volume_to_claim(pv: Obj, claim: Obj) -> tuple[dict[str, Any], bool]:
    """``GetBindVolumeToClaim``: a copy of ``pv`` with its claimRef set to ``claim`` (and
    bound-by-controller when it was not pre-bound); ``dirty`` when anything changed."""
    dirty = False
    set_by_controller = not is_volume_bound_to_claim(pv, claim)
    out = {**pv, "metadata": dict(meta(pv)), "spec": dict(spec(pv))}
    ref = spec(pv).get("claimRef") or {}
    m = meta(claim)
    if (ref.get("name"), ref.get("namespace"), ref.get("uid")) != (
        m.get("name"),
        m.get("namespace"),
        m.get("uid"),
    ):
        claim_ref = {
            "kind": "PersistentVolumeClaim",
            "namespace": m.get("namespace"),
            "name": m.get("name"),
            "apiVersion": "v1",
        }
        for key in ("uid", "resourceVersion"):
            if m.get(key):
                claim_ref[key] = m[key]
        out["spec"]["claimRef"] = claim_ref
        dirty = True
    notes = dict(annotations_of(pv))
    if set_by_controller and ANN_BOUND_BY_CONTROLLER not in notes:
        notes[ANN_BOUND_BY_CONTROLLER] = "yes"
        out["metadata"]["annotations"] = notes
        dirty = True
    return out, dirty


def volume_mode_mismatch(claim: Obj, pv: Obj) -> bool:
    return (spec(claim).get("volumeMode") or FILESYSTEM) != (
        spec(pv).get("volumeMode") or FILESYSTEM
    )


def access_modes_fit(claim: Obj, pv: Obj) -> bool:
    """``CheckAccessModes``: every mode the claim asks for, the PV offers."""
    offered = set(spec(pv).get("accessModes") or ())
    return all(mode in offered for mode in spec(claim).get("accessModes") or ())


# -- node affinity ---------------------------------------------------------------------------

#: id of a PV's ``nodeAffinity.required`` -> (that mapping, kept so the id is not reused,
#: and its parse). Keyed by identity, not (name, resourceVersion): two simulations in one
#: process hold different PVs under the same name and version.
_AFFINITY: dict[int, tuple[object, NodeSelector | SelectorError]] = {}
_AFFINITY_LIMIT = 100_000


def _affinity(pv: Obj) -> NodeSelector | SelectorError | None:
    """The PV's required node affinity, parsed once per version of the object (the assume
    cache's copies share it); None when it has none. A selector the parser refuses is kept
    as its error: it matches no node, as upstream's ``MatchNodeSelectorTerms`` error does."""
    required = ((spec(pv).get("nodeAffinity") or {}).get("required")) or None
    if required is None:
        return None
    found = _AFFINITY.get(id(required))
    if found is not None and found[0] is required:
        return found[1]
    parsed: NodeSelector | SelectorError
    try:
        parsed = NodeSelector.parse(required)
    except SelectorError as exc:
        parsed = exc
    except (TypeError, ValueError, AttributeError) as exc:
        parsed = SelectorError(f"malformed node affinity: {exc}")
    if len(_AFFINITY) >= _AFFINITY_LIMIT:
        _AFFINITY.clear()
    _AFFINITY[id(required)] = (required, parsed)
    return parsed


def node_affinity_error(pv: Obj, node_labels: Mapping[str, str]) -> str | None:
    """``CheckNodeAffinity``: None when the node may use the PV, else why not."""
    selector = _affinity(pv)
    if selector is None:
        return None
    if isinstance(selector, SelectorError):
        return str(selector)
    # A PV's terms see the node through its labels only (upstream builds a bare Node).
    if selector.matches(node_labels, ""):
        return None
    return "no matching NodeSelectorTerms"


def _hosts_per_term(pv: Obj) -> list[set[str] | None] | None:
    """For each required term, the hostnames its ``kubernetes.io/hostname In`` expressions
    allow (their intersection), or None for a term that names no hostname; None when the
    PV has no required node affinity."""
    required = (spec(pv).get("nodeAffinity") or {}).get("required")
    if not required:
        return None
    out: list[set[str] | None] = []
    for term in required.get("nodeSelectorTerms") or ():
        named: set[str] | None = None
        for expr in (term or {}).get("matchExpressions") or ():
            if expr.get("key") == LABEL_HOSTNAME and expr.get("operator") == "In":
                values = set(expr.get("values") or ())
                named = values if named is None else named & values
        out.append(named)
    return out


def local_node_names(pv: Obj) -> list[str] | None:
    """``GetLocalPersistentVolumeNodeNames``: hostnames named by ``kubernetes.io/hostname
    In`` in the PV's required terms (None: no required affinity)."""
    terms = _hosts_per_term(pv)
    if terms is None:
        return None
    return sorted(set().union(*(t for t in terms if t is not None)))


def only_on_hosts(pv: Obj) -> frozenset[str] | None:
    """The hostnames a PV is confined to when *every* required term names them (local
    PVs): only nodes with one of these hostname labels can match. None otherwise."""
    terms = _hosts_per_term(pv)
    if terms is None or any(t is None for t in terms):
        return None
    return frozenset(set().union(*(t for t in terms if t is not None)))
