"""Builders for DynamicResources' tests, after upstream's dynamicresources_test.go fixtures
(``st.MakeResourceClaim()``, ``st.MakeResourceSlice()``...), and a harness that drives the
plugin through its extension points over a real ``Cache`` (its DraStore) and an in-memory
API for the claim writes."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Coroutine, Sequence
from typing import Any

from builders import node_dict, pod_dict
from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.cache.dra import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_SLICE
from multisched.framework import CycleState, Status
from multisched.plugins.dynamicresources import DynamicResources, DynamicResourcesArgs
from multisched.scheduler.sim_claims import write_claim

NODE = "worker"
NODE2 = "worker-2"
NODE3 = "worker-3"
DRIVER = "some-driver"
POD = "my-pod"
POD_UID = "1234"
RESOURCE = "my-resource"
RESOURCE2 = "my-resource-2"
CLAIM = f"{POD}-{RESOURCE}"
CLAIM2 = f"{POD}-{RESOURCE2}"
CLASS = "my-resource-class"
NS = "default"
FINALIZER = "resource.kubernetes.io/delete-protection"
HOSTNAME = "kubernetes.io/hostname"

Obj = dict[str, Any]


def node(name: str = NODE, **labels: str) -> Obj:
    return node_dict(name, labels={HOSTNAME: name, **labels})


def pod_with_claims(*claims: Obj, status: Obj | None = None, uid: str = POD_UID) -> Obj:
    """``st.MakePod().Name(podName).UID(podUID).PodResourceClaims(...)``."""
    raw = pod_dict(POD, metadata={"uid": uid}, resourceClaims=list(claims))
    if status is not None:
        raw["status"] = status
    return raw


def by_name(name: str = RESOURCE, claim: str = CLAIM) -> Obj:
    return {"name": name, "resourceClaimName": claim}


def by_template(name: str = RESOURCE, template: str = CLAIM) -> Obj:
    return {"name": name, "resourceClaimTemplateName": template}


POD_WITH_CLAIM_NAME = pod_with_claims(by_name())
POD_WITH_CLAIM_TEMPLATE = pod_with_claims(by_template())
POD_WITH_CLAIM_TEMPLATE_IN_STATUS = pod_with_claims(
    by_template(),
    status={"resourceClaimStatuses": [{"name": RESOURCE, "resourceClaimName": CLAIM}]},
)


def device_class(name: str = CLASS) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "uid": f"class-{name}"},
        "spec": {},
    }


def claim(name: str = CLAIM, *classes: str, uid: str | None = None) -> Obj:
    """``st.MakeResourceClaim().Name(name).Namespace(ns).Request(class)...``; one request of
    ``CLASS`` unless classes are given."""
    requests = [
        {
            "name": f"req-{i}",
            "exactly": {"deviceClassName": c, "allocationMode": "ExactCount", "count": 1},
        }
        for i, c in enumerate(classes or (CLASS,), 1)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NS, "uid": uid or f"uid-{name}"},
        "spec": {"devices": {"requests": requests}},
    }


def owned_by_pod(obj: Obj, uid: str = POD_UID) -> Obj:
    out = copy.deepcopy(obj)
    out["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": POD, "uid": uid, "controller": True}
    ]
    return out


def node_selector(name: str = NODE) -> Obj:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
        ]
    }


def allocation(device: str = "instance-1", node_name: str = NODE, request: str = "req-1") -> Obj:
    """``allocationResult``: one device of the node's pool."""
    return {
        "devices": {
            "results": [{"driver": DRIVER, "pool": node_name, "device": device, "request": request}]
        },
        "nodeSelector": node_selector(node_name),
    }


def allocated(obj: Obj, result: Obj | None = None) -> Obj:
    """``.Allocation(result)``: the finalizer and ``status.allocation``."""
    out = copy.deepcopy(obj)
    finalizers = out["metadata"].setdefault("finalizers", [])
    if FINALIZER not in finalizers:
        finalizers.append(FINALIZER)
    out.setdefault("status", {})["allocation"] = copy.deepcopy(
        result if result is not None else allocation()
    )
    return out


def reserved_for(obj: Obj, name: str = POD, uid: str = POD_UID) -> Obj:
    out = copy.deepcopy(obj)
    status = out.setdefault("status", {})
    status["reservedFor"] = [
        *status.get("reservedFor", []),
        {"resource": "pods", "name": name, "uid": uid},
    ]
    return out


def resource_slice(node_name: str = NODE, *devices: str | Obj, driver: str = DRIVER) -> Obj:
    """``st.MakeResourceSlice(node, driver).Device(...)``."""
    listed = [{"name": d} if isinstance(d, str) else d for d in devices or ("instance-1",)]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{driver}", "uid": f"slice-{node_name}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": listed,
        },
    }


def pending_claim() -> Obj:
    return owned_by_pod(claim())


def allocated_claim() -> Obj:
    return allocated(pending_claim())


def in_use_claim() -> Obj:
    return reserved_for(allocated_claim())


def other_claim() -> Obj:
    return claim("not-my-claim")


#: The API server's alphabet for ``generateName`` suffixes (no vowels, no 0/1/3).
NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class ClaimApi:
    """The API server's side of the plugin's claim writes: stored in the cache's DraStore
    with a new resourceVersion, as simulate does; ``fail`` makes the next writes refuse,
    ``fail_create`` the next POSTs, ``fail_pod_status`` the next pod status patches."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        #: ("status" | "update" | "create" | "delete", the claim as sent; or "pod-status",
        #: the pod's ``extendedResourceClaimStatus``) in order.
        self.writes: list[tuple[str, Obj]] = []
        self.fail: Exception | None = None
        self.fail_create: Exception | None = None
        self.fail_pod_status: Exception | None = None
        self._created = 0
        #: Before each write, the stored claim is changed by this (a concurrent writer).
        self.meddle: Any = None

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        pass

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        pass

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        pass

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        pass

    async def update_storage_object(self, kind: str, obj: Obj) -> Obj:
        return obj

    async def update_claim_status(self, obj: Obj) -> Obj:
        return self._write("status", obj)

    async def update_claim(self, obj: Obj) -> Obj:
        return self._write("update", obj)

    async def create_claim(self, obj: Obj) -> Obj:
        """POST: named from ``generateName`` and 5 characters (counted, not random: the
        test knows the name), given a uid and version 1, stored."""
        self.writes.append(("create", copy.deepcopy(obj)))
        if self.fail_create is not None:
            raise self.fail_create
        meta = dict(obj.get("metadata") or {})
        if meta.get("name") or meta.get("uid") or meta.get("resourceVersion"):
            raise ValueError("name, uid and resourceVersion must not be set on create")
        n, suffix = self._created, ""
        for _ in range(5):
            n, digit = divmod(n, len(NAME_SUFFIX_ALPHABET))
            suffix += NAME_SUFFIX_ALPHABET[digit]
        self._created += 1
        name = str(meta.get("generateName") or "") + suffix
        meta.update(name=name, uid=f"uid-{name}", resourceVersion="1")
        stored = {**copy.deepcopy(obj), "metadata": meta}
        self.cache.dra.upsert(RESOURCE_CLAIM, stored)
        return stored

    async def delete_claim(self, obj: Obj) -> None:
        """DELETE: gone from the store (one gone already is fine, as the client's 404)."""
        self.writes.append(("delete", copy.deepcopy(obj)))
        if self.fail is not None:
            raise self.fail
        self.cache.dra.delete(RESOURCE_CLAIM, obj)

    async def set_extended_resource_claim_status(self, pod: PodInfo, status: Obj) -> None:
        self.writes.append(("pod-status", copy.deepcopy(status)))
        if self.fail_pod_status is not None:
            raise self.fail_pod_status

    def _write(self, what: str, obj: Obj) -> Obj:
        self.writes.append((what, copy.deepcopy(obj)))
        if self.fail is not None:
            raise self.fail
        stored = write_claim(self.cache.dra, obj, status_only=what == "status")
        self.cache.dra.upsert(RESOURCE_CLAIM, stored)
        return stored


class Handle:
    """What DynamicResources reads of the framework: the snapshot, the client, background
    work (collected, run by ``drain``)."""

    def __init__(self, cache: Cache, client: ClaimApi | None) -> None:
        self.snapshot = cache.snapshot
        self.client = client
        self.background: list[Coroutine[Any, Any, None]] = []

    def run_in_background(self, work: Coroutine[Any, Any, None]) -> None:
        self.background.append(work)

    def drain(self) -> None:
        while self.background:
            asyncio.run(self.background.pop(0))


def versioned(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    return {**obj, "metadata": {**meta, "resourceVersion": meta.get("resourceVersion") or "1"}}


class Harness:
    """A cluster (nodes, classes, slices, claims) and the plugin over it."""

    def __init__(
        self,
        pod: Obj,
        claims: Sequence[Obj] = (),
        classes: Sequence[Obj] = (),
        slices: Sequence[Obj] = (),
        nodes: Sequence[Obj] = (),
        args: DynamicResourcesArgs | None = None,
    ) -> None:
        self.cache = Cache()
        for raw in nodes or (node(),):
            self.cache.add_node(raw)
        store = self.cache.dra
        for kind, objs in (
            (DEVICE_CLASS, classes),
            (RESOURCE_SLICE, slices),
            (RESOURCE_CLAIM, claims),
        ):
            for obj in objs:
                store.upsert(kind, versioned(copy.deepcopy(obj)))
        self.api = ClaimApi(self.cache)
        self.handle = Handle(self.cache, self.api)
        self.plugin = DynamicResources(args or DynamicResourcesArgs(), self.handle)  # type: ignore[arg-type]
        self.pod = PodInfo.parse(pod)
        self.state = CycleState()

    def nodes(self) -> list[NodeInfo]:
        return list(self.cache.snapshot.node_info_map.values())

    def node(self, name: str = NODE) -> NodeInfo:
        return self.cache.snapshot.node_info_map[name]

    def stored(self, name: str = CLAIM) -> Obj:
        found = self.cache.dra.get_claim(NS, name)
        assert found is not None, name
        return found

    def pre_filter(self) -> Status | None:
        _, status = self.plugin.pre_filter(self.state, self.pod, self.nodes())
        return status

    def filter(self) -> dict[str, Status | None]:
        return {n.name: self.plugin.filter(self.state, self.pod, n) for n in self.nodes()}

    def post_filter(self) -> Status | None:
        _, status = asyncio.run(self.plugin.post_filter(self.state, self.pod, {}))
        return status

    def reserve(self, node_name: str = NODE) -> Status | None:
        return self.plugin.reserve(self.state, self.pod, node_name)

    def unreserve(self, node_name: str = NODE) -> None:
        self.plugin.unreserve(self.state, self.pod, node_name)
        self.handle.drain()

    def pre_bind(self, node_name: str = NODE) -> Status | None:
        return asyncio.run(self.plugin.pre_bind(self.state, self.pod, node_name))

    def through_filter(self) -> dict[str, Status | None]:
        status = self.pre_filter()
        assert status is None, status
        return self.filter()
