"""Before the search: check each claim's requests and constraints, look up classes and
determine how many devices each request needs (the first half of upstream's ``Allocate``
and ``validateDeviceRequest``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .constraint import Constraint, DistinctAttributeConstraint, MatchAttributeConstraint
from .consumable_capacity import CapacityRangeError, cmp_request_over_capacity
from .requests import ALL, EXACT_COUNT, Request, RequestData, claim_requests
from .search import RequestKey, Search
from .types import ALLOCATION_RESULTS_MAX_SIZE, AllocationError, klog_kobj

_MAX_INT = 2**63 - 1


def prepare_claims(search: Search) -> None:
    """Fill ``search.request_data`` (one entry per request, or per subrequest) and
    ``search.constraints``; raise AllocationError for what cannot be handled."""
    features = search.features
    search.kobjs = [klog_kobj(claim) for claim in search.claims]
    for ci, claim in enumerate(search.claims):
        kobj = search.kobjs[ci]
        requests = claim_requests(claim)
        search.claim_requests.append(requests)
        min_per_claim = 0
        for ri, raw in enumerate(requests):
            name = raw.get("name", "")
            exactly = raw.get("exactly")
            subs = raw.get("firstAvailable") or ()
            if not features.prioritized_list and subs:
                raise AllocationError(
                    f"claim {kobj}, request {name}: has subrequests, but the "
                    "DRAPrioritizedList feature is disabled"
                )
            if not features.consumable_capacity:
                if exactly is not None and exactly.get("capacity") is not None:
                    raise AllocationError(
                        f"claim {kobj}, request {name}: has capacity requests, but the "
                        "DRAConsumableCapacity feature is disabled"
                    )
                for sub in subs:
                    if sub.get("capacity") is not None:
                        raise AllocationError(
                            f"claim {kobj}, subrequest {sub.get('name', '')}: has capacity "
                            "requests, but the DRAConsumableCapacity feature is disabled"
                        )
            if subs:
                parent = Request(name, exactly or {}, sub_request=False)
                # Only a lower bound: it depends on which subrequest gets picked.
                needed = None
                for si, sub in enumerate(subs):
                    request = Request(sub.get("name", ""), sub, sub_request=True)
                    data = _validate_request(search, request, parent, (ci, ri, si))
                    search.request_data[(ci, ri, si)] = data
                    needed = data.num_devices if needed is None else min(needed, data.num_devices)
                num = needed or 0
            else:
                request = Request(name, exactly or {}, sub_request=False)
                data = _validate_request(search, request, None, (ci, ri, 0))
                search.request_data[(ci, ri, 0)] = data
                num = data.num_devices
            if num > ALLOCATION_RESULTS_MAX_SIZE - min_per_claim:
                raise AllocationError(
                    f"claim {kobj}, request {name}: adding {num} devices exceeds the claim "
                    f"limit of {ALLOCATION_RESULTS_MAX_SIZE}, with {min_per_claim} already "
                    "accounted for"
                )
            min_per_claim += num
        search.constraints.append(claim_constraints(kobj, claim))
        search.configured.append(_configured(search, ci, claim))


def _configured(search: Search, ci: int, claim: Mapping[str, Any]) -> bool:
    if ((claim.get("spec") or {}).get("devices") or {}).get("config"):
        return True
    return any(
        ((data.device_class or {}).get("spec") or {}).get("config")
        for key, data in search.request_data.items()
        if key[0] == ci
    )


def claim_constraints(kobj: str, claim: Mapping[str, Any]) -> list[Constraint]:
    """The claim's constraints, fresh (they keep the search's state)."""
    out: list[Constraint] = []
    raw = ((claim.get("spec") or {}).get("devices") or {}).get("constraints") or ()
    for i, constraint in enumerate(raw):
        requests = list(constraint.get("requests") or ())
        if constraint.get("matchAttribute") is not None:
            out.append(MatchAttributeConstraint(requests, constraint["matchAttribute"]))
        elif constraint.get("distinctAttribute") is not None:
            out.append(DistinctAttributeConstraint(requests, constraint["distinctAttribute"]))
        else:
            raise AllocationError(
                f"claim {kobj}, constraint #{i}: empty constraint (unsupported constraint type?)"
            )
    return out


def _validate_request(
    search: Search, request: Request, parent: Request | None, key: RequestKey
) -> RequestData:
    """``validateDeviceRequest``."""
    kobj = search.kobjs[key[0]]
    features = search.features
    data = RequestData(request, parent)
    prefix = f"claim {kobj}, request {request.name}"
    if request.derived_attributes:
        raise AllocationError(
            f"{prefix}: cannot handle request with derived attributes, the feature is disabled"
        )
    for i, selector in enumerate(request.selectors):
        if selector.get("cel") is None:
            raise AllocationError(
                f"{prefix}, selector #{i}: CEL expression empty (unsupported selector type?)"
            )
    if not features.admin_access and request.has_admin_access:
        raise AllocationError(f"{prefix}: admin access is requested, but the feature is disabled")
    if not request.class_name:
        raise AllocationError(f"{prefix}: missing device class name (unsupported request type?)")
    device_class = search.owner.get_device_class(request.class_name)
    if device_class is None:
        # The scheduler's lister is an informer's: its NotFound error.
        raise AllocationError(
            f"{prefix}: could not retrieve device class {request.class_name}: "
            f'deviceclass.resource.k8s.io "{request.class_name}" not found'
        )
    data.device_class = device_class
    if request.allocation_mode == EXACT_COUNT:
        if request.count > _MAX_INT:
            raise AllocationError(f"{prefix}: exact count {request.count} is too large")
        data.num_devices = request.count
    elif request.allocation_mode == ALL:
        _all_devices(search, data, key, prefix)
    else:
        raise AllocationError(f"{prefix}: unsupported count mode {request.allocation_mode}")
    return data


def _all_devices(search: Search, data: RequestData, key: RequestKey, prefix: str) -> None:
    """allocationMode All: every matching device of every pool, which must all be complete
    and valid. Devices whose static capacity cannot serve the request are left out; the
    remaining capacity is checked during the search, so a blocked device fails the request."""
    consumable = search.features.consumable_capacity
    for pool in search.pools:
        if pool.is_incomplete:
            raise AllocationError(
                f"{prefix}: asks for all devices, but resource pool {pool} is currently being "
                "updated"
            )
        if pool.is_invalid:
            raise AllocationError(
                f"{prefix}: asks for all devices, but resource pool {pool} is currently invalid"
            )
        for s in pool.slices_targeting_node:
            for device in s.devices:
                if not search.is_selectable(key, data, device):
                    continue
                if consumable:
                    try:
                        fits = cmp_request_over_capacity(
                            {},
                            data.request.capacity_requests,
                            device.capacity,
                            {},
                            search.features.fractional_capacity_range,
                        )
                    except CapacityRangeError as err:
                        raise AllocationError(
                            f"{prefix}: checking capacity for device {device.name}: {err}"
                        ) from None
                    if not fits:
                        continue
                data.all_devices.append((device, pool))
    data.num_devices = len(data.all_devices)
