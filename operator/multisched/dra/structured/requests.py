"""Device requests and subrequests behind one accessor (upstream's ``requestAccessor``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .pools import Pool
from .quantity import Qty, QuantityError
from .slices import Device
from .types import AllocationError

EXACT_COUNT = "ExactCount"
ALL = "All"


class Request:
    """An ``exactly`` request or one ``firstAvailable`` subrequest."""

    __slots__ = (
        "admin_access",
        "allocation_mode",
        "capacity",
        "capacity_requests",
        "class_name",
        "count",
        "derived_attributes",
        "has_admin_access",
        "name",
        "selectors",
        "tolerations",
    )

    def __init__(self, name: str, spec: Mapping[str, Any], sub_request: bool) -> None:
        self.name = name
        self.class_name: str = spec.get("deviceClassName") or ""
        # API defaulting sets both; objects that skipped it read as the defaults.
        self.allocation_mode: str = spec.get("allocationMode") or EXACT_COUNT
        count = spec.get("count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise AllocationError(f"request {name}: count {count!r} is not an integer")
        self.count: int = 1 if count is None else count
        admin = None if sub_request else spec.get("adminAccess")
        self.has_admin_access = admin is not None
        self.admin_access = bool(admin)
        self.selectors: list[Mapping[str, Any]] = list(spec.get("selectors") or ())
        self.tolerations: list[Mapping[str, Any]] = list(spec.get("tolerations") or ())
        self.derived_attributes = spec.get("derivedAttributes") or ()
        #: ``capacity`` as given (None when unset), and its requests parsed.
        self.capacity = spec.get("capacity")
        self.capacity_requests: dict[str, Qty] | None = None
        if self.capacity is not None and self.capacity.get("requests") is not None:
            try:
                self.capacity_requests = {
                    k: Qty.parse(v) for k, v in self.capacity["requests"].items()
                }
            except QuantityError as err:
                raise AllocationError(f"request {name}: capacity: {err}") from None

    def taint_prevents_allocation(self, device: Device) -> bool:
        """``taintPreventsAllocation``: a NoSchedule/NoExecute taint no toleration tolerates."""
        return any(
            not any(tolerates(t, taint) for t in self.tolerations) for taint in device.taints
        )


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``resourceclaim.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key", ""):
        return False
    operator = toleration.get("operator") or ""
    if operator in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


class RequestData:
    """``requestData``: one request, or one subrequest (with its parent)."""

    __slots__ = (
        "all_devices",
        "device_class",
        "num_devices",
        "parent",
        "request",
        "request_name",
        "selected_sub_request_index",
    )

    def __init__(self, request: Request, parent: Request | None) -> None:
        self.request = request
        self.parent = parent
        self.request_name = f"{parent.name}/{request.name}" if parent else request.name
        self.device_class: Mapping[str, Any] | None = None
        self.num_devices = 0
        self.selected_sub_request_index = 0
        #: allocationMode All: the devices, chosen up front.
        self.all_devices: list[tuple[Device, Pool]] = []


def claim_requests(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(((claim.get("spec") or {}).get("devices") or {}).get("requests") or ())
