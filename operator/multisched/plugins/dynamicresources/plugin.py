"""DynamicResources (upstream ``dynamicresources/dynamicresources.go``, v1.37.2): a pod's
ResourceClaims get devices. PreFilter reads the claims and builds one allocator for the
cycle over the devices not yet taken; Filter allocates the unallocated claims on each node
(and checks allocated claims' node selectors); Reserve puts the chosen node's allocation in
flight, so the next pod sees those devices taken; PreBind writes it (finalizer, then
``status.allocation`` and ``reservedFor``) and assumes the stored claim; Unreserve undoes
both. PostFilter deallocates a claim that kept the pod off every node.

Extended resources a DeviceClass backs (DRAExtendedResource, GA in v1.37) come as one more
claim, last among the pod's: the *special claim* of ``extended.py``, in memory until PreBind
creates it with the node's requests and records it in the pod's status.

A pod without claims is skipped in PreEnqueue on ``PodInfo.resource_claims`` alone, and in
PreFilter on that and its scalar requests (none, or no DeviceClass in the cluster); it costs
nothing after that.

Not ported: DRANodeAllocatableResources (off by default in v1.37), PodGroup claims and
``PodGroupPostFilter`` (DRAWorkloadResourceClaims and GenericWorkload are off by default,
and the gangs here are scheduler-plugins'), PreQueueingHint (the queue has none), the
BindingConditionsPending event and the binding-conditions metrics."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from time import monotonic
from typing import Any, ClassVar

from pydantic import BaseModel

from multisched.cache import NodeInfo, NodeSelector, PodInfo, SelectorError
from multisched.cache.dra import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_SLICE, DraStore
from multisched.cache.volumes import AssumeError
from multisched.dra.structured import (
    AllocatedState,
    AllocationError,
    Allocator,
    FailedAllocationOnNode,
    Features,
    claim_requests,
)
from multisched.framework import (
    MAX_NODE_SCORE,
    ClusterClient,
    Code,
    CycleState,
    Handle,
    PluginError,
    PostFilterResult,
    PreFilterResult,
    Status,
)
from multisched.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    UPDATE,
    UPDATE_NODE_ALLOCATABLE,
    UPDATE_NODE_LABEL,
    UPDATE_POD_GENERATED_RESOURCE_CLAIM,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from multisched.framework.interfaces import NodeToStatus
from multisched.framework.status import SKIP

from .._normalize import default_normalize_score
from .args import DynamicResourcesArgs
from .binding import BindError, bind_claim, bind_extended_claim, remove_reservation
from .binding_conditions import (
    BindingFailed,
    is_claim_ready_for_binding,
    is_claim_timeout,
    wait_for_binding_conditions,
)
from .claims import (
    FINALIZER,
    ClaimStore,
    ClaimUnavailable,
    allocation_of,
    claim_ref,
    claim_uid,
    is_reserved_for_pod,
    pod_resource_claims,
)
from .extended import (
    ExtendedResourceError,
    ExtendedResources,
    NodeExtendedClaim,
    delete_claim,
    delete_claim_logged,
    filter_extended_resources,
    is_special_claim,
    pre_filter_extended_resources,
    unreserve_extended_resource_claim,
)
from .queueing_hints import (
    is_schedulable_after_claim_change,
    is_schedulable_after_target_pod_update,
)
from .scoring import compute_score, has_prioritized_list

logger = logging.getLogger(__name__)

NAME = "DynamicResources"
STATE_KEY = NAME
ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
DEALLOCATED = "deallocation of ResourceClaim completed"
DELETED = "deletion of ResourceClaim completed"
#: ``draoptionalnodeoperations.DRAOptionalNodeOperationsFeatureGate``, as nodes declare it.
OPTIONAL_NODE_OPERATIONS = "DRAOptionalNodeOperations"


class _ClaimInfo:
    """Upstream ``informationForClaim``."""

    __slots__ = ("allocation", "available_on_nodes")

    def __init__(self) -> None:
        #: The allocated claim's node selector (None: any node).
        self.available_on_nodes: NodeSelector | None = None
        #: Set by Reserve, written by PreBind.
        self.allocation: dict[str, Any] | None = None


class _State:
    """Upstream ``stateData``; shared, not copied, by preemption's clones (as upstream's
    ``Clone`` returns the same pointer)."""

    __slots__ = (
        "allocator",
        "claims",
        "extended",
        "informations",
        "node_allocations",
        "unavailable_claims",
    )

    def __init__(self, claims: ClaimStore, extended: ExtendedResources | None = None) -> None:
        self.claims = claims
        #: The special claim's cycle state (upstream ``draExtendedResource``).
        self.extended = extended
        self.allocator: Allocator | None = None
        self.informations = [_ClaimInfo() for _ in range(len(claims))]
        #: Node name -> the allocation results Filter found there, for the claims to
        #: allocate in their order.
        self.node_allocations: dict[str, list[dict[str, Any]]] = {}
        #: Indices of allocated claims some node could not use (PostFilter's candidates).
        self.unavailable_claims: set[int] = set()

    def clone(self) -> _State:
        return self


def _node_selector(allocation: dict[str, Any]) -> NodeSelector | None:
    raw = allocation.get("nodeSelector")
    return None if raw is None else NodeSelector.parse(raw)


def _requires_optional_node_operations(allocation: dict[str, Any] | None) -> bool:
    """Upstream ``allocationResultRequiresDRAOptionalNodeOperations``."""
    if allocation is None:
        return False
    results = (allocation.get("devices") or {}).get("results") or ()
    return any(r.get("skipNodeOperations") for r in results)


def _declares_optional_node_operations(node: NodeInfo) -> bool:
    declared = (node.raw.get("status") or {}).get("declaredFeatures") or ()
    return OPTIONAL_NODE_OPERATIONS in declared


class DynamicResources:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = DynamicResourcesArgs

    def __init__(self, args: DynamicResourcesArgs | None, handle: Handle | None) -> None:
        args = args or DynamicResourcesArgs()
        self.handle = handle
        #: DRASchedulerFilterTimeout (on in v1.37): 0 turns the deadline off.
        self.filter_timeout = args.filter_seconds()
        self.binding_timeout = args.binding_seconds()
        self.features = Features.v1_37_defaults()
        #: PreBind's wait between looks at binding conditions (tests shorten it).
        self.sleep: Callable[[float], Any] = asyncio.sleep

    def _store(self) -> DraStore:
        assert self.handle is not None, "DynamicResources needs a framework handle"
        return self.handle.snapshot.dra

    # -- EnqueueExtensions ----------------------------------------------------------------

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        return (
            # A node's labels may decide an allocation's topology; a new node may have devices.
            ClusterEventWithHint(
                ClusterEvent(NODE, ADD | UPDATE_NODE_LABEL | UPDATE_NODE_ALLOCATABLE)
            ),
            # Allocations live in claims: any change may free devices or make a claim usable.
            ClusterEventWithHint(
                ClusterEvent(RESOURCE_CLAIM, ADD | UPDATE | DELETE),
                self.is_schedulable_after_claim_change,
            ),
            # The pod's status names the claims generated for it.
            ClusterEventWithHint(
                ClusterEvent(POD, UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_target_pod_update,
            ),
            # A class may be created or fixed; new or changed slices bring devices.
            ClusterEventWithHint(ClusterEvent(DEVICE_CLASS, ADD | UPDATE)),
            ClusterEventWithHint(ClusterEvent(RESOURCE_SLICE, ADD | UPDATE)),
        )

    def is_schedulable_after_claim_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        return is_schedulable_after_claim_change(self._store(), pod, old, new)

    def is_schedulable_after_target_pod_update(
        self, pod: PodInfo, old: Any, new: Any
    ) -> QueueingHint:
        return is_schedulable_after_target_pod_update(self._store(), pod, old, new)

    # -- PreEnqueue -----------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        """The pod's claims must all exist (generated ones recorded in its status) first."""
        if not pod.resource_claims:
            return None
        try:
            pod_resource_claims(pod, self._store())
        except ClaimUnavailable as exc:
            return Status.unresolvable(str(exc))
        return None

    # -- PreFilter ------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        store = self._store()
        if not pod.resource_claims and not (pod.requests.scalar and store.device_classes):
            # No state: every later point finds none and returns at once. Score would give
            # every node 0 (no prioritized list), so it is skipped too: same totals.
            state.skip_score_plugins.add(NAME)
            return None, SKIP
        try:
            user_claims = pod_resource_claims(pod, store) if pod.resource_claims else []
        except ClaimUnavailable as exc:
            return None, Status.unresolvable(str(exc))
        special = pre_filter_extended_resources(pod, store)
        extended_claim, extended = special if special is not None else (None, None)
        claims = ClaimStore(user_claims, extended_claim)
        if claims.empty():
            state.skip_score_plugins.add(NAME)
            return None, SKIP
        data = _State(claims, extended)
        state.write(STATE_KEY, data)
        status = self._check_claims(data, store)
        if status is not None:
            return None, status
        if not has_prioritized_list(claims):
            state.skip_score_plugins.add(NAME)
        return None, None

    def _check_claims(self, data: _State, store: DraStore) -> Status | None:
        num_to_allocate = 0
        extended = data.claims.extended_resource_claim()
        for index, claim in data.claims.all():
            # ``resourceclaim.CanBeReserved`` is always true in v1.37 (the API server
            # enforces the reservedFor limit): no "resourceclaim in use" refusal.
            allocation = allocation_of(claim)
            if allocation is not None:
                try:
                    data.informations[index].available_on_nodes = _node_selector(allocation)
                except (SelectorError, KeyError, TypeError) as exc:
                    return Status.error(str(exc))
                continue
            num_to_allocate += 1
            # Allocation in flight for another pod: better wait for it to be written.
            if store.claim_has_pending_allocation(claim_uid(claim)):
                return Status.unresolvable(
                    f"resource claim {claim_ref(claim)} is in the process of being allocated"
                )
            if claim is extended:
                continue
            status = self._check_requests(claim, store)
            if status is not None:
                return status
        if num_to_allocate:
            devices, shared, capacity = store.allocated_devices(self.features.consumable_capacity)
            state = AllocatedState(devices, shared, capacity)
            try:
                data.allocator = Allocator(
                    self.features, state, store.get_device_class, store.list_slices()
                )
            except AllocationError as exc:
                return Status.error(str(exc))
        return None

    def _check_requests(self, claim: dict[str, Any], store: DraStore) -> Status | None:
        """Every request's device class exists: no allocation can proceed without it."""
        requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
        for request in requests:
            name = str(request.get("name") or "")
            exactly = request.get("exactly")
            if exactly is not None:
                status = _validate_device_class(store, exactly.get("deviceClassName"), name)
                if status is not None:
                    return status
            elif request.get("firstAvailable"):
                # DRAPrioritizedList is GA and locked on in v1.37.
                for sub in request["firstAvailable"]:
                    qualified = f"{name}/{sub.get('name') or ''}"
                    status = _validate_device_class(store, sub.get("deviceClassName"), qualified)
                    if status is not None:
                        return status
            else:
                return Status.unresolvable(
                    f"resource claim {claim_ref(claim)}, request {name}: unknown request type"
                )
        return None

    def pre_filter_extensions(self) -> None:
        return None

    # -- Filter ---------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        data: _State | None = state.get(STATE_KEY)
        if data is None or data.claims.empty():
            return None
        node_claim: dict[str, Any] | None = None
        mappings: list[dict[str, Any]] = []
        if data.extended is not None:
            node_claim, mappings, status = filter_extended_resources(
                data.claims.extended_resource_claim(),
                data.extended,
                data.claims.no_user_claim(),
                pod,
                node,
                self._store().device_class_for_extended_resource,
            )
            if status is not None:
                return status
            if node_claim is None and data.claims.no_user_claim():
                return None  # the node's device plugins provide it all: Fit's to judge
        unavailable: list[int] = []
        for index, claim in data.claims.all():
            selector = data.informations[index].available_on_nodes
            if selector is not None and not selector.matches(node.labels, node.name):
                unavailable.append(index)
                continue
            allocation = allocation_of(claim)
            if _requires_optional_node_operations(
                allocation
            ) and not _declares_optional_node_operations(node):
                unavailable.append(index)
                continue
            if allocation is not None:
                # Binding failed or timed out: PostFilter may deallocate to try other devices.
                try:
                    ready = is_claim_ready_for_binding(claim)
                except BindingFailed:
                    unavailable.append(index)
                else:
                    if not ready and is_claim_timeout(claim, self.binding_timeout):
                        unavailable.append(index)
        allocations: list[dict[str, Any]] = []
        if data.allocator is not None:
            status, allocations = self._allocate(data, node, node_claim)
            if status is not None:
                return status
        if unavailable:
            data.unavailable_claims.update(unavailable)
            return Status.unresolvable(ERR_NOT_AVAILABLE)
        if data.allocator is not None:
            data.node_allocations[node.name] = allocations
            if node_claim is not None and data.extended is not None:
                data.extended.by_node[node.name] = NodeExtendedClaim(node_claim, mappings)
        return None

    def _allocate(
        self, data: _State, node: NodeInfo, node_claim: dict[str, Any] | None
    ) -> tuple[Status | None, list[dict[str, Any]]]:
        """Allocate the claims without an allocation on ``node``; the special claim as
        this node's variant (``node_claim``, with the requests the node's devices serve)."""
        assert data.allocator is not None
        to_allocate: list[dict[str, Any]] = []
        pending: list[dict[str, Any]] = []
        extended = data.claims.extended_resource_claim()
        for index, claim in data.claims.to_allocate():
            target = node_claim if claim is extended and node_claim is not None else claim
            earlier = data.informations[index].allocation
            if earlier is not None:
                if _requires_optional_node_operations(
                    earlier
                ) and not _declares_optional_node_operations(node):
                    return Status.unresolvable(
                        f"resource claim {claim_ref(target)} allocation requires "
                        "DRAOptionalNodeOperations feature on the node"
                    ), []
                pending.append(earlier)
                continue
            to_allocate.append(target)
        deadline = monotonic() + self.filter_timeout if self.filter_timeout > 0 else None
        try:
            results = data.allocator.allocate(node.raw, to_allocate, deadline)
        except AllocationError as exc:
            if deadline is not None and monotonic() >= deadline:
                # Potentially transient: an error retries with backoff rather than waiting
                # for an event; the node's slices may be what is slow.
                return Status.error(f"node {node.name}: timed out trying to allocate devices"), []
            if isinstance(exc, FailedAllocationOnNode):
                return Status.unresolvable(str(exc)), []  # other nodes may still do
            # Something is wrong with a claim or class: retried, as upstream does.
            return Status.error(str(exc)), []
        if len(results) != len(to_allocate):
            return Status.unresolvable(ERR_CANNOT_ALLOCATE), []
        return None, [*results, *pending]

    # -- PostFilter -----------------------------------------------------------------------

    async def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """No node fits: deallocate one allocated claim that kept the pod off a node, if
        nobody else uses it, so that the next attempt may pick other devices. A pod whose
        PreFilter never ran (another PreFilter rejected it) has nothing to free: upstream
        errors "not found" there, which we do not copy (README)."""
        data: _State | None = state.get(STATE_KEY)
        if data is None or data.claims.empty():
            return None, Status(Code.UNSCHEDULABLE)
        extended = data.claims.extended_resource_claim()
        written = extended is not None and not is_special_claim(extended)
        # Upstream picks at random (map order); the lowest index is as good a pick.
        for index in sorted(data.unavailable_claims):
            claim = data.claims.get(index)
            if claim is extended:
                if written:
                    break  # an earlier cycle's claim: deleted below
                continue
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            if reserved and not (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
                continue
            client = self._client()
            if client is None:
                return None, Status.error("no API client to deallocate claims with")
            rest = {
                k: v for k, v in status.items() if k not in ("reservedFor", "allocation", "devices")
            }
            try:
                await client.update_claim_status({**claim, "status": rest})
            except Exception as exc:  # the server's refusal, unreachable, not leading
                return None, Status.from_exception(exc)
            return None, Status(Code.UNSCHEDULABLE, DEALLOCATED)
        if written and extended is not None:
            # An earlier cycle's special claim may hold a stale allocation: delete it, and
            # the next attempt starts anew (the deletion's event brings the pod back).
            client = self._client()
            if client is None:
                return None, Status.error("no API client to delete claims with")
            try:
                await delete_claim(client, self._store(), extended)
            except Exception as exc:
                return None, Status.from_exception(exc)
            return None, Status(Code.UNSCHEDULABLE, DELETED)
        return None, Status(Code.UNSCHEDULABLE)

    # -- Score ----------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Prioritized lists: the earlier the subrequest a node can satisfy, the more."""
        data: _State | None = state.get(STATE_KEY)
        if data is None or data.claims.empty():
            return 0
        allocations = data.node_allocations.get(node.name)
        if allocations is None:
            return 0
        try:
            return compute_score(data.claims, allocations)
        except ValueError as exc:
            raise PluginError(str(exc)) from None

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    # -- Reserve / Unreserve ----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data: _State | None = state.get(STATE_KEY)
        if data is None or data.claims.empty() or data.allocator is None:
            # Allocated claims are reserved for the pod only in PreBind: if some other pod
            # was faster, that write fails and the pod is tried again.
            return None
        to_allocate = list(data.claims.to_allocate())
        if not to_allocate:
            return None
        extended = data.claims.extended_resource_claim()
        allocations = data.node_allocations.get(node_name)
        if not allocations:
            if all(claim is extended for _, claim in to_allocate):
                return None  # the extended resources went to a device plugin there
            return Status.error("claim allocation not found for node")
        if len(allocations) != len(to_allocate):
            return Status.error(
                f"internal error, have {len(allocations)} allocations, {len(to_allocate)} "
                f"claims to allocate, want {len(to_allocate)} claims"
            )
        store = self._store()
        for (index, user_claim), allocation in zip(to_allocate, allocations, strict=True):
            data.informations[index].allocation = allocation
            claim = user_claim
            if user_claim is extended:
                # The node's variant of the special claim, under its temporary UID.
                node_claim = data.extended.node_claim(node_name) if data.extended else None
                if node_claim is None:
                    return Status.error(f"extended resource claim not found for node {node_name}")
                claim = node_claim.claim
            meta = claim.get("metadata") or {}
            finalizers = list(meta.get("finalizers") or ())
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            # The full object, as it will be written: the allocator and the next pods'
            # PreFilter read it from the in-flight set.
            in_flight = {
                **claim,
                "metadata": {**meta, "finalizers": finalizers},
                "status": {**(claim.get("status") or {}), "allocation": allocation},
            }
            store.signal_claim_pending_allocation(claim_uid(claim), in_flight)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data: _State | None = state.get(STATE_KEY)
        if data is None or data.claims.empty():
            return
        store = self._store()
        for _, claim in data.claims.all_user_claims():
            # The last pod sharing an in-flight allocation gives it up: the claim's assumed
            # version (if PreBind got that far) goes too.
            if store.remove_claim_pending_allocation(claim_uid(claim)):
                meta = claim.get("metadata") or {}
                store.claims.restore(f"{meta.get('namespace')}/{meta.get('name')}")
            if allocation_of(claim) is not None and is_reserved_for_pod(pod, claim):
                client = self._client()
                if client is not None and self.handle is not None:
                    self.handle.run_in_background(remove_reservation(client, store, claim, pod.uid))
        if data.extended is not None:
            # The special claim: in flight no more, and deleted if PreBind created it
            # (in the background, as the reservations above; failures are logged).
            created = unreserve_extended_resource_claim(
                store, data.claims.extended_resource_claim(), data.extended
            )
            client = self._client()
            if created is not None and client is not None and self.handle is not None:
                self.handle.run_in_background(delete_claim_logged(client, store, created))

    # -- PreBind --------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """PreBind has claims to write (or to check) for this pod."""
        data: _State | None = state.get(STATE_KEY)
        if data is None or data.claims.empty():
            return SKIP
        return None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Record each claim's allocation and the pod's reservation (Reserve only assumed
        them), then wait for devices that have binding conditions. Unreserve undoes what
        was written if this fails."""
        data: _State | None = state.get(STATE_KEY)
        if data is None or data.claims.empty():
            return None
        client = self._client()
        if client is None:
            return Status.error("no API client to write resource claims with")
        store = self._store()
        written: list[str] = []
        extended, extended_state = data.claims.extended_resource_claim(), data.extended
        for index, claim in data.claims.all():
            if is_reserved_for_pod(pod, claim):
                continue
            allocation = data.informations[index].allocation
            if claim is extended and extended_state is not None:
                if allocation is None and not claim_requests(claim):
                    continue  # the node's device plugins provide it all
                try:
                    await bind_extended_claim(
                        client,
                        store,
                        data.claims,
                        index,
                        allocation,
                        pod,
                        node_name,
                        extended_state,
                    )
                except (BindError, ExtendedResourceError) as exc:
                    cause = exc.cause if isinstance(exc, BindError) else exc.__cause__
                    return Status.from_exception(cause or exc, str(exc))
                except Exception as exc:  # not leading, unreachable
                    return Status.from_exception(exc)
                if allocation is not None:
                    written.append(extended_state.initial_claim_uid)
                continue
            try:
                updated = await bind_claim(client, store, claim, allocation, pod)
            except BindError as exc:
                return Status.from_exception(exc.cause or exc, str(exc))
            # Unreserve works with the claim as written.
            data.claims.set(index, updated)
            try:
                store.claims.assume(updated)
            except AssumeError as exc:  # a concurrent update or delete: fine
                logger.debug("claim %s not stored in assume cache: %s", claim_ref(updated), exc)
            if allocation is not None:
                written.append(claim_uid(updated))
        status = await wait_for_binding_conditions(
            store, data.claims, self.binding_timeout, self.sleep
        )
        if status is None:
            # Written: the assume cache now holds what was in flight.
            for uid in written:
                store.remove_claim_pending_allocation(uid, force=True)
        return status

    def _client(self) -> ClusterClient | None:
        return self.handle.client if self.handle is not None else None


def _validate_device_class(store: DraStore, class_name: Any, request: str) -> Status | None:
    """Upstream ``validateDeviceClass``: a missing class leaves the pod waiting for a
    DeviceClass event."""
    if not class_name:
        return Status.error(f"request {request}: unsupported request type")
    if store.get_device_class(str(class_name)) is None:
        return Status.unresolvable(f"request {request}: device class {class_name} does not exist")
    return None
