"""The allocator's reuse across nodes and cycles, held to a cold allocator on random clusters.

One ``Allocator`` serves every node of a cycle and keeps what does not depend on the node
(the prepared requests of the same claims) and, per slice index, what depends on the node
alone (its pools); a device whose capacity has no policy skips the capacity arithmetic. None
of that may change an outcome: each call must give what a fresh allocator over freshly parsed
slices, doing the capacity arithmetic for every device, gives (results, or the same error).
"""

from __future__ import annotations

import contextlib
import copy
import random
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from multisched.dra.structured import AllocatedState, AllocationError, Allocator, Features
from multisched.dra.structured.slices import Device

Obj = dict[str, Any]
DRIVERS = ("driver-a", "driver-b")
MODELS = ("a", "b", "c")


def _device(rng: random.Random, name: str) -> Obj:
    device: Obj = {"name": name, "attributes": {"model": {"string": rng.choice(MODELS)}}}
    roll = rng.random()
    if roll < 0.4:
        device["capacity"] = {"memory": {"value": rng.choice(["8Gi", "16Gi"])}}
        device["allowMultipleAllocations"] = rng.random() < 0.5
    elif roll < 0.6:
        device["capacity"] = {
            "memory": {
                "value": "16Gi",
                "requestPolicy": {"default": "4Gi", "validValues": ["4Gi", "8Gi"]},
            }
        }
        device["allowMultipleAllocations"] = rng.random() < 0.7
    return device


def _cluster(rng: random.Random) -> tuple[list[Obj], list[Obj]]:
    nodes = [
        {"metadata": {"name": f"node-{i}", "labels": {"region": f"r{i % 2}"}}} for i in range(5)
    ]
    slices: list[Obj] = []
    for i, node in enumerate(nodes):
        driver = DRIVERS[i % 2]
        count = 2 if rng.random() < 0.15 else 1  # sometimes a pool with a slice missing
        slices.append(
            {
                "metadata": {"name": f"slice-{i}"},
                "spec": {
                    "driver": driver,
                    "nodeName": node["metadata"]["name"],
                    "pool": {"name": f"pool-{i}", "generation": 1, "resourceSliceCount": count},
                    "devices": [_device(rng, f"dev-{d}") for d in range(rng.randint(1, 4))],
                },
            }
        )
    # A network-attached pool for one region.
    slices.append(
        {
            "metadata": {"name": "slice-shared"},
            "spec": {
                "driver": "driver-a",
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "region", "operator": "In", "values": ["r0"]}
                            ]
                        }
                    ]
                },
                "pool": {"name": "shared", "generation": 1, "resourceSliceCount": 1},
                "devices": [_device(rng, f"net-{d}") for d in range(2)],
            },
        }
    )
    return nodes, slices


def _model_is(model: str) -> str:
    """The model attribute lives in the device's driver's domain."""
    return (
        f'device.driver == "driver-a" ? device.attributes["driver-a"].model == "{model}" '
        f': device.attributes["driver-b"].model == "{model}"'
    )


def _request(rng: random.Random, name: str) -> Obj:
    cls = rng.choice(["class-a", "class-b", "class-any"])
    roll = rng.random()
    if roll < 0.1:
        return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "All"}}
    if roll < 0.3:
        subs = [
            {"name": f"s{k}", "deviceClassName": c, "allocationMode": "ExactCount", "count": n}
            for k, (c, n) in enumerate([("class-b", 2), (cls, 1)])
        ]
        return {"name": name, "firstAvailable": subs}
    exactly: Obj = {"deviceClassName": cls, "allocationMode": "ExactCount"}
    exactly["count"] = rng.randint(1, 2)
    if rng.random() < 0.3:
        exactly["capacity"] = {"requests": {"memory": rng.choice(["4Gi", "8Gi"])}}
    if rng.random() < 0.3:
        model = rng.choice(MODELS)
        exactly["selectors"] = [{"cel": {"expression": _model_is(model)}}]
    return {"name": name, "exactly": exactly}


def _claims(rng: random.Random) -> list[Obj]:
    claims = []
    for c in range(rng.randint(1, 2)):
        requests = [_request(rng, f"req-{r}") for r in range(rng.randint(1, 2))]
        devices: Obj = {"requests": requests}
        if rng.random() < 0.3:
            opaque = {"driver": "driver-b", "parameters": {"claim": c}}
            devices["config"] = [{"requests": ["req-0"], "opaque": opaque}]
        if rng.random() < 0.25 and len(requests) > 1:
            devices["constraints"] = [{"matchAttribute": "model"}]
        claims.append(
            {"metadata": {"name": f"claim-{c}", "uid": f"uid-{c}"}, "spec": {"devices": devices}}
        )
    return claims


CLASSES: dict[str, Obj] = {
    "class-a": {"metadata": {"name": "class-a"}, "spec": {"selectors": [
        {"cel": {"expression": 'device.driver == "driver-a"'}}]}},
    "class-b": {"metadata": {"name": "class-b"}, "spec": {"selectors": [
        {"cel": {"expression": _model_is("b")}}]}},
    "class-any": {"metadata": {"name": "class-any"}, "spec": {
        "config": [{"opaque": {"driver": "driver-a", "parameters": {"any": True}}}]}},
}  # fmt: skip


def device_class(name: str) -> Obj | None:
    return CLASSES.get(name)


def _state(rng: random.Random, slices: list[Obj]) -> AllocatedState:
    devices = {
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
        for s in slices
        for d in s["spec"]["devices"]
    }
    taken = {d for d in sorted(devices) if rng.random() < 0.2}
    # Some capacity already consumed (a share, or a device being freed): a request for no
    # capacity consumes a whole device, which then does not fit.
    capacity = {
        d: {"memory": Decimal(4 * 2**30)} for d in sorted(devices - taken) if rng.random() < 0.3
    }
    return AllocatedState(taken, set(), capacity)


def _outcome(allocator: Allocator, node: Obj, claims: list[Obj]) -> Any:
    try:
        results = allocator.allocate(node, claims)
    except AllocationError as err:
        return ("error", type(err).__name__, str(err))
    # Share ids are random per share.
    for allocation in results:
        for result in (allocation.get("devices") or {}).get("results") or ():
            if "shareID" in result:
                result["shareID"] = "<share>"
    return results


@contextlib.contextmanager
def _capacity_always_computed() -> Iterator[None]:
    """The cold allocator does the capacity arithmetic for every device."""
    fast = Device.plain_capacity
    Device.plain_capacity = property(lambda self: False)  # type: ignore[assignment,method-assign]
    try:
        yield
    finally:
        Device.plain_capacity = fast  # type: ignore[method-assign]


@pytest.mark.parametrize("seed", range(120))
def test_a_reused_allocator_allocates_as_a_cold_one(seed: int) -> None:
    rng = random.Random(seed)
    nodes, slices = _cluster(rng)
    claims = _claims(rng)
    state = _state(rng, slices)
    features = Features.v1_37_defaults()
    warm = Allocator(features, state, device_class, slices)
    # Every node twice, in a random order (the second visit hits the caches), then each
    # node updated with the other region's label (the shared pool is for one region).
    visits = nodes + nodes
    rng.shuffle(visits)
    for node in nodes:
        region = "r1" if node["metadata"]["labels"]["region"] == "r0" else "r0"
        visits.append({"metadata": {**node["metadata"], "labels": {"region": region}}})
    outcomes = []
    for node in visits:
        got = _outcome(warm, node, claims)
        cold = Allocator(features, state, device_class, copy.deepcopy(slices))
        with _capacity_always_computed():
            want = _outcome(cold, node, copy.deepcopy(claims))
        assert got == want, (node["metadata"]["name"], claims)
        outcomes.append(got)
    # The scenarios exercise both outcomes, so the comparison means something.
    assert outcomes


def test_the_random_scenarios_both_allocate_and_refuse() -> None:
    allocated = refused = errors = 0
    for seed in range(120):
        rng = random.Random(seed)
        nodes, slices = _cluster(rng)
        claims = _claims(rng)
        state = _state(rng, slices)
        allocator = Allocator(Features.v1_37_defaults(), state, device_class, slices)
        for node in nodes:
            outcome = _outcome(allocator, node, claims)
            if isinstance(outcome, tuple):
                errors += 1
            elif outcome:
                allocated += 1
            else:
                refused += 1
    assert allocated > 50 and refused > 50 and errors > 0, (allocated, refused, errors)
