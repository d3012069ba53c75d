"""Object builders and matchers of dynamic-resource-allocation@v0.37.2's shared allocator tests.

Port of structured/internal/allocatortesting/allocator_testing.go's helpers: the same names in
snake_case (``class`` is ``device_class``, ``slice`` is ``resource_slice``), producing the API's
JSON dicts. Quantities are their JSON strings. The ``with_*`` methods of upstream's wrapper types
return modified deep copies, as upstream's do.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

Obj = dict[str, Any]

region1 = "region-1"
region2 = "region-2"
node1 = "node-1"
node2 = "node-2"
class_a = "class-a"
class_b = "class-b"
driver_a = "driver-a"
driver_b = "driver-b"
pool1 = "pool-1"
pool2 = "pool-2"
pool3 = "pool-3"
pool4 = "pool-4"
req0 = "req-0"
req1 = "req-1"
req2 = "req-2"
req3 = "req-3"
sub_req0 = "subReq-0"
sub_req1 = "subReq-1"
req0_sub_req0 = "req-0/subReq-0"
req0_sub_req1 = "req-0/subReq-1"
req1_sub_req0 = "req-1/subReq-0"
req1_sub_req1 = "req-1/subReq-1"
req2_sub_req0 = "req-2/subReq-0"
req2_sub_req1 = "req-2/subReq-1"
claim0 = "claim-0"
claim1 = "claim-1"
slice1 = "slice-1"
slice2 = "slice-2"
slice3 = "slice-3"
slice4 = "slice-4"
device0 = "device-0"
device1 = "device-1"
device2 = "device-2"
device3 = "device-3"
device4 = "device-4"
counter_set1 = "counter-set-1"
counter_set2 = "counter-set-2"
capacity0 = "capacity-0"
capacity1 = "capacity-1"

fixed_share_id = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"

zero = "0"
one = "1"
two = "2"
three = "3"
four = "4"
point_one = "100m"
point_two = "200m"
point_two_five = "250m"
point_three = "300m"

field_name_key = "metadata.name"
region_key = "region"
planet_key = "planet"
planet_value_earth = "earth"

from_counters = "fromCounters"
node_selection_all = "nodeSelectionAll"
node_selection_per_device = "nodeSelectionPerDevice"

# resourceapi.AllocationResultsMaxSize
ALLOCATION_RESULTS_MAX_SIZE = 32

# The attributes, taints and tolerations TestAllocator declares before its table.
non_existent_attribute = driver_a + "/" + "NonExistentAttribute"
bool_attribute = driver_a + "/" + "boolAttribute"
string_attribute = driver_a + "/" + "stringAttribute"
version_attribute = driver_a + "/" + "driverVersion"
int_attribute = driver_a + "/" + "numa"
numa_node_attribute = "resource.kubernetes.io/numaNode"
taint_key = "taint-key"
taint_value = "taint-value"
taint_value2 = "taint-value-2"
taint_none = {"key": taint_key, "value": taint_value, "effect": "None"}
taint_no_schedule = {"key": taint_key, "value": taint_value, "effect": "NoSchedule"}
taint_no_execute = {"key": taint_key, "value": taint_value2, "effect": "NoExecute"}
toleration_no_schedule = {"operator": "Exists", "key": taint_key, "effect": "NoSchedule"}
toleration_no_execute = {
    "operator": "Equal",
    "key": taint_key,
    "value": taint_value2,
    "effect": "NoExecute",
}
toleration_no_schedule_key1 = {"operator": "Exists", "key": "key1", "effect": "NoSchedule"}


def go_sprintf(fmt: str, *args: Any) -> str:
    """fmt.Sprintf for the %s/%v/%d verbs the table uses (bools print as Go prints them)."""
    values = tuple(("true" if a else "false") if isinstance(a, bool) else a for a in args)
    return re.sub(r"%[vd]", "%s", fmt) % values


def new_quantity(value: int, _format: str = "") -> str:
    return str(value)


def new_milli_quantity(value: int, _format: str = "") -> str:
    return f"{value}m"


def plain(obj: Any) -> Any:
    """A deep copy made of plain dicts and lists (drops the wrapper types)."""
    if isinstance(obj, Mapping):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    return obj


# -- nodes


def node(name: str, region: str) -> Obj:
    return {
        "metadata": {"name": name, "labels": {region_key: region, planet_key: planet_value_earth}},
    }


def node_with_dra_optional_node_operations(name: str, region: str) -> Obj:
    """A node declaring the DRAOptionalNodeOperations feature (devices with skipNodeOperations)."""
    out = node(name, region)
    out["status"] = {"declaredFeatures": ["DRAOptionalNodeOperations"]}
    return out


def node_label_selector(key: str, *values: str) -> Obj:
    requirement = {"key": key, "operator": "In", "values": list(values)}
    return {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}


def local_node_selector(node_name: str) -> Obj:
    """Selects one node by field (metadata.name), not by label."""
    selector = node_label_selector(field_name_key, node_name)
    term = selector["nodeSelectorTerms"][0]
    term["matchFields"] = term.pop("matchExpressions")
    return selector


# -- classes and configuration


def device_class(name: str, driver: str) -> Obj:
    """upstream ``class``: a DeviceClass selecting the driver's devices."""
    return {
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def class_with_allow_multiple_allocations(name: str, driver: str, multialloc: bool) -> Obj:
    expression = go_sprintf(
        'device.driver == "%s" && device.allowMultipleAllocations == %v', driver, multialloc
    )
    return {
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def device_configuration(driver: str, attribute: str) -> Obj:
    """Opaque parameters ``{attribute: attribute + "Value"}``."""
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def class_with_config(name: str, driver: str, attribute: str) -> Obj:
    out = device_class(name, driver)
    out["spec"]["config"] = [device_configuration(driver, attribute)]
    return out


def device_claim_config(requests: Sequence[str] | None, device_config: Obj) -> Obj:
    out: Obj = {**device_config}
    if requests:
        out = {"requests": list(requests), **out}
    return out


# -- requests and claims


def capacity_requests(quantity: str | None) -> Obj:
    return {"requests": requirements(quantity)}


def requirements(quantity: str | None) -> dict[str, str]:
    return {capacity0: quantity} if quantity is not None else {}


class DeviceRequest(dict[str, Any]):
    """upstream wrapDeviceRequest."""

    def obj(self) -> Obj:
        return plain(self)  # type: ignore[no-any-return]

    def with_capacity_request(self, quantity: str | None) -> DeviceRequest:
        out = copy.deepcopy(self)
        out["exactly"]["capacity"] = capacity_requests(quantity)
        return out

    def with_selectors(self, *selectors: Obj) -> DeviceRequest:
        out = copy.deepcopy(self)
        out["exactly"]["selectors"] = list(selectors)
        return out


class DeviceSubRequest(dict[str, Any]):
    """upstream wrapDeviceSubRequest."""

    def obj(self) -> Obj:
        return plain(self)  # type: ignore[no-any-return]

    def with_allocation_mode(self, mode: str) -> DeviceSubRequest:
        out = copy.deepcopy(self)
        out["allocationMode"] = mode
        return out

    def with_capacity_request(self, quantity: str | None) -> DeviceSubRequest:
        out = copy.deepcopy(self)
        out["capacity"] = capacity_requests(quantity)
        return out


def request(name: str, class_name: str, count: int, *selectors: Obj) -> Obj:
    exactly: Obj = {"count": count, "allocationMode": "ExactCount", "deviceClassName": class_name}
    if selectors:
        exactly["selectors"] = list(selectors)
    return {"name": name, "exactly": exactly}


def device_request(name: str, class_name: str, count: int) -> DeviceRequest:
    return DeviceRequest(request(name, class_name, count))


def all_device_request(name: str, class_name: str) -> DeviceRequest:
    return DeviceRequest(
        {"name": name, "exactly": {"allocationMode": "All", "deviceClassName": class_name}}
    )


def request_with_derived_attributes(
    name: str, class_name: str, count: int, derived: list[Obj], *selectors: Obj
) -> Obj:
    out = request(name, class_name, count, *selectors)
    out["exactly"]["derivedAttributes"] = derived
    return out


def sub_request(name: str, class_name: str, count: int, *fields: Any) -> DeviceSubRequest:
    """Fields: selectors ({"cel": ...}), tolerations (a dict with "operator" or "key"), or a
    list of derived attributes."""
    out = DeviceSubRequest(
        {
            "name": name,
            "count": count,
            "allocationMode": "ExactCount",
            "deviceClassName": class_name,
        }
    )
    for field in fields:
        if isinstance(field, list):
            out.setdefault("derivedAttributes", []).extend(field)
        elif "cel" in field:
            out.setdefault("selectors", []).append(field)
        elif "key" in field or "operator" in field:
            out.setdefault("tolerations", []).append(field)
        else:
            raise ValueError(f"unsupported field for DeviceSubRequest: {field!r}")
    return out


def request_with_prioritized_list(name: str, *sub_requests: DeviceSubRequest) -> DeviceRequest:
    return DeviceRequest({"name": name, "firstAvailable": [s.obj() for s in sub_requests]})


class ResourceClaim(dict[str, Any]):
    """upstream wrapResourceClaim."""

    def obj(self) -> Obj:
        return plain(self)  # type: ignore[no-any-return]

    def with_tolerations(self, *tolerations: Obj) -> ResourceClaim:
        out = copy.deepcopy(self)
        for req in out["spec"]["devices"].get("requests", []):
            req["exactly"].setdefault("tolerations", []).extend(tolerations)
        return out

    def with_requests(self, *requests: Obj) -> ResourceClaim:
        out = copy.deepcopy(self)
        out.setdefault("spec", {}).setdefault("devices", {})["requests"] = [
            plain(r) for r in requests
        ]
        return out

    def with_constraints(self, *constraints: Obj) -> ResourceClaim:
        out = copy.deepcopy(self)
        out.setdefault("spec", {}).setdefault("devices", {})["constraints"] = list(constraints)
        return out

    def with_configs(self, configs: list[Obj]) -> ResourceClaim:
        out = copy.deepcopy(self)
        out.setdefault("spec", {}).setdefault("devices", {})["config"] = configs
        return out


def claim_with_requests(name: str, constraints: list[Obj] | None, *requests: Obj) -> ResourceClaim:
    devices: Obj = {"requests": [plain(r) for r in requests]}
    if constraints:
        devices["constraints"] = constraints
    return ResourceClaim({"metadata": {"name": name}, "spec": {"devices": devices}})


def claim_with_request(name: str, req: str, class_name: str, *constraints: Obj) -> ResourceClaim:
    return claim_with_requests(name, list(constraints), request(req, class_name, 1))


def claim(name: str) -> ResourceClaim:
    return ResourceClaim({"metadata": {"name": name}, "spec": {"devices": {}}})


def claim_with_device_config(
    name: str, req: str, class_name: str, driver: str, attribute: str
) -> ResourceClaim:
    out = claim_with_request(name, req, class_name)
    out["spec"]["devices"]["config"] = [device_configuration(driver, attribute)]
    return out


# -- devices and slices


def to_device_capacity(capacity: Mapping[str, str] | None) -> Obj:
    return {name: {"value": quantity} for name, quantity in (capacity or {}).items()}


def to_counters(counters: Mapping[str, str] | None) -> Obj:
    return {name: {"value": quantity} for name, quantity in (counters or {}).items()}


class Device(dict[str, Any]):
    """upstream wrapDevice; ``capacity_from_counters``: capacity mirrors consumed counters."""

    capacity_from_counters = False

    def obj(self) -> Obj:
        return plain(self)  # type: ignore[no-any-return]

    def _copy(self) -> Device:
        return Device(copy.deepcopy(dict(self)))

    def with_taints(self, *taints: Obj) -> Device:
        out = self._copy()
        out.setdefault("taints", []).extend(copy.deepcopy(list(taints)))
        return out

    def with_device_counter_consumption(self, *consumption: Obj) -> Device:
        out = self._copy()
        out.setdefault("consumesCounters", []).extend(copy.deepcopy(list(consumption)))
        if self.capacity_from_counters:
            capacity: Obj = {}
            for dcc in out["consumesCounters"]:
                for name, counter in dcc["counters"].items():
                    capacity[name] = {"value": counter["value"]}
            out["capacity"] = capacity
        return out

    def with_node_selection(self, node_selection: Obj | str) -> Device:
        out = self._copy()
        if isinstance(node_selection, Mapping):
            out["nodeSelector"] = node_selection
        elif node_selection == node_selection_all:
            out["allNodes"] = True
        elif node_selection == node_selection_per_device:
            raise ValueError("nodeSelectionPerDevice is not supported for devices")
        else:
            out["nodeName"] = node_selection
        return out

    def with_binding_conditions(
        self, binding_conditions: list[str] | None, binding_failure_conditions: list[str] | None
    ) -> Device:
        out = self._copy()
        _set_or_drop(out, "bindingConditions", binding_conditions)
        _set_or_drop(out, "bindingFailureConditions", binding_failure_conditions)
        return out

    def with_binds_to_node(self, binds_to_node: bool) -> Device:
        out = self._copy()
        out["bindsToNode"] = binds_to_node
        return out

    def with_allow_multiple_allocations(self) -> Device:
        out = self._copy()
        out["allowMultipleAllocations"] = True
        return out

    def _with_policy(self, capacity: Mapping[str, str], policy: Obj) -> Device:
        out = self._copy()
        caps = out.setdefault("capacity", {})
        for name, quantity in capacity.items():
            caps[name] = {"value": quantity, "requestPolicy": copy.deepcopy(policy)}
        return out

    def with_capacity_request_policy_range(self, capacity: Mapping[str, str]) -> Device:
        """requestPolicy default 2, range 2..4 step 2."""
        policy = {"default": two, "validRange": {"min": two, "step": two, "max": four}}
        return self._with_policy(capacity, policy)

    def with_fractional_capacity_request_policy_range(self, capacity: Mapping[str, str]) -> Device:
        """requestPolicy default 200m, range 200m..1 step 100m."""
        policy = {
            "default": point_two,
            "validRange": {"min": point_two, "step": point_one, "max": one},
        }
        return self._with_policy(capacity, policy)

    def with_capacity_request_policy_valid_values(
        self,
        default_value: str,
        capacity: Mapping[str, str],
        additional_valid_values: list[str] | None,
    ) -> Device:
        """requestPolicy: default_value is the default and the smallest valid value."""
        valid_values = [default_value, *(additional_valid_values or [])]
        policy = {"default": default_value, "validValues": valid_values}
        return self._with_policy(capacity, policy)


def _set_or_drop(obj: Obj, key: str, value: Any) -> None:
    if value is None:
        obj.pop(key, None)
    else:
        obj[key] = value


def device(name: str, capacity: Any, attributes: Mapping[str, Obj] | None) -> Device:
    """capacity: {name: quantity}, {name: DeviceCapacity dict}, ``from_counters`` or None."""
    out = Device({"name": name})
    if attributes is not None:
        out["attributes"] = copy.deepcopy(dict(attributes))
    if isinstance(capacity, Mapping):
        if all(isinstance(v, str) for v in capacity.values()):
            out["capacity"] = to_device_capacity(capacity)
        else:
            out["capacity"] = copy.deepcopy(dict(capacity))
    elif capacity == from_counters:
        out.capacity_from_counters = True
    elif capacity is not None:
        raise ValueError(f"unexpected capacity value {capacity!r}")
    return out


def device_counter_consumption(counter_set: str, counters: Mapping[str, str] | None) -> Obj:
    return {"counterSet": counter_set, "counters": to_counters(counters)}


def device_counter_consumption_with_groups(
    counter_set: str, counters: Mapping[str, str], *compatibility_groups: str
) -> Obj:
    out = device_counter_consumption(counter_set, counters)
    if compatibility_groups:
        out["compatibilityGroups"] = list(compatibility_groups)
    return out


def counter_set(name: str, counters: Mapping[str, str] | None) -> Obj:
    return {"name": name, "counters": to_counters(counters)}


def resource_pool(name: str, count: int) -> Obj:
    return {"name": name, "resourceSliceCount": count, "generation": 1}


class ResourceSlice(dict[str, Any]):
    """upstream wrapResourceSliceWithDevices / wrapResourceSliceWithCounterSets."""

    def obj(self) -> Obj:
        return plain(self)  # type: ignore[no-any-return]

    def with_skip_node_operations(self, *skip: str) -> ResourceSlice:
        out = ResourceSlice(copy.deepcopy(dict(self)))
        out["spec"]["skipNodeOperations"] = list(skip)
        return out


def resource_slice(name: str, node_selection: Obj | str, pool: Obj | str, driver: str) -> Obj:
    """upstream ``slice``: node_selection is a node name, a NodeSelector, node_selection_all or
    node_selection_per_device; pool a ResourcePool or a name (one slice, generation 1)."""
    resource_pool_ = resource_pool(pool, 1) if isinstance(pool, str) else copy.deepcopy(pool)
    spec: Obj = {"driver": driver, "pool": resource_pool_}
    if isinstance(node_selection, Mapping):
        spec["nodeSelector"] = copy.deepcopy(dict(node_selection))
    elif node_selection == node_selection_all:
        spec["allNodes"] = True
    elif node_selection == node_selection_per_device:
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = node_selection
    return {"metadata": {"name": name}, "spec": spec}


def slice_with_devices(
    name: str, node_selection: Obj | str, pool: Obj | str, driver: str, *devices: Device
) -> ResourceSlice:
    out = ResourceSlice(resource_slice(name, node_selection, pool, driver))
    if devices:
        out["spec"]["devices"] = [plain(d) for d in devices]
    return out


def slice_with_no_devices(
    name: str, node_selection: Obj | str, pool: Obj | str, driver: str
) -> ResourceSlice:
    return slice_with_devices(name, node_selection, pool, driver)


def slice_with_one_device(
    name: str, node_selection: Obj | str, pool: Obj | str, driver: str
) -> ResourceSlice:
    return slice_with_devices(name, node_selection, pool, driver, device(device1, None, None))


def slice_with_multiple_devices(
    name: str, node_selection: Obj | str, pool: Obj | str, driver: str, count: int
) -> ResourceSlice:
    devices = [device(f"device-{i}", None, None) for i in range(count)]
    return slice_with_devices(name, node_selection, pool, driver, *devices)


def slice_with_counter_sets(
    name: str, node_selection: Obj | str, pool: Obj | str, driver: str, *counter_sets: Obj
) -> ResourceSlice:
    out = ResourceSlice(resource_slice(name, node_selection, pool, driver))
    if counter_sets:
        out["spec"]["sharedCounters"] = list(counter_sets)
    return out


def unwrap(*objs: Any) -> list[Obj]:
    return [plain(o) for o in objs]


def unwrap_resource_slices(*objs: Any) -> list[Obj]:
    return [plain(o) for o in objs]


# -- expected results


def device_allocation_result(
    req: str, driver: str, pool: str, device_name: str, admin_access: bool, *tolerations: Obj
) -> Obj:
    out: Obj = {"request": req, "driver": driver, "pool": pool, "device": device_name}
    if tolerations:
        out["tolerations"] = list(tolerations)
    if admin_access:
        out["adminAccess"] = True
    return out


def device_allocation_result_with_skip_node_operations(
    req: str, driver: str, pool: str, device_name: str, *skip: str
) -> Obj:
    out = device_allocation_result(req, driver, pool, device_name, False)
    if skip:
        out["skipNodeOperations"] = list(skip)
    return out


class DeviceRequestAllocationResult(dict[str, Any]):
    """upstream wrapDeviceRequestAllocationResult."""

    def obj(self) -> Obj:
        return plain(self)  # type: ignore[no-any-return]

    def with_consumed_capacity(
        self, share_id: str | None, consumed: Mapping[str, str] | None
    ) -> Obj:
        out = plain(self)
        _set_or_drop(out, "shareID", share_id)
        _set_or_drop(out, "consumedCapacity", None if consumed is None else dict(consumed))
        return out  # type: ignore[no-any-return]


def device_request_allocation_result(
    req: str, driver: str, pool: str, device_name: str
) -> DeviceRequestAllocationResult:
    return DeviceRequestAllocationResult(
        {"request": req, "driver": driver, "pool": pool, "device": device_name}
    )


def device_request_allocation_result_with_binding_conditions(
    req: str,
    driver: str,
    pool: str,
    device_name: str,
    binding_conditions: list[str] | None,
    binding_failure_conditions: list[str] | None,
    *tolerations: Obj,
) -> Obj:
    out: Obj = {"request": req, "driver": driver, "pool": pool, "device": device_name}
    _set_or_drop(out, "bindingConditions", binding_conditions)
    _set_or_drop(out, "bindingFailureConditions", binding_failure_conditions)
    if tolerations:
        out["tolerations"] = list(tolerations)
    return out


def multiple_device_allocation_results(
    req: str, driver: str, pool: str, count: int, start_index: int
) -> list[Obj]:
    return [
        device_allocation_result(req, driver, pool, f"device-{i}", False)
        for i in range(start_index, start_index + count)
    ]


def allocation_result_with_config(
    selector: Obj | None, driver: str, source: str, attribute: str, *results: Obj
) -> Obj:
    config = {"source": source, **device_configuration(driver, attribute)}
    return allocation_result_with_configs(selector, list(results), [config])


def allocation_result_with_configs(
    selector: Obj | None, results: list[Obj], configs: list[Obj]
) -> Obj:
    out: Obj = {"devices": {"results": list(results), "config": list(configs)}}
    if selector is not None:
        out["nodeSelector"] = selector
    return out


# -- matchers (gomega's, for the JSON form)

QUANTITY_MAPS = frozenset({"consumedCapacity"})


def normalize(obj: Any, key: str = "") -> Any:
    """The form two results compare in: Go's nil and empty (omitted in JSON) are the same;
    quantities compare as Go writes them (value and format, canonical)."""
    if isinstance(obj, Mapping):
        if key in QUANTITY_MAPS:
            return {k: go_quantity_text(v) for k, v in obj.items()}
        out = {}
        for k, v in obj.items():
            value = normalize(v, k)
            if value is None or value in ([], {}):
                continue
            out[k] = value
        return out
    if isinstance(obj, list | tuple):
        return [normalize(v) for v in obj]
    return obj


def consist_of(actual: Sequence[Any], expected: Sequence[Any]) -> bool:
    """gomega.ConsistOf: a one-to-one pairing in any order; expected items are matchers
    (``matches``) or values compared for equality."""
    if len(actual) != len(expected):
        return False
    used = [False] * len(actual)

    def pair(i: int) -> bool:
        if i == len(expected):
            return True
        for j, item in enumerate(actual):
            if not used[j] and _match(expected[i], item):
                used[j] = True
                if pair(i + 1):
                    return True
                used[j] = False
        return False

    return pair(0)


def _match(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Matcher):
        return expected.matches(actual)
    return bool(normalize(expected) == normalize(actual))


class Matcher:
    def matches(self, actual: Any) -> bool:
        raise NotImplementedError


class AllocationResultMatcher(Matcher):
    """upstream ``allocationResult``: results in any order, no config, the node selector's
    terms, requirements and values in any order, no allocationTimestamp."""

    def __init__(self, selector: Obj | None, results: Sequence[Obj]) -> None:
        self.selector = selector
        self.results = list(results)

    def __repr__(self) -> str:
        return f"allocation_result({self.selector!r}, {self.results!r})"

    def matches(self, actual: Any) -> bool:
        result = normalize(actual)
        if not isinstance(result, dict) or set(result) - {"devices", "nodeSelector"}:
            return False
        devices = result.get("devices", {})
        if set(devices) - {"results"}:
            return False
        if not consist_of(devices.get("results", []), self.results):
            return False
        return _match_node_selector(self.selector, result.get("nodeSelector"))


def _match_node_selector(expected: Obj | None, actual: Any) -> bool:
    if expected is None:
        return actual is None
    if not isinstance(actual, Mapping) or set(actual) - {"nodeSelectorTerms"}:
        return False
    terms = [_TermMatcher(t) for t in expected.get("nodeSelectorTerms", [])]
    return consist_of(actual.get("nodeSelectorTerms", []), terms)


class _TermMatcher(Matcher):
    def __init__(self, term: Obj) -> None:
        self.term = term

    def matches(self, actual: Any) -> bool:
        if not isinstance(actual, Mapping) or set(actual) - {"matchExpressions", "matchFields"}:
            return False
        return all(
            consist_of(
                actual.get(field, []),
                [_RequirementMatcher(r) for r in self.term.get(field, [])],
            )
            for field in ("matchExpressions", "matchFields")
        )


class _RequirementMatcher(Matcher):
    def __init__(self, requirement: Obj) -> None:
        self.requirement = requirement

    def matches(self, actual: Any) -> bool:
        want = self.requirement
        return (
            isinstance(actual, Mapping)
            and actual.get("key") == want["key"]
            and actual.get("operator") == want["operator"]
            and sorted(actual.get("values") or []) == sorted(want.get("values") or [])
        )


def allocation_result(selector: Obj | None, *results: Obj) -> AllocationResultMatcher:
    return AllocationResultMatcher(selector, results)


class ErrorMatcher:
    """gomega.MatchError(gomega.ContainSubstring(...)) and gomega.And of those."""

    def __init__(self, substrings: Sequence[str]) -> None:
        self.substrings = tuple(substrings)

    def __repr__(self) -> str:
        return f"error containing {self.substrings!r}"

    def matches(self, message: str) -> bool:
        return all(s in message for s in self.substrings)


def contain_substring(substring: str) -> ErrorMatcher:
    return ErrorMatcher([substring])


def all_of(*matchers: ErrorMatcher) -> ErrorMatcher:
    return ErrorMatcher([s for m in matchers for s in m.substrings])


def match_error(matcher: ErrorMatcher) -> ErrorMatcher:
    return matcher


def quantity_map(values: Mapping[str, str]) -> dict[str, Decimal]:
    """ConsumedCapacity as AllocatedState.aggregated_capacity holds it."""
    return {name: exact_quantity(q) for name, q in values.items()}


_SUFFIXES = {
    "": Decimal(1),
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{s: Decimal(10) ** e for s, e in (("n", -9), ("u", -6), ("m", -3), ("k", 3), ("M", 6))},
    **{s: Decimal(10) ** e for s, e in (("G", 9), ("T", 12), ("P", 15), ("E", 18))},
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:([eE][-+]?[0-9]+)|([a-zA-Z]*))$")


def exact_quantity(value: Any) -> Decimal:
    """A quantity's exact value: Go compares resource.Quantity values unbounded, so results
    are not compared through multisched's parser, which caps at 2^63-1."""
    if isinstance(value, Decimal):
        return value
    match = _QUANTITY.match(str(value))
    if not match or (match.group(3) or "") not in _SUFFIXES:
        raise ValueError(f"invalid quantity {value!r}")
    number, exponent, suffix = match.groups()
    if exponent:
        return Decimal(number + exponent)
    return Decimal(number) * _SUFFIXES[suffix or ""]


_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P"}
_DECIMAL_SUFFIXES[18] = "E"


def go_quantity_text(value: Any) -> str:
    """resource.Quantity.String() of a quantity written as ``value``: Go compares Quantity
    structs, the JSON form's counterpart is the canonical text (the format follows the
    suffix). As Go, an exponent without a suffix (past "E") prints without one."""
    text = str(value)
    amount = exact_quantity(text)
    if amount == 0:
        return "0"
    match = _QUANTITY.match(text)
    assert match is not None
    suffix = match.group(3) or ""
    if suffix in _BINARY_SUFFIXES[1:] and abs(amount) >= 1024 and amount == int(amount):
        mantissa, power = int(amount), 0
        while mantissa % 1024 == 0:
            mantissa, power = mantissa // 1024, power + 1
        suffix_text = _BINARY_SUFFIXES[power] if power < len(_BINARY_SUFFIXES) else ""
        return f"{mantissa}{suffix_text}"
    sign, digits, exponent = amount.normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = int("".join(map(str, digits))) * (-1 if sign else 1)
    shift = exponent % 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if match.group(2):  # DecimalExponent
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_DECIMAL_SUFFIXES.get(exponent, '')}"
