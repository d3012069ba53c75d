"""The structured allocator: focused cases from upstream's shared suite
(dynamic-resource-allocation/structured/internal/allocatortesting/allocator_testing.go),
run against multisched.dra.structured with each case's features, as upstream's
TestAllocator runs them against the incubating allocator. Names are upstream's.
"""

from __future__ import annotations

import copy
import re
import time
from decimal import Decimal
from typing import Any

import pytest

from multisched.dra.structured import (
    AllocatedState,
    AllocationError,
    Allocator,
    FailedAllocationOnNode,
    Features,
    is_device_allocated,
    node_matches,
)

Obj = dict[str, Any]

DRIVER_A, DRIVER_B = "driver-a", "driver-b"
CLASS_A, CLASS_B = "class-a", "class-b"
NODE1, NODE2 = "node-1", "node-2"
REGION1, REGION2 = "region-1", "region-2"
POOL1, POOL2 = "pool-1", "pool-2"
SHARE_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$")

# Upstream's builders, as API JSON.


def node(name: str = NODE1, region: str = REGION1) -> Obj:
    return {"metadata": {"name": name, "labels": {"region": region, "planet": "earth"}}}


def device_class(name: str, driver: str, config: list[Obj] | None = None) -> Obj:
    spec: Obj = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if config:
        spec["config"] = config
    return {"metadata": {"name": name}, "spec": spec}


def request(name: str, cls: str, count: int = 1, **exactly: Any) -> Obj:
    spec = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    return {"name": name, "exactly": spec | exactly}


def all_request(name: str, cls: str) -> Obj:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "All"}}


def sub_request(name: str, cls: str, count: int = 1) -> Obj:
    return {"name": name, "deviceClassName": cls, "allocationMode": "ExactCount", "count": count}


def claim(name: str, *requests: Obj, constraints: list[Obj] | None = None) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name}, "spec": {"devices": devices}}


def device(name: str, **fields: Any) -> Obj:
    return {"name": name} | fields


def resource_slice(
    name: str, node_selection: str | Obj, pool: str, driver: str, *devices: Obj, count: int = 1
) -> Obj:
    spec: Obj = {
        "driver": driver,
        "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
    }
    if isinstance(node_selection, dict):
        spec["nodeSelector"] = node_selection
    elif node_selection == "all":
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node_selection
    if devices:
        spec["devices"] = list(devices)
    return {"metadata": {"name": name}, "spec": spec}


def label_selector(key: str, *values: str) -> Obj:
    requirement = {"key": key, "operator": "In", "values": list(values)}
    return {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}


def local_selector(name: str) -> Obj:
    requirement = {"key": "metadata.name", "operator": "In", "values": [name]}
    return {"nodeSelectorTerms": [{"matchFields": [requirement]}]}


def result(req: str, driver: str, pool: str, dev: str, **fields: Any) -> Obj:
    return {"request": req, "driver": driver, "pool": pool, "device": dev} | fields


def allocation(selector: Obj | None, *results: Obj) -> Obj:
    out: Obj = {"devices": {"results": list(results)}}
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def allocate(
    claims: list[Obj],
    classes: list[Obj],
    slices: list[Obj],
    features: Features | None = None,
    state: AllocatedState | None = None,
    on: Obj | None = None,
    deadline: float | None = None,
) -> list[Obj]:
    """Run one Allocate; the inputs must come out unchanged, as upstream checks."""
    before = copy.deepcopy((claims, classes, slices))
    by_name = {c["metadata"]["name"]: c for c in classes}
    allocator = Allocator(features or Features(), state or AllocatedState(), by_name.get, slices)
    try:
        return allocator.allocate(on or node(), claims, deadline)
    finally:
        assert (claims, classes, slices) == before


def no_class(name: str) -> Obj | None:
    return None


# Cases.


def test_simple() -> None:
    got = allocate(
        [claim("claim-0", request("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"))],
    )
    assert got == [allocation(local_selector(NODE1), result("req-0", DRIVER_A, POOL1, "device-1"))]


def test_other_node_and_namespaced_claim() -> None:
    claim0 = claim("claim-0", request("req-0", CLASS_A))
    claim0["metadata"]["namespace"] = "default"
    got = allocate(
        [claim0],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice("slice-1", NODE1, POOL1, DRIVER_B, device("device-1")),
            resource_slice("slice-2", NODE2, POOL2, DRIVER_A, device("device-1")),
        ],
        on=node(NODE2, REGION2),
    )
    assert got == [allocation(local_selector(NODE2), result("req-0", DRIVER_A, POOL2, "device-1"))]


def test_small_and_large_backtrack_requests() -> None:
    """The "large" device is first taken for the "small" request, then given back."""

    def at_least(size: str) -> Obj:
        expression = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{size}")) >= 0'
        return {"cel": {"expression": expression}}

    got = allocate(
        [
            claim(
                "claim-0",
                request("req-0", CLASS_A, selectors=[at_least("1Gi")]),
                request("req-1", CLASS_A, selectors=[at_least("2Gi")]),
            )
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                device("device-2", capacity={"memory": {"value": "2Gi"}}),
                device("device-1", capacity={"memory": {"value": "1Gi"}}),
            )
        ],
    )
    assert got == [
        allocation(
            local_selector(NODE1),
            result("req-0", DRIVER_A, POOL1, "device-1"),
            result("req-1", DRIVER_A, POOL1, "device-2"),
        )
    ]


def test_not_enough_suitable_devices() -> None:
    got = allocate(
        [claim("claim-0", request("req-0", CLASS_A)), claim("claim-0", request("req-1", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"))],
    )
    assert got == []


def test_already_allocated_devices() -> None:
    state = AllocatedState({(DRIVER_A, POOL1, "device-1"), (DRIVER_A, POOL1, "device-2")})
    got = allocate(
        [claim("claim-0", request("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"))],
        state=state,
    )
    assert got == []


@pytest.mark.parametrize("classes", [[], [device_class(CLASS_B, DRIVER_A)]])
def test_no_classes(classes: list[Obj]) -> None:
    with pytest.raises(AllocationError) as err:
        allocate(
            [claim("claim-0", request("req-0", CLASS_A))],
            classes,
            [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"))],
        )
    assert str(err.value) == (
        "claim claim-0, request req-0: could not retrieve device class class-a: "
        'deviceclass.resource.k8s.io "class-a" not found'
    )
    assert not isinstance(err.value, FailedAllocationOnNode)


def test_all_devices_many() -> None:
    got = allocate(
        [claim("claim-0", all_request("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1")),
            resource_slice("slice-1", NODE1, POOL2, DRIVER_A, device("device-1")),
        ],
    )
    assert got == [
        allocation(
            local_selector(NODE1),
            result("req-0", DRIVER_A, POOL1, "device-1"),
            result("req-0", DRIVER_A, POOL2, "device-1"),
        )
    ]


def test_all_devices_some_allocated() -> None:
    """All means every matching device: one already allocated makes the request fail."""
    got = allocate(
        [claim("claim-0", all_request("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"), device("device-2"))],
        state=AllocatedState({(DRIVER_A, POOL1, "device-1")}),
    )
    assert got == []


def test_all_devices_of_the_incomplete_pool() -> None:
    with pytest.raises(AllocationError, match=r"^claim claim-0, request req-0: asks for all") as e:
        allocate(
            [claim("claim-0", all_request("req-0", CLASS_A))],
            [device_class(CLASS_A, DRIVER_A)],
            [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"), count=2)],
        )
    assert str(e.value).endswith(
        "asks for all devices, but resource pool driver-a/pool-1 is currently being updated"
    )


def test_no_allocation_from_incomplete_pools() -> None:
    got = allocate(
        [claim("claim-0", request("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"), count=2)],
    )
    assert got == []


def test_duplicate_slice_is_an_invalid_pool_on_this_node() -> None:
    first = resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"), count=2)
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "slice-1-2"
    with pytest.raises(FailedAllocationOnNode) as err:
        allocate(
            [claim("claim-0", request("req-0", CLASS_A))],
            [device_class(CLASS_A, DRIVER_A)],
            [first, second],
        )
    assert str(err.value) == "invalid resource pools were encountered"


def test_many_network_attached_devices() -> None:
    """The node selectors of the devices' slices are merged into one term."""
    got = allocate(
        [claim("claim-0", request("req-0", CLASS_A, 4))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1", label_selector("region", REGION1), POOL1, DRIVER_A, device("device-1")
            ),
            resource_slice("slice-1", "all", POOL2, DRIVER_A, device("device-1")),
            resource_slice(
                "slice-1", label_selector("planet", "earth"), "pool-3", DRIVER_A, device("device-1")
            ),
            resource_slice(
                "slice-1", local_selector(NODE1), "pool-4", DRIVER_A, device("device-1")
            ),
        ],
    )
    selector = {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "region", "operator": "In", "values": [REGION1]},
                    {"key": "planet", "operator": "In", "values": ["earth"]},
                ],
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE1]}],
            }
        ]
    }
    assert got == [
        allocation(
            selector,
            *(result("req-0", DRIVER_A, p, "device-1") for p in (POOL1, POOL2, "pool-3", "pool-4")),
        )
    ]


def test_network_attached_device_elsewhere() -> None:
    slices = [
        resource_slice(
            "slice-1", label_selector("region", REGION1), POOL1, DRIVER_A, device("device-1")
        )
    ]
    args = ([claim("claim-0", request("req-0", CLASS_A))], [device_class(CLASS_A, DRIVER_A)])
    assert allocate(*args, slices, on=node(NODE2, REGION2)) == []
    assert allocate(*args, slices) == [
        allocation(label_selector("region", REGION1), result("req-0", DRIVER_A, POOL1, "device-1"))
    ]


def test_admin_access() -> None:
    admin_claim = claim("claim-0", request("req-0", CLASS_A, adminAccess=True))
    args = ([admin_claim], [device_class(CLASS_A, DRIVER_A)])
    slices = [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"))]
    with pytest.raises(AllocationError) as err:
        allocate(*args, slices, features=Features(admin_access=False))
    assert str(err.value) == (
        "claim claim-0, request req-0: admin access is requested, but the feature is disabled"
    )
    # Allocated devices stay available to admin access.
    state = AllocatedState({(DRIVER_A, POOL1, "device-1")})
    got = allocate(*args, slices, features=Features(admin_access=True), state=state)
    assert got == [
        allocation(
            local_selector(NODE1), result("req-0", DRIVER_A, POOL1, "device-1", adminAccess=True)
        )
    ]


def attributes(**values: Any) -> Obj:
    return {name: dict([value]) for name, value in values.items()}


def test_with_constraint() -> None:
    attrs = attributes(
        driverVersion=("version", "1.0.0"),
        numa=("int", 1),
        stringAttribute=("string", "value"),
        boolAttribute=("bool", True),
    )
    constraints = [
        {"matchAttribute": f"{DRIVER_A}/{name}"}
        for name in ("numa", "driverVersion", "stringAttribute", "boolAttribute")
    ]
    got = allocate(
        [
            claim(
                "claim-0",
                request("req-0", CLASS_A),
                request("req-1", CLASS_A),
                constraints=constraints,
            )
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                device("device-1", attributes=attrs),
                device("device-2", attributes=attrs),
            )
        ],
    )
    assert got == [
        allocation(
            local_selector(NODE1),
            result("req-0", DRIVER_A, POOL1, "device-1"),
            result("req-1", DRIVER_A, POOL1, "device-2"),
        )
    ]


@pytest.mark.parametrize(
    ("kind", "first", "second"),
    [("string", "a", "b"), ("int", 1, 2), ("bool", True, False), ("version", "1.0.0", "2.0.0")],
)
def test_with_constraint_not_matching(kind: str, first: Any, second: Any) -> None:
    got = allocate(
        [
            claim(
                "claim-0",
                request("req-0", CLASS_A, 2),
                constraints=[{"matchAttribute": f"{DRIVER_A}/attr"}],
            )
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                device("device-1", attributes={"attr": {kind: first}}),
                device("device-2", attributes={"attr": {kind: second}}),
            )
        ],
    )
    assert got == []


def test_with_constraint_for_request_retry() -> None:
    """A constraint on one request only; the first candidate must be given back."""
    got = allocate(
        [
            claim(
                "claim-0",
                request("req-0", CLASS_A),
                request("req-1", CLASS_A),
                constraints=[{"requests": ["req-0"], "matchAttribute": f"{DRIVER_A}/numa"}],
            )
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                device("device-0"),  # no attribute: cannot serve req-0
                device("device-1", attributes={"numa": {"int": 1}}),
            )
        ],
    )
    assert got == [
        allocation(
            local_selector(NODE1),
            result("req-0", DRIVER_A, POOL1, "device-1"),
            result("req-1", DRIVER_A, POOL1, "device-0"),
        )
    ]


def test_prioritized_list_first_unavailable() -> None:
    prioritized = {
        "name": "req-0",
        "firstAvailable": [sub_request("subReq-0", CLASS_B), sub_request("subReq-1", CLASS_A)],
    }
    classes = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
    slices = [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"))]
    got = allocate(
        [claim("claim-0", prioritized)], classes, slices, Features(prioritized_list=True)
    )
    assert got == [
        allocation(local_selector(NODE1), result("req-0/subReq-1", DRIVER_A, POOL1, "device-1"))
    ]
    with pytest.raises(AllocationError, match="DRAPrioritizedList feature is disabled"):
        allocate([claim("claim-0", prioritized)], classes, slices)


def test_prioritized_list_class_and_claim_config() -> None:
    """Configs follow the subrequest that got picked; one for all requests lists none."""

    def opaque(value: str) -> Obj:
        return {"opaque": {"driver": DRIVER_A, "parameters": {"key": value}}}

    classes = [
        device_class(CLASS_A, DRIVER_A, config=[opaque("classA")]),
        device_class(CLASS_B, DRIVER_B, config=[opaque("classB")]),
    ]
    prioritized = {
        "name": "req-0",
        "firstAvailable": [sub_request("subReq-0", CLASS_B), sub_request("subReq-1", CLASS_A)],
    }
    claim0 = claim("claim-0", prioritized, request("req-1", CLASS_A))
    claim0["spec"]["devices"]["config"] = [
        {"requests": ["req-0/subReq-0"]} | opaque("unused"),
        {"requests": ["req-0/subReq-1"]} | opaque("picked"),
        {"requests": ["req-0", "req-1"]} | opaque("all"),
    ]
    slices = [
        resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"), device("device-2"))
    ]
    got = allocate([claim0], classes, slices, Features(prioritized_list=True))
    assert got[0]["devices"]["config"] == [
        {"source": "FromClass"} | opaque("classA"),
        {"source": "FromClaim", "requests": ["req-0/subReq-1"]} | opaque("picked"),
        {"source": "FromClaim"} | opaque("all"),
    ]


def test_device_taints() -> None:
    no_schedule = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
    no_execute = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
    toleration = {
        "operator": "Equal",
        "key": "taint-key",
        "value": "taint-value-2",
        "effect": "NoExecute",
    }
    slices = [
        resource_slice(
            "slice-1",
            NODE1,
            POOL1,
            DRIVER_A,
            device("device-1", taints=[no_schedule]),
            device("device-2", taints=[no_execute]),
        )
    ]
    classes = [device_class(CLASS_A, DRIVER_A)]
    taints = Features(device_taints=True)
    # tainted-two-devices
    assert allocate([claim("claim-0", request("req-0", CLASS_A))], classes, slices, taints) == []
    # tainted-two-devices-tolerated: only the second device's taint is tolerated.
    tolerating = claim("claim-0", request("req-0", CLASS_A, tolerations=[toleration]))
    assert allocate([tolerating], classes, slices, taints) == [
        allocation(
            local_selector(NODE1),
            result("req-0", DRIVER_A, POOL1, "device-2", tolerations=[toleration]),
        )
    ]
    # tainted-disabled
    plain = allocate([claim("claim-0", request("req-0", CLASS_A))], classes, slices)
    assert plain[0]["devices"]["results"][0]["device"] == "device-1"


def partitionable_slices(allocatable: str) -> list[Obj]:
    def consumer(name: str, memory: str) -> Obj:
        consumes = [{"counterSet": "counter-set-1", "counters": {"memory": {"value": memory}}}]
        return device(name, consumesCounters=consumes)

    counters = {
        "sharedCounters": [
            {"name": "counter-set-1", "counters": {"memory": {"value": allocatable}}}
        ]
    }
    counter_slice = resource_slice("slice-2", NODE1, POOL1, DRIVER_A, count=2)
    counter_slice["spec"] |= counters
    return [
        resource_slice(
            "slice-1",
            NODE1,
            POOL1,
            DRIVER_A,
            consumer("device-1", "4Gi"),
            consumer("device-2", "16Gi"),
            count=2,
        ),
        counter_slice,
    ]


def test_partitionable_devices_shared_counters() -> None:
    classes = [device_class(CLASS_A, DRIVER_A)]
    partitionable = Features(partitionable_devices=True)
    # partitionable-devices-no-capacity-available: device-2 holds 16 of the 18Gi.
    state = AllocatedState({(DRIVER_A, POOL1, "device-2")})
    one = [claim("claim-0", request("req-0", CLASS_A))]
    assert allocate(one, classes, partitionable_slices("18Gi"), partitionable, state) == []
    # Both fit in 20Gi; in 18Gi only one of them.
    two = [claim("claim-0", request("req-0", CLASS_A, 2))]
    assert len(allocate(two, classes, partitionable_slices("20Gi"), partitionable)) == 1
    assert allocate(two, classes, partitionable_slices("18Gi"), partitionable) == []
    # Without the feature, such slices are ignored.
    assert allocate(one, classes, partitionable_slices("20Gi")) == []


def test_consumable_capacity_two_claims_share_one_device() -> None:
    """consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request:
    each request is rounded up to the policy's minimum, and both fit on one device."""
    policy = {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}}
    shared = device(
        "device-1",
        allowMultipleAllocations=True,
        capacity={"capacity-0": {"value": "4", "requestPolicy": policy}},
    )
    cls = {
        "metadata": {"name": CLASS_A},
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": f'device.driver == "{DRIVER_A}" && '
                        "device.allowMultipleAllocations == true"
                    }
                }
            ]
        },
    }
    capacity = {"requests": {"capacity-0": "1"}}
    claims = [
        claim("claim-0", request("req-0", CLASS_A, capacity=capacity)),
        claim("claim-1", request("req-0", CLASS_A, capacity=capacity)),
    ]
    slices = [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, shared)]
    got = allocate(claims, [cls], slices, Features(consumable_capacity=True))
    share_ids = [a["devices"]["results"][0].pop("shareID") for a in got]
    assert all(SHARE_ID.match(s) for s in share_ids) and share_ids[0] != share_ids[1]
    expected = result("req-0", DRIVER_A, POOL1, "device-1", consumedCapacity={"capacity-0": "2"})
    assert got == [allocation(local_selector(NODE1), expected)] * 2
    # A third share does not fit anymore once two are allocated.
    state = AllocatedState(
        allocated_shared_device_ids={(DRIVER_A, POOL1, "device-1", s) for s in share_ids},
        aggregated_capacity={(DRIVER_A, POOL1, "device-1"): {"capacity-0": Decimal(4)}},
    )
    assert is_device_allocated((DRIVER_A, POOL1, "device-1"), state)
    assert allocate(claims[:1], [cls], slices, Features(consumable_capacity=True), state) == []
    # Without the feature, a capacity request is refused.
    with pytest.raises(AllocationError, match="DRAConsumableCapacity feature is disabled"):
        allocate(claims, [cls], slices)


def test_device_binding_conditions() -> None:
    bound = device("device-1", bindingConditions=["IsPrepare"], bindingFailureConditions=["Failed"])
    args = (
        [claim("claim-0", request("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, bound)],
    )
    got = allocate(*args, features=Features(device_binding_and_status=True))
    expected = result(
        "req-0",
        DRIVER_A,
        POOL1,
        "device-1",
        bindingConditions=["IsPrepare"],
        bindingFailureConditions=["Failed"],
    )
    assert got == [allocation(local_selector(NODE1), expected)]
    # binding-conditions-without-feature-gate
    assert allocate(*args) == []


def test_binds_to_node_restricts_to_the_node() -> None:
    """A network-attached device that binds to the node makes the result node-local."""
    bound = device("device-1", bindingConditions=["Attached"], bindsToNode=True)
    got = allocate(
        [claim("claim-0", request("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", "all", POOL1, DRIVER_A, bound)],
        features=Features.v1_37_defaults(),
    )
    assert got[0]["nodeSelector"] == local_selector(NODE1)


def test_cel_errors_name_the_selector() -> None:
    bad = claim("claim-0", request("req-0", CLASS_A, selectors=[{"cel": {"expression": "x"}}]))
    args = (
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("s", NODE1, POOL1, DRIVER_A, device("d"))],
    )
    with pytest.raises(AllocationError, match=r"^claim claim-0: selector #0: CEL compile error: "):
        allocate([bad], *args)
    missing = 'device.attributes["driver-a"].missing'
    bad["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": missing}}
    ]
    with pytest.raises(AllocationError) as err:
        allocate([bad], *args)
    assert str(err.value).startswith(
        "claim claim-0: selector #0 on device driver-a/pool-1/d: CEL runtime error: no such key"
    )
    assert str(err.value).endswith("guarding the check with has() for optional fields")


def test_too_many_devices() -> None:
    with pytest.raises(AllocationError) as err:
        allocate(
            [claim("claim-0", request("req-0", CLASS_A, 20), request("req-1", CLASS_A, 20))],
            [device_class(CLASS_A, DRIVER_A)],
            [],
        )
    assert str(err.value) == (
        "claim claim-0, request req-1: adding 20 devices exceeds the claim limit of 32, "
        "with 20 already accounted for"
    )


def test_deadline() -> None:
    """interrupt/deadline: upstream's context error, wrapped."""
    args = (
        [claim("claim-0", request("req-0", CLASS_A, 6))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1", NODE1, POOL1, DRIVER_A, *(device(f"device-{i}") for i in range(1, 6))
            )
        ],
    )
    with pytest.raises(AllocationError) as err:
        allocate(*args, deadline=time.monotonic())
    assert str(err.value) == "filter operation aborted: context deadline exceeded"
    assert allocate(*args, deadline=time.monotonic() + 60) == []


def test_unsupported_features() -> None:
    with pytest.raises(AllocationError) as err:
        Allocator(Features(compatibility_groups=True), AllocatedState(), no_class, [])
    assert str(err.value).startswith(
        "internal error: no allocator available for feature set {AdminAccess:false "
        "CompatibilityGroups:true ConsumableCapacity:false"
    )


def test_node_matches() -> None:
    assert node_matches(node(), NODE1, False, None)
    assert not node_matches(node(), NODE2, True, None)
    assert node_matches(node(), "", True, None)
    assert node_matches(node(), "", False, label_selector("region", REGION1))
    assert not node_matches(node(), "", False, label_selector("region", REGION2))
    assert not node_matches(node(), "", False, None)
    bad = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Bogus"}]}]}
    with pytest.raises(AllocationError, match=r"^failed to parse node selector &NodeSelector\{"):
        node_matches(node(), "", False, bad)


def test_slices_read_once_per_object() -> None:
    """A new Allocator over the same slice objects reuses their parsed form and CEL results."""
    slices = [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, device("device-1"))]
    classes = [device_class(CLASS_A, DRIVER_A)]
    claims = [claim("claim-0", request("req-0", CLASS_A))]
    first = Allocator(Features(), AllocatedState(), {CLASS_A: classes[0]}.get, slices)
    first.allocate(node(), claims)
    second = Allocator(Features(), AllocatedState(), {CLASS_A: classes[0]}.get, list(slices))
    assert second.index is first.index
    cached = second.index.slices[0].devices[0].cel
    assert cached == {f'device.driver == "{DRIVER_A}"': True}
    changed = copy.deepcopy(slices)
    third = Allocator(Features(), AllocatedState(), {CLASS_A: classes[0]}.get, changed)
    assert third.index.slices[0].devices[0].cel == {}


def test_check_combinations_with_backtracking() -> None:
    """Only combinations within one request are tried: {device-2, device-1} is not tried
    again after {device-1, device-2}; upstream counts 12 allocateOne calls."""
    type_x = {"cel": {"expression": f'device.attributes["{DRIVER_A}"].type == "X"'}}
    devices = [
        device(f"device-{i}", attributes={"type": {"string": kind}})
        for i, kind in ((1, "X"), (2, "Y"), (3, "Y"))
    ]
    allocator = Allocator(
        Features(),
        AllocatedState(),
        {CLASS_A: device_class(CLASS_A, DRIVER_A)}.get,
        [resource_slice("slice-1", NODE1, POOL1, DRIVER_A, *devices)],
    )
    got = allocator.allocate(
        node(),
        [
            claim(
                "claim-0",
                request("req-1", CLASS_A, 2),
                request("req-2", CLASS_A, selectors=[type_x]),
            )
        ],
    )
    assert got == [
        allocation(
            local_selector(NODE1),
            result("req-1", DRIVER_A, POOL1, "device-2"),
            result("req-1", DRIVER_A, POOL1, "device-3"),
            result("req-2", DRIVER_A, POOL1, "device-1"),
        )
    ]
    assert allocator.num_allocate_one_invocations == 12
