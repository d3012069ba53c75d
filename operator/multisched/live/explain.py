"""``multisched explain``: one pod's scheduling cycle over the cluster as it is now.

The scheduler is set up as the operator's is after its caches sync: nodes, bound pods
(their requests are the capacity in use), namespaces, PDBs, and pending pods that carry a
``status.nominatedNodeName`` in the nominator. Then the pod gets one cycle with explain on.
Bindings, preemptions and nominations go to a dry-run client that only records them.
"""

from __future__ import annotations

import random
from typing import Any

from multisched.cache import PodError, PodInfo
from multisched.cache.dra import RESOURCE_CLAIM
from multisched.config import ResolvedConfig
from multisched.framework import Registry, WaitingPod
from multisched.meta import object_key
from multisched.scheduler import Outcome, Scheduler
from multisched.scheduler.feed import EngineFeed
from multisched.scheduler.introspect import EngineView, gang_line, quota_line
from multisched.scheduler.sim_claims import write_claim
from multisched.scheduler.sim_volumes import SimVolumeController
from multisched.scheduler.simulate import (
    ClusterInput,
    InputError,
    Placement,
    SimulationResult,
    create_sim_claim,
    device_report,
    extended_resource_claims,
    outcome_placement,
    pre_enqueue_refusal,
    volume_report,
)


class DryRunClient:
    """Records what the cycle would write; writes nothing."""

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}
        self.preempted: dict[str, str] = {}
        self.nominated: dict[str, str] = {}
        #: ``kind namespace/name`` -> the object the volume binder would write.
        self.storage_writes: dict[str, dict[str, Any]] = {}
        #: Set by ``explain``: where the writes are played out.
        self.scheduler: Scheduler | None = None
        self.volumes: SimVolumeController | None = None
        #: Pod key -> the ``status.extendedResourceClaimStatus`` PreBind would write.
        self.extended_claim_status: dict[str, dict[str, Any]] = {}

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        self.bound[pod.key] = node_name

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        pass

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        self.preempted[pod.key] = reason

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        self.nominated[pod.key] = node_name

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Recorded, and finished in memory as the PV controller (and a provisioner) would
        finish it, so the binding cycle sees its volumes bound and says where the pod goes."""
        self.storage_writes[f"{kind} {object_key(obj)}"] = obj
        if self.scheduler is None:
            return obj
        if self.volumes is None:
            self.volumes = SimVolumeController(EngineView.of(self.scheduler).volumes)
        changes = self.volumes.write(kind, obj)
        for changed_kind, changed in changes:
            self.scheduler.feed.on_storage_object(changed_kind, changed)
        return changes[0][1]

    async def update_claim_status(self, claim: dict[str, Any]) -> dict[str, Any]:
        """Recorded, and stored in memory as simulate's (the binding cycle goes on)."""
        return self._write_claim(claim, status_only=True)

    async def update_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        return self._write_claim(claim, status_only=False)

    def _write_claim(self, claim: dict[str, Any], status_only: bool) -> dict[str, Any]:
        self.storage_writes[f"{RESOURCE_CLAIM} {object_key(claim)}"] = claim
        if self.scheduler is None:
            return claim
        stored = write_claim(EngineView.of(self.scheduler).dra, claim, status_only)
        self.scheduler.feed.on_dra_object(RESOURCE_CLAIM, stored)
        return stored

    # -- DRA-backed extended resources: played out in memory, as simulate's --

    async def create_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        if self.scheduler is None:
            return claim
        view = EngineView.of(self.scheduler)
        return create_sim_claim(self.scheduler.feed, view.dra, claim)

    async def delete_claim(self, claim: dict[str, Any]) -> None:
        if self.scheduler is not None:
            self.scheduler.feed.on_dra_object(RESOURCE_CLAIM, claim, deleted=True)

    async def set_extended_resource_claim_status(
        self, pod: PodInfo, status: dict[str, Any]
    ) -> None:
        self.extended_claim_status[pod.key] = status


class PodNotFound(LookupError):
    pass


class Explanation:
    """The cycle's result as a one-pod ``SimulationResult`` (rendered like simulate's)."""

    def __init__(self, result: SimulationResult, current_node: str, evaluated_all: bool) -> None:
        self.result = result
        #: Where a bound pod is now ("" for a pending pod).
        self.current_node = current_node
        #: False when percentageOfNodesToScore stopped the filter pass early.
        self.evaluated_all = evaluated_all


def _find(cluster: ClusterInput, namespace: str, name: str) -> tuple[str, dict[str, Any]]:
    for label, raw in cluster.pods:
        meta = raw.get("metadata") or {}
        if meta.get("name") == name and (meta.get("namespace") or "default") == namespace:
            return label, raw
    raise PodNotFound(f"pod {namespace}/{name} not found")


async def explain(
    cluster: ClusterInput,
    config: ResolvedConfig,
    registry: Registry,
    namespace: str,
    name: str,
    seed: int | None = None,
) -> Explanation:
    """Raises PodNotFound, or InputError for objects the cache cannot read."""
    target_label, target_raw = _find(cluster, namespace, name)
    client = DryRunClient()
    scheduler = Scheduler(config, registry, client=client, rng=random.Random(seed))
    client.scheduler = scheduler
    scheduler.explain = True
    target, current = _load(cluster, scheduler.feed, target_label, target_raw)

    last: dict[str, Outcome] = {}
    scheduler.register_outcome_callback(lambda o: last.__setitem__(o.pod.uid, o))
    result = SimulationResult()
    evaluated_all = True
    if not scheduler.feed.responsible_for(target):
        message = f"no profile for schedulerName {target.scheduler_name!r}; left Pending"
        result.placements.append(Placement(target, "Pending", message=message))
        return Explanation(result, current, evaluated_all)
    if target.terminating:
        placement = Placement(target, "Pending", message="the pod is being deleted")
        result.placements.append(placement)
        return Explanation(result, current, evaluated_all)
    scheduler.feed.on_pod(target)
    if await scheduler.schedule_next() is None:  # PreEnqueue held it back
        refusal = "" if target.scheduling_gates else pre_enqueue_refusal(scheduler, target)
        if refusal:
            placement = Placement(target, "Pending", message=refusal)
        else:
            gates = ", ".join(target.scheduling_gates) or "PreEnqueue"
            message = f"waiting for scheduling gate(s): {gates}"
            placement = Placement(target, "Gated", message=message)
        result.placements.append(placement)
        return Explanation(result, current, evaluated_all)
    held = scheduler.held_at_permit()
    if held:
        placement = _held(scheduler, target, held)
        await scheduler.end_permit_waits("explained")  # the dry run ends here
        result.placements.append(placement)
        return Explanation(result, current, evaluated_all)
    await scheduler.wait_for_bindings()
    outcome = last.get(target.uid)
    assert outcome is not None
    placement = outcome_placement(target, outcome, "would be assigned to {node}")
    placement.nominated_node = outcome.nominated_node
    placement.outcome = outcome
    if placement.status == "Scheduled" and target.volumes:
        placement.volumes = volume_report(target, EngineView.of(scheduler).volumes, client.volumes)
    dra = EngineView.of(scheduler).dra
    if placement.status == "Scheduled" and not dra.is_empty():
        placement.devices = device_report(target, dra, extended_resource_claims(dra))
    if outcome.schedule is not None:
        evaluated_all = outcome.schedule.evaluated_nodes >= len(cluster.nodes)
    placement.message = _with_notes(scheduler, target, placement.message)
    result.placements.append(placement)
    result.preempted = dict(client.preempted)
    return Explanation(result, current, evaluated_all)


def _load(
    cluster: ClusterInput, engine: EngineFeed, target_label: str, target_raw: dict[str, Any]
) -> tuple[PodInfo, str]:
    """The cluster into ``engine`` as the operator's caches hold it, all but the pod
    explained; returns that pod as if it were pending, and the node it is bound to ("")."""
    cluster.load_into(engine)
    for label, raw in cluster.pods:
        if raw is target_raw:
            continue
        pod = _parse(cluster, label, raw)
        if pod.node_name:
            engine.on_pod(pod)
            continue
        # A pending pod takes no room until it is nominated, but counts in its gang.
        engine.track_group_member(pod)
        if pod.nominated_node_name and engine.serves(pod.scheduler_name) and not pod.terminating:
            engine.on_nominated_pod(pod)

    target = _parse(cluster, target_label, target_raw)
    current = target.node_name
    if current:
        # Where would it go now: as if it were pending, its own requests not counted.
        unbound = dict(target_raw)
        unbound["spec"] = {**(target_raw.get("spec") or {}), "nodeName": ""}
        target = _parse(cluster, target_label, unbound)
    return target, current


def _held(scheduler: Scheduler, target: PodInfo, held: list[tuple[Any, WaitingPod]]) -> Placement:
    """The pod passed every filter and waits at Permit (for the rest of its gang)."""
    node = next((w.pod.node_name for _, w in held if w.pod.uid == target.uid), "")
    plugins = sorted({p for _, w in held for p in w.pending_plugins})
    message = f"would be assumed on {node} and wait at Permit for {', '.join(plugins)}"
    return Placement(target, "Waiting", node, _with_notes(scheduler, target, message))


def _with_notes(scheduler: Scheduler, target: PodInfo, message: str) -> str:
    """``message``, then what the pod's gang waits for and its namespace's quota use."""
    notes = (gang_line(scheduler, target), quota_line(scheduler, target.namespace))
    return "; ".join([message, *(n for n in notes if n)])


def _parse(cluster: ClusterInput, label: str, raw: dict[str, Any]) -> PodInfo:
    admitted, priority = cluster.admit(label, raw)
    try:
        return PodInfo.parse(admitted, priority=priority)
    except PodError as exc:
        raise InputError([f"{label}: {exc}"]) from exc
