"""The DRA store: claims' assume cache, in-flight allocations (upstream
``dra_manager_test.go``), the allocated-devices index (``allocateddevices.go``, kept under
every change and checked against a recount), slices and device classes."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest

from multisched.cache import (
    DEVICE_CLASS,
    DRA_KINDS,
    NAMESPACED_DRA_KINDS,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_SLICE,
    AssumeError,
    Cache,
    DraStore,
)
from multisched.cache.dra import SPECIAL_CLAIM_NAME, ClaimDevices, add_capacity

Obj = dict[str, Any]
DRIVER = "gpu.example.com"


def result(
    device: str,
    pool: str = "n1",
    admin: bool = False,
    share: str | None = None,
    consumed: dict[str, str] | None = None,
) -> Obj:
    out: Obj = {"request": "req", "driver": DRIVER, "pool": pool, "device": device}
    if admin:
        out["adminAccess"] = True
    if share is not None:
        out["shareID"] = share
    if consumed is not None:
        out["consumedCapacity"] = consumed
    return out


def claim(
    name: str,
    version: str = "1",
    results: list[Obj] | None = None,
    uid: str | None = None,
    namespace: str = "ns",
) -> Obj:
    out: Obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": RESOURCE_CLAIM,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{name}",
            "resourceVersion": version,
        },
        "spec": {"devices": {"requests": [{"name": "req"}]}},
    }
    if results is not None:
        out["status"] = {"allocation": {"devices": {"results": results}}}
    return out


def device_class(name: str, extended: str | None = None, created: str = "") -> Obj:
    meta: Obj = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    spec = {"extendedResourceName": extended} if extended else {}
    return {"kind": DEVICE_CLASS, "metadata": meta, "spec": spec}


def resource_slice(name: str) -> Obj:
    return {
        "kind": RESOURCE_SLICE,
        "metadata": {"name": name},
        "spec": {"driver": DRIVER, "pool": {"name": name}, "nodeName": name},
    }


def recount(store: DraStore) -> tuple[set[Any], set[Any], dict[Any, dict[str, Decimal]]]:
    """``GatherAllocatedState`` from scratch: every claim readers see, then in flight."""
    devices: set[Any] = set()
    shared: set[Any] = set()
    capacity: dict[Any, dict[str, Decimal]] = {}
    in_flight = [e.claim for e in store._in_flight.values()]
    for obj in [*store.objects(RESOURCE_CLAIM), *in_flight]:
        taken = ClaimDevices(obj)
        devices.update(taken.dedicated)
        shared.update(taken.shared)
        for device, consumed in taken.capacity:
            add_capacity(capacity, device, consumed)
    return devices, shared, capacity


# -- objects ------------------------------------------------------------------------------


def test_kinds_are_upstream_event_resources() -> None:
    assert DRA_KINDS == (
        "DeviceClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "ResourceSlice",
        "DeviceTaintRule",
    )
    assert {"ResourceClaim", "ResourceClaimTemplate"} == NAMESPACED_DRA_KINDS


def test_every_kind_is_kept_by_key_and_deleted() -> None:
    store = DraStore()
    assert store.is_empty()
    template = {"metadata": {"name": "t", "namespace": "ns"}, "spec": {}}
    store.upsert(RESOURCE_CLAIM_TEMPLATE, template)
    assert not store.is_empty()
    assert store.get_template("ns", "t") is template
    assert store.get_template("default", "t") is None
    assert store.has(RESOURCE_CLAIM_TEMPLATE, "ns/t")
    store.load(DEVICE_CLASS, [device_class("gpu"), device_class("fpga")])
    assert store.get_device_class("gpu") == device_class("gpu")
    assert sorted(c["metadata"]["name"] for c in store.objects(DEVICE_CLASS)) == ["fpga", "gpu"]
    c = claim("c1")
    assert store.upsert(RESOURCE_CLAIM, c)
    assert store.get_claim("ns", "c1") is c
    assert store.get(RESOURCE_CLAIM, "ns/c1") is c
    assert store.has(RESOURCE_CLAIM, "ns/c1")
    for kind, obj in (
        (RESOURCE_CLAIM, c),
        (RESOURCE_CLAIM_TEMPLATE, template),
        (DEVICE_CLASS, device_class("gpu")),
        (DEVICE_CLASS, device_class("fpga")),
    ):
        store.delete(kind, obj)
    assert store.is_empty()
    store.delete(RESOURCE_SLICE, resource_slice("absent"))  # a delete of nothing is a no-op
    with pytest.raises(KeyError, match="not a DRA kind"):
        store.upsert("PersistentVolume", {"metadata": {"name": "x"}})


def test_slice_list_is_kept_until_a_slice_changes_and_the_revision_follows_classes() -> None:
    store = DraStore()
    store.load(RESOURCE_SLICE, [resource_slice("n1"), resource_slice("n2")])
    first = store.list_slices()
    assert [s["metadata"]["name"] for s in first] == ["n1", "n2"]
    assert store.list_slices() is first  # one list per change, not per read
    revision = store.slices_revision
    store.upsert(DEVICE_CLASS, device_class("gpu"))
    assert store.slices_revision > revision
    assert store.list_slices() is first  # a class change leaves the slices as they were
    revision = store.slices_revision
    store.delete(RESOURCE_SLICE, resource_slice("n1"))
    assert store.slices_revision > revision
    assert [s["metadata"]["name"] for s in store.list_slices()] == ["n2"]
    updated = resource_slice("n2")
    updated["spec"]["devices"] = [{"name": "gpu-0"}]
    store.upsert(RESOURCE_SLICE, updated)
    assert store.list_slices() == [updated]


def test_cache_and_snapshot_share_one_store() -> None:
    cache = Cache()
    assert isinstance(cache.dra, DraStore)
    assert cache.snapshot.dra is cache.dra


# -- the claims' assume cache -------------------------------------------------------------


def test_assumed_claim_is_read_and_its_devices_taken_until_restored() -> None:
    store = DraStore()
    store.upsert(RESOURCE_CLAIM, claim("c1", "5"))
    allocated = claim("c1", "6", [result("gpu-0")])
    store.claims.assume(allocated)
    assert store.get_claim("ns", "c1") is allocated
    assert store.allocated_devices()[0] == {(DRIVER, "n1", "gpu-0")}
    # The informer's echo of an older version cannot undo it.
    assert not store.upsert(RESOURCE_CLAIM, claim("c1", "5"))
    assert store.allocated_devices()[0] == {(DRIVER, "n1", "gpu-0")}
    store.claims.restore("ns/c1")
    assert store.get_claim("ns", "c1") == claim("c1", "5")
    assert store.allocated_devices()[0] == set()
    with pytest.raises(AssumeError, match='could not find ResourceClaim "ns/other"'):
        store.claims.assume(claim("other", "1"))


def test_the_apis_newer_version_replaces_the_assumption() -> None:
    store = DraStore()
    store.upsert(RESOURCE_CLAIM, claim("c1", "5"))
    store.claims.assume(claim("c1", "6", [result("gpu-0")]))
    echo = claim("c1", "7", [result("gpu-0")])
    assert store.upsert(RESOURCE_CLAIM, echo)
    assert store.get_claim("ns", "c1") is echo
    assert store.allocated_devices()[0] == {(DRIVER, "n1", "gpu-0")}
    store.delete(RESOURCE_CLAIM, echo)  # deallocated by deletion
    assert store.allocated_devices()[0] == set()


def test_only_the_schedulers_own_assumptions_are_told() -> None:
    """Upstream's claim events come from the assume cache: Assume and Restore raise them;
    the informer's changes are raised by the feed."""
    store = DraStore()
    told: list[tuple[str, str]] = []
    store.on_claim_assumed = lambda old, new: told.append(
        (old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])
    )
    store.upsert(RESOURCE_CLAIM, claim("c1", "5"))
    store.upsert(RESOURCE_CLAIM, claim("c1", "6"))
    assert told == []
    store.claims.assume(claim("c1", "7", [result("gpu-0")]))
    store.claims.restore("ns/c1")
    store.claims.restore("ns/c1")  # nothing assumed any more: no change, no event
    assert told == [("6", "7"), ("7", "6")]
    store.delete(RESOURCE_CLAIM, claim("c1", "6"))
    assert told == [("6", "7"), ("7", "6")]


# -- allocated devices --------------------------------------------------------------------


def test_admin_access_results_take_no_device() -> None:
    store = DraStore()
    store.upsert(RESOURCE_CLAIM, claim("a", "1", [result("gpu-0", admin=True), result("gpu-1")]))
    assert store.allocated_devices() == ({(DRIVER, "n1", "gpu-1")}, set(), {})


def test_shares_and_their_consumed_capacity_are_summed_per_device() -> None:
    store = DraStore()
    device = (DRIVER, "n1", "gpu-0")
    store.upsert(
        RESOURCE_CLAIM,
        claim("a", "1", [result("gpu-0", share="s1", consumed={"memory": "4Gi", "cores": "2"})]),
    )
    store.upsert(
        RESOURCE_CLAIM, claim("b", "1", [result("gpu-0", share="s2", consumed={"memory": "2Gi"})])
    )
    devices, shared, capacity = store.allocated_devices()
    assert devices == set()
    assert shared == {(*device, "s1"), (*device, "s2")}
    assert capacity == {device: {"memory": Decimal(6 * 2**30), "cores": Decimal(2)}}
    # Without DRAConsumableCapacity a shared device is simply taken (upstream's fallback).
    assert store.allocated_devices(consumable_capacity=False) == ({device}, set(), {})
    store.delete(RESOURCE_CLAIM, claim("a"))
    assert store.allocated_devices()[2] == {device: {"memory": Decimal(2 * 2**30)}}
    store.delete(RESOURCE_CLAIM, claim("b"))
    assert store.allocated_devices() == (set(), set(), {})  # an all-zero device is dropped


def test_results_are_copies_the_caller_may_change() -> None:
    store = DraStore()
    store.upsert(
        RESOURCE_CLAIM,
        claim("a", "1", [result("gpu-0"), result("gpu-1", share="s", consumed={"m": "1"})]),
    )
    devices, shared, capacity = store.allocated_devices()
    devices.add((DRIVER, "n1", "x"))
    shared.clear()
    capacity[(DRIVER, "n1", "gpu-1")]["m"] += 5
    assert store.allocated_devices() == (
        {(DRIVER, "n1", "gpu-0")},
        {(DRIVER, "n1", "gpu-1", "s")},
        {(DRIVER, "n1", "gpu-1"): {"m": Decimal(1)}},
    )


def test_a_device_two_claims_name_stays_taken_until_both_let_go() -> None:
    store = DraStore()
    store.upsert(RESOURCE_CLAIM, claim("a", "1", [result("gpu-0")]))
    store.upsert(RESOURCE_CLAIM, claim("b", "1", [result("gpu-0")]))
    store.delete(RESOURCE_CLAIM, claim("a"))
    assert store.allocated_devices()[0] == {(DRIVER, "n1", "gpu-0")}
    store.delete(RESOURCE_CLAIM, claim("b"))
    assert store.allocated_devices()[0] == set()


def test_the_index_is_kept_by_changes_not_recounted_per_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = DraStore()
    store.upsert(RESOURCE_CLAIM, claim("a", "1", [result("gpu-0")]))
    revision = store.allocated_revision

    def recounting(*_: Any) -> list[Obj]:
        raise AssertionError("allocated_devices listed the claims")

    monkeypatch.setattr(store.claims, "list", recounting)
    assert store.allocated_devices()[0] == {(DRIVER, "n1", "gpu-0")}
    assert store.allocated_revision == revision  # reading changes nothing


@pytest.mark.parametrize("seed", range(20))
def test_incremental_index_equals_a_recount_after_any_changes(seed: int) -> None:
    """Informer adds, updates (allocation added, removed, replaced), deletes, assumptions,
    restores and in-flight allocations in random order: after each, the kept index answers
    as counting every claim again would."""
    rng = random.Random(seed)
    store = DraStore()
    names = [f"c{i}" for i in range(6)]
    versions = dict.fromkeys(names, 0)

    def allocation() -> list[Obj] | None:
        if rng.random() < 0.3:
            return None
        out = []
        for _ in range(rng.randint(1, 3)):
            device = f"gpu-{rng.randint(0, 4)}"
            pick = rng.random()
            if pick < 0.15:
                out.append(result(device, admin=True))
            elif pick < 0.45:
                consumed = {"memory": f"{rng.randint(0, 3)}Gi"}
                out.append(result(device, share=f"s{rng.randint(0, 9)}", consumed=consumed))
            else:
                out.append(result(device, pool=rng.choice(["n1", "n2"])))
        return out

    for _ in range(200):
        name = rng.choice(names)
        key = f"ns/{name}"
        op = rng.random()
        if op < 0.35:
            versions[name] += 1
            store.upsert(RESOURCE_CLAIM, claim(name, str(versions[name]), allocation()))
        elif op < 0.45:
            store.delete(RESOURCE_CLAIM, claim(name))
        elif op < 0.65 and key in store.claims:
            versions[name] += 1
            store.claims.assume(claim(name, str(versions[name]), allocation()))
        elif op < 0.75:
            store.claims.restore(key)
        elif op < 0.88:
            store.signal_claim_pending_allocation(f"uid-{name}", claim(name, "0", allocation()))
        else:
            store.remove_claim_pending_allocation(f"uid-{name}", force=rng.random() < 0.5)
        assert store.allocated_devices() == recount(store)


# -- in-flight allocations (upstream dra_manager_test.go) ---------------------------------


def test_signal_pending_allocation_cases() -> None:
    allocated = claim("c1", "2", [result("gpu-0")], uid="claim-uid-1")
    # empty: the cached claim is pending -> in flight with one sharer
    store = DraStore()
    store.upsert(RESOURCE_CLAIM, claim("c1", "1", uid="claim-uid-1"))
    store.signal_claim_pending_allocation("claim-uid-1", allocated)
    assert store.claim_has_pending_allocation("claim-uid-1")
    assert store._in_flight["claim-uid-1"].sharers == 1
    assert store.get_pending_allocation("claim-uid-1") == allocated["status"]["allocation"]
    assert store.allocated_devices()[0] == {(DRIVER, "n1", "gpu-0")}
    # claim-already-allocated: the cache shows it allocated -> not put in flight
    store = DraStore()
    store.upsert(RESOURCE_CLAIM, claim("c1", "2", [result("gpu-0")], uid="claim-uid-1"))
    store.signal_claim_pending_allocation("claim-uid-1", allocated)
    assert not store.claim_has_pending_allocation("claim-uid-1")
    assert store.get_pending_allocation("claim-uid-1") is None
    # extended-resource-claim-not-in-cache: the in-memory claim is never looked up
    store = DraStore()
    special = claim(SPECIAL_CLAIM_NAME, "0", [result("gpu-0")], uid="claim-uid-1")
    store.signal_claim_pending_allocation("claim-uid-1", special)
    assert store.claim_has_pending_allocation("claim-uid-1")
    # already-exists(-ignores-different-claim-argument): one more sharer, the first claim kept
    other = claim("c1", "3", [result("gpu-9")], uid="claim-uid-1")
    store.signal_claim_pending_allocation("claim-uid-1", other)
    assert store._in_flight["claim-uid-1"].sharers == 2
    assert store._in_flight["claim-uid-1"].claim is special


@pytest.mark.parametrize(
    ("sharers", "force", "removed", "left"),
    [
        (0, True, False, None),  # empty
        (1, False, True, None),  # delete-last-sharer
        (1, True, True, None),  # force-delete-last-sharer
        (2, False, False, 1),  # decrement-remaining-sharers
        (2, True, True, None),  # force-delete-remaining-sharers
    ],
)
def test_remove_pending_allocation_cases(
    sharers: int, force: bool, removed: bool, left: int | None
) -> None:
    store = DraStore()
    store.signal_claim_pending_allocation("other", claim("c2", "1", [result("gpu-2")], uid="other"))
    for _ in range(sharers):
        store.signal_claim_pending_allocation(
            "claim-uid-1", claim(SPECIAL_CLAIM_NAME, "0", [result("gpu-0")], uid="claim-uid-1")
        )
    assert store.remove_claim_pending_allocation("claim-uid-1", force=force) is removed
    entry = store._in_flight.get("claim-uid-1")
    assert (entry.sharers if entry is not None else None) == left
    assert store.claim_has_pending_allocation("other")  # others untouched
    taken = store.allocated_devices()[0]
    assert ((DRIVER, "n1", "gpu-0") in taken) is (left is not None)


# -- extended resources -------------------------------------------------------------------


def test_extended_resources_map_to_classes_newest_first_then_lowest_name() -> None:
    store = DraStore()
    store.upsert(DEVICE_CLASS, device_class("gpu", "example.com/gpu", "2025-01-01T00:00:00Z"))
    assert store.device_class_for_extended_resource("example.com/gpu") == store.get_device_class(
        "gpu"
    )
    implicit = "deviceclass.resource.kubernetes.io/gpu"
    assert store.device_class_for_extended_resource(implicit) is store.get_device_class("gpu")
    assert store.device_class_for_extended_resource("example.com/other") is None
    # A newer class naming the same resource takes it (a migration between classes) ...
    store.upsert(DEVICE_CLASS, device_class("gpu-v2", "example.com/gpu", "2025-06-01T00:00:00Z"))
    chosen = store.device_class_for_extended_resource("example.com/gpu")
    assert chosen is not None and chosen["metadata"]["name"] == "gpu-v2"
    # ... of two as old, the lower name ...
    store.upsert(DEVICE_CLASS, device_class("a-gpu", "example.com/gpu", "2025-06-01T00:00:00Z"))
    chosen = store.device_class_for_extended_resource("example.com/gpu")
    assert chosen is not None and chosen["metadata"]["name"] == "a-gpu"
    # ... and when the chosen ones go, the one left serves it again.
    store.delete(DEVICE_CLASS, device_class("a-gpu"))
    store.delete(DEVICE_CLASS, device_class("gpu-v2"))
    chosen = store.device_class_for_extended_resource("example.com/gpu")
    assert chosen is not None and chosen["metadata"]["name"] == "gpu"
    assert (
        store.device_class_for_extended_resource("deviceclass.resource.kubernetes.io/gpu-v2")
        is None
    )
