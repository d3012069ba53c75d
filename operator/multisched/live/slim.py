"""Only the fields scheduling reads, in a stable order, so two snapshots diff cleanly.

What each kind keeps mirrors what the cache, the plugins and ``simulate`` read: a field
dropped here must be one nothing downstream looks at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from multisched.informer.kinds import DRA, GROUPS, STORAGE, WORKLOADS
from multisched.validation.workloads import template_labels

from .reading import LiveCluster

POD_META = ("name", "namespace", "uid", "labels", "creationTimestamp", "deletionTimestamp")
POD_SPEC = (
    "schedulerName",
    "priority",
    "priorityClassName",
    "preemptionPolicy",
    "nodeName",
    "nodeSelector",
    "affinity",
    "tolerations",
    "topologySpreadConstraints",
    "schedulingGates",
    "overhead",
    "volumes",
    # DynamicResources refuses a pod with claims: dropped, it would be bound blind.
    "resourceClaims",
    # A user namespace on the host network needs a node declaring it (NodeDeclaredFeatures).
    "hostNetwork",
    "hostUsers",
)
CONTAINER = ("name", "image", "resources", "ports", "restartPolicy", "restartPolicyRules")
OWNER = ("apiVersion", "kind", "name", "uid", "controller")
NODE_SPEC = ("unschedulable", "taints")
NODE_STATUS = ("allocatable", "capacity", "images", "declaredFeatures")
PDB_STATUS = ("disruptionsAllowed", "disruptedPods")
#: The one pod condition preemption reads (a victim already being evicted by a scheduler).
POD_CONDITIONS = frozenset({"DisruptionTarget"})


def _pick(src: Mapping[str, Any] | None, keys: Iterable[str]) -> dict[str, Any]:
    """The set fields among ``keys`` (empty strings, lists and maps count as unset)."""
    if not src:
        return {}
    out = {}
    for k in keys:
        v = src.get(k)
        if v or (v is not None and not isinstance(v, str | list | dict)):
            out[k] = v
    return out


def _obj(api_version: str, kind: str, meta: dict[str, Any], **rest: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    out.update((k, v) for k, v in rest.items() if v)
    return out


def slim_node(raw: Mapping[str, Any]) -> dict[str, Any]:
    meta = raw.get("metadata") or {}
    return _obj(
        "v1",
        "Node",
        _pick(meta, ("name", "labels")),
        spec=_pick(raw.get("spec"), NODE_SPEC),
        status=_pick(raw.get("status"), NODE_STATUS),
    )


def _container(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = _pick(raw, CONTAINER)
    # Of the mounts, NodeDeclaredFeatures reads only whether one asks for bind mount options.
    mounts = [m for m in raw.get("volumeMounts") or () if m.get("bindMountOptions")]
    if mounts:
        out["volumeMounts"] = mounts
    return out


def slim_pod(raw: Mapping[str, Any]) -> dict[str, Any]:
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    out_meta = _pick(meta, POD_META)
    owners = [_pick(o, OWNER) for o in meta.get("ownerReferences") or ()]
    if owners:
        out_meta["ownerReferences"] = owners
    out_spec = _pick(spec, POD_SPEC)
    out_spec["containers"] = [_container(c) for c in spec.get("containers") or ()]
    if spec.get("initContainers"):
        out_spec["initContainers"] = [_container(c) for c in spec["initContainers"]]
    out_status = _pick(status, ("phase", "nominatedNodeName", "startTime", "resourceClaimStatuses"))
    conditions = [
        _pick(c, ("type", "status", "reason"))
        for c in status.get("conditions") or ()
        if c.get("type") in POD_CONDITIONS
    ]
    if conditions:
        out_status["conditions"] = conditions
    return _obj("v1", "Pod", out_meta, spec=out_spec, status=out_status)


def slim_namespace(raw: Mapping[str, Any]) -> dict[str, Any]:
    return _obj("v1", "Namespace", _pick(raw.get("metadata"), ("name", "labels")))


def slim_priority_class(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = _obj("scheduling.k8s.io/v1", "PriorityClass", _pick(raw.get("metadata"), ("name",)))
    out["value"] = int(raw.get("value") or 0)
    if raw.get("globalDefault"):
        out["globalDefault"] = True
    if raw.get("preemptionPolicy"):
        out["preemptionPolicy"] = raw["preemptionPolicy"]
    return out


def slim_pdb(raw: Mapping[str, Any]) -> dict[str, Any]:
    return _obj(
        "policy/v1",
        "PodDisruptionBudget",
        _pick(raw.get("metadata"), ("name", "namespace")),
        spec=_pick(raw.get("spec"), ("selector", "minAvailable", "maxUnavailable")),
        status=_pick(raw.get("status"), PDB_STATUS),
    )


def slim_profile(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The object as written (spec) plus what orders it among the others (creation, uid)."""
    meta = _pick(raw.get("metadata"), ("name", "uid", "creationTimestamp", "generation"))
    return _obj(
        str(raw.get("apiVersion") or "multisched.dev/v1alpha1"),
        "SchedulerProfile",
        meta,
        spec=dict(raw.get("spec") or {}),
    )


def slim_storage(kind: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """A storage or DRA object as listed, less its managedFields: the volume plugins and
    DynamicResources read most of it (specs, statuses - a claim's allocation -,
    annotations), and there are few of them."""
    meta = {k: v for k, v in (raw.get("metadata") or {}).items() if k != "managedFields"}
    out = {k: v for k, v in raw.items() if k not in ("metadata", "apiVersion", "kind")}
    return {"apiVersion": _api_version(kind), "kind": kind, "metadata": meta, **out}


def slim_workload(kind: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """A Service or pod controller: its identity and selector, all default spreading reads
    (a ReplicaSet's pod template can be most of a dump), and a controller's template labels,
    which the API server requires its selector to match."""
    meta = _pick(raw.get("metadata"), ("name", "namespace"))
    spec = raw.get("spec") or {}
    out: dict[str, Any] = {}
    if spec.get("selector") is not None:
        out["selector"] = spec["selector"]
    if kind != "Service":
        out["template"] = {"metadata": {"labels": template_labels(spec) or {}}}
    return _obj(_api_version(kind), kind, meta, spec=out)


def _slim_listed(kind: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    return slim_workload(kind, raw) if kind in WORKLOADS else slim_storage(kind, raw)


def _api_version(kind: str) -> str:
    """Of a storage, DRA, scheduler-plugins' or workload kind (LIST items omit it)."""
    resource = STORAGE.get(kind) or DRA.get(kind) or GROUPS.get(kind) or WORKLOADS[kind]
    return f"{resource.group}/{resource.version}" if resource.group else resource.version


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _pod_order(pod: Mapping[str, Any]) -> tuple[str, str, str]:
    """Creation order first: the queue order the scheduler saw (PrioritySort ties break on it)."""
    meta = pod.get("metadata") or {}
    return (
        str(meta.get("creationTimestamp") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


def documents(cluster: LiveCluster) -> list[dict[str, Any]]:
    """The cluster as ``simulate`` documents: by kind, each kind sorted (pods by creation)."""
    out: list[dict[str, Any]] = []
    out += sorted((slim_namespace(o) for o in cluster.namespaces), key=_name)
    out += sorted((slim_priority_class(o) for o in cluster.priority_classes), key=_name)
    out += sorted((slim_node(o) for o in cluster.nodes), key=_name)
    out += sorted(
        (slim_pdb(o) for o in cluster.pdbs),
        key=_namespaced_key,
    )
    for kind, objs in cluster.storage.items():
        out += sorted((_slim_listed(kind, o) for o in objs), key=_namespaced_key)
    out += sorted((slim_pod(o) for o in cluster.pods), key=_pod_order)
    out += sorted((slim_profile(o) for o in cluster.profiles), key=_name)
    return out


_SortKey = Callable[[Mapping[str, Any]], Any]


def raw_documents(cluster: LiveCluster) -> list[dict[str, Any]]:
    """The objects as listed, kinds stamped (LIST items omit them), in ``documents`` order."""
    kinds: list[tuple[str, list[dict[str, Any]], _SortKey]] = [
        ("Namespace", cluster.namespaces, _name),
        ("PriorityClass", cluster.priority_classes, _name),
        ("Node", cluster.nodes, _name),
        ("PodDisruptionBudget", cluster.pdbs, _namespaced_key),
    ]
    kinds += [(kind, objs, _namespaced_key) for kind, objs in cluster.storage.items()]
    kinds += [("Pod", cluster.pods, _pod_order), ("SchedulerProfile", cluster.profiles, _name)]
    out: list[dict[str, Any]] = []
    for kind, objs, key in kinds:
        for obj in sorted(objs, key=key):
            obj["kind"] = kind
            if kind == "SchedulerProfile":
                obj.setdefault("apiVersion", "multisched.dev/v1alpha1")
            elif kind in STORAGE or kind in DRA or kind in GROUPS or kind in WORKLOADS:
                obj.setdefault("apiVersion", _api_version(kind))
            out.append(obj)
    return out


def _namespaced_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    return _namespace(obj), _name(obj)


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")
