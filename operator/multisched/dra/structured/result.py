"""The AllocationResult of each claim, as the end of upstream's ``Allocate`` and
``createNodeSelector`` build it (JSON dicts, empty fields omitted as the API omits them)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from .search import DeviceResult, Search
from .types import AllocationError


def build_results(search: Search) -> list[dict[str, Any]]:
    out = []
    binding = search.features.device_binding_and_status
    node_name = search.node.name or ""
    for ci, claim in enumerate(search.claims):
        devices = search.results[ci]
        allocation: dict[str, Any] = {"devices": {}}
        results = [_device_result(r, binding) for r in devices]
        if results:
            allocation["devices"]["results"] = results
        config = _config(search, ci) if search.configured[ci] else None
        if config:
            allocation["devices"]["config"] = config
        try:
            selector = node_selector(devices, node_name)
        except AllocationError as err:
            name = (claim.get("metadata") or {}).get("name", "")
            raise AllocationError(f"create NodeSelector for claim {name}: {err}") from None
        if selector is not None:
            allocation["nodeSelector"] = selector
        out.append(allocation)
    return out


def _device_result(result: DeviceResult, binding: bool) -> dict[str, Any]:
    device = result.device
    entry: dict[str, Any] = {
        "request": result.request_name(),
        "driver": device.id.driver,
        "pool": device.id.pool,
        "device": device.id.device,
    }
    if result.admin_access is not None:
        entry["adminAccess"] = result.admin_access
    if result.request.tolerations:
        entry["tolerations"] = copy.deepcopy(result.request.tolerations)
    # Without the feature, no device with binding conditions gets selected anyway.
    if binding:
        if device.binding_conditions:
            entry["bindingConditions"] = list(device.binding_conditions)
        if device.binding_failure_conditions:
            entry["bindingFailureConditions"] = list(device.binding_failure_conditions)
    if result.share_id is not None:
        entry["shareID"] = result.share_id
    if result.consumed_capacity:
        entry["consumedCapacity"] = {k: q.string() for k, q in result.consumed_capacity.items()}
    return entry


def _config(search: Search, ci: int) -> list[dict[str, Any]]:
    """The class configs (each class once, for all its requests), then the claim's configs
    that apply to an allocated request or subrequest; "all requests" becomes no list."""
    claim = search.claims[ci]
    requests = search.claim_requests[ci]
    config: list[dict[str, Any]] = []
    by_class: dict[str, tuple[int, int]] = {}
    chosen: list[str | None] = []  # per request: "request/subrequest" when it has them
    for ri, request in enumerate(requests):
        data = search.request_data[(ci, ri, 0)]
        subrequest = None
        if data.parent is not None:
            index = data.selected_sub_request_index
            subrequest = f"{request.get('name', '')}/{request['firstAvailable'][index]['name']}"
            data = search.request_data[(ci, ri, index)]
        chosen.append(subrequest)
        device_class = data.device_class
        if device_class is None:
            continue
        class_name = (device_class.get("metadata") or {}).get("name", "")
        if class_name in by_class:
            start, end = by_class[class_name]
            for entry in config[start:end]:
                entry["requests"].append(data.request_name)
            continue
        start = len(config)
        for class_config in (device_class.get("spec") or {}).get("config") or ():
            entry = {"source": "FromClass", "requests": [data.request_name]}
            entry.update(copy.deepcopy(dict(class_config)))
            config.append(entry)
        by_class[class_name] = (start, len(config))

    names = [r.get("name", "") for r in requests]
    for claim_config in ((claim.get("spec") or {}).get("devices") or {}).get("config") or ():
        wanted = list(claim_config.get("requests") or ())
        if wanted and not any(
            name in wanted or (sub is not None and sub in wanted)
            for name, sub in zip(names, chosen, strict=True)
        ):
            continue
        entry = {"source": "FromClaim"}
        if wanted:
            entry["requests"] = wanted
        entry.update(copy.deepcopy({k: v for k, v in claim_config.items() if k != "requests"}))
        config.append(entry)

    for entry in config:
        listed = entry.get("requests")
        if listed and all(
            name in listed or (sub is not None and sub in listed)
            for name, sub in zip(names, chosen, strict=True)
        ):
            del entry["requests"]
    return config


def node_selector(devices: Sequence[DeviceResult], node_name: str) -> dict[str, Any] | None:
    """``createNodeSelector``: the node when a device is local to it (or binds to it), else
    the requirements of the devices' node selectors in one term; None when available
    everywhere."""
    fields: list[dict[str, Any]] = []
    expressions: list[dict[str, Any]] = []
    for result in devices:
        device = result.device
        if device.slice.per_device_node_selection:
            name, selector = device.node_name, device.raw.get("nodeSelector")
        else:
            name, selector = (
                device.slice.node_name,
                (device.slice.raw.get("spec") or {}).get("nodeSelector"),
            )
        if name is not None or device.binds_to_node:
            local = {"key": "metadata.name", "operator": "In", "values": [node_name]}
            return {"nodeSelectorTerms": [{"matchFields": [local]}]}
        if selector is None:
            continue
        terms = selector.get("nodeSelectorTerms") or ()
        if len(terms) > 1:
            raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        if terms:
            _add_requirements(terms[0].get("matchFields"), fields)
            _add_requirements(terms[0].get("matchExpressions"), expressions)
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def _add_requirements(
    new: Sequence[Mapping[str, Any]] | None, existing: list[dict[str, Any]]
) -> None:
    for requirement in new or ():
        values = set(requirement.get("values") or ())
        if not any(
            r.get("key") == requirement.get("key")
            and r.get("operator") == requirement.get("operator")
            and set(r.get("values") or ()) == values
            for r in existing
        ):
            existing.append(copy.deepcopy(dict(requirement)))
