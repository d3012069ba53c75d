"""VolumeBinding (upstream ``volumebinding/volume_binding.go``): a pod's persistent volumes
decide where it can run, nodes are scored by how full the storage its unbound claims would
take there is (StorageCapacityScoring, on in v1.37), the PVs chosen for its unbound claims
are promised to it in Reserve, and written (PV claimRef, or the claim's selected-node) in
PreBind, which then waits for the PV controller to bind them.

A pod without claims is skipped in PreFilter and PreScore and costs nothing after that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from multisched.cache import AssumeError, NodeInfo, PodInfo
from multisched.cache.volumes import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
)
from multisched.framework import (
    MAX_NODE_SCORE,
    ApiUnavailable,
    Code,
    CycleState,
    Handle,
    NotLeading,
    PreFilterResult,
    Status,
)
from multisched.framework.events import (
    ADD,
    NODE,
    UPDATE,
    UPDATE_NODE_LABEL,
    ClusterEvent,
    ClusterEventWithHint,
)
from multisched.framework.status import SKIP

from .._function_shape import MAX_CUSTOM_PRIORITY_SCORE, UtilizationShapePoint, shape_errors
from .._label_validation import aggregate, invalid
from .binder import (
    Binder,
    BindingError,
    PodVolumeClaims,
    PodVolumes,
    claim_names,
    ephemeral_owner_error,
)
from .matching import SelectorUnusable
from .pv_helpers import claim_class, claim_request, pv_capacity, spec, storage_of
from .queueing_hints import (
    is_schedulable_after_csi_driver_change,
    is_schedulable_after_csi_node_change,
    is_schedulable_after_csi_storage_capacity_change,
    is_schedulable_after_persistent_volume_claim_change,
    is_schedulable_after_storage_class_change,
)
from .scorer import build_scorer

NAME = "VolumeBinding"
STATE_KEY = NAME
DEFAULT_BIND_TIMEOUT_SECONDS = 600
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


def _default_shape() -> list[UtilizationShapePoint]:
    """v1 defaulting with StorageCapacityScoring on: empty storage scores 10, full 0."""
    return [
        UtilizationShapePoint(utilization=0, score=MAX_CUSTOM_PRIORITY_SCORE),
        UtilizationShapePoint(utilization=100, score=0),
    ]


class VolumeBindingArgs(BaseModel):
    """Upstream ``VolumeBindingArgs`` with v1 defaults and ``ValidateVolumeBindingArgs``
    as v1.37's default gates run them (StorageCapacityScoring on)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True
    )

    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: list[UtilizationShapePoint] = Field(default_factory=_default_shape)

    @field_validator("bind_timeout_seconds", mode="before")
    @classmethod
    def _null_timeout(cls, value: object) -> object:
        return DEFAULT_BIND_TIMEOUT_SECONDS if value is None else value

    @field_validator("shape", mode="before")
    @classmethod
    def _empty_shape(cls, value: object) -> object:
        # Defaulting fills a null or empty shape (``len(obj.Shape) == 0``).
        return _default_shape() if value is None or value == [] else value

    @model_validator(mode="after")
    def _validate(self) -> VolumeBindingArgs:
        errs = []
        if self.bind_timeout_seconds < 0:
            errs.append(
                invalid(
                    "bindTimeoutSeconds",
                    self.bind_timeout_seconds,
                    "invalid BindTimeoutSeconds, should not be a negative value",
                )
            )
        errs += shape_errors(self.shape, "shape")
        if errs:
            raise ValueError(aggregate(errs))
        return self


class _State:
    __slots__ = ("all_bound", "by_node", "claims")

    def __init__(self, claims: PodVolumeClaims | None) -> None:
        self.claims = claims
        #: Node name -> what binding there takes (filled by Filter).
        self.by_node: dict[str, PodVolumes] = {}
        self.all_bound = False


class VolumeBinding:
    name = NAME
    args_model: ClassVar[type[BaseModel] | None] = VolumeBindingArgs

    def __init__(self, args: VolumeBindingArgs | None, handle: Handle) -> None:
        args = args or VolumeBindingArgs()
        self.handle = handle
        self.bind_timeout = float(args.bind_timeout_seconds)
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        self._scorer = build_scorer([(p.utilization, p.score * scale) for p in args.shape])

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # PVs and nodes carry no hint: any of their changes may bind a claim or fit a node.
        # A CSIDriver matters only when updated (its storageCapacity turned off).
        return (
            ClusterEventWithHint(
                ClusterEvent(STORAGE_CLASS, ADD | UPDATE), is_schedulable_after_storage_class_change
            ),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ADD | UPDATE),
                is_schedulable_after_persistent_volume_claim_change,
            ),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME, ADD | UPDATE)),
            ClusterEventWithHint(ClusterEvent(NODE, ADD | UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(CSI_NODE, ADD | UPDATE), is_schedulable_after_csi_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent(CSI_DRIVER, UPDATE), is_schedulable_after_csi_driver_change
            ),
            ClusterEventWithHint(
                ClusterEvent(CSI_STORAGE_CAPACITY, ADD | UPDATE),
                is_schedulable_after_csi_storage_capacity_change,
            ),
        )

    def _binder(self) -> Binder:
        return Binder(self.handle.snapshot.volumes, self.bind_timeout)

    # -- PreFilter ------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes:
            return None, SKIP  # no state: Reserve and PreBind find none and return at once
        problem, has_claims = self._claims_problem(pod)
        if problem is not None:
            return None, Status.unresolvable(problem)
        if not has_claims:
            return None, SKIP
        binder = self._binder()
        try:
            claims = binder.pod_volume_claims(pod)
        except (BindingError, SelectorUnusable) as exc:
            return None, Status.error(str(exc))
        if claims.immediate:
            return None, Status.unresolvable(ERR_UNBOUND_IMMEDIATE)
        # v1.37 narrows nothing here: GetEligibleNodes (bound local PVs) was removed upstream,
        # so a local PV's other nodes fail in Filter and count in the message.
        state.write(STATE_KEY, _State(claims))
        return None, None

    def _claims_problem(self, pod: PodInfo) -> tuple[str | None, bool]:
        """``podHasPVCs``: what is wrong with the claims as the API stores them."""
        pvcs = self.handle.snapshot.volumes.pvcs
        has_claims = False
        for name, ephemeral in claim_names(pod):
            has_claims = True
            claim = pvcs.get_api_obj(f"{pod.namespace}/{name}")
            if claim is None:
                if ephemeral:
                    return (
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{name}"',
                        True,
                    )
                return f'persistentvolumeclaim "{name}" not found', True
            meta = claim.get("metadata") or {}
            if (claim.get("status") or {}).get("phase") == "Lost":
                volume = (claim.get("spec") or {}).get("volumeName") or ""
                return (
                    f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                    f'"{volume}"',
                    True,
                )
            if meta.get("deletionTimestamp") is not None:
                return f'persistentvolumeclaim "{name}" is being deleted', True
            if ephemeral:
                owner = ephemeral_owner_error(pod, claim)
                if owner is not None:
                    return owner, True
        return None, has_claims

    def pre_filter_extensions(self) -> None:
        return None

    # -- Filter ---------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        data: _State = state.read(STATE_KEY)
        if data.claims is None:
            return None
        try:
            volumes, reasons = self._binder().find_pod_volumes(pod, data.claims, node)
        except BindingError as exc:
            return Status.error(str(exc))
        if reasons:
            return Status.unresolvable(*reasons)
        data.by_node[node.name] = volumes
        return None

    # -- PreScore / Score ------------------------------------------------------------------

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        # Only claims waiting for their first consumer get a PV or a provisioning per node;
        # without one, upstream's Score gives every node 0, as skipping does.
        data: _State | None = state.get(STATE_KEY)
        if data is None or data.claims is None or not data.claims.delay_binding:
            return SKIP
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        data: _State = state.read(STATE_KEY)
        volumes = data.by_node.get(node.name)
        if volumes is None:
            return 0
        return self._scorer(_class_resources(volumes))

    # -- Reserve / Unreserve ----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data: _State | None = state.get(STATE_KEY)
        if data is None or data.claims is None:
            return None
        volumes = data.by_node.get(node_name)
        if volumes is None:
            data.all_bound = True
            return None
        try:
            data.all_bound = self._binder().assume(pod, node_name, volumes)
        except AssumeError as exc:
            return Status.error(str(exc))
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data: _State | None = state.get(STATE_KEY)
        if data is None:
            return
        volumes = data.by_node.get(node_name)
        if volumes is not None:
            self._binder().revert(volumes)

    # -- PreBind --------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Whether PreBind will bind volumes (upstream ``PreBindPreFlight``): Skip when all
        are bound already, so the pod gets no nominatedNodeName for its binding."""
        data: _State | None = state.get(STATE_KEY)
        if data is None or data.claims is None or data.all_bound:
            return SKIP
        if node_name not in data.by_node:
            return Status.error(f'no pod volume found for node "{node_name}"')
        return None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data: _State | None = state.get(STATE_KEY)
        if data is None or data.claims is None or data.all_bound:
            return None
        volumes = data.by_node.get(node_name)
        if volumes is None:
            return Status.error(f'no pod volumes found for node "{node_name}"')
        client = self.handle.client
        if client is None:
            return Status.error("no API client to bind volumes with")
        try:
            await self._binder().bind(
                pod, node_name, volumes, client.update_storage_object, self._node_labels
            )
        except BindingError as exc:
            return Status.error(str(exc))
        except (ApiUnavailable, NotLeading) as exc:
            # Nothing half-done can bind the pod: the claims written so far are the PV
            # controller's to finish, and the next attempt finds them bound.
            return Status.error(f"binding volumes: {exc}")
        except Exception as exc:  # an API refusal (409 conflict, 403): retried as upstream
            return Status(Code.ERROR, f"binding volumes: {exc or type(exc).__name__}")
        return None

    def _node_labels(self, name: str) -> Mapping[str, str] | None:
        node = self.handle.snapshot.get(name)
        return node.labels if node is not None and node.raw else None


def _class_resources(volumes: PodVolumes) -> dict[str, tuple[int, int]]:
    """Storage class -> (requested, capacity) on the node, as upstream's Score groups it:
    the PVs chosen for the claims if there are any, else the claims to provision with the
    node's capacity for their class (claims whose driver tracks none are left out)."""
    classes: dict[str, tuple[int, int]] = {}
    if volumes.static_bindings:
        for binding in volumes.static_bindings:
            name = str(spec(binding.pv).get("storageClassName") or "")
            requested, capacity = classes.get(name, (0, 0))
            classes[name] = (
                requested + claim_request(binding.claim),
                capacity + pv_capacity(binding.pv),
            )
        return classes
    for claim, node_capacity in zip(
        volumes.dynamic_provisions, volumes.provision_capacities, strict=True
    ):
        if node_capacity is None:
            continue
        name = claim_class(claim)
        requested, _ = classes.get(name, (0, 0))
        # The class's capacity on the node, once however many claims share it.
        classes[name] = (
            requested + claim_request(claim),
            storage_of({"storage": node_capacity.get("capacity")}),
        )
    return classes


PLUGIN = VolumeBinding
