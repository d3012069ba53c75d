"""Extended resources backed by devices (DRAExtendedResource, GA in v1.37): upstream
``dynamicresources/extendeddynamicresources.go``.

A pod asking for ``example.com/gpu: 1`` where no node advertises it but a DeviceClass names
it (``spec.extendedResourceName``, or implicitly ``deviceclass.resource.kubernetes.io/
<class>``) gets its devices from DRA. DynamicResources calls these at its seams:

- PreFilter: ``pre_filter_extended_resources`` finds the pod's claim left by an earlier
  cycle, or makes the in-memory *special claim* ``<extended-resources>`` (no requests,
  a temporary UID for the in-flight bookkeeping), which joins the pod's claims last.
- Filter: ``filter_extended_resources`` fills the special claim's requests for the node
  (what the node's allocatable does not provide) and the container -> request mappings,
  kept per node in ``ExtendedResources.by_node`` (``nodeAllocation``).
- Reserve: the node's claim stands in for the special one (``node_claim``).
- Unreserve: ``unreserve_extended_resource_claim``.
- PreBind: ``create_extended_resource_claim_in_api`` (the special claim gets a real name),
  ``wait_for_extended_claim_in_assume_cache``, then, after the claim's status is written,
  ``patch_pod_extended_resource_claim_status``.
- PostFilter: ``delete_claim`` for a stale claim of an earlier cycle.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from multisched.cache import NodeInfo, PodInfo
from multisched.cache.dra import RESOURCE_CLAIM, SPECIAL_CLAIM_NAME, DraStore
from multisched.cache.quantity import QuantityError, parse_quantity
from multisched.cache.volumes import AssumeError
from multisched.dra.structured import klog_kobj
from multisched.framework import ApiUnavailable, ClusterClient, NotLeading, Status
from multisched.meta import object_key

from .._resource_allocation import is_dra_extended_resource_name

logger = logging.getLogger(__name__)

Obj = dict[str, Any]
#: ``fwk.DeviceClassResolver.GetDeviceClass``: the class backing an extended resource.
Resolver = Callable[[str], Mapping[str, Any] | None]

#: ``resourceapi.ExtendedResourceClaimAnnotation``: marks the claim the scheduler made.
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
#: ``resourceapi.Finalizer``.
FINALIZER = "resource.kubernetes.io/delete-protection"
#: ``AssumeExtendedResourceTimeoutDefaultSeconds``, and the poll's interval.
ASSUME_EXTENDED_RESOURCE_TIMEOUT = 120.0
ASSUME_EXTENDED_RESOURCE_INTERVAL = 1.0

ERR_STALE_CLAIM = "cannot schedule extended resource claim"
ERR_CANNOT_FIT = "cannot fit resource"


class ExtendedResourceError(Exception):
    """A PreBind or cleanup step failed; the text is upstream's error."""


class NodeExtendedClaim:
    """What Filter made for one node (upstream ``nodeAllocation``'s extended fields)."""

    __slots__ = ("claim", "mappings")

    def __init__(self, claim: Obj, mappings: list[Obj]) -> None:
        #: The special claim with this node's device requests.
        self.claim = claim
        #: ``v1.ContainerExtendedResourceRequest`` dicts, for the pod's status.
        self.mappings = mappings


class ExtendedResources:
    """A cycle's extended-resource state (upstream ``draExtendedResource`` and the special
    claim's ``initialExtendedResourceClaimUID``)."""

    __slots__ = ("by_node", "initial_claim_uid", "pod_scalar_resources")

    def __init__(self, pod_scalar_resources: Mapping[str, int], initial_claim_uid: str) -> None:
        self.pod_scalar_resources = dict(pod_scalar_resources)
        #: The special claim's UID at PreFilter: the key of its in-flight allocation, which
        #: keeps it after PreBind gives the claim the API server's UID.
        self.initial_claim_uid = initial_claim_uid
        #: Node name -> the claim and mappings Filter made there (only nodes it passed
        #: with devices to allocate).
        self.by_node: dict[str, NodeExtendedClaim] = {}

    def node_claim(self, node_name: str) -> NodeExtendedClaim | None:
        return self.by_node.get(node_name)


# -- names ----------------------------------------------------------------------------------


def is_special_claim(claim: Mapping[str, Any]) -> bool:
    """``isSpecialClaimName`` of the claim's name: the in-memory claim, not yet written."""
    return _meta(claim).get("name") == SPECIAL_CLAIM_NAME


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def _requests_of(claim: Mapping[str, Any]) -> list[Obj] | None:
    requests: list[Obj] | None = ((claim.get("spec") or {}).get("devices") or {}).get("requests")
    return requests


# -- PreFilter ------------------------------------------------------------------------------


def has_device_class_mapped_extended_resource(
    requests: Mapping[str, int], resolve: Resolver
) -> bool:
    """``hasDeviceClassMappedExtendedResource``: a non-zero request a DeviceClass backs."""
    return any(
        qty != 0 and is_dra_extended_resource_name(name) and resolve(name) is not None
        for name, qty in requests.items()
    )


def find_extended_resource_claim(pod: PodInfo, claims: Sequence[Obj]) -> Obj | None:
    """``findExtendedResourceClaim``: the annotated claim the pod controls."""
    for claim in claims:
        meta = _meta(claim)
        if (meta.get("annotations") or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for owner in meta.get("ownerReferences") or ():
            if (
                owner.get("name") == pod.name
                and owner.get("controller")
                and (owner.get("uid") == pod.uid)
            ):
                return claim
    return None


def special_claim(pod: PodInfo) -> Obj:
    """The in-memory claim for the pod's extended resources: owned by the pod, to be named
    ``<pod>-extended-resources-<random>`` by the API server, no requests yet."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod.namespace,
            "name": SPECIAL_CLAIM_NAME,
            # A temporary UID, the key of the in-flight allocation.
            "uid": str(uuid.uuid4()),
            "generateName": pod.name + "-extended-resources-",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod.name,
                    "uid": pod.uid,
                    "controller": True,
                }
            ],
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        },
        "spec": {},
    }


def pre_filter_extended_resources(
    pod: PodInfo, store: DraStore
) -> tuple[Obj, ExtendedResources] | None:
    """``preFilterExtendedResources``: None when the pod asks for no extended resource a
    DeviceClass backs; else the special claim (an earlier cycle's, or a new in-memory one)
    and the cycle's extended-resource state. The claim goes last among the pod's claims."""
    scalar = pod.requests.scalar
    if not scalar or not store.device_classes:
        return None  # no class, no mapping: the pods without devices pay this much
    if not has_device_class_mapped_extended_resource(
        scalar, store.device_class_for_extended_resource
    ):
        return None
    # An earlier cycle's claim (its binding failed) may hold a stale allocation: Filter
    # refuses it and PostFilter deletes it, rather than replaying the allocator to judge it.
    claim = find_extended_resource_claim(pod, store.objects(RESOURCE_CLAIM))
    if claim is None:
        claim = special_claim(pod)
    return claim, ExtendedResources(scalar, str(_meta(claim).get("uid") or ""))


# -- Filter ---------------------------------------------------------------------------------


def filter_extended_resources(
    claim: Mapping[str, Any] | None,
    state: ExtendedResources,
    no_user_claim: bool,
    pod: PodInfo,
    node: NodeInfo,
    resolve: Resolver,
) -> tuple[Obj | None, list[Obj], Status | None]:
    """``filterExtendedResources``: the special claim with this node's requests and the
    container mappings; (None, [], None) when DRA has nothing to allocate here (the node's
    device plugins provide it all); UnschedulableAndUnresolvable (upstream's
    ``statusUnschedulable``: preemption cannot help) for an earlier cycle's claim
    (PostFilter deletes it) or a resource neither the node nor a class provides."""
    if claim is None:
        return None, [], None
    if _requests_of(claim) is not None:
        return None, [], Status.unresolvable(ERR_STALE_CLAIM)
    allocatable = node.allocatable.scalar
    extended: dict[str, int] = {}
    for name, qty in state.pod_scalar_resources.items():
        if not is_dra_extended_resource_name(name) or qty == 0:
            continue
        if resolve(name) is not None and allocatable.get(name, 0) == 0:
            extended[name] = qty  # the node provides it through DRA
        elif name not in allocatable:
            return None, [], Status.unresolvable(ERR_CANNOT_FIT)
    if no_user_claim and not extended:
        return None, [], None  # device plugins provide it all: NodeResourcesFit's
    if (claim.get("status") or {}).get("allocation"):
        return None, [], None
    node_claim = copy.deepcopy(dict(claim))
    requests, mappings = create_requests_and_mappings(pod, extended, resolve)
    spec = node_claim.setdefault("spec", {})
    spec["devices"] = {**(spec.get("devices") or {}), "requests": requests}
    return node_claim, mappings, None


def _container_request(container: Mapping[str, Any], name: str) -> int | None:
    """The container's request for ``name`` as a whole number (``Quantity.AsInt64``);
    None when it asks for none, zero or a fraction."""
    requests = _container_requests(container)
    if name not in requests:
        return None
    try:
        value = parse_quantity(requests[name])
    except QuantityError:
        return None
    if value != value.to_integral_value() or value == 0:
        return None
    return int(value)


def _container_requests(container: Mapping[str, Any]) -> dict[str, Any]:
    """``resources.requests`` as the API server defaults it: a limit alone is the request."""
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    return merged


def _request_and_mappings(
    index: int,
    container: Mapping[str, Any],
    resource: str,
    class_name: str,
    reusable: Sequence[Obj | None],
) -> tuple[Obj | None, list[Obj]]:
    """``createResourceRequestAndMappings``: the container's device request for
    ``resource`` (None when ``reusable`` requests, of long-lived containers after it,
    cover it) and its mappings."""
    count = _container_request(container, resource)
    if count is None:
        return None, []
    container_name = str(container.get("name") or "")
    mappings: list[Obj] = []
    covered = 0
    for request in reusable:
        if request is None:
            continue
        covered += request["exactly"]["count"]
        mappings.append(_mapping(container_name, resource, request["name"]))
        if covered >= count:
            return None, mappings
    # Its index among the container's sorted resource names names the request.
    position = sorted(_container_requests(container)).index(resource)
    name = f"container-{index}-request-{position}"
    request = {
        "name": name,
        "exactly": {
            "deviceClassName": class_name,
            "allocationMode": "ExactCount",
            "count": count - covered,
        },
    }
    mappings.append(_mapping(container_name, resource, name))
    return request, mappings


def _mapping(container: str, resource: str, request: str) -> Obj:
    return {"containerName": container, "resourceName": resource, "requestName": request}


def create_requests_and_mappings(
    pod: PodInfo, extended: Mapping[str, int], resolve: Resolver
) -> tuple[list[Obj], list[Obj]]:
    """``createRequestsAndMappings``: one ExactCount request per long-lived container
    (regular or sidecar) and resource, one for the largest of the one-at-a-time init
    containers (less what the long-lived ones after it already hold), and the mappings
    of every container to its request; requests sorted by name."""
    spec = pod.raw.get("spec") or {}
    init = list(spec.get("initContainers") or ())
    containers = init + list(spec.get("containers") or ())
    long_lived: list[int] = []
    short_lived: list[int] = []
    for i, container in enumerate(containers):
        sidecar = container.get("restartPolicy") == "Always"
        (short_lived if i < len(init) and not sidecar else long_lived).append(i)
    requests: list[Obj] = []
    mappings: list[Obj] = []
    for resource in sorted(extended):
        device_class = resolve(resource)
        if device_class is None:
            continue
        class_name = str(_meta(device_class).get("name") or "")
        long_requests: list[Obj | None] = [None] * len(containers)
        long_mappings: list[Obj] = []
        for i in long_lived:
            request, found = _request_and_mappings(i, containers[i], resource, class_name, [])
            long_requests[i] = request
            long_mappings += found
        largest: Obj | None = None
        short_names: set[str] = set()
        short_mappings: list[Obj] = []
        for i in short_lived:
            request, found = _request_and_mappings(
                i, containers[i], resource, class_name, long_requests[i:]
            )
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings += found
        # Init containers run one at a time: they share the largest one's request.
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest["name"])
            for mapping in short_mappings:
                if mapping["requestName"] in short_names:
                    mapping["requestName"] = largest["name"]
        if largest is not None:
            requests.append(largest)
        requests += [r for r in long_requests if r is not None]
        mappings += long_mappings + short_mappings
    requests.sort(key=lambda r: str(r["name"]))
    return requests, mappings


# -- Unreserve, PostFilter ------------------------------------------------------------------


async def delete_claim(client: ClusterClient, store: DraStore, claim: Mapping[str, Any]) -> None:
    """``deleteClaim``: drop the finalizer (retried once with the cache's latest version,
    as upstream retries a conflict with a fresh GET), then delete; gone is fine."""
    current: Obj = copy.deepcopy(dict(claim))
    for attempt in range(2):
        finalizers = list(_meta(current).get("finalizers") or ())
        if FINALIZER not in finalizers:
            break
        finalizers.remove(FINALIZER)
        current["metadata"] = {**_meta(current), "finalizers": finalizers}
        try:
            await client.update_claim(current)
            break
        except Exception as exc:
            meta = _meta(claim)
            latest = store.get_claim(str(meta.get("namespace") or ""), str(meta.get("name")))
            if attempt or latest is None or _same_version(latest, current):
                raise ExtendedResourceError(
                    f"update resourceclaim {klog_kobj(claim)}: {exc}"
                ) from None
            current = copy.deepcopy(latest)
    await client.delete_claim(current)


def _same_version(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return _meta(a).get("resourceVersion") == _meta(b).get("resourceVersion")


def unreserve_extended_resource_claim(
    store: DraStore, claim: Mapping[str, Any] | None, state: ExtendedResources
) -> Mapping[str, Any] | None:
    """``unreserveExtendedResourceClaim``, its synchronous part: give up the in-flight
    allocation (and the assumed version) at once, so the next pod sees the devices free.
    Returns the claim PreBind already wrote, for ``delete_claim_logged`` (None: nothing
    was written)."""
    if claim is None:
        return None
    if store.remove_claim_pending_allocation(state.initial_claim_uid):
        store.claims.restore(object_key(claim))
    if is_special_claim(claim):
        return None  # in memory only
    return claim


async def delete_claim_logged(
    client: ClusterClient, store: DraStore, claim: Mapping[str, Any]
) -> None:
    """Unreserve's delete of a written claim (run in the background; it must not raise):
    failures are logged, as upstream's, and the next cycle's PostFilter deletes it."""
    try:
        await delete_claim(client, store, claim)
    except Exception as exc:
        logger.error("delete resourceclaim %s: %s", klog_kobj(claim), exc)


# -- PreBind --------------------------------------------------------------------------------


async def create_extended_resource_claim_in_api(
    client: ClusterClient, node_name: str, state: ExtendedResources
) -> Obj:
    """``createExtendedResourceClaimInAPI``: POST the node's variant of the special claim
    (name, UID and allocation cleared: the API server names it from generateName)."""
    node = state.node_claim(node_name)
    if node is None:
        raise ExtendedResourceError(f"extended resource claim not found for node {node_name}")
    claim = copy.deepcopy(node.claim)
    meta = claim["metadata"] = dict(claim.get("metadata") or {})
    meta.pop("name", None)
    meta.pop("uid", None)
    status = claim.get("status")
    if status:
        claim["status"] = {k: v for k, v in status.items() if k != "allocation"}
    try:
        return await client.create_claim(claim)
    except (NotLeading, ApiUnavailable):
        raise  # not the claim's fault: the scheduler reports these itself
    except Exception as exc:
        raise ExtendedResourceError(
            f"create claim for extended resources {klog_kobj(claim)}: {exc}"
        ) from exc


async def wait_for_extended_claim_in_assume_cache(
    store: DraStore,
    claim: Obj,
    timeout: float = ASSUME_EXTENDED_RESOURCE_TIMEOUT,
    interval: float = ASSUME_EXTENDED_RESOURCE_INTERVAL,
) -> bool:
    """``waitForExtendedClaimInAssumeCache``: assume the written claim once the informer
    has brought the new claim (the write's answer may come first); True when assumed. A
    claim still missing after ``timeout`` is only logged: it was created all the same."""
    deadline = time.monotonic() + timeout
    key = object_key(claim)
    while True:
        if key in store.claims:
            try:
                store.claims.assume(claim)
                return True
            except AssumeError as exc:
                logger.debug("claim %s not stored in assume cache: %s", key, exc)
                return False
        if time.monotonic() >= deadline:
            logger.debug("claim %s not stored in assume cache after retries", key)
            return False
        await asyncio.sleep(interval)


async def patch_pod_extended_resource_claim_status(
    client: ClusterClient,
    pod: PodInfo,
    claim: Mapping[str, Any],
    node_name: str,
    state: ExtendedResources,
) -> None:
    """``patchPodExtendedResourceClaimStatus``: record the claim's name and the container
    mappings in ``status.extendedResourceClaimStatus``."""
    node = state.node_claim(node_name)
    mappings = node.mappings if node is not None else []
    if not mappings:
        raise ExtendedResourceError(
            f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
            "ExtendedResourceClaimStatus"
        )
    status = {"requestMappings": mappings, "resourceClaimName": _meta(claim).get("name")}
    try:
        await client.set_extended_resource_claim_status(pod, status)
    except (NotLeading, ApiUnavailable):
        raise
    except Exception as exc:
        raise ExtendedResourceError(
            f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {exc}"
        ) from exc
