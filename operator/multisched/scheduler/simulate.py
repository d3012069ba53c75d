"""``multisched simulate``: schedule a YAML cluster in memory, as kube-scheduler would.

Nodes, bound pods, PriorityClasses, Namespaces and PodDisruptionBudgets form the cluster;
pending pods are queued in document order (then by priority, as PrioritySort does) and
scheduled with assume, so each placement counts for the next pod.
"""

from __future__ import annotations

import datetime
import hashlib
import random
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from multisched.cache import Cache, NodeError, PodError, PodInfo, VolumeStore
from multisched.cache.dra import (
    DEVICE_CLASS,
    DEVICE_TAINT_RULE,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    DraStore,
)
from multisched.cache.groups import GROUP_KINDS
from multisched.cache.volumes import NAMESPACED_VOLUME_KINDS, VOLUME_KINDS
from multisched.cache.workloads import WORKLOAD_KINDS
from multisched.config.loader import embedded_configs
from multisched.config.resolved import ResolvedConfig
from multisched.framework import Registry
from multisched.framework.events import ASSIGNED_POD_DELETE
from multisched.meta import format_time
from multisched.validation import (
    CONFIG_KINDS,
    Document,
    InputErrors,
    expand_lists,
    object_problems,
    without_nulls,
)
from multisched.validation.core import SYSTEM_PRIORITY_CLASSES
from multisched.validation.workloads import template_labels

from .feed import EngineFeed
from .outcome import Outcome
from .scheduler import Scheduler
from .settle import Settlement, settle
from .settle_claims import CLAIM_KINDS
from .sim_claims import write_claim
from .sim_volumes import ANN_SELECTED_NODE, SimVolumeController

#: Rounds of "drain the queue, then retry pods that preemption made room for".
MAX_ROUNDS = 4
#: Scheduling attempts per pod in one simulation. Simulate's clock stands still while the
#: queue drains, so pods that keep taking each other's place would cycle forever: a gang
#: whose members a quota turns away in turn, each member that waits at Permit waking the
#: rest. A pod past this is not tried again, and shows its last outcome.
ATTEMPTS_PER_POD = 100
#: Kinds whose names are unique per namespace.
_NAMESPACED_KINDS = frozenset(
    {
        "Pod",
        "PodDisruptionBudget",
        "ConfigMap",
        *NAMESPACED_VOLUME_KINDS,
        *GROUP_KINDS,
        *WORKLOAD_KINDS,
        *CLAIM_KINDS,
    }
)


class InputError(InputErrors):
    """Bad simulate input: one line per problem, each naming the file, document and field."""


class SimClock:
    """Advances a microsecond per read, so queue timestamps keep document order."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1e-6
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class SimClient:
    """In-memory API: binding confirms the assumed pod at once; preemption deletes victims."""

    def __init__(self, scheduler_ref: list[Scheduler]) -> None:
        self._ref = scheduler_ref
        self.preempted: dict[str, str] = {}
        self.nominated: dict[str, str] = {}
        self.volumes: SimVolumeController | None = None
        #: Pod uid -> the ``status.extendedResourceClaimStatus`` PreBind wrote.
        self.extended_claim_status: dict[str, dict[str, Any]] = {}

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        # The pod as the API would echo it: a copy with nodeName set (parsing it again
        # would give the same PodInfo, at ten times the cost).
        bound = PodInfo.__new__(PodInfo)
        for slot in PodInfo.__slots__:
            setattr(bound, slot, getattr(pod, slot))
        bound.raw = _bound_raw(pod.raw, node_name)
        claim_status = self.extended_claim_status.pop(pod.uid, None)
        if claim_status is not None:
            bound.raw["status"] = {
                **(bound.raw.get("status") or {}),
                "extendedResourceClaimStatus": claim_status,
            }
        bound.node_name = node_name
        self._ref[0].feed.on_pod(bound)

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        pass

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        self.preempted[pod.key] = reason
        self._ref[0].feed.on_pod_deleted(pod.uid)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        self.nominated[pod.key] = node_name

    async def update_claim_status(self, claim: dict[str, Any]) -> dict[str, Any]:
        """Stored at once (sim_claims.py) and fed back, as the informer would."""
        return self._write_claim(claim, status_only=True)

    async def update_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        return self._write_claim(claim, status_only=False)

    def _write_claim(self, claim: dict[str, Any], status_only: bool) -> dict[str, Any]:
        scheduler = self._ref[0]
        stored = write_claim(scheduler.cache.dra, claim, status_only)
        scheduler.feed.on_dra_object(RESOURCE_CLAIM, stored)
        return stored

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Stored at once, and bound (or provisioned and bound) at once, as the PV
        controller and a provisioner would (sim_volumes.py)."""
        scheduler = self._ref[0]
        if self.volumes is None:
            self.volumes = SimVolumeController(scheduler.cache.volumes)
        changes = self.volumes.write(kind, obj)
        for changed_kind, changed in changes:
            scheduler.feed.on_storage_object(changed_kind, changed)
        return changes[0][1]

    # -- DRA-backed extended resources --

    async def create_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        """Stored at once, named as the API server names it from generateName (the
        suffix drawn from the name, so a run is repeatable)."""
        return create_sim_claim(self._ref[0].feed, self._ref[0].cache.dra, claim)

    async def delete_claim(self, claim: dict[str, Any]) -> None:
        self._ref[0].feed.on_dra_object(RESOURCE_CLAIM, claim, deleted=True)

    async def set_extended_resource_claim_status(
        self, pod: PodInfo, status: dict[str, Any]
    ) -> None:
        """Kept for the binding, which writes the pod as the API would then echo it."""
        self.extended_claim_status[pod.uid] = status


class Placement:
    """The final word on one pending pod."""

    __slots__ = (
        "devices",
        "message",
        "node",
        "nominated_node",
        "outcome",
        "pod",
        "status",
        "volumes",
    )

    def __init__(self, pod: PodInfo, status: str, node: str = "", message: str = "") -> None:
        self.pod = pod
        #: "Scheduled", "Unschedulable", "Error", "Pending" (no profile), "Preempted" or
        #: "Bound" (bound by ``spec.nodeName`` in the input: never scheduled).
        self.status = status
        self.node = node
        self.message = message
        self.nominated_node = ""
        self.outcome: Outcome | None = None
        #: Per claim of a scheduled pod: its PV, and the selected-node written when the
        #: volume is to be provisioned there (``volume_report``).
        self.volumes: list[dict[str, str]] = []
        #: Per device allocated to a claim of a scheduled pod: the claim, its request and
        #: the device (``device_report``).
        self.devices: list[dict[str, str]] = []


def outcome_placement(pod: PodInfo, outcome: Outcome, assigned: str) -> Placement:
    """What the report shows of a scheduling attempt: status, node and message.

    ``assigned`` is the message of a scheduled pod, formatted with ``pod`` (its key) and
    ``node``: simulate reports the Scheduled event's words, explain what would happen.
    """
    if outcome.result == "scheduled":
        message = assigned.format(pod=pod.key, node=outcome.node)
        return Placement(pod, "Scheduled", outcome.node, message)
    if outcome.result == "unschedulable":
        return Placement(pod, "Unschedulable", message=outcome.message)
    return Placement(pod, "Error", message=outcome.message)


class SimulationResult:
    def __init__(self) -> None:
        self.placements: list[Placement] = []
        self.preempted: dict[str, str] = {}
        #: What the user should know about the run itself (printed as notes).
        self.notes: list[str] = []


class ClusterInput:
    """The objects of a simulate file, checked as the API server would, then cross-checked."""

    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.pods: list[tuple[str, dict[str, Any]]] = []
        #: The built-in system classes exist in every cluster.
        self.priority_classes: dict[str, int] = dict(SYSTEM_PRIORITY_CLASSES)
        self.default_priority = 0
        #: PriorityClass name -> its preemptionPolicy ("" for the global default's name).
        self.preemption_policies: dict[str, str] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        self.pdbs: dict[str, dict[str, Any]] = {}
        #: PersistentVolumes, claims, StorageClasses and CSI objects, as (kind, object).
        self.storage: list[tuple[str, dict[str, Any]]] = []
        #: PodGroups and ElasticQuotas, as (kind, object).
        self.groups: list[tuple[str, dict[str, Any]]] = []
        #: Services and pod controllers (default spreading's selectors), as (kind, object).
        self.workloads: list[tuple[str, dict[str, Any]]] = []
        self.configs: list[tuple[str, dict[str, Any]]] = []
        #: ResourceClaims and ResourceClaimTemplates, as (kind, object): the resourceclaim
        #: controller's input, then (with the claims it created) DynamicResources'.
        self.claims: list[tuple[str, dict[str, Any]]] = []
        #: DeviceClasses, ResourceSlices and DeviceTaintRules, as (kind, object): with the
        #: claims, what DynamicResources allocates from.
        self.devices: list[tuple[str, dict[str, Any]]] = []
        #: What the cluster's API server and controllers change before scheduling (settle.py).
        self.settled: list[Settlement] = []
        self._seen: dict[tuple[str, str], str] = {}
        self._default_class = ""

    @classmethod
    def from_documents(
        cls, docs: Iterable[Document | tuple[str, Any]], trusted: bool = False
    ) -> ClusterInput:
        """Every problem of every document is collected before InputError is raised.

        ``docs`` are read Documents, or (where, object) pairs naming objects from elsewhere.
        ``trusted``: objects as an API server stored them (it validated them already).
        """
        out = cls()
        problems: list[str] = []
        named = (d if isinstance(d, Document) else Document(d[0], "", d[1]) for d in docs)
        for doc in expand_lists(named):
            found = [] if trusted else [doc.problem(p) for p in object_problems(doc)]
            found += out._claim(doc)
            problems += found or out._add(doc)
        for label, raw in out.pods:
            class_name = (raw.get("spec") or {}).get("priorityClassName")
            if class_name and class_name not in out.priority_classes:
                problems.append(
                    f"{label}: spec.priorityClassName: Not found: "
                    f'"{class_name}": no PriorityClass with name {class_name} was found'
                )
        if problems:
            raise InputError(problems)
        settled = settle(out.storage, out.pods, trusted, out.claims)
        out.storage, out.pods, out.settled = settled.storage, settled.pods, settled.changes
        out.claims = settled.claims
        return out

    def _claim(self, doc: Document) -> list[str]:
        """A second object of the same kind and name would silently replace the first: the
        API server refuses to create it, in these words."""
        meta = doc.obj.get("metadata") if isinstance(doc.obj, Mapping) else None
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str) or not name:
            return []
        namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
        key = name
        if doc.kind in _NAMESPACED_KINDS:
            key = f"{namespace if isinstance(namespace, str) and namespace else 'default'}/{name}"
        first = self._seen.setdefault((doc.kind, key), doc.index)
        if first == doc.index:
            return []
        resource = resource_name(doc.kind, doc.obj.get("apiVersion"))
        return [doc.problem(f'{resource} "{name}" already exists (also {first})')]

    def _add(self, doc: Document) -> list[str]:
        kind, obj = doc.kind, doc.obj
        if kind in CONFIG_KINDS:
            self.configs.append((doc.label, dict(obj)))
            return []
        if kind == "ConfigMap":
            self.configs += [
                (f"{doc.label} data[{key}]", dict(inner)) for key, inner in embedded_configs(obj)
            ]
            return []
        raw = without_nulls(obj)
        meta = raw.get("metadata") or {}
        name = meta["name"]
        key = f"{meta.get('namespace') or 'default'}/{name}"
        if kind == "Node":
            self.nodes.append(raw)
        elif kind == "Pod":
            self.pods.append((doc.label, raw))
        elif kind == "PriorityClass":
            self.priority_classes[name] = raw["value"]
            self.preemption_policies[name] = str(raw.get("preemptionPolicy") or "")
            if raw.get("globalDefault"):
                if self._default_class:
                    return [
                        doc.problem(
                            "globalDefault: Invalid value: true: only one PriorityClass can be "
                            f"marked as globalDefault (also {self._default_class})"
                        )
                    ]
                self._default_class = doc.index
                self.default_priority = raw["value"]
                self.preemption_policies[""] = self.preemption_policies[name]
        elif kind == "Namespace":
            self.namespaces[name] = dict(meta.get("labels") or {})
        elif kind == "PodDisruptionBudget":
            self.pdbs[key] = raw
        elif kind in GROUP_KINDS:
            meta = {"namespace": "default", **meta}
            # What the API server adds: a uid, and a creation time (QueueSort orders gangs
            # by it; written without one, a group is as old as its place in the input).
            meta.setdefault(
                "uid", str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{meta['namespace']}/{name}"))
            )
            meta.setdefault("creationTimestamp", _input_time(len(self.groups)))
            self.groups.append((kind, {**raw, "metadata": meta}))
        elif kind in WORKLOAD_KINDS:
            meta = {"namespace": "default", **meta}
            spec = raw.get("spec") or {}
            if kind == "ReplicationController" and not spec.get("selector"):
                # The API server's default: the template's labels.
                spec = {**spec, "selector": template_labels(spec)}
            self.workloads.append((kind, {**raw, "metadata": meta, "spec": spec}))
        elif kind in CLAIM_KINDS:
            meta = {"namespace": "default", **meta}
            # The API server gives every object a uid; DRA keeps in-flight claims by it.
            meta.setdefault(
                "uid", str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{meta['namespace']}/{name}"))
            )
            self.claims.append((kind, {**raw, "metadata": meta}))
        elif kind in (DEVICE_CLASS, RESOURCE_SLICE, DEVICE_TAINT_RULE):
            meta = dict(meta)
            meta.setdefault("uid", str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{name}")))
            if kind == DEVICE_CLASS:
                # Two classes naming one extended resource: the newer wins; written without
                # a creation time, a class is as old as its place in the input.
                meta.setdefault("creationTimestamp", _input_time(len(self.devices)))
            self.devices.append((kind, {**raw, "metadata": meta}))
        elif kind in VOLUME_KINDS:
            meta = dict(meta)
            if kind in NAMESPACED_VOLUME_KINDS and not meta.get("namespace"):
                meta["namespace"] = "default"
            # The API server gives every object a uid; a claimRef needs the claim's.
            meta.setdefault(
                "uid", str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{meta.get('namespace')}/{name}"))
            )
            raw = {**raw, "metadata": meta}
            if kind == "StorageClass":
                # The API server's defaults, for a class written without them.
                raw = {"volumeBindingMode": "Immediate", "reclaimPolicy": "Delete", **raw}
            if kind == "PersistentVolume" and not (raw.get("status") or {}).get("phase"):
                # Written without a status: what the PV controller makes of it at once.
                bound = bool((raw.get("spec") or {}).get("claimRef"))
                raw = {**raw, "status": {"phase": "Bound" if bound else "Available"}}
            self.storage.append((kind, raw))
        return []

    def priority_of(self, label: str, raw: Mapping[str, Any]) -> int:
        spec = raw.get("spec") or {}
        if spec.get("priority") is not None:
            return int(spec["priority"])
        class_name = spec.get("priorityClassName")
        if class_name:
            return self.priority_classes[class_name]
        return self.default_priority

    def load_into(self, engine: EngineFeed) -> None:
        """Namespaces, PDBs, storage, DRA, group and workload objects and nodes into
        ``engine`` (before any pod: nothing is queued yet); a node it cannot read is bad
        input."""
        for ns, labels in self.namespaces.items():
            engine.on_namespace(ns, labels)
        for key, pdb in self.pdbs.items():
            engine.on_pdb(key, pdb)
        for kind, obj in self.storage:
            engine.on_storage_object(kind, obj)
        for kind, obj in (*self.devices, *self.claims):
            engine.on_dra_object(kind, obj)
        for kind, obj in self.groups:
            engine.on_group_object(kind, obj)
        for kind, obj in self.workloads:
            engine.on_workload_object(kind, obj)
        for raw in self.nodes:
            try:
                engine.on_node(raw)
            except NodeError as exc:
                raise InputError([str(exc)]) from exc

    def admit(self, label: str, raw: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
        """The pod as the API server's Priority admission stores it: ``priority`` and
        ``preemptionPolicy`` copied from its PriorityClass (or the global default) when unset."""
        priority = self.priority_of(label, raw)
        spec = raw.get("spec") or {}
        out = dict(raw)
        if not spec.get("preemptionPolicy"):
            policy = self.preemption_policies.get(str(spec.get("priorityClassName") or ""))
            if policy:
                out["spec"] = {**spec, "preemptionPolicy": policy}
        return out, priority


def resource_name(kind: str, api_version: Any) -> str:
    """How the API server names a kind in its errors: the resource (client-go's
    ``UnsafeGuessKindToResource`` plural), then its group (``storageclasses.storage.k8s.io``)."""
    plural = kind.lower()
    if plural.endswith("s"):
        plural += "es"
    elif plural.endswith("y"):
        plural = plural[:-1] + "ies"
    else:
        plural += "s"
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    return f"{plural}.{group}" if group else plural


def _input_time(index: int) -> str:
    """A fixed creation time per input position (simulate's runs must repeat exactly)."""
    stamp = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=index)
    return format_time(stamp)


async def simulate(
    cluster: ClusterInput,
    config: ResolvedConfig,
    registry: Registry,
    seed: int | None = None,
    explain: bool = False,
) -> SimulationResult:
    clock = SimClock()
    ref: list[Scheduler] = []
    client = SimClient(ref)
    cache = Cache()
    scheduler = Scheduler(
        config, registry, cache=cache, client=client, rng=random.Random(seed), clock=clock
    )
    ref.append(scheduler)
    scheduler.explain = explain
    every, pending = _load(cluster, scheduler.feed)

    last: dict[str, Outcome] = {}
    scheduler.register_outcome_callback(lambda o: last.__setitem__(o.pod.uid, o))
    for pod in pending:
        scheduler.feed.on_pod(pod)
    cycling = False
    for _ in range(MAX_ROUNDS):
        # A pod out of attempts is parked, so that the pods it cycles with run out too and
        # the rest of the queue gets its turn.
        cycling = bool(await scheduler.drain(max_attempts=ATTEMPTS_PER_POD)) or cycling
        # Nothing else to try: the rest of each gang is not coming. Their wait runs out, as
        # it would on the timer; Unreserve lets go of their siblings.
        if await scheduler.end_permit_waits():
            continue
        if cycling and scheduler.pods_backing_off():
            # The gang that kept cycling is parked: time passes for the pods that backed off
            # meanwhile (one tried while a member held its room, for one) to get their turn.
            scheduler.skip_backoff(clock.advance)
            continue
        if not client.nominated or not any(
            last.get(p.uid) is not None and last[p.uid].nominated_node for p in pending
        ):
            break
        # Victims are gone; give nominated pods their retry once their backoff has passed.
        scheduler.skip_backoff(clock.advance, ASSIGNED_POD_DELETE)

    result = SimulationResult()
    result.preempted = dict(client.preempted)
    if cycling:
        result.notes.append(
            f"some pods were not tried again after {ATTEMPTS_PER_POD} attempts: they kept "
            "taking each other's place (a gang whose members are turned away in turn, for "
            "one); each shows its last outcome"
        )
    extended: dict[str, list[dict[str, Any]]] | None = None
    for pod in every:
        outcome = last.get(pod.uid)
        if pod.key in client.preempted:
            placement = Placement(pod, "Preempted", message=client.preempted[pod.key])
        elif pod.node_name:
            placement = Placement(pod, "Bound", pod.node_name, "bound by spec.nodeName")
        elif outcome is None and scheduler.feed.responsible_for(pod) and pod.scheduling_gates:
            gates = ", ".join(pod.scheduling_gates)
            placement = Placement(pod, "Gated", message=f"waiting for scheduling gate(s): {gates}")
        elif outcome is None and (held := pre_enqueue_refusal(scheduler, pod)):
            placement = Placement(pod, "Pending", message=held)
        elif outcome is None:
            placement = Placement(
                pod,
                "Pending",
                message=f"no profile for schedulerName {pod.scheduler_name!r}; left Pending",
            )
        else:
            placement = outcome_placement(pod, outcome, "Successfully assigned {pod} to {node}")
        if outcome is not None:
            placement.nominated_node = outcome.nominated_node
            placement.outcome = outcome
        if placement.status == "Scheduled" and pod.volumes:
            placement.volumes = volume_report(pod, cache.volumes, client.volumes)
        if placement.status == "Scheduled" and not cache.dra.is_empty():
            if extended is None:
                extended = extended_resource_claims(cache.dra)
            placement.devices = device_report(pod, cache.dra, extended)
        result.placements.append(placement)
    return result


def _load(cluster: ClusterInput, engine: EngineFeed) -> tuple[list[PodInfo], list[PodInfo]]:
    """The cluster and its bound pods into ``engine``; returns every pod and the pending
    ones (queued by the caller once it listens to the outcomes)."""
    cluster.load_into(engine)
    pending: list[PodInfo] = []
    every: list[PodInfo] = []
    for label, raw in cluster.pods:
        admitted, priority = cluster.admit(label, raw)
        try:
            pod = PodInfo.parse(admitted, priority=priority)
        except PodError as exc:
            raise InputError([f"{label}: {exc}"]) from exc
        every.append(pod)
        if pod.node_name:
            engine.on_pod(pod)  # a bound member counts toward its PodGroup, as upstream's
        else:
            pending.append(pod)
    return every, pending


def volume_report(
    pod: PodInfo, volumes: VolumeStore, controller: SimVolumeController | None
) -> list[dict[str, str]]:
    """What the binder decided for each claim of a scheduled pod."""
    out = []
    provisioned = controller.provisioned if controller is not None else {}
    for name in pod.pvc_names():
        key = f"{pod.namespace}/{name}"
        claim = volumes.pvcs.get(key) or {}
        entry = {"claim": name, "volume": str((claim.get("spec") or {}).get("volumeName") or "")}
        if key in provisioned:
            notes = (claim.get("metadata") or {}).get("annotations") or {}
            entry["selectedNode"] = str(notes.get(ANN_SELECTED_NODE) or "")
        out.append(entry)
    return out


#: Marks the claim DynamicResources creates for a pod's extended resources backed by
#: devices (``resourceapi.ExtendedResourceClaimAnnotation``).
ANN_EXTENDED_RESOURCE_CLAIM = "resource.kubernetes.io/extended-resource-claim"


def extended_resource_claims(dra: DraStore) -> dict[str, list[dict[str, Any]]]:
    """The claims made for pods' extended resources, by the uid of the pod owning them."""
    out: dict[str, list[dict[str, Any]]] = {}
    for claim in dra.claims.list():
        meta = claim.get("metadata") or {}
        if (meta.get("annotations") or {}).get(ANN_EXTENDED_RESOURCE_CLAIM) != "true":
            continue
        for owner in meta.get("ownerReferences") or ():
            if owner.get("kind") == "Pod" and owner.get("controller"):
                out.setdefault(str(owner.get("uid") or ""), []).append(claim)
    return out


def device_report(
    pod: PodInfo, dra: DraStore, extended: Mapping[str, list[dict[str, Any]]]
) -> list[dict[str, str]]:
    """The devices allocated to each claim of a scheduled pod, as the claims' stored
    ``status.allocation`` says after binding: its ``spec.resourceClaims`` (a template's
    claim by the name its status records, upstream ``resourceclaim.Name``), then the claim
    made for its extended resources."""
    claims: list[tuple[str, dict[str, Any] | None]] = []
    statuses = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in (pod.raw.get("status") or {}).get("resourceClaimStatuses") or ()
    }
    for entry in pod.resource_claims:
        name = entry.get("resourceClaimName")
        if name is None and entry.get("resourceClaimTemplateName"):
            name = statuses.get(str(entry.get("name")))
        if name:
            claims.append((str(entry.get("name")), dra.get_claim(pod.namespace, str(name))))
    claims += [("extended resources", c) for c in extended.get(pod.uid, ())]
    out = []
    for pod_claim, claim in claims:
        if claim is None:
            continue
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or ():
            entry = {
                "claim": pod_claim,
                "resourceClaim": str((claim.get("metadata") or {}).get("name") or ""),
                "request": str(result.get("request") or ""),
                "driver": str(result.get("driver") or ""),
                "pool": str(result.get("pool") or ""),
                "device": str(result.get("device") or ""),
            }
            if result.get("shareID") is not None:
                entry["shareID"] = str(result["shareID"])
            if result.get("adminAccess"):
                entry["adminAccess"] = "true"
            out.append(entry)
    return out


#: The API server's generateName suffix alphabet (apimachinery ``utilrand``, 27 letters).
_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def create_sim_claim(feed: EngineFeed, dra: DraStore, claim: dict[str, Any]) -> dict[str, Any]:
    """A ResourceClaim POSTed to an in-memory API: named from ``generateName`` (5
    characters drawn from the base, the next draw if taken), given a uid and version 1,
    and fed to the engine as the informer would bring it."""
    meta = dict(claim.get("metadata") or {})
    namespace = str(meta.get("namespace") or "default")
    base = str(meta.pop("generateName", "") or "")
    name = str(meta.get("name") or "")
    draw = 0
    while not name or dra.get_claim(namespace, name) is not None:
        digest = hashlib.sha256(f"{namespace}/{base}/{draw}".encode()).digest()
        name = base + "".join(_NAME_SUFFIX_ALPHABET[b % 27] for b in digest[:5])
        draw += 1
    meta.update(
        namespace=namespace,
        name=name,
        uid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{RESOURCE_CLAIM}/{namespace}/{name}")),
        resourceVersion="1",
    )
    stored = {**claim, "metadata": meta}
    feed.on_dra_object(RESOURCE_CLAIM, stored)
    return stored


def pre_enqueue_refusal(scheduler: Scheduler, pod: PodInfo) -> str:
    """Why a PreEnqueue plugin other than SchedulingGates holds the pod back (DynamicResources:
    a claim not created yet), or "" when none does."""
    fwk = scheduler.profiles.get(pod.scheduler_name)
    status = fwk.run_pre_enqueue(pod) if fwk is not None else None
    if status is None:
        return ""
    return f"{status.message()} (PreEnqueue of {status.plugin})"


def _bound_raw(raw: Mapping[str, Any], node_name: str) -> dict[str, Any]:
    out = dict(raw)
    out["spec"] = {**(raw.get("spec") or {}), "nodeName": node_name}
    return out
