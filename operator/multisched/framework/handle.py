"""What a plugin may use from its surroundings (upstream ``framework.Handle``).

The runtime implements ``Handle``; the operator or the simulator supplies a
``ClusterClient`` for the few writes plugins make (binding, preemption).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Coroutine, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from multisched.cache import NodeInfo, PodInfo, Snapshot

from .cycle_state import CycleState
from .recorder import FrameworkRecorder
from .status import Status

if TYPE_CHECKING:
    from .waiting import PodInPreBind, WaitingPod


class ClusterClient(Protocol):
    """Writes to the API server made from inside plugins."""

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        """POST pods/binding; raises ``BindingConflict`` when the pod is gone or bound."""
        ...

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        """Record a victim's ``Preempted`` event (one preempted in the scheduler's
        memory: no delete was sent, so ``delete_pod`` records none)."""
        ...

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        """Evict a preemption victim (the caller records the Preempted event)."""
        ...

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        """Patch ``status.nominatedNodeName`` ("" clears it)."""
        ...

    async def update_storage_object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """PUT a PersistentVolume (its claimRef) or a PersistentVolumeClaim (its
        annotations), as the volume binder writes them; returns the object as stored (with
        its new resourceVersion). Raises ``NotLeading``/``ApiUnavailable`` like ``bind``,
        and any other API error as an exception whose text is the server's message."""
        ...

    async def update_claim_status(self, claim: dict[str, Any]) -> dict[str, Any]:
        """PUT a ResourceClaim's status (resource.k8s.io/v1; its allocation and reservedFor,
        as DynamicResources writes them, under ``metadata.resourceVersion``); returns the
        stored claim. Errors as ``update_storage_object`` (a conflict has ``status`` 409)."""
        ...

    async def update_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        """PUT a ResourceClaim (its finalizers); returns the stored claim. Errors as
        ``update_claim_status``."""
        ...

    # -- DRA-backed extended resources (DynamicResources' special claim) --

    async def create_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        """POST a ResourceClaim (named from its ``metadata.generateName``); returns it as
        stored (name, uid, resourceVersion). Errors as ``update_storage_object``'s."""
        ...

    async def delete_claim(self, claim: dict[str, Any]) -> None:
        """DELETE a ResourceClaim; one already gone is fine. Errors as above."""
        ...

    async def set_extended_resource_claim_status(
        self, pod: PodInfo, status: dict[str, Any]
    ) -> None:
        """Patch the pod's ``status.extendedResourceClaimStatus`` (the claim's name and the
        container -> request mappings). Errors as above."""
        ...


class BindingConflict(Exception):
    """The API server refused the binding (404: pod gone, 409: already bound/changed).

    ``bound_to`` is the node a 409 says the pod is already assigned to ("" if unknown).
    """

    def __init__(self, status: int, message: str, bound_to: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.bound_to = bound_to


class ApiUnavailable(Exception):
    """The API server could not be reached (connection refused or lost, timeout).

    ``maybe_sent``: the request may have reached the server and been stored (the connection
    broke after it was sent), so its outcome is unknown until the watch shows it.
    """

    def __init__(self, message: str, maybe_sent: bool) -> None:
        super().__init__(message)
        self.maybe_sent = maybe_sent


class PodNominator(Protocol):
    """Pods that preemption nominated to a node and that are still waiting to bind."""

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]: ...

    def add_nominated_pod(self, pod: PodInfo, node_name: str) -> None: ...

    def delete_nominated_pod(self, pod: PodInfo) -> None: ...

    def nominated_node(self, uid: str) -> str | None: ...

    def nominated_node_names(self) -> Collection[str]:
        """The nodes that have a nominated pod now."""
        ...


class Handle(Protocol):
    @property
    def profile_name(self) -> str: ...

    @property
    def rng(self) -> random.Random:
        """The scheduler's random source (seeded by ``simulate --seed``)."""
        ...

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def client(self) -> ClusterClient | None: ...

    @property
    def nominator(self) -> PodNominator: ...

    @property
    def recorder(self) -> FrameworkRecorder:
        """Where plugins report for the metrics (preemption attempts and victims)."""
        ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def get_pod_in_pre_bind(self, uid: str) -> PodInPreBind | None:
        """A pod whose PreBind plugins are running now (v1.36; preemption may cancel it)."""
        ...

    def iterate_over_waiting_pods(self) -> list[WaitingPod]:
        """Every pod of this profile held at Permit now (a copy: callers may reject)."""
        ...

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Move these pending pods to activeQ now (upstream ``PodsToActivate``)."""
        ...

    def run_in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` off the scheduling cycle (upstream: a goroutine, as async preemption's
        victim deletes). It must not raise. simulate and explain let it finish before their
        next pod (``Scheduler.settle_bindings``); the live loop does not wait for it."""
        ...


class NotLeading(Exception):
    """This replica may not write now (it lost the lease, or is stopping): nothing was sent.
    Not the pod's fault, and reported once by whoever stopped the writes, not per pod."""
