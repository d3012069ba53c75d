"""DynamicResources with extended resources a DeviceClass backs (DRAExtendedResource, GA in
v1.37): upstream dynamicresources_test.go's ``TestPlugin`` cases "empty-with-extended-
resources-enabled" and "extended-resource-*" (v1.37.2), driven through the plugin's
extension points as upstream's ``testPlugin`` loop drives them, over a real Cache and the
in-memory API of dra_support.

Each checks what upstream's ``verify`` checks per phase: the status, the claims stored in
the API (``added``/``removed``; uid, resourceVersion, device names and the allocation
timestamp's value ignored, as upstream's comparison ignores them), what is in flight,
and the pod's ``status.extendedResourceClaimStatus`` patch. Upstream's ``metrics`` checks
(``resourceclaim_creates_total``) are not ported: there is no such metric here.

Not ported: "delete-pod-level-extended-claim" (``TestPodGroupPostFilter``): it runs
PodGroupPostFilter, which is not ported (plugin.py); on a pod's own PostFilter the same
claim is the "…-has-claim" case below.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from dra_support import (
    CLASS,
    DRIVER,
    FINALIZER,
    HOSTNAME,
    NODE,
    NODE2,
    NS,
    POD,
    POD_UID,
    Harness,
    device_class,
    node_selector,
    resource_slice,
)

from builders import node_dict
from multisched.cache import PodInfo
from multisched.cache.dra import SPECIAL_CLAIM_NAME
from multisched.framework import Code, CycleState, Status
from multisched.plugins.dynamicresources import (
    ERR_CANNOT_ALLOCATE,
    DynamicResources,
    DynamicResourcesArgs,
)

Obj = dict[str, Any]

ERN = "example.com/gpu"
ERN2 = "example.com/gpu2"
#: The resource name every class stands for implicitly.
IMPLICIT = f"deviceclass.resource.kubernetes.io/{CLASS}"
GENERATE_NAME = f"{POD}-extended-resources-"
#: The name the in-memory API gives the first claim created (upstream's fake client:
#: "my-pod-extended-resources-0").
CREATED = GENERATE_NAME + "bbbbb"
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
DELETED = "deletion of ResourceClaim completed"
ERR_STALE_CLAIM = "cannot schedule extended resource claim"
POD_REF = {"resource": "pods", "name": POD, "uid": POD_UID}


# -- fixtures (upstream's, at the top of dynamicresources_test.go) ---------------------------


def class_backing(resource: str, name: str = CLASS) -> Obj:
    """``deviceClassWithExtendResourceName``: a class standing for ``resource``."""
    out = device_class(name)
    out["spec"] = {"extendedResourceName": resource}
    return out


GPU_CLASS = class_backing(ERN)
GPU2_CLASS = class_backing(ERN2, CLASS + "2")


def pod_requesting(*containers: dict[str, str]) -> Obj:
    """``st.MakePod().Name(podName).UID(podUID).Req(...)...``: one container ``con<i>``
    per map of requests."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": POD, "namespace": NS, "uid": POD_UID},
        "spec": {
            "containers": [
                {"name": f"con{i}", "image": "pause", "resources": {"requests": dict(r)}}
                for i, r in enumerate(containers)
            ]
        },
    }


POD_WITH_ERN = pod_requesting({ERN: "1"})
POD_WITH_ERN2 = pod_requesting({ERN: "1", ERN2: "1"})
POD_WITH_IMPLICIT = pod_requesting({IMPLICIT: "1", ERN: "2"})
POD_WITH_IMPLICIT_TWO_CONTAINERS = pod_requesting({IMPLICIT: "1"}, {ERN: "2"})


def worker_with(quantity: str) -> Obj:
    """``workerNodeWithExtendedResource`` ("1": a device plugin serves it) and
    ``...ZeroAllocatable`` ("0")."""
    return node_dict(NODE, labels={HOSTNAME: NODE}, extra={ERN: quantity})


WORKER_SLICE = resource_slice()
LARGE_WORKER_SLICE = resource_slice(NODE, "instance-1", "instance-2", "instance-3", "instance-4")


def extended_claim(
    requests: list[tuple[str, str, int]],
    results: list[str],
    name: str = CREATED,
    node_name: str = NODE,
) -> Obj:
    """``extendedResourceClaim`` and kin: the pod's claim for its extended resources
    (``name``: ``SPECIAL_CLAIM_NAME`` for the ``...NoName`` in-memory one), with
    ``requests`` (name, class, count) and allocated on ``node_name``, one result per
    request name in ``results`` (devices not compared)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "generateName": GENERATE_NAME,
            "namespace": NS,
            "annotations": {ANNOTATION: "true"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": POD, "uid": POD_UID, "controller": True}
            ],
            "finalizers": [FINALIZER],
        },
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": request,
                        "exactly": {
                            "deviceClassName": cls,
                            "allocationMode": "ExactCount",
                            "count": count,
                        },
                    }
                    for request, cls, count in requests
                ]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"driver": DRIVER, "pool": NODE, "request": request} for request in results
                    ]
                },
                "nodeSelector": node_selector(node_name),
            }
        },
    }


def reserved(claim: Obj) -> Obj:
    """``addAllocationTimestamp(reserve(claim, pod))``: as PreBind writes it."""
    out = copy.deepcopy(claim)
    out["status"]["reservedFor"] = [POD_REF]
    out["status"]["allocation"]["allocationTimestamp"] = "<set>"
    return out


ONE_GPU = [("container-0-request-0", CLASS, 1)]
CLAIM_NO_NAME = extended_claim(ONE_GPU, ["container-0-request-0"], SPECIAL_CLAIM_NAME)
CLAIM_WRITTEN = reserved(extended_claim(ONE_GPU, ["container-0-request-0"]))


def api_claim(claim: Obj) -> Obj:
    """A claim as stored by an earlier cycle (the API gave it a uid and a version)."""
    out = copy.deepcopy(claim)
    out["metadata"].update(uid=f"uid-{out['metadata']['name']}", resourceVersion="3")
    return out


# -- what upstream's verify compares -------------------------------------------------------


def comparable(claim: Obj) -> Obj:
    """The claim without what upstream's comparison ignores: uid, resourceVersion, device
    names, the allocation timestamp's value."""
    out = copy.deepcopy(claim)
    for key in ("uid", "resourceVersion"):
        out["metadata"].pop(key, None)
    allocation = (out.get("status") or {}).get("allocation")
    if allocation:
        for result in (allocation.get("devices") or {}).get("results") or ():
            result.pop("device", None)
        if allocation.get("allocationTimestamp"):
            allocation["allocationTimestamp"] = "<set>"
    return out


def stored(h: Harness) -> list[Obj]:
    """Every claim in the API (upstream ``listAll``), by name."""
    claims = h.cache.dra.claims
    found = [
        claims.get_api_obj(f"{c['metadata']['namespace']}/{c['metadata']['name']}")
        for c in claims.list()
    ]
    return sorted(
        (comparable(c) for c in found if c is not None), key=lambda c: c["metadata"]["name"]
    )


def in_flight(h: Harness) -> list[Obj]:
    """The in-flight allocations' claims (upstream ``listInFlightClaims``, which reads the
    tracker's internals too)."""
    entries = h.cache.dra._in_flight.values()
    return [comparable(e.claim) for e in entries]


def assumed(h: Harness, name: str = CREATED) -> Obj:
    """What readers see of the claim: upstream's ``assumedClaim`` (assumed or the same as
    the API's)."""
    found = h.cache.dra.get_claim(NS, name)
    assert found is not None, name
    return comparable(found)


def pod_status(h: Harness) -> list[Obj]:
    return [status for what, status in h.api.writes if what == "pod-status"]


def mapping(container: str, resource: str, request: str) -> Obj:
    return {"containerName": container, "resourceName": resource, "requestName": request}


def code_and_message(status: Status | None) -> tuple[Code, str] | None:
    return None if status is None else (status.code, status.message())


def harness(pod: Obj, **kw: Any) -> Harness:
    kw.setdefault("classes", [GPU_CLASS])
    kw.setdefault("slices", [WORKER_SLICE])
    return Harness(pod, **kw)


def through_reserve(h: Harness) -> None:
    assert h.plugin.pre_enqueue(h.pod) is None
    assert h.through_filter() == {NODE: None}
    assert h.reserve() is None


# -- "empty-with-extended-resources-enabled", "non-DRA-extended-resource-name-..." -----------


@pytest.mark.parametrize("classes", [[], [GPU_CLASS]], ids=["no-class", "with-class"])
def test_empty_with_extended_resources_enabled(classes: list[Obj]) -> None:
    h = Harness(pod_requesting(), classes=classes)
    _, status = h.plugin.pre_filter(h.state, h.pod, h.nodes())
    assert status is not None and status.code == Code.SKIP
    post = h.post_filter()
    assert post is not None and (post.code, post.reasons) == (Code.UNSCHEDULABLE, ())
    pre_flight = h.plugin.pre_bind_pre_flight(h.state, h.pod, NODE)
    assert pre_flight is not None and pre_flight.code == Code.SKIP
    assert h.api.writes == []


def test_non_dra_extended_resource_name_with_zero_allocatable() -> None:
    """A class that stands for no resource the pod asks for: nothing for this plugin."""
    h = harness(POD_WITH_ERN, classes=[device_class()], nodes=[worker_with("0")])
    _, status = h.plugin.pre_filter(h.state, h.pod, h.nodes())
    assert status is not None and status.code == Code.SKIP
    assert h.filter() == {NODE: None}
    assert h.reserve() is None
    pre_flight = h.plugin.pre_bind_pre_flight(h.state, h.pod, NODE)
    assert pre_flight is not None and pre_flight.code == Code.SKIP
    assert h.pre_bind() is None
    assert h.api.writes == [] and in_flight(h) == []


# -- "extended-resource-name-with-node-resource" -----------------------------------------------


def test_extended_resource_name_with_node_resource() -> None:
    """The node's device plugin serves it: nothing to allocate, create or patch."""
    h = harness(POD_WITH_ERN, nodes=[worker_with("1")], slices=[])
    through_reserve(h)
    assert in_flight(h) == []
    # Upstream: PreBindPreFlight succeeds (the special claim is among the pod's claims).
    assert h.plugin.pre_bind_pre_flight(h.state, h.pod, NODE) is None
    assert h.pre_bind() is None
    assert h.api.writes == [] and stored(h) == [] and in_flight(h) == []


# -- "extended-resource-name-with-resources", "...-with-zero-allocatable",
# -- "extended-resource-one-device-plugin-one-dra", "implicit-..." ------------------------------


@pytest.mark.parametrize(
    ("pod", "nodes", "slices", "requests", "results", "mappings"),
    [
        pytest.param(
            POD_WITH_ERN, [], [WORKER_SLICE], ONE_GPU, ["container-0-request-0"],
            [mapping("con0", ERN, "container-0-request-0")],
            id="extended-resource-name-with-resources",
        ),
        pytest.param(
            POD_WITH_ERN, [worker_with("0")], [WORKER_SLICE], ONE_GPU,
            ["container-0-request-0"], [mapping("con0", ERN, "container-0-request-0")],
            id="extended-resource-name-with-zero-allocatable",
        ),
        pytest.param(
            # gpu from the node's device plugin, gpu2 from DRA: named by its place among
            # the container's sorted resource names.
            POD_WITH_ERN2, [worker_with("1")], [WORKER_SLICE],
            [("container-0-request-1", CLASS + "2", 1)], ["container-0-request-1"],
            [mapping("con0", ERN2, "container-0-request-1")],
            id="extended-resource-one-device-plugin-one-dra",
        ),
        pytest.param(
            POD_WITH_IMPLICIT, [], [LARGE_WORKER_SLICE],
            [("container-0-request-0", CLASS, 1), ("container-0-request-1", CLASS, 2)],
            ["container-0-request-0", "container-0-request-1", "container-0-request-1"],
            [mapping("con0", IMPLICIT, "container-0-request-0"),
             mapping("con0", ERN, "container-0-request-1")],
            id="implicit-extended-resource-name-with-resources",
        ),
        pytest.param(
            POD_WITH_IMPLICIT_TWO_CONTAINERS, [], [LARGE_WORKER_SLICE],
            [("container-0-request-0", CLASS, 1), ("container-1-request-0", CLASS, 2)],
            ["container-0-request-0", "container-1-request-0", "container-1-request-0"],
            [mapping("con0", IMPLICIT, "container-0-request-0"),
             mapping("con1", ERN, "container-1-request-0")],
            id="implicit-extended-resource-name-two-containers-with-resources",
        ),
    ],
)  # fmt: skip
def test_extended_resources_are_allocated_created_and_recorded(
    pod: Obj,
    nodes: list[Obj],
    slices: list[Obj],
    requests: list[tuple[str, str, int]],
    results: list[str],
    mappings: list[Obj],
) -> None:
    h = harness(pod, nodes=nodes, slices=slices, classes=[GPU_CLASS, GPU2_CLASS])
    through_reserve(h)
    # Reserve: the node's variant of the in-memory claim is in flight, nothing written.
    assert in_flight(h) == [extended_claim(requests, results, SPECIAL_CLAIM_NAME)]
    assert h.api.writes == []

    assert h.plugin.pre_bind_pre_flight(h.state, h.pod, NODE) is None
    assert h.pre_bind() is None
    # PreBind: created from generateName (no name, uid or allocation sent), the finalizer
    # then the allocation and reservation written, the pod's status patched.
    assert [what for what, _ in h.api.writes] == ["create", "update", "status", "pod-status"]
    sent = h.api.writes[0][1]
    assert "name" not in sent["metadata"] and "uid" not in sent["metadata"]
    assert "allocation" not in (sent.get("status") or {})
    assert sent["spec"] == extended_claim(requests, results)["spec"]
    written = reserved(extended_claim(requests, results))
    assert stored(h) == [written]
    assert assumed(h) == written
    assert in_flight(h) == []  # written: the assume cache holds it now
    assert pod_status(h) == [{"requestMappings": mappings, "resourceClaimName": CREATED}]


# -- "extended-resource-name-no-resource" -----------------------------------------------------


def test_extended_resource_name_no_resource() -> None:
    """Neither the node nor a device serves it."""
    h = harness(POD_WITH_ERN, slices=[])
    assert h.pre_filter() is None
    filtered = h.filter()
    assert code_and_message(filtered[NODE]) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ERR_CANNOT_ALLOCATE,
    )
    post = h.post_filter()
    assert post is not None and (post.code, post.reasons) == (Code.UNSCHEDULABLE, ())
    assert h.api.writes == [] and stored(h) == [] and in_flight(h) == []


# -- "extended-resource-name-with-resources-fail-patch" ---------------------------------------


def test_extended_resource_name_with_resources_fail_patch() -> None:
    h = harness(POD_WITH_ERN)
    h.api.fail_pod_status = RuntimeError("patch error")
    through_reserve(h)
    assert in_flight(h) == [CLAIM_NO_NAME]
    status = h.pre_bind()
    assert status is not None and status.code == Code.ERROR
    assert "patch error" in status.message()
    # Created and written all the same; still in flight (only success clears it). Upstream's
    # in-flight copy also shows the allocation timestamp (it shares the allocation object
    # PreBind stamps); ours is the copy Reserve made.
    assert stored(h) == [CLAIM_WRITTEN]
    assert assumed(h) == CLAIM_WRITTEN
    assert in_flight(h) == [CLAIM_NO_NAME]
    assert len(pod_status(h)) == 1


# -- "extended-resource-name-with-resources-has-claim", "...-delete-claim" --------------------


@pytest.mark.parametrize("node_name", [NODE, NODE2], ids=["has-claim", "delete-claim"])
def test_a_claim_of_an_earlier_cycle_is_deleted_in_post_filter(node_name: str) -> None:
    """The pod's claim written by an earlier cycle (its binding failed) may hold a stale
    allocation: every node refuses it and PostFilter deletes it, finalizer first."""
    earlier = api_claim(extended_claim(ONE_GPU, ["container-0-request-0"], node_name=node_name))
    h = harness(POD_WITH_ERN, claims=[earlier])
    assert h.plugin.pre_enqueue(h.pod) is None
    assert h.pre_filter() is None
    filtered = h.filter()
    assert code_and_message(filtered[NODE]) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ERR_STALE_CLAIM,
    )
    post = h.post_filter()
    assert post is not None and (post.code, post.reasons) == (Code.UNSCHEDULABLE, (DELETED,))
    assert [what for what, _ in h.api.writes] == ["update", "delete"]
    assert FINALIZER not in h.api.writes[0][1]["metadata"].get("finalizers", [])
    assert h.api.writes[1][1]["metadata"]["name"] == CREATED
    assert stored(h) == [] and in_flight(h) == []


# -- "extended-resource-name-bind-failure", "...-skip-bind", "...-claim-creation-failure" ----


def test_extended_resource_name_bind_failure() -> None:
    """Bind failed after PreBind: Unreserve deletes the claim PreBind created."""
    h = harness(POD_WITH_ERN)
    through_reserve(h)
    assert h.pre_bind() is None
    assert stored(h) == [CLAIM_WRITTEN] and in_flight(h) == []
    h.unreserve()
    assert [what for what, _ in h.api.writes][-2:] == ["update", "delete"]
    assert stored(h) == [] and in_flight(h) == []
    assert h.cache.dra.get_claim(NS, CREATED) is None


def test_extended_resource_name_skip_bind() -> None:
    """Another PreBind plugin failed first: nothing was written, the allocation leaves."""
    h = harness(POD_WITH_ERN)
    through_reserve(h)
    assert in_flight(h) == [CLAIM_NO_NAME]
    h.unreserve()
    assert in_flight(h) == []
    assert h.api.writes == [] and stored(h) == []


def test_extended_resource_name_claim_creation_failure() -> None:
    h = harness(POD_WITH_ERN)
    h.api.fail_create = RuntimeError("claim creation errors")
    through_reserve(h)
    status = h.pre_bind()
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "create claim for extended resources default/: claim creation errors"
    assert in_flight(h) == [CLAIM_NO_NAME]
    h.unreserve()
    # Nothing was created, so nothing to delete.
    assert [what for what, _ in h.api.writes] == ["create"]
    assert stored(h) == [] and in_flight(h) == []


def test_an_in_flight_allocation_holds_the_device_until_unreserve() -> None:
    """Between Reserve and "...-skip-bind"'s Unreserve, another pod sees the device taken
    (the special claim's in-flight allocation counts), and free after."""
    h = harness(POD_WITH_ERN)
    through_reserve(h)
    other_raw = pod_requesting({ERN: "1"})
    other_raw["metadata"].update(name="other", uid="other-uid")
    other = PodInfo.parse(other_raw)

    def filter_other() -> Status | None:
        plugin = DynamicResources(DynamicResourcesArgs(), h.handle)  # type: ignore[arg-type]
        state = CycleState()
        _, status = plugin.pre_filter(state, other, h.nodes())
        assert status is None
        return plugin.filter(state, other, h.node())

    assert code_and_message(filter_other()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ERR_CANNOT_ALLOCATE,
    )
    h.unreserve()
    assert filter_other() is None
