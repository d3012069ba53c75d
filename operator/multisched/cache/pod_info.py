"""``PodInfo``: everything the scheduler reads from a pod, computed once per pod update.

Built from the raw API dict at the edge (watch event, simulate input); filters and scores
only read these slots.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .declared_features import pod_required_features
from .labels import LabelSelector, NodeSelector, NodeSelectorTerm, SelectorError
from .quantity import QuantityError
from .resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    MEMORY,
    Resource,
)

DEFAULT_SCHEDULER_NAME = "default-scheduler"


class PodError(ValueError):
    """A pod whose spec the scheduler cannot read; the message names the pod and field."""


class Taint:
    __slots__ = ("effect", "key", "value")

    def __init__(self, key: str, value: str, effect: str) -> None:
        self.key = key
        self.value = value
        self.effect = effect

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Taint:
        return cls(raw.get("key", ""), raw.get("value") or "", raw.get("effect", ""))

    def __repr__(self) -> str:
        return f"Taint({self.key}={self.value}:{self.effect})"


class Toleration:
    __slots__ = ("effect", "key", "operator", "value")

    def __init__(self, key: str = "", operator: str = "", value: str = "", effect: str = ""):
        self.key = key
        self.operator = operator
        self.value = value
        self.effect = effect

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Toleration:
        return cls(
            raw.get("key") or "",
            raw.get("operator") or "",
            raw.get("value") or "",
            raw.get("effect") or "",
        )

    def tolerates(self, taint: Taint) -> bool:
        """``v1.Toleration.ToleratesTaint``: empty effect/key match any; "" means Equal."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


class AffinityTerm:
    """A pod (anti-)affinity term with its namespaces resolved as upstream ``AffinityTerm``.

    No namespaces and no namespaceSelector means the pod's own namespace; an empty
    namespaceSelector means all namespaces.
    """

    __slots__ = ("key", "namespace_selector", "namespaces", "selector", "topology_key")

    def __init__(
        self,
        namespaces: frozenset[str],
        selector: LabelSelector,
        topology_key: str,
        namespace_selector: LabelSelector | None,
    ) -> None:
        self.namespaces = namespaces
        self.selector = selector
        self.topology_key = topology_key
        self.namespace_selector = namespace_selector
        #: Terms with one key select the same pods in the same topology.
        self.key = (
            namespaces,
            None if namespace_selector is None else namespace_selector.key,
            selector.key,
            topology_key,
        )

    @classmethod
    def parse(cls, raw: Mapping[str, Any], pod_namespace: str) -> AffinityTerm:
        namespaces = frozenset(raw.get("namespaces") or ())
        ns_raw = raw.get("namespaceSelector")
        ns_selector = LabelSelector.parse(ns_raw) if ns_raw is not None else None
        if not namespaces and ns_selector is None:
            namespaces = frozenset((pod_namespace,))
        # A nil labelSelector matches nothing upstream; model it as an impossible selector.
        sel_raw = raw.get("labelSelector")
        selector = (
            LabelSelector.parse(sel_raw) if sel_raw is not None else LabelSelector({}, [_NOTHING])
        )
        return cls(namespaces, selector, raw.get("topologyKey") or "", ns_selector)

    def matches(self, pod: PodInfo, namespace_labels: Mapping[str, str] | None) -> bool:
        """Whether ``pod`` is selected; ``namespace_labels`` are the labels of pod's namespace."""
        if pod.namespace in self.namespaces or (
            self.namespace_selector is not None
            and self.namespace_selector.matches(namespace_labels or {})
        ):
            return self.selector.matches(pod.labels)
        return False


class _Nothing:
    """A requirement no label set satisfies (upstream ``labels.Nothing()``)."""

    __slots__ = ()
    key = ""
    op = "Nothing"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return False


_NOTHING: Any = _Nothing()


class WeightedAffinityTerm:
    __slots__ = ("term", "weight")

    def __init__(self, term: AffinityTerm, weight: int) -> None:
        self.term = term
        self.weight = weight


class PodInfo:
    """A pod as the scheduler sees it. ``raw`` keeps the API object for I/O only."""

    __slots__ = (
        "affinity_terms",
        "anti_affinity_terms",
        "claim_keys",
        "containers_images",
        "creation_timestamp",
        "host_ports",
        "key",
        "labels",
        "name",
        "namespace",
        "node_name",
        "node_selector",
        "nominated_node_name",
        "non_zero_cpu",
        "non_zero_memory",
        "owner_kinds",
        "owner_references",
        "preempted_by_scheduler",
        "preemption_policy",
        "preferred_affinity_terms",
        "preferred_anti_affinity_terms",
        "preferred_node_affinity",
        "priority",
        "raw",
        "requests",
        "required_node_affinity",
        "required_node_features",
        "resource_claims",
        "scheduler_name",
        "scheduling_gates",
        "start_time",
        "terminating",
        "tolerations",
        "topology_spread_constraints",
        "uid",
        "volumes",
    )

    raw: dict[str, Any]
    uid: str
    namespace: str
    name: str
    key: str
    labels: dict[str, str]
    scheduler_name: str
    priority: int
    preemption_policy: str
    node_name: str
    nominated_node_name: str
    terminating: bool
    creation_timestamp: str
    owner_references: tuple[dict[str, Any], ...]
    owner_kinds: tuple[str, ...]
    requests: Resource
    non_zero_cpu: int
    non_zero_memory: int
    host_ports: tuple[tuple[str, str, int], ...]
    tolerations: tuple[Toleration, ...]
    node_selector: dict[str, str]
    required_node_affinity: NodeSelector | None
    #: The node declared features the pod needs (declared_features.py); 0 for most pods.
    required_node_features: int
    preferred_node_affinity: tuple[tuple[int, NodeSelectorTerm], ...]
    affinity_terms: tuple[AffinityTerm, ...]
    anti_affinity_terms: tuple[AffinityTerm, ...]
    preferred_affinity_terms: tuple[WeightedAffinityTerm, ...]
    preferred_anti_affinity_terms: tuple[WeightedAffinityTerm, ...]
    topology_spread_constraints: tuple[dict[str, Any], ...]
    scheduling_gates: tuple[str, ...]
    containers_images: tuple[str, ...]
    #: ``status.startTime`` as written ("" when not started).
    start_time: str
    #: Terminating with the DisruptionTarget condition a scheduler's preemption sets.
    preempted_by_scheduler: bool
    #: ``spec.volumes`` as written (empty for most pods: the volume plugins skip those).
    volumes: tuple[dict[str, Any], ...]
    #: "namespace/claim" of each ``persistentVolumeClaim`` volume, as upstream's
    #: ``NodeInfo.PVCRefCounts`` counts them (kept: every pod the API server admits has a
    #: service-account volume, and the node accounting reads this at each add and remove).
    claim_keys: tuple[str, ...]
    #: ``spec.resourceClaims`` as written (empty for most pods: DynamicResources skips those
    #: without looking further).
    resource_claims: tuple[dict[str, Any], ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any], priority: int | None = None) -> PodInfo:
        """Read a v1 Pod dict. ``priority`` overrides ``spec.priority`` (resolved classes)."""
        meta = raw.get("metadata") or {}
        name = f"{meta.get('namespace', 'default')}/{meta.get('name', '?')}"
        try:
            return cls._parse(raw, meta, priority)
        except (QuantityError, SelectorError) as exc:
            raise PodError(f"pod {name}: {exc}") from exc
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PodError(f"pod {name}: malformed spec ({exc!r})") from exc

    @classmethod
    def _parse(
        cls, raw: Mapping[str, Any], meta: Mapping[str, Any], priority: int | None
    ) -> PodInfo:
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        self = cls.__new__(cls)
        self.raw = dict(raw)
        self.namespace = meta.get("namespace") or "default"
        self.name = meta.get("name") or ""
        self.uid = meta.get("uid") or f"{self.namespace}/{self.name}"
        self.key = f"{self.namespace}/{self.name}"
        self.labels = dict(meta.get("labels") or {})
        self.creation_timestamp = str(meta.get("creationTimestamp") or "")
        self.terminating = meta.get("deletionTimestamp") is not None
        self.owner_references = tuple(meta.get("ownerReferences") or ())
        self.owner_kinds = tuple(o.get("kind", "") for o in self.owner_references)
        self.scheduler_name = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
        self.priority = int(priority if priority is not None else spec.get("priority") or 0)
        self.preemption_policy = spec.get("preemptionPolicy") or "PreemptLowerPriority"
        self.node_name = spec.get("nodeName") or ""
        self.nominated_node_name = status.get("nominatedNodeName") or ""
        self.start_time = str(status.get("startTime") or "")
        self.preempted_by_scheduler = self.terminating and any(
            c.get("type") == "DisruptionTarget"
            and c.get("status") == "True"
            and c.get("reason") == "PreemptionByScheduler"
            for c in status.get("conditions") or ()
        )
        self.node_selector = dict(spec.get("nodeSelector") or {})
        self.tolerations = tuple(Toleration.parse(t) for t in spec.get("tolerations") or ())
        self.scheduling_gates = tuple(g["name"] for g in spec.get("schedulingGates") or ())
        self.volumes = tuple(spec.get("volumes") or ())
        self.claim_keys = (
            tuple(f"{self.namespace}/{name}" for name in self.pvc_names()) if self.volumes else ()
        )
        self.resource_claims = tuple(spec.get("resourceClaims") or ())
        self.topology_spread_constraints = tuple(spec.get("topologySpreadConstraints") or ())
        containers = spec.get("containers") or []
        init_containers = spec.get("initContainers") or []
        self.containers_images = tuple(
            c["image"] for c in (*init_containers, *containers) if c.get("image")
        )
        # Upstream ``GetHostPorts``: only sidecars among init containers hold their ports
        # for the pod's lifetime.
        sidecars = [c for c in init_containers if c.get("restartPolicy") == "Always"]
        self.host_ports = tuple(
            (p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", int(p["hostPort"]))
            for c in (*sidecars, *containers)
            for p in c.get("ports") or ()
            if int(p.get("hostPort") or 0) > 0
        )
        self._set_requests(spec, status)
        self._set_affinity(spec.get("affinity") or {})
        self.required_node_features = pod_required_features(spec)
        return self

    def _set_requests(self, spec: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        """Upstream ``PodInfo.CalculateResource`` (``resourcehelper.PodRequests``) with
        v1.37's gates: in-place resize counted (InPlacePodVerticalScaling, GA) and pod-level
        resources applied (PodLevelResources, on by default).

        Sidecars (restartable init containers) run beside the app containers; other init
        containers run one at a time, so the pod needs the max of both phases. A resized
        pod counts the max of what its spec asks, what the kubelet allocated and what it
        actuated; while its resize is infeasible, only the last two.
        """
        containers = spec.get("containers") or []
        init_containers = spec.get("initContainers") or []
        overhead = spec.get("overhead")
        pod_level, spec_view = _pod_level_requests(spec)
        resized = _reports_resources(status)
        if (
            len(containers) == 1
            and not init_containers
            and not overhead
            and pod_level is None
            and not resized
        ):
            # Most pods: the one container's requests are the pod's (reading 50,000 pods);
            # the general path below only differs for negative quantities (its max with 0).
            reqs, nz = _container_requests(containers[0], "spec.containers[0]")
            if (
                min(reqs.milli_cpu, reqs.memory, reqs.ephemeral_storage, nz.milli_cpu, nz.memory)
                >= 0
            ):
                self.requests = reqs
                self.non_zero_cpu = nz.milli_cpu
                self.non_zero_memory = nz.memory
                return
        views = [spec_view or _spec_view(containers, init_containers)]
        if resized:
            infeasible = _resize_infeasible(status)
            statuses = _container_statuses(status)
            if infeasible:
                views = []
            allocated = status.get("allocatedResources")
            actuated = (status.get("resources") or {}).get("requests")
            if allocated is not None and actuated is not None:
                # The kubelet's pod-level totals already sum the containers; taken as they
                # stand, with no defaults for what they leave out (as upstream).
                views.append(_listed(allocated, "status.allocatedResources", defaults=False))
                views.append(_listed(actuated, "status.resources.requests", defaults=False))
            else:
                for actuated_view in (False, True):
                    views.append(
                        _status_view(
                            containers, init_containers, statuses, infeasible, actuated_view
                        )
                    )
        reqs, nz, present = Resource(), Resource(), set()
        for view_reqs, view_nz, view_present in views:
            reqs.set_max(view_reqs)
            nz.set_max(view_nz)
            present |= view_present
        if pod_level is not None:
            effective = _effective_pod_level(pod_level, status)
            for name, value in effective.items():
                reqs.set(name, value)
                if name in _POD_LEVEL:
                    # NodeInfo's non-zero rule (getNonMissingContainerRequests): with
                    # pod-level requests, the 100m / 200Mi defaults fill in only what
                    # neither the pod nor any container requests.
                    nz.set(name, value)
                    present.add(name)
            for name in _POD_LEVEL:
                if name in present and name not in effective:
                    nz.set(name, reqs.get(name))
        if overhead:
            try:
                extra = Resource.from_list(overhead)
            except QuantityError as exc:
                raise QuantityError(f"spec.overhead.{exc}") from None
            reqs.add(extra)
            nz.add(extra)
        self.requests = reqs
        self.non_zero_cpu = nz.milli_cpu
        self.non_zero_memory = nz.memory

    def _set_affinity(self, affinity: Mapping[str, Any]) -> None:
        node_aff = affinity.get("nodeAffinity") or {}
        required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.required_node_affinity = NodeSelector.parse(required) if required else None
        self.preferred_node_affinity = tuple(
            (int(p.get("weight", 0)), NodeSelectorTerm.parse(p.get("preference") or {}))
            for p in node_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        )
        pod_aff = affinity.get("podAffinity") or {}
        anti = affinity.get("podAntiAffinity") or {}
        ns = self.namespace
        req_key = "requiredDuringSchedulingIgnoredDuringExecution"
        pref_key = "preferredDuringSchedulingIgnoredDuringExecution"
        self.affinity_terms = tuple(AffinityTerm.parse(t, ns) for t in pod_aff.get(req_key) or ())
        self.anti_affinity_terms = tuple(AffinityTerm.parse(t, ns) for t in anti.get(req_key) or ())
        self.preferred_affinity_terms = tuple(
            WeightedAffinityTerm(AffinityTerm.parse(t["podAffinityTerm"], ns), int(t["weight"]))
            for t in pod_aff.get(pref_key) or ()
        )
        self.preferred_anti_affinity_terms = tuple(
            WeightedAffinityTerm(AffinityTerm.parse(t["podAffinityTerm"], ns), int(t["weight"]))
            for t in anti.get(pref_key) or ()
        )

    def compact(self) -> PodInfo:
        """Drop the API object but its identity: a bound pod is only read by the plugins,
        which use the slots, and by preemption, which names it by namespace, name and uid
        (and marks it at its generation)."""
        meta = self.raw.get("metadata") or {}
        self.raw = {
            "metadata": {k: meta[k] for k in _IDENTITY if k in meta},
        }
        return self

    def pvc_names(self) -> list[str]:
        """Claim names of the pod's ``persistentVolumeClaim`` volumes (not ephemeral ones),
        as upstream's ``NodeInfo.PVCRefCounts`` counts them."""
        return [
            str(claim.get("claimName") or "")
            for v in self.volumes
            if (claim := v.get("persistentVolumeClaim")) is not None
        ]

    @property
    def has_affinity(self) -> bool:
        """Any pod affinity or anti-affinity term (upstream ``podWithAffinity``)."""
        return bool(
            self.affinity_terms
            or self.anti_affinity_terms
            or self.preferred_affinity_terms
            or self.preferred_anti_affinity_terms
        )

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


#: What a bound pod keeps of its metadata: its identity, and its generation (preemption
#: writes ``observedGeneration`` on a victim's DisruptionTarget condition).
_IDENTITY = ("name", "namespace", "uid", "resourceVersion", "generation")


def _container_requests(container: Mapping[str, Any], path: str) -> tuple[Resource, Resource]:
    """A container's requests, and its requests for scoring; errors name the field.

    A resource with only a limit requests the limit (API defaulting). For scoring, unset
    CPU and memory requests count as 100m / 200Mi, and an explicit 0 stays 0."""
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    try:
        requests = Resource.from_list(merged)
    except QuantityError as exc:
        raise QuantityError(f"{path}.resources: {exc}") from None
    non_zero = Resource(
        requests.milli_cpu if CPU in merged else DEFAULT_MILLI_CPU_REQUEST,
        requests.memory if MEMORY in merged else DEFAULT_MEMORY_REQUEST,
    )
    return requests, non_zero


#: Resources that pod-level ``spec.resources`` may set besides hugepages-* (upstream
#: ``IsSupportedPodLevelResource``); only these two are overcommittable, so only they default
#: from the containers' requests.
_POD_LEVEL = (CPU, MEMORY)


def _is_pod_level(name: str) -> bool:
    return name in _POD_LEVEL or name.startswith("hugepages-")


#: One way of reading the containers: (requests, requests for scoring, names present).
View = tuple[Resource, Resource, set[str]]


def _pod_level_requests(spec: Mapping[str, Any]) -> tuple[dict[str, int] | None, View | None]:
    """``spec.resources.requests`` as the API server defaults them (``defaultPodRequests``):
    with pod-level limits, an unset request is the containers' aggregate, else the limit.
    None when no supported resource is set at pod level. Also the containers' spec view
    when it was needed for the defaults, so that the caller does not build it again."""
    resources = spec.get("resources")
    if not resources:
        return None, None
    view: View | None = None
    requests = _pod_level_values(resources.get("requests"), "spec.resources.requests")
    limits = resources.get("limits")
    if limits:
        containers, inits = spec.get("containers") or [], spec.get("initContainers") or []
        view = _spec_view(containers, inits)
        aggregate, _, present = view
        for name in _POD_LEVEL:
            if name not in requests and name in present:
                requests[name] = aggregate.get(name)
        for name, value in _pod_level_values(limits, "spec.resources.limits").items():
            requests.setdefault(name, value)
    return requests or None, view


def _effective_pod_level(spec_level: dict[str, int], status: Mapping[str, Any]) -> dict[str, int]:
    """Pod-level requests after a resize (``effectivePodLevelResources``): the max of the
    spec's, the actuated ``status.resources`` and ``status.allocatedResources``."""
    actuated_status = status.get("resources")
    if actuated_status is None:
        return spec_level
    out: dict[str, int] = {} if _resize_infeasible(status) else dict(spec_level)
    sources = (
        ((actuated_status or {}).get("requests"), "status.resources.requests"),
        (status.get("allocatedResources"), "status.allocatedResources"),
    )
    for raw, path in sources:
        for name, value in _pod_level_values(raw, path).items():
            out[name] = max(out.get(name, value), value)
    return out


def _pod_level_values(raw: Mapping[str, Any] | None, path: str) -> dict[str, int]:
    """The pod-level resources of a resource list, by name (only those it lists)."""
    if not raw:
        return {}
    listed = {k: v for k, v in raw.items() if _is_pod_level(k)}
    try:
        parsed = Resource.from_list(listed)
    except QuantityError as exc:
        raise QuantityError(f"{path}.{exc}") from None
    return {name: parsed.get(name) for name in listed}


def _reports_resources(status: Mapping[str, Any]) -> bool:
    """Whether the kubelet reported what it allocated or actuated (a resize may differ)."""
    if status.get("allocatedResources") or status.get("resources"):
        return True
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or ():
            if cs.get("allocatedResources") is not None or cs.get("resources") is not None:
                return True
    return False


def _resize_infeasible(status: Mapping[str, Any]) -> bool:
    """``IsPodResizeInfeasible``: the PodResizePending condition says Infeasible."""
    for condition in status.get("conditions") or ():
        if condition.get("type") == "PodResizePending":
            return bool(condition.get("reason") == "Infeasible")
    return False


def _container_statuses(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Container statuses by name; an app container's wins over an init one's, as upstream
    looks app containers up first."""
    out: dict[str, Mapping[str, Any]] = {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or ():
            out[str(cs.get("name") or "")] = cs
    return out


def _spec_view(
    containers: Sequence[Mapping[str, Any]], init_containers: Sequence[Mapping[str, Any]]
) -> View:
    return _aggregate(containers, init_containers, _spec_read)


def _spec_read(c: Mapping[str, Any], path: str) -> View:
    """A container as its spec asks (``containerSpecRequests``), and the names it lists."""
    resources = c.get("resources") or {}
    listed = {*(resources.get("limits") or {}), *(resources.get("requests") or {})}
    return (*_container_requests(c, path), {n for n in (CPU, MEMORY) if n in listed})


def _status_view(
    containers: Sequence[Mapping[str, Any]],
    init_containers: Sequence[Mapping[str, Any]],
    statuses: Mapping[str, Mapping[str, Any]],
    infeasible: bool,
    actuated: bool,
) -> View:
    """The containers as the kubelet allocated them (``containerAllocatedRequests``) or
    actuated them (``containerActuatedRequests``); a container it reported nothing of
    counts its spec, or nothing while the resize is infeasible."""

    def read(c: Mapping[str, Any], path: str) -> View:
        cs = statuses.get(str(c.get("name") or "")) or {}
        raw = None
        if actuated and (cs.get("resources") or {}).get("requests") is not None:
            raw, where = cs["resources"]["requests"], "resources.requests"
        elif cs.get("allocatedResources") is not None:
            raw, where = cs["allocatedResources"], "allocatedResources"
        if raw is None:
            return _listed({}, path) if infeasible else _spec_read(c, path)
        return _listed(raw, f"status of {path}.{where}")

    return _aggregate(containers, init_containers, read)


def _listed(raw: Mapping[str, Any], path: str, defaults: bool = True) -> View:
    """A resource list as it stands (no limits to default from), and its scoring view:
    with ``defaults``, unset CPU and memory count as 100m / 200Mi there."""
    try:
        requests = Resource.from_list(raw)
    except QuantityError as exc:
        raise QuantityError(f"{path}: {exc}") from None
    non_zero = Resource(
        requests.milli_cpu if CPU in raw or not defaults else DEFAULT_MILLI_CPU_REQUEST,
        requests.memory if MEMORY in raw or not defaults else DEFAULT_MEMORY_REQUEST,
    )
    return requests, non_zero, {n for n in (CPU, MEMORY) if n in raw}


def _aggregate(
    containers: Sequence[Mapping[str, Any]],
    init_containers: Sequence[Mapping[str, Any]],
    read: Callable[[Mapping[str, Any], str], View],
) -> View:
    """``aggregateContainerResourcesByFn``: app containers and sidecars add up; each other
    init container runs with the sidecars started before it; the pod needs the max."""
    reqs, nz, present = Resource(), Resource(), set()
    for i, c in enumerate(containers):
        r, n, names = read(c, f"spec.containers[{i}]")
        reqs.add(r)
        nz.add(n)
        present |= names
    init_max, init_nz_max = Resource(), Resource()
    sidecars, sidecars_nz = Resource(), Resource()
    for i, c in enumerate(init_containers):
        r, n, names = read(c, f"spec.initContainers[{i}]")
        present |= names
        if c.get("restartPolicy") == "Always":
            reqs.add(r)
            nz.add(n)
            sidecars.add(r)
            sidecars_nz.add(n)
            r, n = sidecars.clone(), sidecars_nz.clone()
        else:
            r.add(sidecars)
            n.add(sidecars_nz)
        init_max.set_max(r)
        init_nz_max.set_max(n)
    reqs.set_max(init_max)
    nz.set_max(init_nz_max)
    return reqs, nz, present
