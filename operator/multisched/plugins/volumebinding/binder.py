"""The volume binder (upstream ``volumebinding/binder.go``): which claims of a pod are bound,
which PV or provisioning each unbound one gets on a node, the assumption of that choice in
the assume caches, and the writes and the wait of PreBind.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from multisched.cache import LabelSelector, NodeInfo, PodInfo, SelectorError
from multisched.cache.volumes import (
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    AssumeError,
    VolumeStore,
    resource_version,
)

from .matching import ClaimMatcher
from .pv_helpers import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    Obj,
    annotations_of,
    bind_volume_to_claim,
    claim_class,
    claim_key,
    claim_request,
    is_claim_fully_bound,
    meta,
    node_affinity_error,
    spec,
    storage_of,
)

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
#: ``wait.ErrWaitTimeout``'s text, which PreBind reports behind "binding volumes: ".
TIMED_OUT = "timed out waiting for the condition"
POLL_SECONDS = 1.0

Write = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


class BindingError(Exception):
    """Binding cannot go on (upstream returns it as an error status)."""


class Binding:
    """A claim and the PV chosen for it (``BindingInfo``)."""

    __slots__ = ("claim", "pv")

    def __init__(self, pv: Obj, claim: Obj) -> None:
        self.pv = pv
        self.claim = claim


class PodVolumeClaims:
    __slots__ = ("bound", "delay_binding", "immediate", "matchers")

    def __init__(self) -> None:
        self.bound: list[Obj] = []
        self.delay_binding: list[Obj] = []
        self.immediate: list[Obj] = []
        #: Per unbound delay-binding claim key, its candidates (prepared once per pod).
        self.matchers: dict[str, ClaimMatcher] = {}


class PodVolumes:
    """What one node would need: PVs to bind and claims to provision there."""

    __slots__ = ("dynamic_provisions", "provision_capacities", "static_bindings")

    def __init__(
        self,
        static: list[Binding],
        dynamic: list[Obj],
        capacities: list[Obj | None] | None = None,
    ) -> None:
        self.static_bindings = static
        self.dynamic_provisions = dynamic
        #: Per claim to provision, in the same order, the CSIStorageCapacity that had room
        #: for it on this node (``DynamicProvision.NodeCapacity``); None when its driver
        #: tracks no capacity. Scoring reads it.
        self.provision_capacities: list[Obj | None] = (
            capacities if capacities is not None else [None] * len(dynamic)
        )


def claim_names(pod: PodInfo) -> list[tuple[str, bool]]:
    """(claim name, from a generic ephemeral volume) for every claim the pod uses."""
    out = []
    for vol in pod.volumes:
        claim = vol.get("persistentVolumeClaim")
        if claim is not None:
            out.append((str(claim.get("claimName") or ""), False))
        elif vol.get("ephemeral") is not None:
            # ``ephemeral.VolumeClaimName``: the controller names the claim after both.
            out.append((f"{pod.name}-{vol.get('name') or ''}", True))
    return out


def ephemeral_owner_error(pod: PodInfo, claim: Obj) -> str | None:
    """``ephemeral.VolumeIsForPod``: the claim must be controlled by this pod."""
    pod_uid = (pod.raw.get("metadata") or {}).get("uid") or pod.uid
    for ref in meta(claim).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("uid") == pod_uid:
            return None
    m = meta(claim)
    return (
        f"PVC {m.get('namespace')}/{m.get('name')} was not created for pod "
        f"{pod.namespace}/{pod.name} (pod is not owner)"
    )


class Binder:
    def __init__(self, store: VolumeStore, bind_timeout: float) -> None:
        self.store = store
        self.bind_timeout = bind_timeout

    # -- PreFilter ------------------------------------------------------------------------

    def pod_volume_claims(self, pod: PodInfo) -> PodVolumeClaims:
        """``GetPodVolumeClaims``: the pod's claims by state, read from the assume cache."""
        claims = PodVolumeClaims()
        for name, ephemeral in claim_names(pod):
            key = f"{pod.namespace}/{name}"
            claim = self.store.pvcs.get(key)
            if claim is None:
                raise BindingError(
                    f'error getting PVC "{key}": could not find v1.PersistentVolumeClaim "{key}"'
                )
            if ephemeral:
                problem = ephemeral_owner_error(pod, claim)
                if problem:
                    raise BindingError(problem)
            if is_claim_fully_bound(claim):
                claims.bound.append(claim)
            elif self._delay_binding(claim) and not spec(claim).get("volumeName"):
                claims.delay_binding.append(claim)
            else:
                claims.immediate.append(claim)
        for waiting in claims.delay_binding:
            if ANN_SELECTED_NODE in annotations_of(waiting):
                continue
            volumes = self.store.pvs.list(claim_class(waiting))
            claims.matchers[claim_key(waiting)] = ClaimMatcher(waiting, volumes)
        return claims

    def _delay_binding(self, claim: Obj) -> bool:
        """``IsDelayBindingMode``: the claim's class binds at first consumer."""
        name = claim_class(claim)
        if not name:
            return False
        klass = self.store.get_storage_class(name)
        if klass is None:
            return False
        mode = klass.get("volumeBindingMode")
        if mode is None:
            raise BindingError(f'VolumeBindingMode not set for StorageClass "{name}"')
        return bool(mode == WAIT_FOR_FIRST_CONSUMER)

    # -- Filter ---------------------------------------------------------------------------

    def find_pod_volumes(
        self, pod: PodInfo, claims: PodVolumeClaims, node: NodeInfo
    ) -> tuple[PodVolumes, list[str]]:
        """``FindPodVolumes``: what binding the pod on ``node`` takes, or why it cannot."""
        labels = node.labels
        bound_ok = unbound_ok = enough_storage = pvs_found = True
        static: list[Binding] = []
        dynamic: list[Obj] = []
        capacities: list[Obj | None] = []
        if claims.bound:
            bound_ok, pvs_found = self._check_bound_claims(claims.bound, labels)
        if claims.delay_binding:
            to_provision: list[Obj] = []
            to_match: list[Obj] = []
            for claim in claims.delay_binding:
                selected = annotations_of(claim).get(ANN_SELECTED_NODE)
                if selected is None:
                    to_match.append(claim)
                elif selected != node.name:
                    unbound_ok = False  # provisioning already asked for on another node
                    to_provision = to_match = []
                    break
                else:
                    to_provision.append(claim)
            if to_match:
                unbound_ok, static, unmatched = self._find_matching(claims, to_match, labels)
                to_provision += unmatched
            if to_provision:
                # Claims no PV fits may still be provisioned: that check has the last word.
                unbound_ok, enough_storage, dynamic, capacities = self._check_provisions(
                    to_provision, node
                )
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not enough_storage:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return PodVolumes(static, dynamic, capacities), reasons

    def _check_bound_claims(
        self, claims: list[Obj], labels: Mapping[str, str]
    ) -> tuple[bool, bool]:
        for claim in claims:
            pv = self.store.get_pv(str(spec(claim).get("volumeName") or ""))
            if pv is None:
                return True, False
            if node_affinity_error(pv, labels) is not None:
                return False, True
        return True, True

    def _find_matching(
        self, claims: PodVolumeClaims, to_match: list[Obj], labels: Mapping[str, str]
    ) -> tuple[bool, list[Binding], list[Obj]]:
        """``findMatchingVolumes``: smallest claims first, each PV for one claim only."""
        chosen: dict[str, Obj] = {}
        bindings: list[Binding] = []
        unmatched: list[Obj] = []
        for claim in sorted(to_match, key=claim_request):
            pv = claims.matchers[claim_key(claim)].find(labels, chosen)
            if pv is None:
                unmatched.append(claim)
                continue
            chosen[str(meta(pv).get("name"))] = pv
            bindings.append(Binding(pv, claim))
        return not unmatched, bindings, unmatched

    def _check_provisions(
        self, claims: list[Obj], node: NodeInfo
    ) -> tuple[bool, bool, list[Obj], list[Obj | None]]:
        """``checkVolumeProvisions``: (provisioning possible, enough storage, claims, the
        capacity each claim found on the node)."""
        out = []
        capacities: list[Obj | None] = []
        for claim in claims:
            name = claim_class(claim)
            if not name:
                raise BindingError(f'no class for claim "{claim_key(claim)}"')
            klass = self.store.get_storage_class(name)
            if klass is None:
                raise BindingError(f'failed to find storage class "{name}"')
            provisioner = str(klass.get("provisioner") or "")
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, [], []
            if not _topology_allows(klass.get("allowedTopologies"), node.labels):
                return False, True, [], []
            enough, capacity = self._enough_capacity(provisioner, claim, name, node.labels)
            if not enough:
                return True, False, [], []
            out.append(claim)
            capacities.append(capacity)
        return True, True, out, capacities

    def _enough_capacity(
        self, provisioner: str, claim: Obj, class_name: str, labels: Mapping[str, str]
    ) -> tuple[bool, Obj | None]:
        """``hasEnoughCapacity``: only a CSIDriver with ``storageCapacity: true`` is asked;
        the first CSIStorageCapacity with room that the node reaches is the answer."""
        requests = (spec(claim).get("resources") or {}).get("requests") or {}
        if "storage" not in requests:
            return True, None
        driver = self.store.get_csi_driver(provisioner)
        if driver is None or not spec(driver).get("storageCapacity"):
            return True, None
        size = claim_request(claim)
        for capacity in self.store.csi_storage_capacities.values():
            if capacity.get("storageClassName") != class_name:
                continue
            limit_raw = capacity.get("maximumVolumeSize", capacity.get("capacity"))
            if limit_raw is None or storage_of({"storage": limit_raw}) < size:
                continue
            if _node_has_access(capacity.get("nodeTopology"), labels):
                return True, capacity
        return False, None

    # -- Reserve / Unreserve --------------------------------------------------------------

    def all_bound(self, pod: PodInfo) -> bool:
        """``arePodVolumesBound``: every claim of the pod fully bound (assumed view)."""
        for name, _ in claim_names(pod):
            claim = self.store.get_pvc(pod.namespace, name)
            if claim is None or not is_claim_fully_bound(claim):
                return False
        return True

    def assume(self, pod: PodInfo, node_name: str, volumes: PodVolumes) -> bool:
        """``AssumePodVolumes``: the choice counts for the next pods now. True when every
        claim is already bound (nothing for PreBind to do)."""
        if self.all_bound(pod):
            return True
        bindings: list[Binding] = []
        try:
            for binding in volumes.static_bindings:
                pv, dirty = bind_volume_to_claim(binding.pv, binding.claim)
                if dirty:
                    self.store.pvs.assume(pv)
                bindings.append(Binding(pv, binding.claim))
        except AssumeError:
            self._revert_pvs(bindings)
            raise
        provisions: list[Obj] = []
        try:
            for claim in volumes.dynamic_provisions:
                clone = {**claim, "metadata": dict(meta(claim))}
                clone["metadata"]["annotations"] = {
                    **annotations_of(claim),
                    ANN_SELECTED_NODE: node_name,
                }
                self.store.pvcs.assume(clone)
                provisions.append(clone)
        except AssumeError:
            self._revert_pvs(bindings)
            self._revert_claims(provisions)
            raise
        volumes.static_bindings = bindings
        volumes.dynamic_provisions = provisions
        return False

    def revert(self, volumes: PodVolumes) -> None:
        """``RevertAssumedPodVolumes``."""
        self._revert_pvs(volumes.static_bindings)
        self._revert_claims(volumes.dynamic_provisions)

    def _revert_pvs(self, bindings: list[Binding]) -> None:
        for binding in bindings:
            self.store.pvs.restore(str(meta(binding.pv).get("name")))

    def _revert_claims(self, claims: list[Obj]) -> None:
        for claim in claims:
            self.store.pvcs.restore(claim_key(claim))

    # -- PreBind --------------------------------------------------------------------------

    async def bind(
        self,
        pod: PodInfo,
        node_name: str,
        volumes: PodVolumes,
        write: Write,
        node_labels: Callable[[str], Mapping[str, str] | None],
    ) -> None:
        """``BindPodVolumes``: the PVs' claimRefs, then the claims' selected-node, then the
        wait until the PV controller (and a provisioner) bound every claim. Raises
        ``BindingError`` with upstream's message; what was not written is reverted."""
        await self._write(volumes, write)
        deadline = time.monotonic() + self.bind_timeout
        while True:
            if self._check_bindings(node_name, volumes, node_labels):
                return
            if time.monotonic() >= deadline:
                raise BindingError(f"binding volumes: {TIMED_OUT}")
            await asyncio.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))

    async def _write(self, volumes: PodVolumes, write: Write) -> None:
        """``bindAPIUpdate``: one PUT per PV, then per claim; on a failure the rest of the
        assumptions are reverted (those written stay: the API has them)."""
        done_pvs = done_claims = 0
        try:
            for binding in volumes.static_bindings:
                binding.pv = await write(PERSISTENT_VOLUME, dict(binding.pv))
                done_pvs += 1
            for i, claim in enumerate(volumes.dynamic_provisions):
                volumes.dynamic_provisions[i] = await write(PERSISTENT_VOLUME_CLAIM, dict(claim))
                done_claims += 1
        except BaseException:
            self._revert_pvs(volumes.static_bindings[done_pvs:])
            self._revert_claims(volumes.dynamic_provisions[done_claims:])
            raise

    def _check_bindings(
        self,
        node_name: str,
        volumes: PodVolumes,
        node_labels: Callable[[str], Mapping[str, str] | None],
    ) -> bool:
        """``checkBindings``: True once every claim is bound; BindingError when binding
        went wrong (the PV controller undid it, provisioning failed, the node is gone)."""
        labels = node_labels(node_name)
        if labels is None:
            raise BindingError(
                f'binding volumes: failed to get node "{node_name}": node "{node_name}" not found'
            )
        for binding in volumes.static_bindings:
            name = str(meta(binding.pv).get("name"))
            pv = self.store.pvs.get_api_obj(name)
            claim = self.store.pvcs.get_api_obj(claim_key(binding.claim))
            if pv is None or claim is None:
                missing = (
                    f'PersistentVolume "{name}"'
                    if pv is None
                    else (f'PersistentVolumeClaim "{claim_key(binding.claim)}"')
                )
                raise BindingError(
                    f"binding volumes: failed to check binding: could not find {missing}"
                )
            if resource_version(binding.pv) > resource_version(pv):
                return False  # our write is not in the informer's view yet
            why = node_affinity_error(pv, labels)
            if why is not None:
                raise BindingError(
                    f'binding volumes: pv "{name}" node affinity doesn\'t match node '
                    f'"{node_name}": {why}'
                )
            ref = spec(pv).get("claimRef") or {}
            if not ref.get("uid"):
                raise BindingError(f'binding volumes: ClaimRef got reset for pv "{name}"')
            if not is_claim_fully_bound(claim):
                return False
        for provisioned in volumes.dynamic_provisions:
            key = claim_key(provisioned)
            claim = self.store.pvcs.get_api_obj(key)
            if claim is None:
                raise BindingError(
                    f"binding volumes: failed to check provisioning pvc: could not find "
                    f'v1.PersistentVolumeClaim "{key}"'
                )
            if resource_version(provisioned) > resource_version(claim):
                return False
            selected = annotations_of(claim).get(ANN_SELECTED_NODE)
            claim_name = meta(claim).get("name")
            if selected is None and not annotations_of(claim):
                raise BindingError(
                    f'binding volumes: selectedNode annotation reset for PVC "{claim_name}"'
                )
            if selected != node_name:
                raise BindingError(f'binding volumes: provisioning failed for PVC "{claim_name}"')
            volume_name = str(spec(claim).get("volumeName") or "")
            if volume_name:
                pv = self.store.pvs.get_api_obj(volume_name)
                if pv is None:
                    return False  # the provisioner's PV has not reached the informer yet
                why = node_affinity_error(pv, labels)
                if why is not None:
                    raise BindingError(
                        f'binding volumes: pv "{volume_name}" node affinity doesn\'t match node '
                        f'"{node_name}": {why}'
                    )
            if not is_claim_fully_bound(claim):
                return False
        return True


def _topology_allows(terms: Any, labels: Mapping[str, str]) -> bool:
    """``MatchTopologySelectorTerms``: no terms allow every node; else one term must match,
    each of its expressions naming one of the node's values."""
    if not terms:
        return True
    for term in terms:
        exprs = (term or {}).get("matchLabelExpressions") or ()
        # An empty term selects nothing (upstream skips it).
        if exprs and all(labels.get(e.get("key")) in set(e.get("values") or ()) for e in exprs):
            return True
    return False


def _node_has_access(topology: Any, labels: Mapping[str, str]) -> bool:
    """``nodeHasAccess``: a capacity without node topology is reachable from no node."""
    if topology is None:
        return False
    try:
        return LabelSelector.parse(topology).matches(labels)
    except (SelectorError, TypeError, ValueError, AttributeError):
        return False


__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "Binder",
    "BindingError",
    "PodVolumeClaims",
    "PodVolumes",
]
