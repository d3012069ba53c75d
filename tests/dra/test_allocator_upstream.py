"""dynamic-resource-allocation@v0.37.2 structured/internal/allocatortesting: the shared allocator
tests, TestAllocator's table (allocator_testing.go) and TestLexicographicalAllocator's.

Each case runs as upstream's RunTestAllocator runs it, against multisched.dra.structured's
Allocator, a port of the incubating allocator: a case needing a feature that allocator lacks
(DRADeviceCompatibilityGroups, DRADerivedAttributes, DRAListTypeAttributes,
DRAOptionalNodeOperations) is skipped naming the gates, as upstream skips it. Cases run with their
own feature set, so those expecting an error because a feature is off run too. Generated share IDs
are replaced by ``fixed_share_id`` before comparing, as upstream does. Not ported: the
expectNumAllocateOneInvocations assertions (our Allocator keeps no search statistics) and the
"cancel" interrupt (``allocate`` takes a deadline, not a context). Upstream's comments inside a
case are kept, above it. Builders and matchers: allocator_builders.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from allocator_builders import (
    ALLOCATION_RESULTS_MAX_SIZE,
    ErrorMatcher,
    all_device_request,
    all_of,
    allocation_result,
    allocation_result_with_config,
    allocation_result_with_configs,
    bool_attribute,
    capacity0,
    capacity1,
    claim,
    claim0,
    claim1,
    claim_with_device_config,
    claim_with_request,
    claim_with_requests,
    class_a,
    class_b,
    class_with_allow_multiple_allocations,
    class_with_config,
    consist_of,
    contain_substring,
    counter_set,
    counter_set1,
    counter_set2,
    device,
    device0,
    device1,
    device2,
    device3,
    device4,
    device_allocation_result,
    device_allocation_result_with_skip_node_operations,
    device_claim_config,
    device_class,
    device_configuration,
    device_counter_consumption,
    device_counter_consumption_with_groups,
    device_request,
    device_request_allocation_result,
    device_request_allocation_result_with_binding_conditions,
    driver_a,
    driver_b,
    field_name_key,
    fixed_share_id,
    four,
    from_counters,
    go_sprintf,
    int_attribute,
    local_node_selector,
    match_error,
    multiple_device_allocation_results,
    new_quantity,
    node,
    node1,
    node2,
    node_label_selector,
    node_selection_all,
    node_selection_per_device,
    node_with_dra_optional_node_operations,
    non_existent_attribute,
    numa_node_attribute,
    one,
    plain,
    planet_key,
    planet_value_earth,
    point_three,
    point_two,
    point_two_five,
    pool1,
    pool2,
    pool3,
    pool4,
    quantity_map,
    region1,
    region2,
    region_key,
    req0,
    req0_sub_req0,
    req0_sub_req1,
    req1,
    req1_sub_req0,
    req1_sub_req1,
    req2,
    req2_sub_req0,
    req2_sub_req1,
    req3,
    request,
    request_with_derived_attributes,
    request_with_prioritized_list,
    resource_pool,
    slice1,
    slice2,
    slice3,
    slice4,
    slice_with_counter_sets,
    slice_with_devices,
    slice_with_multiple_devices,
    slice_with_no_devices,
    slice_with_one_device,
    string_attribute,
    sub_req0,
    sub_req1,
    sub_request,
    taint_no_execute,
    taint_no_schedule,
    taint_none,
    three,
    toleration_no_execute,
    toleration_no_schedule,
    toleration_no_schedule_key1,
    two,
    unwrap,
    unwrap_resource_slices,
    version_attribute,
    zero,
)


@dataclasses.dataclass(frozen=True)
class Case:
    """upstream AllocatorTestCase."""

    features: Mapping[str, bool] = dataclasses.field(default_factory=dict)
    claims: Sequence[Any] | None = ()
    allocated_devices: Sequence[tuple[str, str, str]] | None = None
    allocated_shared_device_ids: set[tuple[str, ...]] | None = None
    allocated_capacity: Mapping[tuple[str, str, str], Mapping[str, str]] | None = None
    classes: Sequence[Mapping[str, Any]] | None = ()
    slices: Sequence[Mapping[str, Any]] | None = None
    node: Mapping[str, Any] | None = None
    expect_results: Sequence[Any] | None = None
    expect_error: ErrorMatcher | None = None
    expect_num_allocate_one_invocations: int = 0


def _obsolete_slice_slices() -> Any:
    v_slice = slice_with_devices(
        "slice-1-obsolete", node1, resource_pool(pool1, 2), driver_a, device(device2, None, None)
    )
    # This makes the other slice obsolete.
    v_slice["spec"]["pool"]["generation"] += 1
    return v_slice


def _duplicate_slice_slices() -> Any:
    # This simulates the problem that can
    # (theoretically) occur when the resource
    # slice controller wants to publish a pool
    # with two slices but ends up creating some
    # identical slices under different names
    # because its informer cache was out-dated on
    # another sync (see
    # resourceslicecontroller.go).
    v_slice_a = slice_with_one_device(slice1, node1, pool1, driver_a).obj()
    v_slice_a["spec"]["pool"]["resourceSliceCount"] = 2
    v_slice_b = copy.deepcopy(v_slice_a)
    v_slice_b["metadata"]["name"] += "-2"
    return [v_slice_a, v_slice_b]


def _all_devices_of_the_incomplete_pool_slices() -> Any:
    v_slice = slice_with_one_device(slice1, node1, pool1, driver_a)
    # This makes the pool incomplete, one other slice is missing.
    v_slice["spec"]["pool"]["resourceSliceCount"] += 1
    return v_slice


def _all_devices_some_allocated_admin_access_claims() -> Any:
    v_c = claim_with_request(claim0, req0, class_a)
    v_c["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    v_c["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "All"
    return [v_c]


def _all_devices_some_allocating_admin_access_claims() -> Any:
    v_c = claim_with_requests(claim0, None, request(req0, class_a, 1), request(req1, class_a, 1))
    v_c["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    # Second request for `All` cannot be fulfilled because
    # the first request claims a device.
    v_c["spec"]["devices"]["requests"][1]["exactly"]["adminAccess"] = True
    v_c["spec"]["devices"]["requests"][1]["exactly"]["allocationMode"] = "All"
    return [v_c]


def _count_devices_some_allocated_admin_access_claims() -> Any:
    v_c = claim_with_request(claim0, req0, class_a)
    v_c["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    v_c["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "ExactCount"
    v_c["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    return [v_c]


def _separate_claims_share_device_admin_access_claims() -> Any:
    v_c1 = claim_with_request(claim0, req0, class_a)
    v_c1["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    v_c2 = claim_with_request(claim1, req0, class_a)
    v_c2["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    return [v_c1, v_c2]


def _admin_access_claims_device_allocating_for_non_admin_access_claims() -> Any:
    v_admin = claim_with_request(claim1, req0, class_a)
    v_admin["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    return [claim_with_request(claim0, req0, class_a), v_admin]


def _all_devices_slice_without_devices_prioritized_list_claims() -> Any:
    v_claim = claim(claim0).with_requests(
        request_with_prioritized_list(
            req0, sub_request(sub_req0, class_a, 1), sub_request(sub_req1, class_b, 1)
        )
    )
    v_claim["spec"]["devices"]["requests"][0]["firstAvailable"][0]["allocationMode"] = "All"
    v_claim["spec"]["devices"]["requests"][0]["firstAvailable"][0]["count"] = 0
    return v_claim


def _all_devices_no_slices_prioritized_list_claims() -> Any:
    v_claim = claim(claim0).with_requests(
        request_with_prioritized_list(
            req0, sub_request(sub_req0, class_a, 1), sub_request(sub_req1, class_b, 1)
        )
    )
    v_claim["spec"]["devices"]["requests"][0]["firstAvailable"][0]["allocationMode"] = "All"
    v_claim["spec"]["devices"]["requests"][0]["firstAvailable"][0]["count"] = 0
    return v_claim


def _all_devices_some_allocated_prioritized_list_claims() -> Any:
    v_claim = claim(claim0).with_requests(
        request_with_prioritized_list(
            req0, sub_request(sub_req0, class_a, 1), sub_request(sub_req1, class_b, 1)
        )
    )
    v_claim["spec"]["devices"]["requests"][0]["firstAvailable"][0]["allocationMode"] = "All"
    v_claim["spec"]["devices"]["requests"][0]["firstAvailable"][0]["count"] = 0
    return v_claim


def _admin_access_disabled_claims() -> Any:
    v_c = claim_with_request(claim0, req0, class_a)
    v_c["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    return [v_c]


def _admin_access_enabled_claims() -> Any:
    v_c = claim_with_request(claim0, req0, class_a)
    v_c["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    return [v_c]


def _with_constraint_not_matching_int_attribute_all_devices_claims() -> Any:
    v_claim = claim_with_requests(
        claim0, [{"matchAttribute": int_attribute}], request(req0, class_a, 0)
    )
    v_claim["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "All"
    return v_claim


def _partitionable_all_mode_constraint_must_error_with_reserved_counter_claims() -> Any:
    v_claim = claim_with_requests(
        claim0, [{"matchAttribute": int_attribute}], request(req0, class_a, 0)
    )
    v_claim["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "All"
    return v_claim


def _with_claim_config_for_two_requests_claims() -> Any:
    v_c = claim_with_requests(
        claim0,
        None,
        request(req0, class_a, 1),
        request(req1, class_a, 1),
        request(req2, class_a, 1),
    )
    v_c["spec"]["devices"]["config"] = [
        {"requests": [req0, req1], **device_configuration(driver_a, "deviceAttribute")}
    ]
    return [v_c]


def _unknown_selector_claims() -> Any:
    v_claim = claim_with_request(claim0, req0, class_a)
    v_claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{}]
    return v_claim


def _unknown_allocation_mode_claims() -> Any:
    v_claim = claim_with_request(claim0, req0, class_a)
    v_claim["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "future-mode"
    return v_claim


def _unknown_constraint_claims() -> Any:
    v_claim = claim_with_request(claim0, req0, class_a)
    v_claim["spec"]["devices"]["constraints"] = [{}]
    return v_claim


def _invalid_cel_one_device_claims() -> Any:
    v_claim = claim_with_request(claim0, req0, class_a)
    v_claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": "noSuchVar"}}
    ]
    return v_claim


def _invalid_cel_one_device_class_classes() -> Any:
    v_c = device_class(class_a, driver_a)
    v_c["spec"]["selectors"][0]["cel"]["expression"] = "noSuchVar"
    return v_c


def _invalid_cel_all_devices_claims() -> Any:
    v_claim = claim_with_request(claim0, req0, class_a)
    v_claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": "noSuchVar"}}
    ]
    v_claim["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "All"
    return v_claim


def _prioritized_list_subrequests_with_allocation_mode_all_claims() -> Any:
    v_claim = claim(claim0).with_requests(
        request_with_prioritized_list(
            req0, sub_request(sub_req0, class_a, 1), sub_request(sub_req1, class_a, 1)
        )
    )
    v_claim["spec"]["devices"]["requests"][0]["firstAvailable"][0]["allocationMode"] = "All"
    v_claim["spec"]["devices"]["requests"][0]["firstAvailable"][0]["count"] = 0
    return v_claim


def _prioritized_list_disabled_claims() -> Any:
    v_claim = claim(claim0).with_requests(
        request_with_prioritized_list(req0, sub_request(sub_req0, class_a, 1))
    )
    return v_claim


def _tainted_admin_access_claims() -> Any:
    v_c = claim_with_request(claim0, req0, class_a)
    v_c["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    return [v_c]


def _tainted_admin_access_disabled_claims() -> Any:
    v_c = claim_with_request(claim0, req0, class_a)
    v_c["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    return [v_c]


def _multi_host_resource_pool_with_stale_slice_for_current_node_slices() -> Any:
    v_s = slice_with_devices(slice1, node1, pool1, driver_a, device(device1, None, None))
    v_s["spec"]["pool"]["generation"] = 1
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_with_stale_slice_for_current_node_slices_2() -> Any:
    v_s = slice_with_devices(slice2, node2, pool1, driver_a, device(device2, None, None))
    v_s["spec"]["pool"]["generation"] = 2
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_complete_update_from_node_1_to_node_2_slices() -> Any:
    v_s = slice_with_devices(slice1, node1, pool1, driver_a, device(device1, None, None))
    v_s["spec"]["pool"]["generation"] = 1
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_complete_update_from_node_1_to_node_2_slices_2() -> Any:
    v_s = slice_with_devices(slice1, node1, pool1, driver_a, device(device2, None, None))
    v_s["spec"]["pool"]["generation"] = 1
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_complete_update_from_node_1_to_node_2_slices_3() -> Any:
    v_s = slice_with_devices(slice2, node2, pool1, driver_a, device(device1, None, None))
    v_s["spec"]["pool"]["generation"] = 2
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_complete_update_from_node_1_to_node_2_slices_4() -> Any:
    v_s = slice_with_devices(slice2, node2, pool1, driver_a, device(device2, None, None))
    v_s["spec"]["pool"]["generation"] = 2
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_complete_update_from_node_2_to_node_1_slices() -> Any:
    v_s = slice_with_devices(slice1, node2, pool1, driver_a, device(device1, None, None))
    v_s["spec"]["pool"]["generation"] = 1
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_complete_update_from_node_2_to_node_1_slices_2() -> Any:
    v_s = slice_with_devices(slice1, node2, pool1, driver_a, device(device2, None, None))
    v_s["spec"]["pool"]["generation"] = 1
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_complete_update_from_node_2_to_node_1_slices_3() -> Any:
    v_s = slice_with_devices(slice2, node1, pool1, driver_a, device(device1, None, None))
    v_s["spec"]["pool"]["generation"] = 2
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_complete_update_from_node_2_to_node_1_slices_4() -> Any:
    v_s = slice_with_devices(slice2, node1, pool1, driver_a, device(device2, None, None))
    v_s["spec"]["pool"]["generation"] = 2
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_incomplete_update_from_node_1_to_node_2_slices() -> Any:
    v_s = slice_with_devices(slice1, node1, pool1, driver_a, device(device1, None, None))
    v_s["spec"]["pool"]["generation"] = 1
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_incomplete_update_from_node_1_to_node_2_slices_2() -> Any:
    v_s = slice_with_devices(slice1, node1, pool1, driver_a, device(device2, None, None))
    v_s["spec"]["pool"]["generation"] = 1
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_incomplete_update_from_node_1_to_node_2_slices_3() -> Any:
    v_s = slice_with_devices(slice2, node2, pool1, driver_a, device(device1, None, None))
    v_s["spec"]["pool"]["generation"] = 2
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_incomplete_update_from_node_2_to_node_1_slices() -> Any:
    v_s = slice_with_devices(slice1, node2, pool1, driver_a, device(device1, None, None))
    v_s["spec"]["pool"]["generation"] = 1
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_incomplete_update_from_node_2_to_node_1_slices_2() -> Any:
    v_s = slice_with_devices(slice1, node2, pool1, driver_a, device(device2, None, None))
    v_s["spec"]["pool"]["generation"] = 1
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


def _multi_host_resource_pool_incomplete_update_from_node_2_to_node_1_slices_3() -> Any:
    v_s = slice_with_devices(slice2, node1, pool1, driver_a, device(device1, None, None))
    v_s["spec"]["pool"]["generation"] = 2
    v_s["spec"]["pool"]["resourceSliceCount"] = 2
    return v_s


CASES: dict[str, Case] = {
    "empty": Case(),
    # Two requests in one claim, both landing on the same counter set with the
    # same compatibility group: they can be co-allocated.
    "compatibility-groups-compatible": Case(
        features={"partitionable_devices": True, "compatibility_groups": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1), device_request(req1, class_a, 1)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: two}, "mig")
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: two}, "mig")
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1, driver_a, pool1, device2, False),
            )
        ],
    ),
    # Two requests in one claim, the only candidates are an incompatible pair on
    # the same counter set (mig vs vgpu): no combination satisfies the claim.
    "compatibility-groups-incompatible": Case(
        features={"partitionable_devices": True, "compatibility_groups": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1), device_request(req1, class_a, 1)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: two}, "mig")
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: two}, "vgpu")
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    # A single-device claim whose first candidate (device1) declares group "mig"
    # and carries a NoSchedule taint, while the second (device2) declares the
    # disjoint group "vgpu". device1 is rejected by its taint; the compatibility
    # narrowing it consumed on counterSet1 must be rolled back so device2, which
    # shares no group with it, can still be allocated.
    "compatibility-groups-taint-rollback": Case(
        features={
            "partitionable_devices": True,
            "compatibility_groups": True,
            "device_taints": True,
        },
        claims=[claim(claim0).with_requests(device_request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None)
                .with_taints(taint_no_schedule)
                .with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: two}, "mig")
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: two}, "vgpu")
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    # An incompatible device is already allocated on the counter set; its groups
    # are read live from the slice. The only remaining candidate shares no
    # group, so the claim is unschedulable.
    "compatibility-groups-incompatible-with-allocated-peer": Case(
        features={"partitionable_devices": True, "compatibility_groups": True},
        claims=[claim(claim0).with_requests(device_request(req0, class_a, 1))],
        allocated_devices=[(driver_a, pool1, device1)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "vgpu")
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    # A compatible device is already allocated on the counter set; the candidate
    # shares the group the peer declares in the slice and is admitted.
    "compatibility-groups-compatible-with-allocated-peer": Case(
        features={"partitionable_devices": True, "compatibility_groups": True},
        claims=[claim(claim0).with_requests(device_request(req0, class_a, 1))],
        allocated_devices=[(driver_a, pool1, device1)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    # With the feature disabled, a slice with a device declaring
    # compatibility groups is ignored during pool gathering (the scheduler
    # cannot validate it), which leaves its pool incomplete and blocks the
    # pool as a whole. A separate pool without groups is still allocatable.
    # This is the feature-off safety behavior and is verified across all
    # allocator variants.
    # CompatibilityGroups is set explicitly to false so this case keeps
    # exercising the feature-disabled path unchanged after the feature
    # graduates to on-by-default. The scope is the pool: device1's pool1
    # is off-limits, but device2 in the group-free pool2 is still
    # allocated.
    "compatibility-groups-disabled-skips-grouped-pool": Case(
        features={"partitionable_devices": True, "compatibility_groups": False},
        claims=[claim(claim0).with_requests(device_request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: two}, "mig")
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
            ),
            slice_with_devices(
                slice3,
                node1,
                resource_pool(pool2, 2),
                driver_a,
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set2, {capacity0: two})
                ),
            ),
            slice_with_counter_sets(
                slice4,
                node1,
                resource_pool(pool2, 2),
                driver_a,
                counter_set(counter_set2, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool2, device2, False),
            )
        ],
    ),
    # With the feature disabled, a candidate that declares no groups is not
    # allocatable either when another device of the same pool declares them:
    # only the slice with the grouped device1 gets ignored during pool
    # gathering, but that leaves the pool incomplete, which also blocks
    # device2 in the remaining device slice - whether or not device1 is
    # allocated, so that the outcome does not depend on allocation order.
    # Verified across all allocator variants, including stable.
    "compatibility-groups-disabled-skips-ungrouped-device-in-grouped-pool": Case(
        features={"partitionable_devices": True, "compatibility_groups": False},
        claims=[claim(claim0).with_requests(device_request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 3),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                ),
            ),
            slice_with_devices(
                slice2,
                node1,
                resource_pool(pool1, 3),
                driver_a,
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {capacity0: one})
                ),
            ),
            slice_with_counter_sets(
                slice3,
                node1,
                resource_pool(pool1, 3),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    # Groups are tracked per counter set: two devices whose groups are
    # disjoint can still be co-allocated when they draw from different
    # counter sets of the same pool.
    "compatibility-groups-multiple-counter-sets": Case(
        features={"partitionable_devices": True, "compatibility_groups": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1), device_request(req1, class_a, 1)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: two}, "mig")
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set2, {capacity0: two}, "vgpu")
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
                counter_set(counter_set2, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1, driver_a, pool1, device2, False),
            )
        ],
    ),
    # A device drawing from several counter sets must be admitted by every
    # one of them. device2 is unopposed on counterSet2 (nothing else draws
    # from that set) but shares no group with device1 on counterSet1, so
    # no combination satisfies the claim - including the backtracked order
    # where device2 goes first and its narrowing of both counter sets has
    # to be rolled back.
    "compatibility-groups-multiple-counter-sets-spanning-device": Case(
        features={"partitionable_devices": True, "compatibility_groups": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1), device_request(req1, class_a, 1)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "vgpu"),
                    device_counter_consumption_with_groups(counter_set2, {capacity0: one}, "vgpu"),
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
                counter_set(counter_set2, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    # The first subrequest asks for two devices, but only one candidate is
    # compatible with the "mig" device taken by req0 (device3 declares the
    # disjoint "vgpu"), so it fails and its tentative narrowing is rolled
    # back before the allocator falls back to the second subrequest.
    "compatibility-groups-with-prioritized-list": Case(
        features={
            "partitionable_devices": True,
            "compatibility_groups": True,
            "prioritized_list": True,
        },
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1),
                request_with_prioritized_list(
                    req1, sub_request(sub_req0, class_a, 2), sub_request(sub_req1, class_a, 1)
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                ),
                device(device3, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "vgpu")
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1_sub_req1, driver_a, pool1, device2, False),
            )
        ],
    ),
    # Compatibility groups steer allocation among shareable devices: req1
    # does not fit on device1 (req0's share exhausted its capacity) and is
    # rejected on device2, which declares the disjoint "vgpu" group on the
    # same counter set, before landing on device3.
    "compatibility-groups-with-consumable-capacity": Case(
        features={
            "partitionable_devices": True,
            "compatibility_groups": True,
            "consumable_capacity": True,
        },
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one),
                device_request(req1, class_a, 1).with_capacity_request(one),
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                )
                .with_allow_multiple_allocations(),
                device(device2, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "vgpu")
                )
                .with_allow_multiple_allocations(),
                device(device3, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                )
                .with_allow_multiple_allocations(),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: one}),
                device_request_allocation_result(
                    req1, driver_a, pool1, device3
                ).with_consumed_capacity(fixed_share_id, {capacity0: one}),
            )
        ],
    ),
    # Two claims allocated in a single call must satisfy the constraint
    # jointly: the second claim's device is checked against the rolling
    # intersection left by the first claim's device.
    "compatibility-groups-multiple-claims": Case(
        features={"partitionable_devices": True, "compatibility_groups": True},
        claims=[
            claim_with_request(claim0, req0, class_a),
            claim_with_request(claim1, req0, class_a),
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            ),
        ],
    ),
    # Each claim could be satisfied on its own, but not both in one call:
    # whichever device goes to the first claim, the other claim's only
    # remaining candidate declares a disjoint group on the same counter
    # set. The rolling intersection spans claims, so the joint allocation
    # is correctly refused.
    "compatibility-groups-multiple-claims-incompatible": Case(
        features={"partitionable_devices": True, "compatibility_groups": True},
        claims=[
            claim_with_request(claim0, req0, class_a),
            claim_with_request(claim1, req0, class_a),
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "mig")
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption_with_groups(counter_set1, {capacity0: one}, "vgpu")
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "simple": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "optional-node-operations": Case(
        features={"optional_node_operations": True},
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_one_device(slice1, node1, pool1, driver_a).with_skip_node_operations("*")
        ),
        node=node_with_dra_optional_node_operations(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result_with_skip_node_operations(
                    req0, driver_a, pool1, device1, "*"
                ),
            )
        ],
    ),
    "optional-node-operations-missing-feature": Case(
        features={"optional_node_operations": True},
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_one_device(slice1, node1, pool1, driver_a).with_skip_node_operations("*")
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "other-node": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_one_device(slice1, node1, pool1, driver_b),
            slice_with_one_device(slice2, node2, pool2, driver_a),
        ),
        node=node(node2, region2),
        expect_results=[
            allocation_result(
                local_node_selector(node2),
                device_allocation_result(req0, driver_a, pool2, device1, False),
            )
        ],
    ),
    "small-and-large": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                request(
                    req0,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0',
                                driver_a,
                            )
                        }
                    },
                ),
                request(
                    req1,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0',
                                driver_a,
                            )
                        }
                    },
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {"memory": "1Gi"}, None),
                device(device2, {"memory": "2Gi"}, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1, driver_a, pool1, device2, False),
            )
        ],
    ),
    # Reversing the order in which the devices are listed causes the "large" device to
    # be allocated for the "small" request, leaving the "large" request unsatisfied.
    # The initial decision needs to be undone before a solution is found.
    "small-and-large-backtrack-requests": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                request(
                    req0,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0',
                                driver_a,
                            )
                        }
                    },
                ),
                request(
                    req1,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0',
                                driver_a,
                            )
                        }
                    },
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device2, {"memory": "2Gi"}, None),
                device(device1, {"memory": "1Gi"}, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1, driver_a, pool1, device2, False),
            )
        ],
    ),
    # Reversing the order in which the devices are listed causes the "large" device to
    # be allocated for the "small" request, leaving the "large" request unsatisfied.
    # The initial decision needs to be undone before a solution is found.
    "small-and-large-backtrack-claims": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                request(
                    req0,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0',
                                driver_a,
                            )
                        }
                    },
                ),
            ),
            claim_with_requests(
                claim1,
                None,
                request(
                    req1,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0',
                                driver_a,
                            )
                        }
                    },
                ),
            ),
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device2, {"memory": "2Gi"}, None),
                device(device1, {"memory": "1Gi"}, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req1, driver_a, pool1, device2, False),
            ),
        ],
    ),
    "devices-split-across-different-slices": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                {
                    "name": req0,
                    "exactly": {
                        "count": 2,
                        "allocationMode": "ExactCount",
                        "deviceClassName": class_a,
                    },
                },
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_one_device(slice1, node1, pool1, driver_a),
            slice_with_one_device(slice2, node1, pool2, driver_a),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool2, device1, False),
            )
        ],
    ),
    "obsolete-slice": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                "slice-1-obsolete",
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None),
            ),
            _obsolete_slice_slices(),
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "duplicate-slice": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=_duplicate_slice_slices(),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("invalid resource pools were encountered")),
    ),
    "no-slices": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=None,
        node=node(node1, region1),
        expect_results=None,
    ),
    "not-enough-suitable-devices": Case(
        claims=[
            claim_with_request(claim0, req0, class_a),
            claim_with_request(claim0, req1, class_a),
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
    ),
    "no-classes": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=None,
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
        expect_error=match_error(contain_substring("could not retrieve device class class-a")),
    ),
    "unknown-class": Case(
        claims=[claim_with_request(claim0, req0, "unknown-class")],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
        expect_error=match_error(
            contain_substring("could not retrieve device class unknown-class")
        ),
    ),
    "empty-class": Case(
        claims=[claim_with_request(claim0, req0, "")],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
        expect_error=match_error(
            contain_substring(
                "claim claim-0, request req-0: missing device class name (unsupported request type?)"  # noqa: E501
            )
        ),
    ),
    "no-claims-to-allocate": Case(
        claims=None,
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
    ),
    "all-devices-single": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "all-devices-with-consumed-counters": Case(
        features={"partitionable_devices": True},
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "all-devices-many": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_one_device(slice1, node1, pool1, driver_a),
            slice_with_one_device(slice1, node1, pool2, driver_a),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool2, device1, False),
            )
        ],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                {
                    "name": req0,
                    "exactly": {"allocationMode": "All", "count": 1, "deviceClassName": class_a},
                },
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(_all_devices_of_the_incomplete_pool_slices()),
        node=node(node1, region1),
        expect_results=None,
        expect_error=match_error(
            contain_substring(
                "claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated"  # noqa: E501
            )
        ),
    ),
    "all-devices-plus-another": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            ),
            claim_with_requests(
                claim1,
                None,
                {
                    "name": req0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": class_b,
                    },
                },
            ),
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_one_device(slice1, node1, pool1, driver_a),
            slice_with_one_device(slice1, node1, pool1, driver_b),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_b, pool1, device1, False),
            ),
        ],
    ),
    "all-devices-plus-another-reversed": Case(
        claims=[
            claim_with_requests(
                claim1,
                None,
                {
                    "name": req0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": class_b,
                    },
                },
            ),
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            ),
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_one_device(slice1, node1, pool1, driver_a),
            slice_with_one_device(slice1, node1, pool1, driver_b),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_b, pool1, device1, False),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            ),
        ],
    ),
    "all-devices-many-plus-another": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            ),
            claim_with_requests(
                claim1,
                None,
                {
                    "name": req0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": class_b,
                    },
                },
            ),
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            ),
            slice_with_one_device(slice1, node1, pool1, driver_b),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_b, pool1, device1, False),
            ),
        ],
    ),
    "all-devices-many-plus-another-reversed": Case(
        claims=[
            claim_with_requests(
                claim1,
                None,
                {
                    "name": req0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": class_b,
                    },
                },
            ),
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            ),
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            ),
            slice_with_one_device(slice1, node1, pool1, driver_b),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_b, pool1, device1, False),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            ),
        ],
    ),
    # One device, two claims both trying to allocate it.
    "all-devices-no-solution": Case(
        claims=[
            claim_with_requests(
                claim1,
                None,
                {
                    "name": req0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": class_a,
                    },
                },
            ),
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            ),
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
    ),
    # One device, two claims both trying to allocate it.
    "all-devices-no-solution-reversed": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            ),
            claim_with_requests(
                claim1,
                None,
                {
                    "name": req0,
                    "exactly": {
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "deviceClassName": class_a,
                    },
                },
            ),
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
    ),
    "all-devices-slice-without-devices": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_no_devices(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
    ),
    "all-devices-no-slices": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=None,
        node=node(node1, region1),
        expect_results=None,
    ),
    "all-devices-some-allocated": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            )
        ],
        allocated_devices=[(driver_a, pool1, device1)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "all-devices-some-allocated-admin-access": Case(
        features={"admin_access": True},
        claims=_all_devices_some_allocated_admin_access_claims(),
        allocated_devices=[(driver_a, pool1, device1)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, True),
                device_allocation_result(req0, driver_a, pool1, device2, True),
            )
        ],
    ),
    "all-devices-some-allocating-admin-access": Case(
        features={"admin_access": True},
        claims=_all_devices_some_allocating_admin_access_claims(),
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "count-devices-some-allocated-admin-access": Case(
        features={"admin_access": True},
        claims=_count_devices_some_allocated_admin_access_claims(),
        allocated_devices=[(driver_a, pool1, device1)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, True),
                device_allocation_result(req0, driver_a, pool1, device2, True),
            )
        ],
    ),
    "separate-claims-share-device-admin-access": Case(
        features={"admin_access": True},
        claims=_separate_claims_share_device_admin_access_claims(),
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, True),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, True),
            ),
        ],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        features={"admin_access": True},
        claims=_admin_access_claims_device_allocating_for_non_admin_access_claims(),
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, True),
            ),
        ],
    ),
    "all-devices-slice-without-devices-prioritized-list": Case(
        features={"prioritized_list": True},
        claims=[_all_devices_slice_without_devices_prioritized_list_claims()],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_no_devices(slice1, node1, pool1, driver_a),
            slice_with_one_device(slice2, node1, pool2, driver_b),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_b, pool2, device1, False),
            )
        ],
    ),
    "all-devices-no-slices-prioritized-list": Case(
        features={"prioritized_list": True},
        claims=[_all_devices_no_slices_prioritized_list_claims()],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(slice_with_one_device(slice2, node1, pool2, driver_b)),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_b, pool2, device1, False),
            )
        ],
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        features={"prioritized_list": True},
        claims=[_all_devices_some_allocated_prioritized_list_claims()],
        allocated_devices=[(driver_a, pool1, device1)],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            ),
            slice_with_one_device(slice2, node1, pool2, driver_b),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_b, pool2, device1, False),
            )
        ],
    ),
    "network-attached-device": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_one_device(slice1, node_label_selector(region_key, region1), pool1, driver_a)
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                node_label_selector(region_key, region1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    # Wrong region, no devices available.
    "unsuccessful-allocation-network-attached-device": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_one_device(slice1, node_label_selector(region_key, region1), pool1, driver_a)
        ),
        node=node(node2, region2),
        expect_results=None,
    ),
    # A union of the individual selectors.
    "many-network-attached-devices": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 4))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_one_device(
                slice1, node_label_selector(region_key, region1), pool1, driver_a
            ),
            slice_with_one_device(slice1, node_selection_all, pool2, driver_a),
            slice_with_one_device(
                slice1, node_label_selector(planet_key, planet_value_earth), pool3, driver_a
            ),
            slice_with_one_device(slice1, local_node_selector(node1), pool4, driver_a),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": region_key, "operator": "In", "values": [region1]},
                                {
                                    "key": planet_key,
                                    "operator": "In",
                                    "values": [planet_value_earth],
                                },
                            ],
                            "matchFields": [
                                {"key": field_name_key, "operator": "In", "values": [node1]}
                            ],
                        }
                    ]
                },
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool2, device1, False),
                device_allocation_result(req0, driver_a, pool3, device1, False),
                device_allocation_result(req0, driver_a, pool4, device1, False),
            )
        ],
    ),
    # Once there is any node-local device, the selector is for that node.
    "local-and-network-attached-devices": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 2))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_one_device(
                slice1, node_label_selector(region_key, region1), pool1, driver_a
            ),
            slice_with_one_device(slice1, node1, pool2, driver_a),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool2, device1, False),
            )
        ],
    ),
    "several-different-drivers": Case(
        claims=[
            claim_with_request(claim0, req0, class_a),
            claim_with_request(claim0, req0, class_b),
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            ),
            slice_with_one_device(slice1, node1, pool1, driver_b),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_b, pool1, device1, False),
            ),
        ],
    ),
    "already-allocated-devices": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        allocated_devices=[(driver_a, pool1, device1), (driver_a, pool1, device2)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
    ),
    "admin-access-disabled": Case(
        features={"admin_access": False},
        claims=_admin_access_disabled_claims(),
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
        expect_error=match_error(
            contain_substring(
                "claim claim-0, request req-0: admin access is requested, but the feature is disabled"  # noqa: E501
            )
        ),
    ),
    "admin-access-enabled": Case(
        features={"admin_access": True},
        claims=_admin_access_enabled_claims(),
        allocated_devices=[(driver_a, pool1, device1), (driver_a, pool1, device2)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, True),
            )
        ],
    ),
    "with-constraint": Case(
        claims=[
            claim_with_requests(
                claim0,
                [
                    {"matchAttribute": int_attribute},
                    {"matchAttribute": version_attribute},
                    {"matchAttribute": string_attribute},
                    {"matchAttribute": bool_attribute},
                ],
                request(req0, class_a, 1),
                request(req1, class_a, 1),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1,
                    None,
                    {
                        "driverVersion": {"version": "1.0.0"},
                        "numa": {"int": 1},
                        "stringAttribute": {"string": "stringAttributeValue"},
                        "boolAttribute": {"bool": True},
                    },
                ),
                device(
                    device2,
                    None,
                    {
                        "driverVersion": {"version": "1.0.0"},
                        "numa": {"int": 1},
                        "stringAttribute": {"string": "stringAttributeValue"},
                        "boolAttribute": {"bool": True},
                    },
                ),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1, driver_a, pool1, device2, False),
            )
        ],
    ),
    "with-constraint-non-existent-attribute": Case(
        claims=[
            claim_with_request(claim0, req0, class_a, {"matchAttribute": non_existent_attribute})
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
    ),
    "with-constraint-not-matching-int-attribute": Case(
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": int_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"numa": {"int": 1}}),
                device(device2, None, {"numa": {"int": 2}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=[_with_constraint_not_matching_int_attribute_all_devices_claims()],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"numa": {"int": 1}}),
                device(device2, None, {"numa": {"int": 2}}),
            )
        ),
        node=node(node1, region1),
        expect_error=match_error(
            contain_substring(
                "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied"  # noqa: E501
            )
        ),
    ),
    # Covers allocateDevice's must=true error path when the rejected device
    # has already reserved a shared counter. An all-mode request over two
    # devices with mismatched constraint attributes fails on the second
    # device, which consumes the counter, so rollbackDevice runs with a
    # reserved counter before the must-error is returned. The error aborts the
    # whole allocation, so this asserts the error contract and exercises the
    # counter-release branch; the released counter is not separately
    # observable through the allocation result.
    # device2 mismatches the constraint and consumes the single
    # counter, so it reserves the counter first and then fails the
    # constraint, reaching the must-error path with state to undo.
    "partitionable-all-mode-constraint-must-error-with-reserved-counter": Case(
        features={"partitionable_devices": True},
        claims=[_partitionable_all_mode_constraint_must_error_with_reserved_counter_claims()],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, {"numa": {"int": 1}}),
                device(device2, None, {"numa": {"int": 2}}).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"c": "1"}),
            ),
        ),
        node=node(node1, region1),
        expect_error=match_error(
            contain_substring(
                "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied"  # noqa: E501
            )
        ),
    ),
    "with-constraint-not-matching-string-attribute": Case(
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "stringAttributeValue"}}),
                device(device2, None, {"stringAttribute": {"string": "stringAttributeValue2"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "with-constraint-not-matching-bool-attribute": Case(
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": bool_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"boolAttribute": {"bool": True}}),
                device(device2, None, {"boolAttribute": {"bool": False}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "with-constraint-not-matching-version-attribute": Case(
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": version_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"driverVersion": {"version": "1.0.0"}}),
                device(device2, None, {"driverVersion": {"version": "2.0.0"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "with-constraint-for-request": Case(
        claims=[
            claim_with_requests(
                claim0,
                [{"requests": [req0], "matchAttribute": version_attribute}],
                request(req0, class_a, 1),
                request(req1, class_a, 1),
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"driverVersion": {"version": "1.0.0"}}),
                device(device2, None, {"driverVersion": {"version": "2.0.0"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1, driver_a, pool1, device2, False),
            )
        ],
    ),
    # This device does not satisfy the second
    # match attribute, so the allocator must
    # backtrack.
    "with-constraint-for-request-retry": Case(
        claims=[
            claim_with_requests(
                claim0,
                [
                    {"requests": [req0], "matchAttribute": version_attribute},
                    {"matchAttribute": string_attribute},
                ],
                request(req0, class_a, 1),
                request(req1, class_a, 1),
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1,
                    None,
                    {"driverVersion": {"version": "1.0.0"}, "stringAttribute": {"string": "a"}},
                ),
                device(
                    device2,
                    None,
                    {"driverVersion": {"version": "2.0.0"}, "stringAttribute": {"string": "b"}},
                ),
                device(
                    device3,
                    None,
                    {"driverVersion": {"version": "3.0.0"}, "stringAttribute": {"string": "b"}},
                ),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
                device_allocation_result(req1, driver_a, pool1, device3, False),
            )
        ],
    ),
    "with-class-device-config": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[class_with_config(class_a, driver_a, "classAttribute")],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=[
            allocation_result_with_configs(
                local_node_selector(node1),
                [device_allocation_result(req0, driver_a, pool1, device1, False)],
                [
                    {
                        "source": "FromClass",
                        "requests": None,
                        **device_configuration(driver_a, "classAttribute"),
                    }
                ],
            )
        ],
    ),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        claims=[
            claim_with_requests(
                claim0,
                [],
                request(req0, class_a, 1),
                request(req1, class_a, 1),
                request(req2, class_b, 1),
            )
        ],
        classes=[
            class_with_config(class_a, driver_a, "classAttribute-A"),
            class_with_config(class_b, driver_b, "classAttribute-B"),
        ],
        slices=unwrap(
            slice_with_multiple_devices(slice1, node1, pool1, driver_a, 2),
            slice_with_one_device(slice2, node1, pool1, driver_b),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result_with_configs(
                local_node_selector(node1),
                [
                    device_allocation_result(req0, driver_a, pool1, device0, False),
                    device_allocation_result(req1, driver_a, pool1, device1, False),
                    device_allocation_result(req2, driver_b, pool1, device1, False),
                ],
                [
                    {
                        "source": "FromClass",
                        "requests": [req0, req1],
                        **device_configuration(driver_a, "classAttribute-A"),
                    },
                    {
                        "source": "FromClass",
                        "requests": [req2],
                        **device_configuration(driver_b, "classAttribute-B"),
                    },
                ],
            )
        ],
    ),
    "with-claim-config-for-two-requests": Case(
        claims=_with_claim_config_for_two_requests_claims(),
        classes=[device_class(class_a, driver_a)],
        slices=unwrap(slice_with_multiple_devices(slice1, node1, pool1, driver_a, 3)),
        node=node(node1, region1),
        expect_results=[
            allocation_result_with_configs(
                local_node_selector(node1),
                [
                    device_allocation_result(req0, driver_a, pool1, device0, False),
                    device_allocation_result(req1, driver_a, pool1, device1, False),
                    device_allocation_result(req2, driver_a, pool1, device2, False),
                ],
                [
                    {
                        "source": "FromClaim",
                        "requests": [req0, req1],
                        **device_configuration(driver_a, "deviceAttribute"),
                    }
                ],
            )
        ],
    ),
    "claim-with-device-config": Case(
        claims=[claim_with_device_config(claim0, req0, class_a, driver_a, "deviceAttribute")],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=[
            allocation_result_with_config(
                local_node_selector(node1),
                driver_a,
                "FromClaim",
                "deviceAttribute",
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "unknown-selector": Case(
        claims=[_unknown_selector_claims()],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_error=match_error(
            contain_substring("CEL expression empty (unsupported selector type?)")
        ),
    ),
    "unknown-allocation-mode": Case(
        claims=[_unknown_allocation_mode_claims()],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("unsupported count mode future-mode")),
    ),
    "unknown-constraint": Case(
        claims=[_unknown_constraint_claims()],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_error=match_error(
            contain_substring("empty constraint (unsupported constraint type?)")
        ),
    ),
    "invalid-CEL-one-device": Case(
        claims=[_invalid_cel_one_device_claims()],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("undeclared reference")),
    ),
    "invalid-CEL-one-device-class": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[_invalid_cel_one_device_class_classes()],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("undeclared reference")),
    ),
    "invalid-CEL-all-devices": Case(
        claims=[_invalid_cel_all_devices_claims()],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("undeclared reference")),
    ),
    "too-many-devices-single-request": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 500))],
        classes=[device_class(class_a, driver_a)],
        expect_error=match_error(contain_substring("exceeds the claim limit")),
    ),
    "many-devices-okay": Case(
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, ALLOCATION_RESULTS_MAX_SIZE))
        ],
        classes=[device_class(class_a, driver_a)],
    ),
    "too-many-devices-total": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                request(req0, class_a, ALLOCATION_RESULTS_MAX_SIZE),
                request(req1, class_a, 1),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_multiple_devices(
                slice1, node1, pool1, driver_a, ALLOCATION_RESULTS_MAX_SIZE + 1
            )
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("exceeds the claim limit")),
    ),
    # Two counts that are each representable but together overflow the native
    # int accumulator to a negative value, rejected before the sum is formed.
    # The value comes from math.MaxInt so it also triggers on 32-bit builds.
    "exact-count-total-overflows-claim-limit": Case(
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 9223372036854775807 // 2 + 1),
                device_request(req1, class_a, 9223372036854775807 // 2 + 1),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        expect_error=match_error(contain_substring("exceeds the claim limit")),
    ),
    # Four counts that would wrap a naive int accumulator back to zero rather
    # than negative; each is rejected against remaining capacity before summing.
    "exact-count-total-would-wrap-to-zero": Case(
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 9223372036854775807 // 2 + 1),
                device_request(req1, class_a, 9223372036854775807 // 2 + 1),
                device_request(req2, class_a, 9223372036854775807 // 2 + 1),
                device_request(req3, class_a, 9223372036854775807 // 2 + 1),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        expect_error=match_error(contain_substring("exceeds the claim limit")),
    ),
    # req0 fits on its own, so the rejection has to name req1 as the one
    # that pushes the claim over.
    "exact-count-sum-exceeds-claim-limit": Case(
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 20), device_request(req1, class_a, 20)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        expect_error=match_error(
            all_of(
                contain_substring("request " + req1), contain_substring("exceeds the claim limit")
            )
        ),
    ),
    # Two counts whose sum exactly fills the per-claim limit both allocate;
    # this pins the pre-flight comparison as > and not >=.
    "exact-count-sum-exactly-fills-claim-limit": Case(
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, ALLOCATION_RESULTS_MAX_SIZE // 2),
                device_request(req1, class_a, ALLOCATION_RESULTS_MAX_SIZE // 2),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_multiple_devices(slice1, node1, pool1, driver_a, ALLOCATION_RESULTS_MAX_SIZE)
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                *[
                    *multiple_device_allocation_results(
                        req0, driver_a, pool1, ALLOCATION_RESULTS_MAX_SIZE // 2, 0
                    ),
                    *multiple_device_allocation_results(
                        req1,
                        driver_a,
                        pool1,
                        ALLOCATION_RESULTS_MAX_SIZE // 2,
                        ALLOCATION_RESULTS_MAX_SIZE // 2,
                    ),
                ],
            )
        ],
    ),
    "all-devices-invalid-CEL": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 500))],
        classes=[device_class(class_a, driver_a)],
        expect_error=match_error(contain_substring("exceeds the claim limit")),
    ),
    "prioritized-list-first-unavailable": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0, sub_request(sub_req0, class_b, 1), sub_request(sub_req1, class_a, 1)
                )
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device1, False),
            )
        ],
    ),
    "prioritized-list-non-available": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0, sub_request(sub_req0, class_b, 2), sub_request(sub_req1, class_a, 2)
                )
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_one_device(slice1, node1, pool1, driver_a),
            slice_with_one_device(slice2, node1, pool2, driver_b),
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "prioritized-list-device-config": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0)
            .with_requests(
                request_with_prioritized_list(
                    req0, sub_request(sub_req0, class_a, 1), sub_request(sub_req1, class_b, 2)
                )
            )
            .with_configs(
                [
                    device_claim_config([req0_sub_req0], device_configuration(driver_a, "foo")),
                    device_claim_config([req0_sub_req1], device_configuration(driver_b, "bar")),
                ]
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node1, pool1, driver_b, device(device1, None, {}), device(device2, None, {})
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result_with_configs(
                local_node_selector(node1),
                [
                    device_allocation_result(req0_sub_req1, driver_b, pool1, device1, False),
                    device_allocation_result(req0_sub_req1, driver_b, pool1, device2, False),
                ],
                [
                    {
                        "source": "FromClaim",
                        "requests": None,
                        **device_configuration(driver_b, "bar"),
                    }
                ],
            )
        ],
    ),
    "prioritized-list-class-config": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0, sub_request(sub_req0, class_a, 2), sub_request(sub_req1, class_b, 2)
                )
            )
        ],
        classes=[
            class_with_config(class_a, driver_a, "foo"),
            class_with_config(class_b, driver_b, "bar"),
        ],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_b,
                device(device1, None, None),
                device(device2, None, None),
            ),
            slice_with_devices(slice2, node1, pool2, driver_a, device(device3, None, None)),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result_with_configs(
                local_node_selector(node1),
                [
                    device_allocation_result(req0_sub_req1, driver_b, pool1, device1, False),
                    device_allocation_result(req0_sub_req1, driver_b, pool1, device2, False),
                ],
                [
                    {
                        "source": "FromClass",
                        "requests": None,
                        **device_configuration(driver_b, "bar"),
                    }
                ],
            )
        ],
    ),
    "claim-config-scoped-to-subrequests-of-one-request": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0)
            .with_requests(
                request_with_prioritized_list(
                    req0, sub_request(sub_req0, class_a, 1), sub_request(sub_req1, class_b, 1)
                ),
                device_request(req1, class_a, 1),
            )
            .with_configs(
                [
                    device_claim_config(
                        [req0_sub_req0, req0_sub_req1], device_configuration(driver_a, "scoped")
                    )
                ]
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap(slice_with_multiple_devices(slice1, node1, pool1, driver_a, 2)),
        node=node(node1, region1),
        expect_results=[
            allocation_result_with_configs(
                local_node_selector(node1),
                [
                    device_allocation_result(req0_sub_req0, driver_a, pool1, device0, False),
                    device_allocation_result(req1, driver_a, pool1, device1, False),
                ],
                [
                    {
                        "source": "FromClaim",
                        "requests": [req0_sub_req0, req0_sub_req1],
                        **device_configuration(driver_a, "scoped"),
                    }
                ],
            )
        ],
    ),
    # Covers req0 (via its selected subrequest) and req1 (by name),
    # i.e. every top-level request, so Requests must collapse to nil.
    "claim-config-covering-all-requests-is-cleared": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0)
            .with_requests(
                request_with_prioritized_list(
                    req0, sub_request(sub_req0, class_a, 1), sub_request(sub_req1, class_b, 1)
                ),
                device_request(req1, class_a, 1),
            )
            .with_configs(
                [device_claim_config([req0_sub_req0, req1], device_configuration(driver_a, "all"))]
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap(slice_with_multiple_devices(slice1, node1, pool1, driver_a, 2)),
        node=node(node1, region1),
        expect_results=[
            allocation_result_with_configs(
                local_node_selector(node1),
                [
                    device_allocation_result(req0_sub_req0, driver_a, pool1, device0, False),
                    device_allocation_result(req1, driver_a, pool1, device1, False),
                ],
                [
                    {
                        "source": "FromClaim",
                        "requests": None,
                        **device_configuration(driver_a, "all"),
                    }
                ],
            )
        ],
    ),
    "prioritized-list-subrequests-with-expressions": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_selectors(
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0',
                                driver_a,
                            )
                        }
                    }
                ),
                request_with_prioritized_list(
                    req1,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                    sub_request(
                        sub_req1,
                        class_a,
                        2,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {"memory": "2Gi"}, None),
                device(device2, {"memory": "2Gi"}, None),
                device(device3, {"memory": "1Gi"}, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device3, False),
                device_allocation_result(req1_sub_req1, driver_a, pool1, device1, False),
                device_allocation_result(req1_sub_req1, driver_a, pool1, device2, False),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0)
            .with_constraints({"requests": [req0, req1], "matchAttribute": version_attribute})
            .with_requests(
                device_request(req0, class_a, 1).with_selectors(
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0',
                                driver_a,
                            )
                        }
                    }
                ),
                request_with_prioritized_list(
                    req1,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {"memory": "8Gi"}, {"driverVersion": {"version": "1.0.0"}}),
            ),
            slice_with_devices(
                slice2,
                node1,
                pool2,
                driver_a,
                device(device2, {"memory": "2Gi"}, {"driverVersion": {"version": "2.0.0"}}),
                device(device3, {"memory": "1Gi"}, {"driverVersion": {"version": "1.0.0"}}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1_sub_req1, driver_a, pool2, device3, False),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0)
            .with_constraints(
                {"requests": [req0, req1_sub_req0], "matchAttribute": version_attribute}
            )
            .with_requests(
                device_request(req0, class_a, 1).with_selectors(
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0',
                                driver_a,
                            )
                        }
                    }
                ),
                request_with_prioritized_list(
                    req1,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("1Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {"memory": "8Gi"}, {"driverVersion": {"version": "1.0.0"}}),
            ),
            slice_with_devices(
                slice2,
                node1,
                pool2,
                driver_a,
                device(device2, {"memory": "2Gi"}, {"driverVersion": {"version": "2.0.0"}}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1_sub_req1, driver_a, pool2, device2, False),
            )
        ],
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        features={"prioritized_list": True},
        claims=[_prioritized_list_subrequests_with_allocation_mode_all_claims()],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            )
        ),
        allocated_devices=[(driver_a, pool1, device1)],
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device2, False),
            )
        ],
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1),
                request_with_prioritized_list(
                    req1,
                    sub_request(sub_req0, class_a, 0).with_allocation_mode("All"),
                    sub_request(sub_req1, class_a, 1),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1_sub_req1, driver_a, pool1, device2, False),
            )
        ],
    ),
    "prioritized-list-disabled": Case(
        features={"prioritized_list": False},
        claims=[_prioritized_list_disabled_claims()],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
        expect_error=match_error(
            contain_substring(
                "claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled"  # noqa: E501
            )
        ),
    ),
    "prioritized-list-multi-request": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req1, class_a, 1).with_selectors(
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0',
                                driver_a,
                            )
                        }
                    }
                ),
                request_with_prioritized_list(
                    req0,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node1, pool1, driver_a, device(device1, {"memory": "8Gi"}, {})
            ),
            slice_with_devices(
                slice2, node1, pool2, driver_a, device(device2, {"memory": "4Gi"}, {})
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req1, driver_a, pool1, device1, False),
                device_allocation_result(req0_sub_req1, driver_a, pool2, device2, False),
            )
        ],
    ),
    "prioritized-list-with-backtracking": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                ),
                device_request(req1, class_a, 1).with_selectors(
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.capacity["%s"].memory.compareTo(quantity("8Gi")) >= 0',
                                driver_a,
                            )
                        }
                    }
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node1, pool1, driver_a, device(device1, {"memory": "8Gi"}, {})
            ),
            slice_with_devices(
                slice2, node1, pool2, driver_a, device(device2, {"memory": "4Gi"}, {})
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool2, device2, False),
                device_allocation_result(req1, driver_a, pool1, device1, False),
            )
        ],
    ),
    "prioritized-list-too-many-in-first-subrequest": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0, sub_request(sub_req0, class_b, 500), sub_request(sub_req1, class_a, 1)
                )
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device1, False),
            )
        ],
    ),
    # A prioritized list is worth at least its smallest alternative, so the
    # pre-flight check reads that. min(20, 24) leaves the claim over the
    # limit before any device is looked at.
    "prioritized-list-minimum-sum-exceeds-claim-limit": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 20),
                request_with_prioritized_list(
                    req1, sub_request(sub_req0, class_a, 20), sub_request(sub_req1, class_a, 24)
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        expect_error=match_error(
            all_of(
                contain_substring("request " + req1), contain_substring("exceeds the claim limit")
            )
        ),
    ),
    # The oversized alternative sits behind a device already allocated for the
    # claim, which is what overflowed the per-request check. Only the pinned
    # invocation count separates pruning it from descending into it.
    "prioritized-list-overflowing-first-subrequest-is-pruned": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1),
                request_with_prioritized_list(
                    req1,
                    sub_request(sub_req0, class_a, 9223372036854775807),
                    sub_request(sub_req1, class_a, 1),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1_sub_req1, driver_a, pool1, device2, False),
            )
        ],
        expect_num_allocate_one_invocations=8,
    ),
    "partitionable-devices-single-device": Case(
        features={"partitionable_devices": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "partitionable-devices-counter-quantities-are-not-modified": Case(
        features={"partitionable_devices": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        allocated_devices=[(driver_a, pool1, device1)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "9000000000000000000"})
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"c": "10000000000000000000"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    # driverA / pool "pool-1": counterSet1 c:1, device1 consumes c:1.
    # driverB / pool "pool-1": same pool name, different driver. Its capacity and
    # consumption differ (c:2) on purpose, so that leaving *either* cache keyed by
    # pool name alone fails this case: device2 would be checked against driverA's
    # cached c:1 and wrongly rejected.
    # driver-a/pool-1 and driver-b/pool-1 are distinct pools with independent counter
    # sets, so both devices allocate. The differing capacities make this guard both
    # caches: keying availableCounters or consumedCounters by pool name alone lets
    # driver A's cache leak into driver B's pool and fails the case.
    "partitionable-devices-counter-cache-scoped-by-pool-ID": Case(
        features={"partitionable_devices": True},
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, 1)),
            claim_with_requests(claim1, None, request(req1, class_b, 1)),
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"c": "1"}),
            ),
            slice_with_devices(
                slice3,
                node1,
                resource_pool(pool1, 2),
                driver_b,
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "2"})
                ),
            ),
            slice_with_counter_sets(
                slice4,
                node1,
                resource_pool(pool1, 2),
                driver_b,
                counter_set(counter_set1, {"c": "2"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req1, driver_b, pool1, device2, False),
            ),
        ],
    ),
    # driverA / pool "pool-1": counterSet1 with c:1, device1 consumes c:1 (valid).
    # driverB / pool "pool-1": same pool name but a different counter set
    # (counterSet2 with d:1). device2 over-consumes it (d:2) and must be rejected.
    # device2 over-consumes its own counter (d:2 > d:1), so it must be rejected and
    # the allocation cannot be satisfied. If the caches are keyed by pool name,
    # device2 reuses driver A's cached counterSet1 and its own counterSet2 is never
    # compared, so it is wrongly accepted (over-allocation).
    "partitionable-devices-counter-cache-not-crossed-between-driver-schemas": Case(
        features={"partitionable_devices": True},
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, 1)),
            claim_with_requests(claim1, None, request(req1, class_b, 1)),
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"c": "1"}),
            ),
            slice_with_devices(
                slice3,
                node1,
                resource_pool(pool1, 2),
                driver_b,
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set2, {"d": "2"})
                ),
            ),
            slice_with_counter_sets(
                slice4,
                node1,
                resource_pool(pool1, 2),
                driver_b,
                counter_set(counter_set2, {"d": "1"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    # device1 is rejected by its NoSchedule taint after its counter is
    # reserved. Releasing that reservation lets the clean device2 allocate.
    "partitionable-devices-taint-releases-counter": Case(
        features={"partitionable_devices": True, "device_taints": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None)
                .with_taints(taint_no_schedule)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"c": "1"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    # device1 (red) is accepted first; the blue candidates are rejected by
    # the match-attribute constraint after their counters are reserved.
    # Releasing those reservations lets the two blue devices allocate.
    "partitionable-devices-constraint-releases-counter": Case(
        features={"partitionable_devices": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(
                    device1, None, {"stringAttribute": {"string": "red"}}
                ).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
                device(
                    device2, None, {"stringAttribute": {"string": "blue"}}
                ).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
                device(
                    device3, None, {"stringAttribute": {"string": "blue"}}
                ).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"c": "2"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
            )
        ],
    ),
    # device1 allows multiple allocations and consumes the single
    # shared counter. It is listed first, so req0 reserves its counter
    # on the first try.
    # device2 consumes no counter and is the correct choice for req0
    # once device1 has been backtracked.
    # device3 is the only device that satisfies req1 and needs the same
    # counter device1 reserved.
    # device1 allows multiple allocations and reserves the single shared
    # counter when req0 tries it first. req1 can only use device3, which needs
    # that same counter, so the search must backtrack device1. The backtracking
    # undo has to release device1's counter reservation; otherwise req0 cannot
    # fall back to device2 and req1 cannot take device3.
    "partitionable-consumable-capacity-backtrack-releases-counter": Case(
        features={"partitionable_devices": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0,
                None,
                request(
                    req0,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.attributes["%s"].kind == "shared"', driver_a
                            )
                        }
                    },
                ),
                request(
                    req1,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.attributes["%s"].kind == "counteronly"', driver_a
                            )
                        }
                    },
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, {"kind": {"string": "shared"}})
                .with_allow_multiple_allocations()
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
                device(device2, None, {"kind": {"string": "shared"}}),
                device(
                    device3, None, {"kind": {"string": "counteronly"}}
                ).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"c": "1"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
                device_allocation_result(req1, driver_a, pool1, device3, False),
            )
        ],
    ),
    # claim0 consumes all of device1's capacity first. Its request is not
    # subject to claim1's constraint, so it does not set the reference value.
    # claim1 has a match-attribute constraint. Its first (all-mode)
    # subrequest includes device1, which was capacity-sufficient when the
    # candidate list was built but is now full, so it is rejected on the
    # in-function capacity check after being added to the constraint. The
    # fallback subrequest then needs device2, whose attribute differs.
    # claim1's all-mode subReq0 adds device1 to the match constraint and is then
    # rejected because claim0 already consumed device1's capacity. Rolling back
    # that rejected candidate's constraint entry is what lets the fallback
    # subReq1 take device2; otherwise device1's leaked attribute value blocks it.
    "consumable-capacity-rejection-rolls-back-constraints": Case(
        features={"consumable_capacity": True, "prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1)
                .with_capacity_request(two)
                .with_selectors(
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.attributes["%s"].stringAttribute == "cap"', driver_a
                            )
                        }
                    }
                )
            ),
            claim(claim1)
            .with_constraints({"matchAttribute": string_attribute})
            .with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].stringAttribute == "cap"', driver_a
                                )
                            }
                        },
                    )
                    .with_allocation_mode("All")
                    .with_capacity_request(two),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].stringAttribute == "fb"', driver_a
                                )
                            }
                        },
                    ),
                )
            ),
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1, {capacity0: two}, {"stringAttribute": {"string": "cap"}}
                ).with_allow_multiple_allocations(),
                device(device2, None, {"stringAttribute": {"string": "fb"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device2, False),
            ),
        ],
    ),
    # claim0 pins device1 as the first share and reserves its single
    # shared counter.
    # claim1's req1 first tries device1 as a second share (skipping the
    # counter, since claim0 already reserved it), but the match-attribute
    # constraint with req2 forces it to backtrack onto device2. req3 then
    # shares device1 again, after req1 has already left it.
    # device1: allow-multiple, no capacity, consumes the single counter.
    # kind steers the selectors; stringAttribute steers the constraint.
    # device2: the fallback for req1, matching req2's stringAttribute.
    # device3: the only device req2 can take.
    # claim0 reserves device1's counter as the first share. claim1's req1 tries
    # device1 as a second share, skips the counter, then backtracks onto device2
    # because of the constraint with req2. Rolling back that empty-capacity share
    # must not drop device1's shared marker, because claim0's share still holds
    # the counter. req3 then shares device1 again without recharging the counter.
    "partitionable-empty-capacity-multiple-share-backtrack-keeps-counter-ownership": Case(
        features={"partitionable_devices": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0,
                None,
                request(
                    req0,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.attributes["%s"].kind == "shared"', driver_a
                            )
                        }
                    },
                ),
            ),
            claim_with_requests(
                claim1,
                [{"matchAttribute": string_attribute, "requests": [req1, req2]}],
                request(
                    req1,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.attributes["%s"].kind == "shared" || device.attributes["%s"].kind == "fallback"',  # noqa: E501
                                driver_a,
                                driver_a,
                            )
                        }
                    },
                ),
                request(
                    req2,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.attributes["%s"].kind == "gate"', driver_a
                            )
                        }
                    },
                ),
                request(
                    req3,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.attributes["%s"].kind == "shared"', driver_a
                            )
                        }
                    },
                ),
            ),
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(
                    device1,
                    None,
                    {"kind": {"string": "shared"}, "stringAttribute": {"string": "red"}},
                )
                .with_allow_multiple_allocations()
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
                device(
                    device2,
                    None,
                    {"kind": {"string": "fallback"}, "stringAttribute": {"string": "blue"}},
                ),
                device(
                    device3,
                    None,
                    {"kind": {"string": "gate"}, "stringAttribute": {"string": "blue"}},
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"c": "1"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, None),
            ),
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req1, driver_a, pool1, device2, False),
                device_allocation_result(req2, driver_a, pool1, device3, False),
                device_request_allocation_result(
                    req3, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, None),
            ),
        ],
    ),
    "partitionable-devices-prioritized-list": Case(
        features={"prioritized_list": True, "partitionable_devices": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1),
                request_with_prioritized_list(
                    req1,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("6Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "6Gi"})
                ),
                device(device3, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1_sub_req1, driver_a, pool1, device3, False),
            )
        ],
    ),
    "partitionable-devices-multiple-devices": Case(
        features={"partitionable_devices": True},
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, 1), request(req1, class_a, 1))
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "6Gi"})
                ),
                device(device3, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1, driver_a, pool1, device3, False),
            )
        ],
    ),
    "partitionable-devices-multiple-capacity-pools": Case(
        features={"prioritized_list": True, "partitionable_devices": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1),
                request_with_prioritized_list(
                    req1,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("6Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"}),
                    device_counter_consumption(counter_set2, {"cpus": "4"}),
                ),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "6Gi"}),
                    device_counter_consumption(counter_set2, {"cpus": "6"}),
                ),
                device(device3, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"}),
                    device_counter_consumption(counter_set2, {"cpus": "4"}),
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "18Gi"}),
                counter_set(counter_set2, {"cpus": "8"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1_sub_req1, driver_a, pool1, device3, False),
            )
        ],
    ),
    "partitionable-devices-multiple-counters": Case(
        features={"partitionable_devices": True},
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, 1), request(req1, class_a, 1))
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi", "cpus": "6"}),
                    device_counter_consumption(counter_set2, {"cpus": "4", "memory": "2Gi"}),
                ),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "6Gi", "cpus": "4"}),
                    device_counter_consumption(counter_set2, {"cpus": "6", "memory": "6Gi"}),
                ),
                device(device3, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi", "cpus": "4"}),
                    device_counter_consumption(counter_set2, {"cpus": "4", "memory": "4Gi"}),
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"cpus": "8", "memory": "18Gi"}),
                counter_set(counter_set2, {"cpus": "12", "memory": "18Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
                device_allocation_result(req1, driver_a, pool1, device3, False),
            )
        ],
    ),
    "partitionable-devices-multiple-pools": Case(
        features={"partitionable_devices": True},
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, 1), request(req1, class_a, 1))
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"cpus": "6", "memory": "4Gi"})
                ),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"cpus": "4", "memory": "6Gi"})
                ),
                device(device3, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"cpus": "4", "memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"cpus": "8", "memory": "18Gi"}),
            ),
            slice_with_devices(
                slice3,
                node1,
                resource_pool(pool2, 2),
                driver_a,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"cpus": "6", "memory": "4Gi"})
                ),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"cpus": "1", "memory": "7Gi"})
                ),
                device(device3, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"cpus": "1", "memory": "7Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice4,
                node1,
                resource_pool(pool2, 2),
                driver_a,
                counter_set(counter_set1, {"cpus": "8", "memory": "18Gi"}),
            ),
        ),
        allocated_devices=[
            (driver_a, pool1, device2),
            (driver_a, pool1, device3),
            (driver_a, pool2, device1),
        ],
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool2, device2, False),
                device_allocation_result(req1, driver_a, pool2, device3, False),
            )
        ],
    ),
    "partitionable-devices-unused-counters-in-counter-set": Case(
        features={"partitionable_devices": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 2))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "5Gi"})
                ),
                device(device2, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
                device(device3, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi", "unused": "1Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
            )
        ],
    ),
    "partitionable-devices-no-capacity-available": Case(
        features={"partitionable_devices": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "16Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2, node1, pool1, driver_a, counter_set(counter_set1, {"memory": "18Gi"})
            ),
        ),
        allocated_devices=[(driver_a, pool1, device2)],
        node=node(node1, region1),
        expect_results=None,
    ),
    "partitionable-devices-overallocated-capacity-pool": Case(
        features={"partitionable_devices": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "20Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2, node1, pool1, driver_a, counter_set(counter_set1, {"memory": "18Gi"})
            ),
        ),
        allocated_devices=[(driver_a, pool1, device2)],
        node=node(node1, region1),
        expect_results=None,
    ),
    "partitionable-devices-disabled-device-consumes-counters": Case(
        features={"partitionable_devices": False},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2, node1, pool1, driver_a, counter_set(counter_set1, {"memory": "18Gi"})
            ),
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "partitionable-devices-disabled-other-device-do-not-consume-counters": Case(
        features={"partitionable_devices": False},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
                device(device2, None, None),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "18Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    "partitionable-devices-disabled-per-device-node-selection": Case(
        features={"partitionable_devices": False},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node_selection_per_device,
                pool1,
                driver_a,
                device(device2, None, None).with_node_selection(node1),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        features={"partitionable_devices": True, "prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("6Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                )
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node_selection_per_device,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_node_selection(node1),
                device(device2, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "6Gi"})
                )
                .with_node_selection(node2),
            ),
            slice_with_counter_sets(
                slice2,
                node_selection_per_device,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "18Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device1, False),
            )
        ],
    ),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        features={"partitionable_devices": True, "prioritized_list": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node_selection_per_device,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_node_selection(node_label_selector(region_key, region1)),
            ),
            slice_with_counter_sets(
                slice2,
                node_selection_per_device,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "18Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": region_key, "operator": "In", "values": [region1]}
                            ]
                        }
                    ]
                },
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": Case(
        features={"partitionable_devices": True, "prioritized_list": True},
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, 3), request(req1, class_b, 3))
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node_selection_per_device,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_node_selection(node_label_selector(region_key, region1)),
                device(device2, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_node_selection(node1),
                device(device3, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_node_selection(node_selection_all),
            ),
            slice_with_counter_sets(
                slice2,
                node_selection_per_device,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "18Gi"}),
            ),
            slice_with_devices(
                slice3,
                node1,
                resource_pool(pool2, 2),
                driver_b,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set2, {"memory": "4Gi"})
                ),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set2, {"memory": "4Gi"})
                ),
                device(device3, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set2, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice4,
                node1,
                resource_pool(pool2, 2),
                driver_b,
                counter_set(counter_set2, {"memory": "12Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": field_name_key, "operator": "In", "values": [node1]}
                            ]
                        }
                    ]
                },
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
                device_allocation_result(req1, driver_b, pool2, device1, False),
                device_allocation_result(req1, driver_b, pool2, device2, False),
                device_allocation_result(req1, driver_b, pool2, device3, False),
            )
        ],
    ),
    "tainted-two-devices": Case(
        features={"device_taints": True},
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule),
                device(device2, None, None).with_taints(taint_no_execute),
            )
        ),
        node=node(node1, region1),
    ),
    "tainted-one-device-two-taints": Case(
        features={"device_taints": True},
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule, taint_no_execute),
            )
        ),
        node=node(node1, region1),
    ),
    # Only second device's taints are tolerated.
    "tainted-two-devices-tolerated": Case(
        features={"device_taints": True},
        claims=[claim_with_request(claim0, req0, class_a).with_tolerations(toleration_no_execute)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule),
                device(device2, None, None).with_taints(taint_no_execute),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(
                    req0, driver_a, pool1, device2, False, toleration_no_execute
                ),
            )
        ],
    ),
    # Only second device's taints are tolerated.
    "tainted-two-devices-prioritized-list-tolerated": Case(
        features={"device_taints": True, "prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(sub_req0, class_a, 1),
                    sub_request(sub_req1, class_a, 1, toleration_no_execute),
                )
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule),
                device(device2, None, None).with_taints(taint_no_execute),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(
                    req0_sub_req1, driver_a, pool1, device2, False, toleration_no_execute
                ),
            )
        ],
    ),
    "tainted-no-effect": Case(
        features={"device_taints": True},
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node1, pool1, driver_a, device(device1, None, None).with_taints(taint_none)
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        features={"device_taints": True},
        claims=[
            claim_with_request(claim0, req0, class_a).with_tolerations(
                toleration_no_schedule, toleration_no_execute
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule, taint_no_execute),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(
                    req0,
                    driver_a,
                    pool1,
                    device1,
                    False,
                    toleration_no_schedule,
                    toleration_no_execute,
                ),
            )
        ],
    ),
    "tainted-disabled": Case(
        features={"device_taints": False},
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule, taint_no_execute),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "tainted-prioritized-list": Case(
        features={"device_taints": True, "prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0, sub_request(sub_req0, class_b, 1), sub_request(sub_req1, class_a, 1)
                )
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule),
            )
        ),
        node=node(node1, region1),
    ),
    "tainted-prioritized-list-disabled": Case(
        features={"device_taints": False, "prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0, sub_request(sub_req0, class_b, 1), sub_request(sub_req1, class_a, 1)
                )
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device1, False),
            )
        ],
    ),
    "tainted-admin-access": Case(
        features={"device_taints": True, "admin_access": True},
        claims=_tainted_admin_access_claims(),
        allocated_devices=[(driver_a, pool1, device1), (driver_a, pool1, device2)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule),
            )
        ),
        node=node(node1, region1),
    ),
    "tainted-admin-access-disabled": Case(
        features={"device_taints": False, "admin_access": True},
        claims=_tainted_admin_access_disabled_claims(),
        allocated_devices=[(driver_a, pool1, device1), (driver_a, pool1, device2)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, True),
            )
        ],
    ),
    "tainted-all-devices-single": Case(
        features={"device_taints": True},
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule),
            )
        ),
        node=node(node1, region1),
    ),
    "tainted-all-devices-single-disabled": Case(
        features={"device_taints": False},
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_taints(taint_no_schedule),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "prioritized-list-allocation-mode-all": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(sub_req0, class_a, 0).with_allocation_mode("All"),
                    sub_request(sub_req1, class_a, 1),
                )
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            )
        ),
        allocated_devices=[(driver_a, pool1, device2)],
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device1, False),
            )
        ],
    ),
    # When using allocationMode:All, at least one device must be allocated, otherwise
    # DRA will attempt the next subRequest.
    "prioritized-list-allocation-mode-all-with-selectors": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(
                        sub_req0,
                        class_a,
                        0,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].generation == "v6"', driver_a
                                )
                            }
                        },
                    ).with_allocation_mode("All"),
                    sub_request(
                        sub_req1,
                        class_a,
                        0,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].generation == "v5"', driver_a
                                )
                            }
                        },
                    ).with_allocation_mode("All"),
                )
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"generation": {"string": "v5"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device1, False),
            )
        ],
    ),
    # All devices selected by the DeviceClass will be allocated, even if they
    # are spread across different resource pools.
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(
                        sub_req0,
                        class_a,
                        0,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].generation == "v6"', driver_a
                                )
                            }
                        },
                    ).with_allocation_mode("All"),
                    sub_request(
                        sub_req1,
                        class_a,
                        0,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].generation == "v5"', driver_a
                                )
                            }
                        },
                    ).with_allocation_mode("All"),
                )
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"generation": {"string": "v5"}}),
            ),
            slice_with_devices(
                slice2,
                node1,
                pool2,
                driver_a,
                device(device1, None, {"generation": {"string": "v5"}}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device1, False),
                device_allocation_result(req0_sub_req1, driver_a, pool2, device1, False),
            )
        ],
    ),
    # All devices selected by the DeviceClass will be allocated, even if they
    # are spread across different resource pools, as long as they are available
    # on the node.
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(
                        sub_req0,
                        class_a,
                        0,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].generation == "v6"', driver_a
                                )
                            }
                        },
                    ).with_allocation_mode("All"),
                    sub_request(
                        sub_req1,
                        class_a,
                        0,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].generation == "v5"', driver_a
                                )
                            }
                        },
                    ).with_allocation_mode("All"),
                )
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"generation": {"string": "v5"}}),
            ),
            slice_with_devices(
                slice2,
                node2,
                pool2,
                driver_a,
                device(device1, None, {"generation": {"string": "v5"}}),
                device(device2, None, {"generation": {"string": "v6"}}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device1, False),
            )
        ],
    ),
    # Only devices selected by the deviceclass will be considered
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(
                        sub_req0,
                        class_a,
                        0,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].generation == "v6"', driver_a
                                )
                            }
                        },
                    ).with_allocation_mode("All"),
                    sub_request(
                        sub_req1,
                        class_a,
                        0,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].generation == "v5"', driver_a
                                )
                            }
                        },
                    ).with_allocation_mode("All"),
                )
            )
        ],
        classes=[
            {
                "metadata": {"name": class_a},
                "spec": {
                    "selectors": [
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.driver == "%s" && device.attributes["%s"].selected',
                                    driver_a,
                                    driver_a,
                                )
                            }
                        }
                    ]
                },
            }
        ],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1, None, {"generation": {"string": "v6"}, "selected": {"bool": False}}
                ),
                device(
                    device2, None, {"generation": {"string": "v5"}, "selected": {"bool": False}}
                ),
                device(device3, None, {"generation": {"string": "v5"}, "selected": {"bool": True}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device3, False),
            )
        ],
    ),
    "max-number-devices": Case(
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, ALLOCATION_RESULTS_MAX_SIZE))
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_multiple_devices(slice1, node1, pool1, driver_a, ALLOCATION_RESULTS_MAX_SIZE)
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                *multiple_device_allocation_results(
                    req0, driver_a, pool1, ALLOCATION_RESULTS_MAX_SIZE, 0
                ),
            )
        ],
    ),
    "partitionable-devices-with-attribute-selector": Case(
        features={"partitionable_devices": True},
        claims=[
            claim_with_requests(
                claim0,
                None,
                request(req0, class_a, 2),
                request(
                    req1,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf('device.attributes["%s"].special', driver_a)
                        }
                    },
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, {"special": {"bool": True}}).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"cpu1": "1"}),
                    device_counter_consumption(counter_set2, {"mem": "10Gi"}),
                ),
                device(device2, None, {"special": {"bool": False}}).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"cpu2": "1"}),
                    device_counter_consumption(counter_set2, {"mem": "10Gi"}),
                ),
                device(device3, None, {"special": {"bool": False}}).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"cpu3": "1"}),
                    device_counter_consumption(counter_set2, {"mem": "10Gi"}),
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"cpu1": "1", "cpu2": "1", "cpu3": "1"}),
                counter_set(counter_set2, {"mem": "30Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
                device_allocation_result(req1, driver_a, pool1, device1, False),
            )
        ],
    ),
    "prioritized-list-max-allocation-limit-request": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(sub_req0, class_a, ALLOCATION_RESULTS_MAX_SIZE),
                    sub_request(sub_req1, class_a, ALLOCATION_RESULTS_MAX_SIZE // 2),
                ),
                request_with_prioritized_list(
                    req1,
                    sub_request(sub_req0, class_a, ALLOCATION_RESULTS_MAX_SIZE),
                    sub_request(sub_req1, class_a, ALLOCATION_RESULTS_MAX_SIZE // 2),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_multiple_devices(
                slice1, node1, pool1, driver_a, ALLOCATION_RESULTS_MAX_SIZE * 2
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                *[
                    *multiple_device_allocation_results(
                        req0_sub_req1, driver_a, pool1, ALLOCATION_RESULTS_MAX_SIZE // 2, 0
                    ),
                    *multiple_device_allocation_results(
                        req1_sub_req1,
                        driver_a,
                        pool1,
                        ALLOCATION_RESULTS_MAX_SIZE // 2,
                        ALLOCATION_RESULTS_MAX_SIZE // 2,
                    ),
                ],
            )
        ],
        expect_num_allocate_one_invocations=75,
    ),
    "prioritized-list-max-allocation-allocation-mode-all": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(sub_req0, class_a, 0).with_allocation_mode("All"),
                    sub_request(sub_req1, class_a, 2),
                ),
                device_request(req1, class_b, 2),
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_multiple_devices(
                slice1, node1, pool1, driver_a, ALLOCATION_RESULTS_MAX_SIZE - 1
            ),
            slice_with_multiple_devices(slice2, node1, pool2, driver_b, 2),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, "device-0", False),
                device_allocation_result(req0_sub_req1, driver_a, pool1, "device-1", False),
                device_allocation_result(req1, driver_b, pool2, "device-0", False),
                device_allocation_result(req1, driver_b, pool2, "device-1", False),
            )
        ],
        expect_num_allocate_one_invocations=42,
    ),
    "device-binding-conditions": Case(
        features={"device_binding_and_status": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_binding_conditions(
                    ["IsPrepare"], ["BindingFailed"]
                ),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device1, ["IsPrepare"], ["BindingFailed"]
                        )
                    ]
                },
                "nodeSelector": local_node_selector(node1),
            }
        ],
    ),
    "binding-conditions-multiple-devices": Case(
        features={"device_binding_and_status": True},
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, 2), request(req1, class_a, 1))
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_binding_conditions(
                    ["IsPrepare"], ["BindingFailed"]
                ),
                device(device2, None, None).with_binding_conditions(
                    ["IsPrepare2"], ["BindingFailed2"]
                ),
                device(device3, None, None).with_binding_conditions(
                    ["IsPrepare3"], ["BindingFailed3"]
                ),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device1, ["IsPrepare"], ["BindingFailed"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device2, ["IsPrepare2"], ["BindingFailed2"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            req1, driver_a, pool1, device3, ["IsPrepare3"], ["BindingFailed3"]
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(node1),
            }
        ],
    ),
    "binding-conditions-with-and-without": Case(
        features={"device_binding_and_status": True},
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, 1), request(req1, class_a, 1))
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None).with_binding_conditions(
                    ["IsPrepare"], ["BindingFailed"]
                ),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            {
                "devices": {
                    "results": [
                        device_allocation_result(req0, driver_a, pool1, device1, False),
                        device_request_allocation_result_with_binding_conditions(
                            req1, driver_a, pool1, device2, ["IsPrepare"], ["BindingFailed"]
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(node1),
            }
        ],
    ),
    "binding-conditions-without-feature-gate": Case(
        features={"device_binding_and_status": False},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_binding_conditions(
                    ["IsPrepare"], ["BindingFailed"]
                ),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "node-restriction": Case(
        features={"device_binding_and_status": True},
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node_label_selector(planet_key, planet_value_earth),
                pool1,
                driver_a,
                device(device1, None, None).with_binds_to_node(True),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions": Case(
        features={"partitionable_devices": True, "device_binding_and_status": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"]),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device1, ["IsPrepare"], ["BindingFailed"]
                        )
                    ]
                },
                "nodeSelector": local_node_selector(node1),
            }
        ],
    ),
    "partitionable-devices-with-binding-conditions-multiple": Case(
        features={"partitionable_devices": True, "device_binding_and_status": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 2))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"]),
                device(device2, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare2"], ["BindingFailed2"]),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device1, ["IsPrepare"], ["BindingFailed"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device2, ["IsPrepare2"], ["BindingFailed2"]
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(node1),
            }
        ],
    ),
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions": Case(
        features={"partitionable_devices": True, "device_binding_and_status": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 3))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "2Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"]),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "2Gi"})
                ),
                device(device3, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsReady"], ["BindingTimeout"]),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device1, ["IsPrepare"], ["BindingFailed"]
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device2, None, None
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device3, ["IsReady"], ["BindingTimeout"]
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(node1),
            }
        ],
    ),
    "partitionable-devices-with-binding-conditions-multi-slices": Case(
        features={"partitionable_devices": True, "device_binding_and_status": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 2))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice4,
                node1,
                resource_pool(pool1, 4),
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"]),
            ),
            slice_with_counter_sets(
                slice3,
                node1,
                resource_pool(pool1, 4),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
            slice_with_devices(
                slice2,
                node1,
                resource_pool(pool1, 4),
                driver_a,
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set2, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice1,
                node1,
                resource_pool(pool1, 4),
                driver_a,
                counter_set(counter_set2, {"memory": "8Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device2, None, None
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device1, ["IsPrepare"], ["BindingFailed"]
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(node1),
            }
        ],
    ),
    "partitionable-devices-with-binding-conditions-and-taints": Case(
        features={
            "partitionable_devices": True,
            "device_binding_and_status": True,
            "device_taints": True,
        },
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 2))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"])
                .with_taints({"key": "key1", "value": "value1", "effect": "NoSchedule"}),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2, node1, pool1, driver_a, counter_set(counter_set1, {"memory": "8Gi"})
            ),
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "partitionable-devices-with-binding-conditions-and-taints-tolerated": Case(
        features={
            "partitionable_devices": True,
            "device_binding_and_status": True,
            "device_taints": True,
        },
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, 2)).with_tolerations(
                toleration_no_schedule_key1
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_binding_conditions(["IsPrepare"], ["BindingFailed"])
                .with_taints({"key": "key1", "value": "value1", "effect": "NoSchedule"}),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            req0,
                            driver_a,
                            pool1,
                            device1,
                            ["IsPrepare"],
                            ["BindingFailed"],
                            toleration_no_schedule_key1,
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device2, None, None, toleration_no_schedule_key1
                        ),
                    ]
                },
                "nodeSelector": local_node_selector(node1),
            }
        ],
    ),
    # add to forcefully use experimenting allocator
    "consumable-capacity-disabled-feature": Case(
        features={"device_binding_and_status": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1).with_capacity_request(one))
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
        expect_error=match_error(
            contain_substring(
                "claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature is disabled"  # noqa: E501
            )
        ),
    ),
    # add to forcefully use experimenting allocator
    "consumable-capacity-disabled-feature-with-prioritized-list": Case(
        features={"prioritized_list": True, "device_binding_and_status": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(sub_req0, class_a, 1).with_capacity_request(one),
                    sub_request(sub_req1, class_a, 1).with_capacity_request(one),
                )
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap(slice_with_one_device(slice1, node1, pool1, driver_a)),
        node=node(node1, region1),
        expect_results=None,
        expect_error=match_error(
            contain_substring(
                "claim claim-0, subrequest subReq-0: has capacity requests, but the DRAConsumableCapacity feature is disabled"  # noqa: E501
            )
        ),
    ),
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1).with_capacity_request(one))
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity1: one}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request": Case(  # noqa: E501
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                all_device_request(req0, class_a).with_capacity_request(one)
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity1: one}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    # both share the same device; no capacity is consumed since none is defined.
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1)),
            claim(claim1).with_requests(device_request(req0, class_a, 1)),
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, None),
            ),
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, None),
            ),
        ],
    ),
    # both should get full capacity for different devices
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1)),
            claim(claim1).with_requests(device_request(req0, class_a, 1)),
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity0: one}, None).with_allow_multiple_allocations(),
                device(device2, {capacity0: one}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: one}),
            ),
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device2
                ).with_consumed_capacity(fixed_share_id, {capacity0: one}),
            ),
        ],
    ),
    # should not satisfy both
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": Case(  # noqa: E501
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1)),
            claim(claim1).with_requests(device_request(req0, class_a, 1)),
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity0: two}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one)
            ),
            claim(claim1).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one)
            ),
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity0: two}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: one}),
            ),
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: one}),
            ),
        ],
    ),
    # both requests applied the default request (two)
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        features={"consumable_capacity": True},
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, 1)),
            claim_with_requests(claim1, None, request(req0, class_a, 1)),
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: four}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            ),
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        features={"consumable_capacity": True},
        claims=[
            claim_with_requests(claim0, None, request(req0, class_a, 1)),
            claim_with_requests(claim1, None, request(req0, class_a, 1)),
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_valid_values(zero, {capacity0: one}, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: zero}),
            ),
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: zero}),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1).with_capacity_request(one))
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_valid_values(zero, {capacity0: one}, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    # both requests allocated to the same device
    # capacity must be rounded up to default minimum (two)
    # capacity must be rounded up to default minimum (two)
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one)
            ),
            claim(claim1).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one)
            ),
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: four}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            ),
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            ),
        ],
    ),
    # capacity must be rounded up with Step (3 to 2+2 = 4)
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(new_quantity(3, "BinarySI"))
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: four}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: four}),
            )
        ],
    ),
    # A capacity request above MaxInt64 cannot be rounded on the integer Step path
    # without reading it through Quantity.Value(), which wraps. The request is not
    # representable, so allocation aborts with a specific error instead of skipping.
    "consumable-capacity-range-policy-request-above-int64-rejected": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request("18446744073709551616")
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: four}),
            )
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("cannot be represented")),
    ),
    # Rounding a MaxInt64 request up to the next Step multiple passes MaxInt64 and
    # would wrap to a negative value. The rounded value is not representable, so
    # allocation aborts with a specific error instead of acting on the wrapped read.
    "consumable-capacity-range-policy-rounded-value-overflow-rejected": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request("9223372036854775807")
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: four}),
            )
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("cannot be represented")),
    ),
    # device-1 has a Step range, so a request above MaxInt64 overflows its integer
    # rounding. device-2 has no Step and could satisfy the same request by exact
    # comparison, but a not-representable request is fail-closed: allocation aborts
    # rather than skipping device-1 to allocate device-2. Aborting on the first
    # overflowing device is what stops the backtracking a user-controlled
    # out-of-range request would otherwise force.
    "consumable-capacity-range-policy-overflow-aborts-not-skip": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request("18446744073709551616")
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: four}),
                device(
                    device2, {capacity0: "36893488147419103232"}, None
                ).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("cannot be represented")),
    ),
    # The all-devices pre-scan in validateDeviceRequest validates capacity too. An
    # out-of-range request must abort there, not silently drop the overflowing
    # device from the set and allocate whatever remains. The count-mode cases above
    # exercise allocateOne; this one exercises the AllocationModeAll pre-scan.
    "consumable-capacity-range-policy-allocation-mode-all-overflow-aborts": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                all_device_request(req0, class_a).with_capacity_request("18446744073709551616")
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: four}),
            )
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("cannot be represented")),
    ),
    # A stored request or slice from before stricter validation could carry a
    # negative capacity, which admission does not re-check on existing objects. A
    # negative value must abort rather than record negative consumed capacity and
    # over-allocate the device.
    "consumable-capacity-negative-request-aborts": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request("-5")
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity0: "10"}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("negative")),
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(new_quantity(2, "BinarySI"))
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_valid_values(one, {capacity0: four}, [two]),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            )
        ],
    ),
    # capacity value must be explicitly added
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(new_quantity(2, "BinarySI"))
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_valid_values(one, {capacity0: three}, [three]),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: three}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one)
            ),
            claim(claim1).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(two)
            ),
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: two}),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    # default max requestPolicy is 4, should not allocate even though 6 < 10
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(new_quantity(6, "BinarySI"))
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: new_quantity(10, "BinarySI")}),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1).with_capacity_request(two))
        ],
        allocated_capacity={(driver_a, pool1, device1): {capacity0: two}},
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: four}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1).with_capacity_request(two))
        ],
        allocated_capacity={(driver_a, pool1, device1): {capacity0: two}},
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: two}),
                device(device2, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: two}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device2
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            )
        ],
    ),
    # 2 requests with two per each
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0)
            .with_constraints({"matchAttribute": string_attribute})
            .with_requests(
                device_request(req0, class_a, 1).with_capacity_request(two),
                device_request(req1, class_a, 1).with_capacity_request(two),
            ),
            claim(claim1).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(two)
            ),
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device2, None, {"stringAttribute": {"string": "stringAttributeValue1"}})
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: two}),
                device(device1, None, {"stringAttribute": {"string": "stringAttributeValue2"}})
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: four}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
                device_request_allocation_result(
                    req1, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            ),
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device2
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            ),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        features={"consumable_capacity": True, "prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(sub_req0, class_a, 1).with_capacity_request(four),
                    sub_request(sub_req1, class_a, 1).with_capacity_request(two),
                    sub_request(sub_req1, class_a, 1),
                )
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: two}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0_sub_req1, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1).with_capacity_request(two))
        ],
        allocated_capacity={(driver_a, pool1, device1): {capacity0: two}},
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: two}),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    # only match device is allocated
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                all_device_request(req0, class_a).with_capacity_request(two)
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity0: two}, None).with_allow_multiple_allocations(),
                device(device2, None, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            )
        ],
    ),
    # only match device is allocated
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity": Case(  # noqa: E501
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                all_device_request(req0, class_a).with_capacity_request(two)
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity0: two}, None).with_allow_multiple_allocations(),
                device(device2, {capacity0: one}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one),
                all_device_request(req1, class_a).with_capacity_request(one),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity0: two}, None).with_allow_multiple_allocations(),
                device(device2, {capacity0: one}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: one}),
                device_request_allocation_result(
                    req1, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: one}),
                device_request_allocation_result(
                    req1, driver_a, pool1, device2
                ).with_consumed_capacity(fixed_share_id, {capacity0: one}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        features={"consumable_capacity": True},
        allocated_capacity={(driver_a, pool1, device1): {capacity0: one}},
        claims=[
            claim(claim0).with_requests(
                all_device_request(req0, class_a).with_capacity_request(one)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity0: two}, None).with_allow_multiple_allocations(),
                device(device2, {capacity0: one}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: one}),
                device_request_allocation_result(
                    req0, driver_a, pool1, device2
                ).with_consumed_capacity(fixed_share_id, {capacity0: one}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": Case(  # noqa: E501
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one),
                all_device_request(req1, class_a).with_capacity_request(one),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity0: one}, None).with_allow_multiple_allocations(),
                device(device2, {capacity0: one}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    # device-1 capacity-exhausted but still matches; All fails, not device-2 only
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": Case(
        features={"consumable_capacity": True},
        allocated_capacity={(driver_a, pool1, device1): {capacity0: one}},
        claims=[
            claim(claim0).with_requests(
                all_device_request(req0, class_a).with_capacity_request(one)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity0: one}, None).with_allow_multiple_allocations(),
                device(device2, {capacity0: one}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1).with_capacity_request(one))
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, False)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node1, pool1, driver_a, device(device1, {capacity0: one}, None)
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one)
            ),
            claim(claim1).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one)
            ),
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, False)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_capacity_request_policy_range({capacity0: two}),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "consumable-capacity-requests-are-not-modified": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(two),
                device_request(req1, class_a, 1).with_capacity_request("1000000000000000000000"),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1,
                    {
                        capacity0: {
                            "value": "1000000000000000000002",
                            "requestPolicy": {
                                "default": "1000000000000000000000",
                                "validRange": {"min": two},
                            },
                        }
                    },
                    None,
                ).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
                device_request_allocation_result(
                    req1, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: "1000000000000000000000"}),
            )
        ],
    ),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1).with_capacity_request(one))
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, False)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, {capacity0: one}, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": Case(  # noqa: E501
        features={"consumable_capacity": True},
        allocated_devices=[(driver_a, pool1, device1)],
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1).with_capacity_request(one))
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: two}),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable": Case(  # noqa: E501
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(device_request(req0, class_a, 1).with_capacity_request(one))
        ],
        allocated_capacity={(driver_a, pool1, device1): {capacity0: one}},
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_capacity_request_policy_range({capacity0: two}),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "allow-multiple-allocations-with-partitionable-device": Case(
        features={
            "prioritized_list": True,
            "partitionable_devices": True,
            "consumable_capacity": True,
        },
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1),
                request_with_prioritized_list(
                    req1,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("6Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("4Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                ),
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_allow_multiple_allocations(),
                device(device2, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "6Gi"})
                )
                .with_allow_multiple_allocations(),
                device(device3, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "4Gi"})
                )
                .with_allow_multiple_allocations(),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {"memory": "4Gi"}),
                device_request_allocation_result(
                    req1_sub_req1, driver_a, pool1, device3
                ).with_consumed_capacity(fixed_share_id, {"memory": "4Gi"}),
            )
        ],
    ),
    "allow-multiple-allocations-with-shared-device-counter-cross-cycle": Case(
        features={"partitionable_devices": True, "consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1)
                .with_capacity_request(one)
                .with_selectors(
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.attributes["%s"].mode == "b"', driver_a
                            )
                        }
                    }
                )
            )
        ],
        allocated_shared_device_ids={(*(driver_a, pool1, device1), fixed_share_id)},
        allocated_capacity={(driver_a, pool1, device1): {capacity0: one}},
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, {"mode": {"string": "a"}})
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {capacity0: one})
                )
                .with_allow_multiple_allocations(),
                device(device2, from_counters, {"mode": {"string": "b"}})
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {capacity0: one})
                )
                .with_allow_multiple_allocations(),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: one}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    # device1 already has a persisted shared allocation. It is represented
    # only by a share ID, with no AggregatedCapacity entry.
    "partitionable-consumable-capacity-shared-device-counter-not-recharged": Case(
        features={"partitionable_devices": True, "consumable_capacity": True},
        allocated_shared_device_ids={(*(driver_a, pool1, device1), fixed_share_id)},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"c": "1"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"c": "1"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, None),
            )
        ],
    ),
    # This test case combines integration of PrioritizedList, PartitionableDevices, and ConsumableCapacity features.  # noqa: E501
    # There are two basic requests (req0 and req2), requesting 1 and 2 units of capacity0, respectively.  # noqa: E501
    # In addition, there is one request (req1) with a prioritized list.
    # The prioritized request prefers devices with capacity0 >= 4 over those with capacity0 >= 2.
    # There three device option consuming counters from the PartitionableDevices's CounterSet.
    # All devices can be allocated multiple times with `allowMultipleAllocations=true`.
    # CounterSet (4, 8)
    #   device1, device2, and device3 consume (2,4), (4,4), and (2,4) for (capacity0, capacity1) respectively.  # noqa: E501
    #   i.e., only two options are valid those are [device1, device3] or [device2].
    # Capacity.RequestPolicy of ConsumableCapacity forces the capacity1 consuming with range policy (min,step,max)=(2,2,4).  # noqa: E501
    # Expected results:
    #   - [req0] The scheduler should be able to allocate device1 to req0.
    #     1 unit of capacity0 is consumed according to the requested capacity, and 2 units of capacity1 are consumed according to the RequestPolicy.  # noqa: E501
    #   - [req2] device1 does not have enough capacity0 remaining for req2, which requests 2 units (only 1 unit remains).  # noqa: E501
    #     The scheduler must also skip device2 due to the CounterSet constraint.
    #     Therefore, device3 is allocated to req2, providing 2 units of capacity0 and 2 units of capacity1.  # noqa: E501
    #   - [req1] The first prioritized subrequest of req1 cannot find a device because device2 cannot be selected.  # noqa: E501
    #     The second prioritized subrequest is then chosen and consumes the remaining 1 unit of capacity0 on device1.  # noqa: E501
    #     Consequently, device1 is allocated to subreq1 of req1 with 1 unit of capacity0 and 2 units of capacity1.  # noqa: E501
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools": Case(
        features={
            "prioritized_list": True,
            "partitionable_devices": True,
            "consumable_capacity": True,
        },
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one),
                device_request(req2, class_a, 1).with_capacity_request(two),
                request_with_prioritized_list(
                    req1,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"]["%s"].compareTo(quantity("4")) >= 0',
                                    driver_a,
                                    capacity0,
                                )
                            }
                        },
                    ).with_capacity_request(one),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"]["%s"].compareTo(quantity("2")) >= 0',
                                    driver_a,
                                    capacity0,
                                )
                            }
                        },
                    ).with_capacity_request(one),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {capacity0: two}),
                    device_counter_consumption(counter_set2, {capacity1: four}),
                )
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity1: four}),
                device(device2, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {capacity0: four}),
                    device_counter_consumption(counter_set2, {capacity1: four}),
                )
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity1: four}),
                device(device3, from_counters, None)
                .with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {capacity0: two}),
                    device_counter_consumption(counter_set2, {capacity1: four}),
                )
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity1: four}),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {capacity0: four}),
                counter_set(counter_set2, {capacity1: "8"}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: one, capacity1: two}),
                device_request_allocation_result(
                    req2, driver_a, pool1, device3
                ).with_consumed_capacity(fixed_share_id, {capacity0: two, capacity1: two}),
                device_request_allocation_result(
                    req1_sub_req1, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: one, capacity1: two}),
            )
        ],
    ),
    "with-distinct-constraints": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0)
            .with_constraints(
                {"distinctAttribute": bool_attribute, "requests": [req0, req1]},
                {"distinctAttribute": version_attribute, "requests": [req0, req1, req2]},
                {"distinctAttribute": int_attribute, "requests": [req0, req1, req2, req3]},
            )
            .with_requests(
                device_request(req0, class_a, 1),
                device_request(req1, class_a, 1),
                device_request(req2, class_a, 1),
                device_request(req3, class_a, 1),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1,
                    None,
                    {
                        "driverVersion": {"version": "1.0.0"},
                        "numa": {"int": 0},
                        "boolAttribute": {"bool": True},
                    },
                ).with_allow_multiple_allocations(),
                device(
                    device2,
                    None,
                    {
                        "driverVersion": {"version": "1.0.1"},
                        "numa": {"int": 1},
                        "boolAttribute": {"bool": False},
                    },
                ).with_allow_multiple_allocations(),
                device(
                    device3,
                    None,
                    {
                        "driverVersion": {"version": "1.0.2"},
                        "numa": {"int": 2},
                        "boolAttribute": {"bool": True},
                    },
                ).with_allow_multiple_allocations(),
                device(
                    device4,
                    None,
                    {
                        "driverVersion": {"version": "1.0.0"},
                        "numa": {"int": 3},
                        "boolAttribute": {"bool": True},
                    },
                ).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, None),
                device_request_allocation_result(
                    req1, driver_a, pool1, device2
                ).with_consumed_capacity(fixed_share_id, None),
                device_request_allocation_result(
                    req2, driver_a, pool1, device3
                ).with_consumed_capacity(fixed_share_id, None),
                device_request_allocation_result(
                    req3, driver_a, pool1, device4
                ).with_consumed_capacity(fixed_share_id, None),
            )
        ],
    ),
    # req0 asks for 3 devices under a DistinctAttribute(stringAttribute)
    # constraint. Three devices exist with stringAttribute values
    # value1, value2, value1 -- only two distinct values.
    # Expected results:
    #   - [req0] No allocation. Satisfying req0 requires 3 devices with
    #     distinct stringAttribute values, but device1 and device3 both
    #     have "value1", so no set of 3 distinct-valued devices exists.
    "distinct-constraint-single-request-count-3-not-distinct": Case(
        features={"consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": string_attribute}], request(req0, class_a, 3)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"string": "value2"}}),
                device(device3, None, {"stringAttribute": {"string": "value1"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    # req0 asks for 3 devices under a DistinctAttribute(stringAttribute)
    # constraint. Three devices exist with distinct values
    # value1, value2, value3.
    # Expected results:
    #   - [req0] All three devices are allocated: their stringAttribute
    #     values (value1, value2, value3) are pairwise distinct, so the
    #     constraint holds.
    "distinct-constraint-single-request-count-3-all-distinct": Case(
        features={"consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": string_attribute}], request(req0, class_a, 3)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"string": "value2"}}),
                device(device3, None, {"stringAttribute": {"string": "value3"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
            )
        ],
    ),
    # req0 asks for 2 devices and req1 for 1 device; a single
    # DistinctAttribute(stringAttribute) constraint covers both requests,
    # so all 3 allocated devices must be distinct. Three devices exist
    # with values value1, value2, value1 -- only two distinct values.
    # Expected results:
    #   - No allocation. The constraint spans req0 and req1, so the 3
    #     devices across both requests must be pairwise distinct. Because
    #     device1 and device3 share "value1", 3 distinct-valued devices
    #     cannot be chosen.
    "distinct-constraint-two-requests-with-count-not-distinct": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0)
            .with_constraints({"distinctAttribute": string_attribute, "requests": [req0, req1]})
            .with_requests(device_request(req0, class_a, 2), device_request(req1, class_a, 1))
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"string": "value2"}}),
                device(device3, None, {"stringAttribute": {"string": "value1"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0)
            .with_constraints({"distinctAttribute": bool_attribute, "requests": [req0]})
            .with_requests(device_request(req0, class_a, 1))
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "with-distinct-constraints-unknown-type-attribute": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0)
            .with_constraints({"distinctAttribute": bool_attribute, "requests": [req0]})
            .with_requests(device_request(req0, class_a, 1))
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"boolAttribute": {}}).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
        expect_error=match_error(contain_substring("unsupported attribute value")),
    ),
    # There are three requests, all preferring the boolAttribute.
    # However, the DeviceConstraint applies only to the first two requests.
    # Because the constraint applies only to req0 and req1,
    # subreq0 cannot satisfy req1, so device2 (subreq1) is allocated instead.
    # However, req2 has no such constraint and can use device1 (subreq0).
    "with-distinct-constraints-with-subrequests": Case(
        features={"consumable_capacity": True, "prioritized_list": True},
        claims=[
            claim(claim0)
            .with_constraints({"distinctAttribute": bool_attribute, "requests": [req0, req1]})
            .with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].boolAttribute', driver_a
                                )
                            }
                        },
                    ),
                    sub_request(sub_req1, class_a, 1),
                ),
                request_with_prioritized_list(
                    req1,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].boolAttribute', driver_a
                                )
                            }
                        },
                    ),
                    sub_request(sub_req1, class_a, 1),
                ),
                request_with_prioritized_list(
                    req2,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].boolAttribute', driver_a
                                )
                            }
                        },
                    ),
                    sub_request(sub_req1, class_a, 1),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1, None, {"boolAttribute": {"bool": True}}
                ).with_allow_multiple_allocations(),
                device(
                    device2, None, {"boolAttribute": {"bool": False}}
                ).with_allow_multiple_allocations(),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0_sub_req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, None),
                device_request_allocation_result(
                    req1_sub_req1, driver_a, pool1, device2
                ).with_consumed_capacity(fixed_share_id, None),
                device_request_allocation_result(
                    req2_sub_req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, None),
            )
        ],
    ),
    "distinct-constraint-single-request-multiple-devices-attribute-not-set": Case(
        features={"consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": int_attribute}], request(req0, class_a, 3)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
                device(device3, None, None),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "distinct-constraint-single-request-not-enough-distinct-values": Case(
        features={"consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": int_attribute}], request(req0, class_a, 3)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"numa": {"int": 1}}),
                device(device2, None, {"numa": {"int": 2}}),
                device(device3, None, {"numa": {"int": 2}}),
                device(device4, None, {"numa": {"int": 2}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "distinct-constraint-single-request-multiple-devices-attribute-set": Case(
        features={"consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": int_attribute}], request(req0, class_a, 3)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"numa": {"int": 1}}),
                device(device2, None, {"numa": {"int": 2}}),
                device(device3, None, {"numa": {"int": 1}}),
                device(device4, None, {"numa": {"int": 3}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
                device_allocation_result(req0, driver_a, pool1, device4, False),
            )
        ],
    ),
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0)
            .with_constraints({"distinctAttribute": string_attribute})
            .with_requests(
                device_request(req0, class_a, 1).with_capacity_request(one),
                device_request(req1, class_a, 1).with_capacity_request(one),
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "stringAttributeValue"}})
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: two}),
            )
        ),
        node=node(node1, region1),
        expect_results=[],
    ),
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0)
            .with_constraints({"distinctAttribute": string_attribute})
            .with_requests(
                device_request(req0, class_a, 1).with_capacity_request(two),
                device_request(req1, class_a, 1).with_capacity_request(two),
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "stringAttributeValue1"}})
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: four}),
            ),
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device2, None, {"stringAttribute": {"string": "stringAttributeValue2"}})
                .with_allow_multiple_allocations()
                .with_capacity_request_policy_range({capacity0: four}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
                device_request_allocation_result(
                    req1, driver_a, pool1, device2
                ).with_consumed_capacity(fixed_share_id, {capacity0: two}),
            )
        ],
    ),
    # Test cases for DRAFractionalCapacityRange feature
    # FractionalCapacityRange is off: step arithmetic uses Value(), which rounds
    # sub-integer quantities up to 1.  With min=1, step=1, request=1:
    # added=0, n=0 → consumed = min + step*0 = 1 (DecimalSI, from step's format).
    # FractionalCapacityRange intentionally not set
    # Integer path: Value() of 200m and 100m both round up to 1,
    # so min=1, step=1, added=0 → result = NewQuantity(1, DecimalSI).
    "consumable-capacity-fractional-range-gate-disabled": Case(
        features={"consumable_capacity": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(point_two)
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_fractional_capacity_request_policy_range({capacity0: one}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: new_quantity(1, "DecimalSI")}),
            )
        ],
    ),
    # FractionalCapacityRange on: 250m is between min=200m and next step=300m,
    # so it is rounded up to 300m (milli-arithmetic: (250-200)/100 rounds up to 1 step).
    # Milli path: (250m - 200m) / 100m = 0.5 → ceil → 1 step → 200m + 100m = 300m.
    "consumable-capacity-fractional-range-gate-enabled-round-up": Case(
        features={"consumable_capacity": True, "fractional_capacity_range": True},
        claims=[
            claim(claim0).with_requests(
                device_request(req0, class_a, 1).with_capacity_request(point_two_five)
            )
        ],
        classes=[class_with_allow_multiple_allocations(class_a, driver_a, True)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None)
                .with_allow_multiple_allocations()
                .with_fractional_capacity_request_policy_range({capacity0: one}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_request_allocation_result(
                    req0, driver_a, pool1, device1
                ).with_consumed_capacity(fixed_share_id, {capacity0: point_three}),
            )
        ],
    ),
    # Test cases for DRAListTypeAttributes features (matchAttributes/distinctAttributes)
    "list-attributes-match-constaint-scalar-string-values": Case(
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"string": "value1"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    "list-attributes-match-constaint-list-of-string-values-with-common-elements": Case(
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1, None, {"stringAttribute": {"strings": ["value1", "value2", "value3"]}}
                ),
                device(
                    device2, None, {"stringAttribute": {"strings": ["value2", "value3", "value4"]}}
                ),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    "list-attributes-match-constaint-list-of-string-values-with-partially-common-elements": Case(
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": string_attribute}], request(req0, class_a, 3)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"strings": ["value1", "value2"]}}),
                device(device2, None, {"stringAttribute": {"strings": ["value2", "value3"]}}),
                device(device3, None, {"stringAttribute": {"strings": ["value3", "value1"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "list-attributes-match-constraint-backtrack-needs-intersection-restore": Case(
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": string_attribute}], request(req0, class_a, 3)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"strings": ["value1", "value2"]}}),
                device(device2, None, {"stringAttribute": {"strings": ["value1"]}}),
                device(device3, None, {"stringAttribute": {"strings": ["value2"]}}),
                device(device4, None, {"stringAttribute": {"strings": ["value2"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
                device_allocation_result(req0, driver_a, pool1, device4, False),
            )
        ],
    ),
    "list-attributes-match-constaint-list-of-string-values-without-common-elements": Case(
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0,
                [{"matchAttribute": string_attribute}],
                request(req0, class_a, 1),
                request(req0, class_a, 1),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"strings": ["value1", "value2"]}}),
                device(device2, None, {"stringAttribute": {"strings": ["value3", "value4"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-common-elements": Case(  # noqa: E501
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"strings": ["value1", "value2"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-partially-common-elements": Case(  # noqa: E501
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": string_attribute}], request(req0, class_a, 3)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"strings": ["value1", "value2"]}}),
                device(device3, None, {"stringAttribute": {"strings": ["value2", "value3"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-without-common-elements": Case(  # noqa: E501
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"strings": ["value2", "value3"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "list-attributes-match-constaint-list-of-int-values-with-common-elements": Case(
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": int_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"numa": {"ints": [0, 1, 2]}}),
                device(device2, None, {"numa": {"ints": [1, 2, 3]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    # KEP-6072: standardized numaNode attribute, list form. Two devices whose
    # numaNode lists share an element (physical node + same-socket equidistant
    # nodes) are co-placed by matchAttribute set intersection.
    "numanode-matchattribute-overlapping-lists-are-co-placed": Case(
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": numa_node_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"resource.kubernetes.io/numaNode": {"ints": [4]}}),
                device(device2, None, {"resource.kubernetes.io/numaNode": {"ints": [4, 5, 6, 7]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    # KEP-6072: numaNode lists with no common element (different NUMA domains)
    # cannot satisfy matchAttribute, so no allocation is made.
    "numanode-matchattribute-disjoint-lists-are-not-allocated": Case(
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": numa_node_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"resource.kubernetes.io/numaNode": {"ints": [0]}}),
                device(device2, None, {"resource.kubernetes.io/numaNode": {"ints": [4, 5, 6, 7]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "list-attributes-match-constaint-list-of-bool-values-with-common-elements": Case(
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": bool_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"boolAttribute": {"bools": [True, False]}}),
                device(device2, None, {"boolAttribute": {"bools": [True]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    "list-attributes-match-constaint-list-of-version-values-with-common-elements": Case(
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": version_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"driverVersion": {"versions": ["1.0.0", "1.1.0", "2.0.0"]}}),
                device(device2, None, {"driverVersion": {"versions": ["1.1.0", "2.0.0", "2.1.0"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    "list-attributes-match-constaint-with-empty-or-unknown-type": Case(
        features={"list_type_attributes": True},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {}}),
                device(device2, None, {"stringAttribute": {"strings": []}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
        expect_error=match_error(contain_substring("unsupported attribute value")),
    ),
    "list-attributes-disabled-match-constraint-with-lists": Case(
        features={"list_type_attributes": False},
        claims=[
            claim_with_requests(
                claim0, [{"matchAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1, None, {"stringAttribute": {"strings": ["value1", "value2", "value3"]}}
                ),
                device(
                    device2, None, {"stringAttribute": {"strings": ["value2", "value3", "value4"]}}
                ),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "list-attributes-distinct-constraint-scalar-string-values-all-distinct": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"string": "value2"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    "list-attributes-distinct-constraint-scalar-string-values-not-distinct": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"string": "value1"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    # Same scenario as distinct-constraint-single-request-count-3-not-distinct
    # but with the ListTypeAttributes feature enabled: req0 asks for 3
    # devices under a DistinctAttribute constraint, and the 3 devices carry
    # values value1, value2, value1 -- only two distinct values.
    # Expected results:
    #   - [req0] No allocation. device1 and device3 both have "value1",
    #     so 3 devices with distinct stringAttribute values cannot be found.
    "list-attributes-distinct-constraint-single-request-count-3-not-distinct": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": string_attribute}], request(req0, class_a, 3)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"string": "value2"}}),
                device(device3, None, {"stringAttribute": {"string": "value1"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    # Same scenario as distinct-constraint-single-request-count-3-all-distinct
    # but with the ListTypeAttributes feature enabled: req0 asks for 3
    # devices under a DistinctAttribute constraint, and the 3 devices carry
    # distinct values value1, value2, value3.
    # Expected results:
    #   - [req0] All three devices are allocated: their stringAttribute
    #     values (value1, value2, value3) are pairwise distinct.
    "list-attributes-distinct-constraint-single-request-count-3-all-distinct": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": string_attribute}], request(req0, class_a, 3)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"string": "value2"}}),
                device(device3, None, {"stringAttribute": {"string": "value3"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
            )
        ],
    ),
    "list-attributes-distinct-constraint-list-of-string-values-all-distinct": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"strings": ["value1", "value2"]}}),
                device(device2, None, {"stringAttribute": {"strings": ["value2", "value3"]}}),
                device(device3, None, {"stringAttribute": {"strings": ["value3", "value4"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
            )
        ],
    ),
    "list-attributes-distinct-constraint-list-of-string-values-with-common-elements": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1, None, {"stringAttribute": {"strings": ["value1", "value2", "value3"]}}
                ),
                device(
                    device2, None, {"stringAttribute": {"strings": ["value2", "value4", "value5"]}}
                ),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "list-attributes-distinct-constraint-mixed-scalar-and-list-all-distinct": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"strings": ["value1", "value2"]}}),
                device(device3, None, {"stringAttribute": {"strings": ["value2", "value3"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
            )
        ],
    ),
    "list-attributes-distinct-constraint-mixed-scalar-and-list-with-common-elements": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"stringAttribute": {"string": "value1"}}),
                device(device2, None, {"stringAttribute": {"strings": ["value1", "value2"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "list-attributes-distinct-constraint-list-of-int-values-all-distinct": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": int_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"numa": {"ints": [0, 1]}}),
                device(device2, None, {"numa": {"ints": [1, 2]}}),
                device(device3, None, {"numa": {"ints": [2, 3]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
            )
        ],
    ),
    "list-attributes-distinct-constraint-list-of-bool-values-all-distinct": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": bool_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"boolAttribute": {"bools": [True]}}),
                device(device2, None, {"boolAttribute": {"bools": [True, False]}}),
                device(device3, None, {"boolAttribute": {"bools": [False]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
            )
        ],
    ),
    "list-attributes-distinct-constraint-list-of-version-values-all-distinct": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": version_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"driverVersion": {"versions": ["1.0.0", "1.1.0"]}}),
                device(device2, None, {"driverVersion": {"versions": ["1.1.0", "2.0.0"]}}),
                device(device3, None, {"driverVersion": {"versions": ["2.0.0", "2.1.0"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device3, False),
            )
        ],
    ),
    "list-attributes-distinct-constaint-with-empty-or-unknown-type": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": version_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"driverVersion": {"versions": []}}),
                device(device2, None, {"driverVersion": {"versions": None}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
        expect_error=match_error(contain_substring("unsupported attribute value")),
    ),
    "list-attributes-disabled-distinct-constraint-with-lists": Case(
        features={"list_type_attributes": False, "consumable_capacity": True},
        claims=[
            claim_with_requests(
                claim0, [{"distinctAttribute": string_attribute}], request(req0, class_a, 2)
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1, None, {"stringAttribute": {"strings": ["value1", "value2", "value3"]}}
                ),
                device(
                    device2, None, {"stringAttribute": {"strings": ["value2", "value3", "value4"]}}
                ),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
    "list-attributes-distinct-constraint-backtrack-needs-remove": Case(
        features={"list_type_attributes": True, "consumable_capacity": True},
        claims=[
            claim(claim0)
            .with_constraints(
                {"requests": [req0, req1, req2], "distinctAttribute": string_attribute}
            )
            .with_requests(
                device_request(req0, class_a, 1),
                device_request(req1, class_a, 1),
                device_request(req2, class_a, 1),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(
                    device1, None, {"stringAttribute": {"strings": ["value1", "value2", "value3"]}}
                ),
                device(
                    device2, None, {"stringAttribute": {"strings": ["value3", "value4", "value5"]}}
                ),
                device(device3, None, {"stringAttribute": {"strings": ["value1", "value2"]}}),
                device(device4, None, {"stringAttribute": {"strings": ["value3", "value4"]}}),
                device(device0, None, {"stringAttribute": {"strings": ["value5", "value6"]}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device3, False),
                device_allocation_result(req1, driver_a, pool1, device4, False),
                device_allocation_result(req2, driver_a, pool1, device0, False),
            )
        ],
    ),
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                {"name": req0, "exactly": {"allocationMode": "All", "deviceClassName": class_a}},
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node1, resource_pool(pool1, 2), driver_a, device(device1, None, None)
            ),
            slice_with_devices(
                slice2, node2, resource_pool(pool1, 2), driver_a, device(device2, None, None)
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            _multi_host_resource_pool_with_stale_slice_for_current_node_slices(),
            _multi_host_resource_pool_with_stale_slice_for_current_node_slices_2(),
        ),
        node=node(node1, region1),
    ),
    # update-from-node-1-to-node-2 and vice-versa is dangerous,
    # DRA drivers should not do this: there is no guarantee that
    # the scheduler sees the change and then might allocate a
    # device for a node where it is no longer available.
    #
    # We do not have to support such a change exactly as expected
    # by these test cases if it makes the implementation too
    # expensive because of additional checks.
    #
    # The support for allocation from incomplete pools is also under
    # debate. It's currently done because without scoring it makes
    # no difference how many slices are available, as long as one
    # device can be found.
    # Node 1, generation 1.
    # Node 2, generation 2.
    # We'd like this to *not* be allocated, but the current implementation ignores
    # the updated slices. Allocating from the old pool is also what would happen
    # if the scheduler hadn't received the update yet, so DRA drivers shouldn't
    # depend on better handling of this situation.
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            _multi_host_resource_pool_complete_update_from_node_1_to_node_2_slices(),
            _multi_host_resource_pool_complete_update_from_node_1_to_node_2_slices_2(),
            _multi_host_resource_pool_complete_update_from_node_1_to_node_2_slices_3(),
            _multi_host_resource_pool_complete_update_from_node_1_to_node_2_slices_4(),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    # Node 2, generation 1.
    # Node 1, generation 2.
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            _multi_host_resource_pool_complete_update_from_node_2_to_node_1_slices(),
            _multi_host_resource_pool_complete_update_from_node_2_to_node_1_slices_2(),
            _multi_host_resource_pool_complete_update_from_node_2_to_node_1_slices_3(),
            _multi_host_resource_pool_complete_update_from_node_2_to_node_1_slices_4(),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    # Node 1, generation 1.
    # Node 2, generation 2.
    # We'd like this to *not* be allocated, but the current implementation ignores
    # the updated slices. Allocating from the old pool is also what would happen
    # if the scheduler hadn't received the update yet, so DRA drivers shouldn't
    # depend on better handling of this situation.
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            _multi_host_resource_pool_incomplete_update_from_node_1_to_node_2_slices(),
            _multi_host_resource_pool_incomplete_update_from_node_1_to_node_2_slices_2(),
            _multi_host_resource_pool_incomplete_update_from_node_1_to_node_2_slices_3(),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
            )
        ],
    ),
    # Node 2, generation 1.
    # Node 1, generation 2.
    # This does not get allocated since slice2 is incomplete.
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": Case(
        claims=[claim_with_request(claim0, req0, class_a)],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            _multi_host_resource_pool_incomplete_update_from_node_2_to_node_1_slices(),
            _multi_host_resource_pool_incomplete_update_from_node_2_to_node_1_slices_2(),
            _multi_host_resource_pool_incomplete_update_from_node_2_to_node_1_slices_3(),
        ),
        node=node(node1, region1),
    ),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": Case(
        features={"partitionable_devices": True},
        claims=[claim(claim0).with_requests(device_request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node1, resource_pool(pool1, 4), driver_a, device(device1, None, None)
            ),
            slice_with_counter_sets(
                slice2, node1, resource_pool(pool1, 4), driver_a, counter_set(counter_set1, None)
            ),
            slice_with_devices(
                slice3, node1, resource_pool(pool1, 4), driver_a, device(device2, None, None)
            ),
            slice_with_counter_sets(
                slice4, node1, resource_pool(pool1, 4), driver_a, counter_set(counter_set1, None)
            ),
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("invalid resource pools were encountered")),
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": Case(
        features={"partitionable_devices": True},
        claims=[claim(claim0).with_requests(device_request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set2, None)
                ),
            ),
            slice_with_counter_sets(
                slice2, node1, resource_pool(pool1, 2), driver_a, counter_set(counter_set1, None)
            ),
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("invalid resource pools were encountered")),
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": Case(  # noqa: E501
        features={"partitionable_devices": True},
        claims=[claim(claim0).with_requests(device_request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "8Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                counter_set(counter_set1, {"other-memory": "8Gi"}),
            ),
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("invalid resource pools were encountered")),
    ),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": Case(
        features={"partitionable_devices": True},
        claims=[claim(claim0).with_requests(device_request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "8Gi"})
                ),
            ),
            slice_with_counter_sets(
                slice2, node1, pool2, driver_a, counter_set(counter_set1, {"memory": "8Gi"})
            ),
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("invalid resource pools were encountered")),
    ),
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": Case(
        features={"partitionable_devices": True, "prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req0,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("6Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.capacity["%s"].memory.compareTo(quantity("2Gi")) >= 0',
                                    driver_a,
                                )
                            }
                        },
                    ),
                )
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_counter_sets(
                slice1,
                node1,
                resource_pool(pool1, 3),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
            slice_with_devices(
                slice2,
                node1,
                resource_pool(pool1, 3),
                driver_a,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "6Gi"})
                ),
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "2Gi"})
                ),
            ),
            slice_with_devices(
                slice3,
                node2,
                resource_pool(pool1, 3),
                driver_a,
                device(device3, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "6Gi"})
                ),
            ),
        ),
        allocated_devices=[(driver_a, pool1, device3)],
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device2, False),
            )
        ],
    ),
    "partitionable-devices-devices-consume-counter-set-in-different-nodes": Case(
        features={"partitionable_devices": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_counter_sets(
                slice1,
                node1,
                resource_pool(pool1, 3),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
            slice_with_devices(
                slice2,
                node1,
                resource_pool(pool1, 3),
                driver_a,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "6Gi"})
                ),
            ),
            slice_with_devices(
                slice3,
                node2,
                resource_pool(pool1, 3),
                driver_a,
                device(device2, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "6Gi"})
                ),
                device(device3, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "2Gi"})
                ),
            ),
        ),
        allocated_devices=[(driver_a, pool1, device1)],
        node=node(node2, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node2),
                device_allocation_result(req0, driver_a, pool1, device3, False),
            )
        ],
    ),
    "partitionable-devices-validation-error-on-non-targeting-slice": Case(
        features={"partitionable_devices": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_counter_sets(
                slice1,
                node1,
                resource_pool(pool1, 3),
                driver_a,
                counter_set(counter_set1, {"memory": "8Gi"}),
            ),
            slice_with_devices(
                slice2,
                node1,
                resource_pool(pool1, 3),
                driver_a,
                device(device1, from_counters, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set1, {"memory": "6Gi"})
                ),
            ),
            slice_with_devices(
                slice3,
                node2,
                resource_pool(pool1, 3),
                driver_a,
                device(device3, None, None).with_device_counter_consumption(
                    device_counter_consumption(counter_set2, {"memory": "6Gi"})
                ),
            ),
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("invalid resource pools were encountered")),
    ),
    "different-resourceslices-in-pool-can-target-different-nodes": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node2, resource_pool(pool1, 2), driver_a, device(device1, None, None)
            ),
            slice_with_devices(
                slice2, node1, resource_pool(pool1, 2), driver_a, device(device2, None, None)
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node1, resource_pool(pool1, 2), driver_a, device(device1, None, None)
            ),
            slice_with_devices(
                slice2, node1, resource_pool(pool1, 2), driver_a, device(device1, None, None)
            ),
            slice_with_devices(
                slice3, node1, resource_pool(pool2, 1), driver_a, device(device2, None, None)
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool2, device2, False),
            )
        ],
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node1, resource_pool(pool1, 2), driver_a, device(device1, None, None)
            ),
            slice_with_devices(
                slice2, node1, resource_pool(pool1, 2), driver_a, device(device1, None, None)
            ),
            slice_with_devices(
                slice3, node1, resource_pool(pool2, 1), driver_a, device(device2, None, None)
            ),
        ),
        allocated_devices=[(driver_a, pool2, device2)],
        node=node(node1, region1),
        expect_error=match_error(contain_substring("invalid resource pools were encountered")),
    ),
    "no-allocation-from-incomplete-pools": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 1))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node1, resource_pool(pool1, 2), driver_a, device(device1, None, None)
            )
        ),
        node=node(node1, region1),
    ),
    "check-combinations-within-single-request-single-pool-single-slice": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 5))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
                device(device3, None, None),
                device(device4, None, None),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
        expect_num_allocate_one_invocations=16,
    ),
    "check-combinations-within-single-request-single-pool-multiple-slices": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 5))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, None),
                device(device2, None, None),
            ),
            slice_with_devices(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device3, None, None),
                device(device4, None, None),
            ),
        ),
        node=node(node1, region1),
        expect_results=None,
        expect_num_allocate_one_invocations=16,
    ),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 5))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1, node1, resource_pool(pool1, 2), driver_a, device(device1, None, None)
            ),
            slice_with_devices(
                slice2, node1, resource_pool(pool1, 2), driver_a, device(device2, None, None)
            ),
            slice_with_devices(
                slice3,
                node1,
                pool2,
                driver_a,
                device(device3, None, None),
                device(device4, None, None),
            ),
        ),
        node=node(node1, region1),
        expect_results=None,
        expect_num_allocate_one_invocations=16,
    ),
    "check-combinations-within-single-request-many-pools": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 5))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(slice1, node1, pool1, driver_a, device(device1, None, None)),
            slice_with_devices(slice2, node1, pool2, driver_a, device(device2, None, None)),
            slice_with_devices(slice3, node1, pool3, driver_a, device(device3, None, None)),
            slice_with_devices(slice4, node1, pool4, driver_a, device(device4, None, None)),
        ),
        node=node(node1, region1),
        expect_results=None,
        expect_num_allocate_one_invocations=16,
    ),
    # req-1 needs two generic devices.
    # req-2 needs a specific device.
    # The order of devices is chosen such that the allocator
    # will initially pick {device1, device2} for req1. This will fail
    # because req-2 needs device1. The allocator has to
    # backtrack. The correct solution is {device2, device3} for req-1
    # and {device1} for req-2. The optimized allocator avoids
    # testing {device2, device1} for req-1 and thus finds the solution
    # faster.
    "check-combinations-with-backtracking": Case(
        claims=[
            claim_with_requests(
                claim0,
                None,
                request(req1, class_a, 2),
                request(
                    req2,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.attributes["%s"].type == "X"', driver_a
                            )
                        }
                    },
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"type": {"string": "X"}}),
                device(device2, None, {"type": {"string": "Y"}}),
                device(device3, None, {"type": {"string": "Y"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req1, driver_a, pool1, device2, False),
                device_allocation_result(req1, driver_a, pool1, device3, False),
                device_allocation_result(req2, driver_a, pool1, device1, False),
            )
        ],
        expect_num_allocate_one_invocations=12,
    ),
    # req-1 needs two generic devices.
    # req-2 needs a specific device.
    # The order of devices is chosen such that the allocator
    # will initially pick {device1, device2} for req1. This will fail
    # because req-2 needs device1. The allocator has to
    # backtrack. The correct solution is {device2, device3} for req-1
    # and {device1} for req-2. The optimized allocator avoids
    # testing {device2, device1} for req-1 and thus finds the solution
    # faster.
    # Use a binding condition here to make sure pool2 is searched after pool1 when
    # trying to allocate devices. This makes sure we see the same results every time.
    "check-combinations-with-backtracking-across-slices-and-pools": Case(
        features={"device_binding_and_status": True},
        claims=[
            claim_with_requests(
                claim0,
                None,
                request(req1, class_a, 2),
                request(
                    req2,
                    class_a,
                    1,
                    {
                        "cel": {
                            "expression": go_sprintf(
                                'device.attributes["%s"].type == "X"', driver_a
                            )
                        }
                    },
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device1, None, {"type": {"string": "X"}}),
            ),
            slice_with_devices(
                slice2,
                node1,
                resource_pool(pool1, 2),
                driver_a,
                device(device2, None, {"type": {"string": "Y"}}),
            ),
            slice_with_devices(
                slice3,
                node1,
                pool2,
                driver_a,
                device(device3, None, {"type": {"string": "Y"}}).with_binding_conditions(
                    ["IsPrepare"], []
                ),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req1, driver_a, pool1, device2, False),
                device_request_allocation_result_with_binding_conditions(
                    req1, driver_a, pool2, device3, ["IsPrepare"], []
                ),
                device_allocation_result(req2, driver_a, pool1, device1, False),
            )
        ],
        expect_num_allocate_one_invocations=12,
    ),
    # The first alternative can't be satisfied since there aren't enough devices
    # of type Y, but the allocator will try all devices before finding out.
    # The first subrequest asks for too many devices, so the second
    # have to be chosen.
    # The order of devices is chosen such that the allocator
    # will initially pick {device1, device2} for req1. This will fail
    # because req-2 needs device1. The allocator has to
    # backtrack. The correct solution is {device2, device3} for req-1
    # and {device1} for req-2. The optimized allocator avoids
    # testing {device2, device1} for req-1 and thus finds the solution
    # faster.
    "check-combinations-with-prioritized-list": Case(
        features={"prioritized_list": True},
        claims=[
            claim(claim0).with_requests(
                request_with_prioritized_list(
                    req1,
                    sub_request(
                        sub_req0,
                        class_a,
                        3,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].type == "Y"', driver_a
                                )
                            }
                        },
                    ),
                    sub_request(sub_req1, class_a, 2),
                ),
                request_with_prioritized_list(
                    req2,
                    sub_request(sub_req0, class_a, 2),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        {
                            "cel": {
                                "expression": go_sprintf(
                                    'device.attributes["%s"].type == "X"', driver_a
                                )
                            }
                        },
                    ),
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"type": {"string": "X"}}),
                device(device2, None, {"type": {"string": "Y"}}),
                device(device3, None, {"type": {"string": "Y"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req1_sub_req1, driver_a, pool1, device2, False),
                device_allocation_result(req1_sub_req1, driver_a, pool1, device3, False),
                device_allocation_result(req2_sub_req1, driver_a, pool1, device1, False),
            )
        ],
        expect_num_allocate_one_invocations=26,
    ),
    # "derived-attributes" is the primary test case. It mirrors the
    # cross-request hardware alignment example from the KEP.
    # It defines two requests and synthesizes a virtual grouping
    # key ("sharedNumaNode") across their differing
    # attribute names. The allocator must backtrack past the
    # incompatible first device to successfully co-allocate.
    "derived-attributes": Case(
        features={"derived_attributes": True},
        claims=[
            claim_with_requests(
                claim0,
                [{"requests": [req0, req1], "matchAttribute": "derived/sharedNumaNode"}],
                request_with_derived_attributes(
                    req0,
                    class_a,
                    1,
                    [
                        {
                            "name": "derived/sharedNumaNode",
                            "expression": go_sprintf('device.attributes["%s"]["numa"]', driver_a),
                        }
                    ],
                ),
                request_with_derived_attributes(
                    req1,
                    class_b,
                    1,
                    [
                        {
                            "name": "derived/sharedNumaNode",
                            "expression": go_sprintf(
                                'device.attributes["%s"]["numaNode"]', driver_b
                            ),
                        }
                    ],
                ),
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device2, None, {"numa": {"string": "numa-0"}}),
                device(device1, None, {"numa": {"string": "numa-1"}}),
            ),
            slice_with_devices(
                slice2,
                node1,
                pool2,
                driver_b,
                device(device3, None, {"numaNode": {"string": "numa-1"}}),
                device(device4, None, {"numaNode": {"string": "numa-2"}}),
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req1, driver_b, pool2, device3, False),
            )
        ],
    ),
    # "derived-attributes-with-prioritized-list" verifies that
    # the allocator correctly evaluates derived attributes that are
    # defined differently across alternatives in a prioritized list.
    # It expects the allocator to skip the first alternative (because its
    # derived attribute violates the cross-request match constraint)
    # and successfully allocate using the second alternative which
    # correctly satisfies the constraint with the other request.
    # First alternative pulls physical attribute "foo" ("A").
    # This won't match req1 which pulls "baz" ("B").
    # Second alternative pulls physical attribute "bar" ("B").
    # This matches req1.
    # Notice req1 uses classB (driverB)
    "derived-attributes-with-prioritized-list": Case(
        features={"derived_attributes": True, "prioritized_list": True},
        claims=[
            claim_with_requests(
                claim0,
                [{"requests": [req0, req1], "matchAttribute": "derived/match"}],
                request_with_prioritized_list(
                    req0,
                    sub_request(
                        sub_req0,
                        class_a,
                        1,
                        [
                            {
                                "name": "derived/match",
                                "expression": go_sprintf(
                                    'device.attributes["%s"]["foo"]', driver_a
                                ),
                            }
                        ],
                    ),
                    sub_request(
                        sub_req1,
                        class_a,
                        1,
                        [
                            {
                                "name": "derived/match",
                                "expression": go_sprintf(
                                    'device.attributes["%s"]["bar"]', driver_a
                                ),
                            }
                        ],
                    ),
                ).obj(),
                request_with_derived_attributes(
                    req1,
                    class_b,
                    1,
                    [
                        {
                            "name": "derived/match",
                            "expression": go_sprintf('device.attributes["%s"]["baz"]', driver_b),
                        }
                    ],
                ),
            )
        ],
        classes=[device_class(class_a, driver_a), device_class(class_b, driver_b)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"foo": {"string": "A"}, "bar": {"string": "B"}}),
            ),
            slice_with_devices(
                slice2, node1, pool2, driver_b, device(device2, None, {"baz": {"string": "B"}})
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0_sub_req1, driver_a, pool1, device1, False),
                device_allocation_result(req1, driver_b, pool2, device2, False),
            )
        ],
    ),
    # "derived-attributes-override" verifies that derived
    # attributes shadow/override physical attributes of the same
    # name. It also proves that this shadowing is strictly
    # request-scoped and does not leak or affect other requests
    # (which continue to fall back to physical attributes).
    # Require match on "myAttr".
    # Overrides physical attribute to "value-2".
    # Falls back to physical attribute.
    # Mismatched physical attributes.
    # req0 overridden to "value-2" -> device1. req1 uses physical "value-2" -> device2.
    "derived-attributes-override": Case(
        features={"derived_attributes": True},
        claims=[
            claim_with_requests(
                claim0,
                [{"requests": [req0, req1], "matchAttribute": "dra.example.com/myAttr"}],
                request_with_derived_attributes(
                    req0,
                    class_a,
                    1,
                    [{"name": "dra.example.com/myAttr", "expression": '"value-2"'}],
                ),
                request(req1, class_a, 1),
            )
        ],
        classes=[device_class(class_a, "dra.example.com")],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                "dra.example.com",
                device(device1, None, {"myAttr": {"string": "value-1"}}),
                device(device2, None, {"myAttr": {"string": "value-2"}}),
            )
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, "dra.example.com", pool1, device1, False),
                device_allocation_result(req1, "dra.example.com", pool1, device2, False),
            )
        ],
    ),
    # "derived-attributes-cel-missing-attribute" verifies that
    # CEL runtime evaluation errors (such as looking up a key
    # that isn't defined on a candidate device) are caught
    # immediately. The allocator aborts allocation and
    # propagates the explicit CEL error, preventing silent
    # topology matching failures.
    "derived-attributes-cel-missing-attribute": Case(
        features={"derived_attributes": True},
        claims=[
            claim_with_requests(
                claim0,
                [{"requests": [req0], "matchAttribute": "derived/missing"}],
                request_with_derived_attributes(
                    req0,
                    class_a,
                    1,
                    [
                        {
                            "name": "derived/missing",
                            "expression": go_sprintf(
                                'device.attributes["%s"]["missingAttr"]', driver_a
                            ),
                        }
                    ],
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"existingAttr": {"string": "yes"}}),
            )
        ),
        node=node(node1, region1),
        expect_error=match_error(contain_substring("no such key: missingAttr")),
    ),
    # "derived-attributes-type-mismatch" verifies that when CEL
    # dynamically evaluates to different value types for the same
    # attribute across candidate devices (e.g., string vs int),
    # the MatchAttribute constraint safely rejects the mismatch
    # rather than panicking or throwing an unhandled error.
    "derived-attributes-type-mismatch": Case(
        features={"derived_attributes": True},
        claims=[
            claim_with_requests(
                claim0,
                [{"requests": [req0], "matchAttribute": "derived/myAttr"}],
                request_with_derived_attributes(
                    req0,
                    class_a,
                    2,
                    [
                        {
                            "name": "derived/myAttr",
                            "expression": go_sprintf('device.attributes["%s"]["static"]', driver_a),
                        }
                    ],
                ),
            )
        ],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                pool1,
                driver_a,
                device(device1, None, {"static": {"string": "value"}}),
                device(device2, None, {"static": {"int": 1}}),
            )
        ),
        node=node(node1, region1),
        expect_results=None,
    ),
}


LEXICOGRAPHICAL_CASES: dict[str, Case] = {
    # pool-3 before pool-2 before pool-1 in input.
    "lexicographical-sorting-pools": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 2))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_one_device(slice1, node1, resource_pool(pool3, 1), driver_a),
            slice_with_one_device(slice2, node1, resource_pool(pool2, 1), driver_a),
            slice_with_one_device(slice3, node1, resource_pool(pool1, 1), driver_a),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool2, device1, False),
            )
        ],
    ),
    # pools with binding conditions will be considered after pools without binding conditions.
    "lexicographical-sorting-pools-with-binding-conditions": Case(
        features={"device_binding_and_status": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 2))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 1),
                driver_a,
                device(device1, None, None).with_binding_conditions(
                    ["IsPrepare"], ["BindingFailed"]
                ),
            ),
            slice_with_devices(
                slice3, node1, resource_pool(pool3, 1), driver_a, device(device3, None, None)
            ),
            slice_with_devices(
                slice2, node1, resource_pool(pool2, 1), driver_a, device(device2, None, None)
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool2, device2, False),
                device_allocation_result(req0, driver_a, pool3, device3, False),
            )
        ],
    ),
    # slice-3 before slice-2 before slice-1 in input.
    "lexicographical-sorting-slices": Case(
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 2))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice3, node1, resource_pool(pool1, 3), driver_a, device(device3, None, None)
            ),
            slice_with_devices(
                slice2, node1, resource_pool(pool1, 3), driver_a, device(device2, None, None)
            ),
            slice_with_devices(
                slice1, node1, resource_pool(pool1, 3), driver_a, device(device1, None, None)
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            allocation_result(
                local_node_selector(node1),
                device_allocation_result(req0, driver_a, pool1, device1, False),
                device_allocation_result(req0, driver_a, pool1, device2, False),
            )
        ],
    ),
    "lexicographical-sorting-slices-with-binding-conditions": Case(
        features={"device_binding_and_status": True},
        claims=[claim_with_requests(claim0, None, request(req0, class_a, 2))],
        classes=[device_class(class_a, driver_a)],
        slices=unwrap_resource_slices(
            slice_with_devices(
                slice1,
                node1,
                resource_pool(pool1, 3),
                driver_a,
                device(device1, None, None).with_binding_conditions(
                    ["IsPrepare"], ["BindingFailed"]
                ),
            ),
            slice_with_devices(
                slice3, node1, resource_pool(pool1, 3), driver_a, device(device3, None, None)
            ),
            slice_with_devices(
                slice2, node1, resource_pool(pool1, 3), driver_a, device(device2, None, None)
            ),
        ),
        node=node(node1, region1),
        expect_results=[
            {
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            req0, driver_a, pool1, device1, ["IsPrepare"], ["BindingFailed"]
                        ),
                        device_allocation_result(req0, driver_a, pool1, device2, False),
                    ]
                },
                "nodeSelector": local_node_selector(node1),
            }
        ],
    ),
}


# internal.Features.Set(): the gate behind each feature flag.
GATES = {
    "admin_access": "DRAAdminAccess",
    "compatibility_groups": "DRADeviceCompatibilityGroups",
    "consumable_capacity": "DRAConsumableCapacity",
    "derived_attributes": "DRADerivedAttributes",
    "device_taints": "DRADeviceTaints",
    "fractional_capacity_range": "DRAFractionalCapacityRange",
    "list_type_attributes": "DRAListTypeAttributes",
    "optional_node_operations": "DRAOptionalNodeOperations",
    "partitionable_devices": "DRAPartitionableDevices",
    "prioritized_list": "DRAPrioritizedList",
    "device_binding_and_status": "DRADeviceBindingAndStatus",
}
# incubating.SupportedFeatures
SUPPORTED = frozenset(
    {
        "admin_access",
        "prioritized_list",
        "partitionable_devices",
        "device_taints",
        "device_binding_and_status",
        "consumable_capacity",
        "fractional_capacity_range",
    }
)


def _structured() -> Any:
    from multisched.dra import structured

    return structured


def _allocated_state(structured: Any, case: Case) -> Any:
    capacity = {
        tuple(device_id): quantity_map(consumed)
        for device_id, consumed in (case.allocated_capacity or {}).items()
    }
    return structured.AllocatedState(
        allocated_devices={tuple(d) for d in case.allocated_devices or ()},
        allocated_shared_device_ids={tuple(s) for s in case.allocated_shared_device_ids or ()},
        aggregated_capacity=capacity,
    )


def _class_getter(classes: Sequence[Mapping[str, Any]]) -> Callable[[str], Any]:
    def get(name: str) -> Mapping[str, Any] | None:
        return next((c for c in classes if c["metadata"]["name"] == name), None)

    return get


def _run(case: Case) -> None:
    """upstream RunTestAllocator for one case."""
    missing = sorted(GATES[f] for f, on in case.features.items() if on and f not in SUPPORTED)
    if missing:
        pytest.skip(f"required feature(s) {missing} not supported by the incubating allocator")
    structured = _structured()
    classes = [plain(c) for c in case.classes or ()]
    claims = [plain(c) for c in case.claims or ()]
    slices = [plain(s) for s in case.slices or ()]
    inputs = copy.deepcopy((classes, claims, slices))
    allocator = structured.Allocator(
        structured.Features(**case.features),
        _allocated_state(structured, case),
        _class_getter(classes),
        slices,
    )
    target = plain(case.node) if case.node is not None else node(node1, region1)

    results: list[dict[str, Any]] = []
    if case.expect_error is None:
        results = allocator.allocate(target, claims)
    else:
        with pytest.raises(structured.AllocationError) as err:
            allocator.allocate(target, claims)
        assert case.expect_error.matches(str(err.value)), (str(err.value), case.expect_error)

    # Share IDs are random: replace any with the fixed one, as upstream does.
    for result in results:
        for allocation in result.get("devices", {}).get("results") or []:
            if allocation.get("shareID") is not None:
                allocation["shareID"] = fixed_share_id
    expected = list(case.expect_results or ())
    assert consist_of(results, expected), f"got {results!r}\nwant {expected!r}"
    # Objects the allocator had access to are not modified.
    assert (classes, claims, slices) == inputs


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_allocator(case: Case) -> None:
    _run(case)


@pytest.mark.parametrize(
    "case", list(LEXICOGRAPHICAL_CASES.values()), ids=list(LEXICOGRAPHICAL_CASES)
)
def test_lexicographical_allocator(case: Case) -> None:
    """lexicographical_testing.go: pools and slices are tried in name order."""
    _run(case)


@pytest.mark.parametrize("name", ["off", "timeout", "deadline", "cancel"])
def test_interrupt(name: str) -> None:
    """upstream's "interrupt" subtests: a search that a passed deadline must stop."""
    if name == "cancel":
        pytest.skip("context cancellation has no counterpart: Allocator.allocate takes a deadline")
    structured = _structured()
    classes = [device_class(class_a, driver_a)]
    claims = unwrap(claim_with_requests(claim0, None, request(req0, class_a, 6)))
    devices = [device(f"device-{i}", None, None) for i in range(1, 6)]
    slices = unwrap_resource_slices(slice_with_devices(slice1, node1, pool1, driver_a, *devices))
    allocator = structured.Allocator(
        structured.Features(), _allocated_state(structured, Case()), _class_getter(classes), slices
    )
    if name == "off":
        allocator.allocate(node(node1, region1), claims)
        return
    # context.WithTimeout(ctx, time.Nanosecond) / context.WithDeadline(ctx, time.Now())
    deadline = time.monotonic() + (1e-9 if name == "timeout" else 0.0)
    with pytest.raises(structured.AllocationError, match="context deadline exceeded"):
        allocator.allocate(node(node1, region1), claims, deadline)
