"""DynamicResources' extended resources backed by devices (plugins/dynamicresources/
extended.py): upstream extendeddynamicresources_test.go (Test_createRequestsAndMappings_*)
and the PreFilter/Filter/Unreserve/PreBind steps of extendeddynamicresources.go."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest

from builders import make_node
from multisched.cache import PodInfo
from multisched.cache.dra import SPECIAL_CLAIM_NAME, DraStore
from multisched.framework import Code, NotLeading
from multisched.plugins.dynamicresources.extended import (
    ERR_CANNOT_FIT,
    ERR_STALE_CLAIM,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    FINALIZER,
    ExtendedResourceError,
    ExtendedResources,
    NodeExtendedClaim,
    create_extended_resource_claim_in_api,
    create_requests_and_mappings,
    delete_claim,
    delete_claim_logged,
    filter_extended_resources,
    patch_pod_extended_resource_claim_status,
    pre_filter_extended_resources,
    unreserve_extended_resource_claim,
    wait_for_extended_claim_in_assume_cache,
)

ERN = "example.com/gpu"
INIT = ERN + "init"
IMPLICIT_INIT = "deviceclass.resource.kubernetes.io/classInit"


class PodWrapper:
    """``st.MakePod()``'s Res / InitReq / SidecarReq: containers con<i>, init-con<i>,
    sidecar-con<i> (restartPolicy Always), requests and limits alike."""

    def __init__(self, name: str = "pod", uid: str = "pod-uid") -> None:
        self.name, self.uid = name, uid
        self.containers: list[dict[str, Any]] = []
        self.init: list[dict[str, Any]] = []

    @staticmethod
    def _resources(res: dict[str, str]) -> dict[str, Any]:
        return {"requests": dict(res), "limits": dict(res)}

    def res(self, res: dict[str, str]) -> PodWrapper:
        name = f"con{len(self.containers)}"
        self.containers.append({"name": name, "resources": self._resources(res)})
        return self

    def init_req(self, res: dict[str, str]) -> PodWrapper:
        self.init.append({"name": f"init-con{len(self.init)}", "resources": self._resources(res)})
        return self

    def sidecar_req(self, res: dict[str, str]) -> PodWrapper:
        self.init.append(
            {
                "name": f"sidecar-con{len(self.init)}",
                "restartPolicy": "Always",
                "resources": self._resources(res),
            }
        )
        return self

    def obj(self) -> PodInfo:
        spec: dict[str, Any] = {"containers": self.containers}
        if self.init:
            spec["initContainers"] = self.init
        meta = {"name": self.name, "namespace": "default", "uid": self.uid}
        return PodInfo.parse({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def classes(mapping: dict[str, str]) -> Any:
    """``mockDeviceClassResolver``: resource -> a class of that name."""
    return lambda resource: (
        {"metadata": {"name": mapping[resource]}} if resource in mapping else None
    )


POD1 = PodWrapper().res({ERN: "1", ERN + "1": "2"}).obj()
POD2 = PodWrapper().res({ERN: "1"}).res({ERN + "1": "2"}).obj()
POD_INIT = PodWrapper().res({ERN: "1"}).init_req({INIT: "2"}).obj()
POD_INIT2 = PodWrapper().res({ERN: "1"}).init_req({INIT: "1"}).init_req({INIT: "2"}).obj()
POD_INIT3 = (
    PodWrapper()
    .res({ERN: "1"})
    .init_req({INIT: "1"})
    .sidecar_req({INIT: "1"})
    .init_req({INIT: "2"})
    .obj()
)
POD1_INIT_IMPLICIT = PodWrapper().init_req({INIT: "1", IMPLICIT_INIT: "2"}).obj()
POD_INIT_IMPLICIT = (
    PodWrapper().res({ERN: "1"}).init_req({INIT: "1"}).init_req({IMPLICIT_INIT: "2"}).obj()
)

RES = {ERN: 1}
RES2 = {ERN: 1, ERN + "1": 2}
RES_INIT = {ERN: 1, INIT: 2}
RES_INIT_IMPLICIT = {ERN: 1, INIT: 2, IMPLICIT_INIT: 2}
DEV_MAP = {ERN: "class"}
DEV_MAP2 = {ERN: "class", ERN + "1": "class1"}
DEV_MAP_INIT = {ERN: "class", INIT: "classInit", IMPLICIT_INIT: "classInit"}


def request(name: str, device_class: str, count: int) -> tuple[str, str, str, int]:
    return (name, device_class, "ExactCount", count)


@pytest.mark.parametrize(
    ("pod", "extended", "mapping", "want"),
    [
        pytest.param(POD1, {}, {}, [], id="nil"),
        pytest.param(
            POD1, RES, DEV_MAP, [request("container-0-request-0", "class", 1)],
            id="one resource match",
        ),
        pytest.param(
            POD1, RES2, DEV_MAP, [request("container-0-request-0", "class", 1)],
            id="one resource match, one resource not match",
        ),
        pytest.param(
            POD1, RES2, DEV_MAP2,
            [request("container-0-request-0", "class", 1),
             request("container-0-request-1", "class1", 2)],
            id="two resources match",
        ),
        pytest.param(
            POD2, RES2, DEV_MAP2,
            [request("container-0-request-0", "class", 1),
             request("container-1-request-0", "class1", 2)],
            id="two containers match",
        ),
        pytest.param(
            POD_INIT, RES_INIT, {ERN: "class", INIT: "classInit"},
            [request("container-0-request-0", "classInit", 2),
             request("container-1-request-0", "class", 1)],
            id="one init container, one regular container",
        ),
        pytest.param(
            POD_INIT2, RES_INIT, {ERN: "class", INIT: "classInit"},
            [request("container-1-request-0", "classInit", 2),
             request("container-2-request-0", "class", 1)],
            id="two init containers, one regular container",
        ),
        pytest.param(
            POD_INIT3, RES_INIT, {ERN: "class", INIT: "classInit"},
            [request("container-1-request-0", "classInit", 1),
             request("container-2-request-0", "classInit", 2),
             request("container-3-request-0", "class", 1)],
            id="three init containers, one sidecar, one regular container",
        ),
    ],
)  # fmt: skip
def test_create_requests_and_mappings_requests(
    pod: PodInfo, extended: dict[str, int], mapping: dict[str, str], want: list[Any]
) -> None:
    requests, _ = create_requests_and_mappings(pod, extended, classes(mapping))
    got = [
        (
            r["name"],
            r["exactly"]["deviceClassName"],
            r["exactly"]["allocationMode"],
            r["exactly"]["count"],
        )
        for r in requests
    ]
    assert got == want


def cer(container: str, resource: str, request_name: str) -> tuple[str, str, str]:
    return (request_name, container, resource)


@pytest.mark.parametrize(
    ("pod", "extended", "mapping", "want"),
    [
        pytest.param(
            POD1, RES2, DEV_MAP2,
            [cer("con0", ERN, "container-0-request-0"),
             cer("con0", ERN + "1", "container-0-request-1")],
            id="one container, two requests",
        ),
        pytest.param(
            POD1_INIT_IMPLICIT, RES_INIT_IMPLICIT, DEV_MAP_INIT,
            [cer("init-con0", IMPLICIT_INIT, "container-0-request-0"),
             cer("init-con0", INIT, "container-0-request-1")],
            id="one container, one explicit and one implicit request",
        ),
        pytest.param(
            POD2, RES2, DEV_MAP2,
            [cer("con0", ERN, "container-0-request-0"),
             cer("con1", ERN + "1", "container-1-request-0")],
            id="two containers, two requests",
        ),
        pytest.param(
            POD_INIT, RES_INIT, DEV_MAP_INIT,
            [cer("init-con0", INIT, "container-0-request-0"),
             cer("con0", ERN, "container-1-request-0")],
            id="one init container, one regular container, one request",
        ),
        pytest.param(
            POD_INIT2, RES_INIT, DEV_MAP_INIT,
            [cer("init-con0", INIT, "container-1-request-0"),
             cer("init-con1", INIT, "container-1-request-0"),
             cer("con0", ERN, "container-2-request-0")],
            id="three containers (two are init container), two requests",
        ),
        pytest.param(
            POD_INIT_IMPLICIT, RES_INIT_IMPLICIT, DEV_MAP_INIT,
            [cer("init-con0", INIT, "container-0-request-0"),
             cer("init-con1", IMPLICIT_INIT, "container-1-request-0"),
             cer("con0", ERN, "container-2-request-0")],
            id="three containers (two are init container), both explicit and implicit resources",
        ),
        pytest.param(
            POD_INIT3, RES_INIT, DEV_MAP_INIT,
            [cer("init-con0", INIT, "container-1-request-0"),
             cer("sidecar-con1", INIT, "container-1-request-0"),
             cer("init-con2", INIT, "container-2-request-0"),
             cer("con0", ERN, "container-3-request-0")],
            id="four containers (two are init container, one sidecar), three requests",
        ),
    ],
)  # fmt: skip
def test_create_requests_and_mappings_mappings(
    pod: PodInfo, extended: dict[str, int], mapping: dict[str, str], want: list[Any]
) -> None:
    _, mappings = create_requests_and_mappings(pod, extended, classes(mapping))
    got = sorted((m["requestName"], m["containerName"], m["resourceName"]) for m in mappings)
    assert got == want


# -- PreFilter / Filter -----------------------------------------------------------------------


def store_with(*objects: dict[str, Any]) -> DraStore:
    store = DraStore()
    for obj in objects:
        store.upsert(obj["kind"], obj)
    return store


GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"extendedResourceName": ERN},
}
GPU_POD = PodWrapper("gpu-pod", "gpu-uid").res({ERN: "2", "cpu": "1"}).obj()


def owned_claim(pod: PodInfo, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": f"{pod.name}-extended-resources-abcde",
            "namespace": pod.namespace,
            "uid": "claim-uid",
            "resourceVersion": "5",
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid,
                 "controller": True}
            ],
            **extra,
        },
        "spec": {"devices": {"requests": [{"name": "container-0-request-0"}]}},
    }  # fmt: skip


def test_pre_filter_skips_pods_without_backed_extended_resources() -> None:
    assert pre_filter_extended_resources(GPU_POD, store_with()) is None
    other = dict(GPU_CLASS, spec={"extendedResourceName": "example.com/other"})
    assert pre_filter_extended_resources(GPU_POD, store_with(other)) is None


def test_pre_filter_makes_the_special_claim() -> None:
    found = pre_filter_extended_resources(GPU_POD, store_with(GPU_CLASS))
    assert found is not None
    claim, state = found
    meta = claim["metadata"]
    assert meta["name"] == SPECIAL_CLAIM_NAME
    assert meta["generateName"] == "gpu-pod-extended-resources-"
    assert meta["annotations"] == {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}
    assert meta["ownerReferences"][0] | {} == {
        "apiVersion": "v1", "kind": "Pod", "name": "gpu-pod", "uid": "gpu-uid",
        "controller": True,
    }  # fmt: skip
    assert state.initial_claim_uid == meta["uid"] != ""
    assert state.pod_scalar_resources == {ERN: 2}


def test_pre_filter_finds_the_claim_of_an_earlier_cycle() -> None:
    earlier = owned_claim(GPU_POD)
    stranger = owned_claim(PodWrapper("other", "other-uid").res({ERN: "1"}).obj())
    stranger["metadata"]["name"] = "other-claim"
    found = pre_filter_extended_resources(GPU_POD, store_with(GPU_CLASS, stranger, earlier))
    assert found is not None
    assert found[0]["metadata"]["name"] == "gpu-pod-extended-resources-abcde"
    assert found[1].initial_claim_uid == "claim-uid"


def _filter(claim: dict[str, Any], node_extra: dict[str, str], no_user_claim: bool = True) -> Any:
    store = store_with(GPU_CLASS)
    state = ExtendedResources({ERN: 2, "example.com/plugin": 1}, "tmp")
    node = make_node("n1", extra=node_extra)
    return filter_extended_resources(
        claim, state, no_user_claim, GPU_POD, node, store.device_class_for_extended_resource
    )


def test_filter_fills_the_special_claim_for_the_node() -> None:
    found = pre_filter_extended_resources(GPU_POD, store_with(GPU_CLASS))
    assert found is not None
    node_claim, mappings, status = _filter(dict(found[0]), {"example.com/plugin": "1"})
    assert status is None
    # Named by the resource's place among the container's sorted names (cpu, then gpu).
    assert node_claim["spec"]["devices"]["requests"] == [
        {
            "name": "container-0-request-1",
            "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2},
        }
    ]
    assert mappings == [
        {"containerName": "con0", "resourceName": ERN, "requestName": "container-0-request-1"}
    ]
    assert found[0]["spec"] == {}  # the cycle's claim is left as it was


def test_filter_leaves_device_plugin_resources_to_node_resources_fit() -> None:
    found = pre_filter_extended_resources(GPU_POD, store_with(GPU_CLASS))
    assert found is not None
    assert _filter(dict(found[0]), {ERN: "4", "example.com/plugin": "1"}) == (None, [], None)


def test_filter_refuses_what_neither_node_nor_class_provides() -> None:
    found = pre_filter_extended_resources(GPU_POD, store_with(GPU_CLASS))
    assert found is not None
    _, _, status = _filter(dict(found[0]), {})
    assert status is not None
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_CANNOT_FIT,))


def test_filter_refuses_the_claim_of_an_earlier_cycle() -> None:
    _, _, status = _filter(owned_claim(GPU_POD), {"example.com/plugin": "1"})
    assert status is not None
    assert (status.code, status.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (ERR_STALE_CLAIM,),
    )


# -- Unreserve / PreBind / PostFilter's delete ------------------------------------------------


class FakeClient:
    """The ClusterClient's claim and pod-status writes, recorded."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail
        self.created: list[dict[str, Any]] = []
        self.updated: list[dict[str, Any]] = []
        self.deleted: list[dict[str, Any]] = []
        self.pod_status: list[tuple[str, dict[str, Any]]] = []

    async def create_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        if self.fail is not None:
            raise self.fail
        self.created.append(claim)
        meta = dict(claim["metadata"], name=claim["metadata"]["generateName"] + "xyz12")
        return {**claim, "metadata": dict(meta, uid="api-uid", resourceVersion="1")}

    async def update_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        if self.fail is not None:
            raise self.fail
        self.updated.append(claim)
        return claim

    async def delete_claim(self, claim: dict[str, Any]) -> None:
        self.deleted.append(claim)

    async def set_extended_resource_claim_status(
        self, pod: PodInfo, status: dict[str, Any]
    ) -> None:
        if self.fail is not None:
            raise self.fail
        self.pod_status.append((pod.key, status))


def _state_for(node: str = "n1") -> ExtendedResources:
    found = pre_filter_extended_resources(GPU_POD, store_with(GPU_CLASS))
    assert found is not None
    claim, state = found
    node_claim, mappings, status = _filter(dict(claim), {"example.com/plugin": "1"})
    assert status is None
    state.by_node[node] = NodeExtendedClaim(node_claim, mappings)
    return state


def client_of(fail: Exception | None = None) -> Any:
    """A FakeClient where a ClusterClient goes (it has only the writes used here)."""
    return FakeClient(fail)


def error_of(coro: Coroutine[Any, Any, Any]) -> str:
    with pytest.raises(ExtendedResourceError) as err:
        asyncio.run(coro)
    return str(err.value)


def test_pre_bind_creates_the_claim_and_records_it_in_the_pod() -> None:
    state = _state_for()
    client = client_of()
    created = asyncio.run(create_extended_resource_claim_in_api(client, "n1", state))
    sent = client.created[0]["metadata"]
    assert "name" not in sent and "uid" not in sent
    assert sent["generateName"] == "gpu-pod-extended-resources-"
    assert created["metadata"]["name"] == "gpu-pod-extended-resources-xyz12"
    asyncio.run(patch_pod_extended_resource_claim_status(client, GPU_POD, created, "n1", state))
    assert client.pod_status == [
        (
            "default/gpu-pod",
            {
                "requestMappings": state.by_node["n1"].mappings,
                "resourceClaimName": "gpu-pod-extended-resources-xyz12",
            },
        )
    ]


def test_pre_bind_errors_carry_upstream_messages() -> None:
    state = _state_for()
    failing = client_of(RuntimeError("admission webhook said no"))
    assert (
        error_of(create_extended_resource_claim_in_api(client_of(), "n2", state))
        == "extended resource claim not found for node n2"
    )
    assert (
        error_of(create_extended_resource_claim_in_api(failing, "n1", state))
        == "create claim for extended resources default/: admission webhook said no"
    )
    with pytest.raises(NotLeading):  # the scheduler's own condition, passed through
        asyncio.run(create_extended_resource_claim_in_api(client_of(NotLeading("x")), "n1", state))
    assert (
        error_of(patch_pod_extended_resource_claim_status(client_of(), GPU_POD, {}, "n2", state))
        == "nil or empty request mappings, no update of pod default/gpu-pod "
        "ExtendedResourceClaimStatus"
    )
    assert (
        error_of(patch_pod_extended_resource_claim_status(failing, GPU_POD, {}, "n1", state))
        == "update pod default/gpu-pod ExtendedResourceClaimStatus: admission webhook said no"
    )


def test_wait_for_the_claim_in_the_assume_cache() -> None:
    store = store_with(GPU_CLASS)
    claim = owned_claim(GPU_POD)
    # Not brought by the informer (yet): given up after the timeout, not an error.
    assert not asyncio.run(wait_for_extended_claim_in_assume_cache(store, claim, 0.02, 0.01))
    store.upsert("ResourceClaim", claim)
    written = {**claim, "metadata": {**claim["metadata"], "resourceVersion": "6"}}
    assert asyncio.run(wait_for_extended_claim_in_assume_cache(store, written, 0.02, 0.01))
    assert store.claims.is_assumed("default/gpu-pod-extended-resources-abcde")


def test_unreserve_releases_the_in_flight_allocation_of_the_special_claim() -> None:
    store = store_with(GPU_CLASS)
    state = _state_for()
    claim = state.by_node["n1"].claim
    store.signal_claim_pending_allocation(state.initial_claim_uid, claim)
    assert unreserve_extended_resource_claim(store, claim, state) is None  # never written
    assert not store.claim_has_pending_allocation(state.initial_claim_uid)


def test_unreserve_deletes_a_written_claim_after_dropping_its_finalizer() -> None:
    claim = owned_claim(GPU_POD, finalizers=[FINALIZER, "other"])
    store = store_with(GPU_CLASS, claim)
    state = ExtendedResources({ERN: 2}, "tmp-uid")
    store.signal_claim_pending_allocation("tmp-uid", claim)
    client = client_of()
    written = unreserve_extended_resource_claim(store, claim, state)
    assert written is claim
    assert not store.claim_has_pending_allocation("tmp-uid")
    asyncio.run(delete_claim_logged(client, store, claim))
    assert client.updated[0]["metadata"]["finalizers"] == ["other"]
    assert client.deleted[0]["metadata"]["name"] == "gpu-pod-extended-resources-abcde"


def test_delete_claim_reports_a_failed_finalizer_removal() -> None:
    claim = owned_claim(GPU_POD, finalizers=[FINALIZER])
    store = store_with(claim)
    client = client_of(RuntimeError("conflict"))
    assert (
        error_of(delete_claim(client, store, claim))
        == "update resourceclaim default/gpu-pod-extended-resources-abcde: conflict"
    )
    assert client.deleted == []
    asyncio.run(delete_claim_logged(client, store, claim))  # logged, not raised
