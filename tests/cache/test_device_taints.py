"""DeviceTaintRules applied to ResourceSlices: upstream ``resourceslice/tracker``'s
``TestListPatchedResourceSlices`` (every permutation of its events that keeps each nested
list in order), through ``DraStore`` as the informers feed it, and the updates a rule
change sends, the caching the hot path relies on, and the revision the allocator reads."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from multisched.cache.device_taints import PatchedSlices, TaintRule, apply_rules
from multisched.cache.dra import DEVICE_TAINT_RULE, RESOURCE_SLICE, DraStore

Obj = dict[str, Any]

NOW = "2006-01-02T15:04:05Z"
DRIVER1, DRIVER2 = "driver1.example.com", "driver2.example.com"
POOL1, POOL2 = "pool-1", "pool-2"
TAINT1 = {"key": "example.com/taint", "value": "tainted", "effect": "NoExecute", "timeAdded": NOW}
TAINT2 = {
    "key": "example.com/taint2",
    "value": "tainted2",
    "effect": "NoExecute",
    "timeAdded": NOW,
}


def device(name: str, *taints: Obj) -> Obj:
    return {"name": name, "taints": list(taints)} if taints else {"name": name}


def slice_(name: str, driver: str, pool: str, devices: list[Obj] | None = None) -> Obj:
    spec: Obj = {"driver": driver, "pool": {"name": pool}}
    if devices is not None:
        spec["devices"] = devices
    return {"metadata": {"name": name}, "spec": spec}


def with_devices(obj: Obj, devices: list[Obj]) -> Obj:
    out = copy.deepcopy(obj)
    out["spec"]["devices"] = devices
    return out


def rule(name: str = "rule", taint: Obj = TAINT1, **selector: str) -> Obj:
    """A rule whose selector sets ``selector`` (no keyword: the empty selector, all)."""
    return {"metadata": {"name": name}, "spec": {"deviceSelector": selector, "taint": taint}}


SLICE1_NO_DEVICES = slice_("s1", DRIVER1, POOL1)
SLICE2_NO_DEVICES = slice_("s2", DRIVER2, POOL2)
UNCHANGED = {"metadata": {"name": "no-change"}, "spec": {}}
THREE = [device("device-0"), device("device-1"), device("device-2")]
THREE_ONE_TAINTED = [device("device-0"), device("device-1", TAINT1), device("device-2")]
SLICE1 = with_devices(SLICE1_NO_DEVICES, [device("device-1")])
SLICE1_TAINTED = with_devices(SLICE1, [device("device-1", TAINT1)])
SLICE1_ALREADY_TAINTED = with_devices(SLICE1, [device("device-1", TAINT2)])
SLICE1_MERGED = with_devices(SLICE1, [device("device-1", TAINT2, TAINT1)])
SLICE2 = with_devices(SLICE2_NO_DEVICES, [device("device-2")])
SLICE2_TAINTED = with_devices(SLICE2, [device("device-2", TAINT1)])

ALL_DEVICES = rule()
NO_SELECTOR = {"metadata": {"name": "rule-no-selector"}, "spec": {"taint": TAINT1}}
POOL1_DEVICES = rule(pool=POOL1)
POOL2_DEVICES = rule(pool=POOL2)
DRIVER1_DEVICES = rule(driver=DRIVER1)
DEVICE1 = rule(device="device-1")


# Events: (kind, old, new) as the informers bring them; old None: add, new None: delete.
# ("forget", name): a rule deleted with only its name known (upstream's tombstone).
def add(obj: Obj) -> tuple[str, Obj | None, Obj | None]:
    return (_kind(obj), None, obj)


def remove(obj: Obj) -> tuple[str, Obj | None, Obj | None]:
    return (_kind(obj), obj, None)


def update(old: Obj, new: Obj) -> tuple[str, Obj | None, Obj | None]:
    return (_kind(old), old, new)


def forget(obj: Obj) -> tuple[str, Obj | None, Obj | None]:
    return (DEVICE_TAINT_RULE, {"metadata": {"name": obj["metadata"]["name"]}}, None)


def _kind(obj: Obj) -> str:
    return DEVICE_TAINT_RULE if "taint" in obj["spec"] else RESOURCE_SLICE


Event = tuple[str, Obj | None, Obj | None]

# name: (events, expected patched slices, the updates rule changes send in the given order).
# A nested list keeps its order in every permutation.
CASES: dict[str, tuple[list[Any], list[Obj], list[tuple[Obj, Obj]]]] = {
    "add-slices-no-patches": ([add(SLICE1), add(SLICE2)], [SLICE1, SLICE2], []),
    "update-slices-no-patches": (
        [
            [add(SLICE1_NO_DEVICES), update(SLICE1_NO_DEVICES, SLICE1)],
            [add(SLICE2_NO_DEVICES), update(SLICE2_NO_DEVICES, SLICE2)],
            add(UNCHANGED),
        ],
        [SLICE1, SLICE2, UNCHANGED],
        [],
    ),
    "delete-slices": (
        [[add(SLICE1), remove(SLICE1)], [add(SLICE2), remove(SLICE2)], add(UNCHANGED)],
        [UNCHANGED],
        [],
    ),
    "patch-all-slices": (
        [add(SLICE1), add(ALL_DEVICES)],
        [SLICE1_TAINTED],
        [(SLICE1, SLICE1_TAINTED)],
    ),
    "update-patch": (
        [[add(POOL1_DEVICES), update(POOL1_DEVICES, POOL2_DEVICES)], add(SLICE1), add(SLICE2)],
        [SLICE1, SLICE2_TAINTED],
        [],
    ),
    "remove-patch-known-deleted-rule": (
        [[add(POOL2_DEVICES), add(SLICE1), add(SLICE2), remove(POOL2_DEVICES)]],
        [SLICE1, SLICE2],
        [(SLICE2_TAINTED, SLICE2)],
    ),
    "remove-patch-unknown-deleted-rule": (
        [[add(POOL2_DEVICES), add(SLICE1), add(SLICE2), forget(POOL2_DEVICES)]],
        [SLICE1, SLICE2],
        [(SLICE2_TAINTED, SLICE2)],
    ),
    "merge-taints": (
        [add(ALL_DEVICES), add(SLICE1_ALREADY_TAINTED)],
        [SLICE1_MERGED],
        [],
    ),
    "add-taint-for-driver": (
        [add(DRIVER1_DEVICES), add(SLICE1), add(SLICE2)],
        [SLICE1_TAINTED, SLICE2],
        [],
    ),
    "add-taint-for-pool": (
        [add(POOL1_DEVICES), add(SLICE1), add(SLICE2)],
        [SLICE1_TAINTED, SLICE2],
        [],
    ),
    "add-taint-for-device": (
        [add(DEVICE1), add(SLICE1), add(SLICE2)],
        [SLICE1_TAINTED, SLICE2],
        [],
    ),
    "filter-all-criteria": (
        [add(rule(device="device-1", pool=POOL1, driver=DRIVER1)), add(SLICE1), add(SLICE2)],
        [SLICE1_TAINTED, SLICE2],
        [],
    ),
    "update-patched-slice": (
        [
            add(DEVICE1),
            [add(SLICE1), update(SLICE1, with_devices(SLICE1, THREE))],
            [
                add(with_devices(SLICE2, THREE)),
                update(with_devices(SLICE2, THREE), with_devices(SLICE2, [device("device-1")])),
            ],
        ],
        [
            with_devices(SLICE1, THREE_ONE_TAINTED),
            with_devices(SLICE2, [device("device-1", TAINT1)]),
        ],
        [],
    ),
    "nil-selector-matches-none": (
        [add(SLICE1), add(SLICE2), add(NO_SELECTOR)],
        [SLICE1, SLICE2],
        [],
    ),
}


def permutations(events: list[Any]) -> Iterator[list[Event]]:
    """Every order of the flattened events in which each nested list keeps its order
    (upstream's ``permutate``)."""
    flat: list[Event] = []
    chains: list[list[int]] = []
    for entry in events:
        if isinstance(entry, list):
            chains.append(list(range(len(flat), len(flat) + len(entry))))
            flat.extend(entry)
        else:
            flat.append(entry)
    for order in itertools.permutations(range(len(flat))):
        position = {index: at for at, index in enumerate(order)}
        if all(position[a] < position[b] for chain in chains for a, b in itertools.pairwise(chain)):
            yield [flat[i] for i in order]


def feed(store: DraStore, events: list[Event]) -> list[tuple[Obj, Obj]]:
    told: list[tuple[Obj, Obj]] = []
    store.on_slice_retainted = lambda old, new: told.append((old, new))
    for kind, old, new in events:
        if new is None:
            assert old is not None
            store.delete(kind, old)
        else:
            store.upsert(kind, new)
    return told


def by_name(slices: list[Obj]) -> list[Obj]:
    return sorted(slices, key=lambda s: s["metadata"]["name"])


@pytest.mark.parametrize("name", list(CASES))
def test_list_patched_resource_slices(name: str) -> None:
    events, expected, updates = CASES[name]
    snapshot = copy.deepcopy(events)
    for i, order in enumerate(permutations(events)):
        store = DraStore()
        told = feed(store, order)
        assert by_name(store.list_slices()) == by_name(expected), order
        if i == 0:  # the order as written: which updates the rule changes sent
            assert told == updates
    assert events == snapshot  # patching copies; the informers' objects stay as they were


# -- beyond the tracker's table ----------------------------------------------------------


def test_no_rules_list_is_the_same_object_and_holds_the_stored_slices() -> None:
    store = DraStore()
    store.upsert(RESOURCE_SLICE, SLICE1)
    store.upsert(RESOURCE_SLICE, SLICE2)
    listed = store.list_slices()
    assert store.list_slices() is listed
    assert listed[0] is SLICE1 and listed[1] is SLICE2
    # A rule that matches nothing changes nothing: the list and the revision stay.
    revision = store.slices_revision
    store.upsert(DEVICE_TAINT_RULE, NO_SELECTOR)
    store.upsert(DEVICE_TAINT_RULE, rule("other", driver="other.example.com"))
    assert store.list_slices() is listed
    assert store.slices_revision == revision


def test_untouched_slices_stay_the_same_objects_and_the_patched_copy_is_kept() -> None:
    """The allocator caches parsed slices by identity: a rule copies only what it taints,
    and the copy is listed again until its slice or a rule touching it changes."""
    store = DraStore()
    store.upsert(RESOURCE_SLICE, SLICE1)
    store.upsert(RESOURCE_SLICE, SLICE2)
    revision = store.slices_revision
    store.upsert(DEVICE_TAINT_RULE, POOL1_DEVICES)
    assert store.slices_revision > revision
    first = store.list_slices()
    assert first[1] is SLICE2 and first[0] == SLICE1_TAINTED
    assert store.list_slices() is first
    # Another slice changes: the patched copy of s1 is the same object in the new list.
    store.upsert(RESOURCE_SLICE, with_devices(SLICE2, THREE))
    second = store.list_slices()
    assert second is not first and second[0] is first[0]
    # The rule's status moves (its taint and selector do not): nothing changes for readers.
    revision = store.slices_revision
    store.upsert(DEVICE_TAINT_RULE, {**POOL1_DEVICES, "status": {"conditions": []}})
    assert store.list_slices() is second
    assert store.slices_revision == revision
    # The stored objects are the informers': a rule never writes into them.
    assert (
        store.get(RESOURCE_SLICE, "s1") is SLICE1 and "taints" not in SLICE1["spec"]["devices"][0]
    )


def test_a_rule_change_that_retaints_sends_old_and_new_as_readers_saw_them() -> None:
    store = DraStore()
    store.upsert(RESOURCE_SLICE, SLICE1)
    told = feed(store, [add(rule(taint=TAINT2))])
    assert told == [(SLICE1, SLICE1_ALREADY_TAINTED)]
    before = store.list_slices()[0]
    told = feed(store, [update(rule(taint=TAINT2), rule(taint=TAINT1))])
    ((old, new),) = told
    assert old is before and new == SLICE1_TAINTED
    assert store.list_slices()[0] is new
    # The effect changes: a different taint, another update.
    none = {**TAINT1, "effect": "None"}
    told = feed(store, [update(rule(), rule(taint=none))])
    assert told == [(SLICE1_TAINTED, with_devices(SLICE1, [device("device-1", none)]))]
    told = feed(store, [remove(rule())])
    assert told[0][1] is SLICE1 and store.list_slices() == [SLICE1]


def test_rules_apply_in_name_order_after_the_devices_own_taints() -> None:
    store = DraStore()
    store.upsert(RESOURCE_SLICE, SLICE1_ALREADY_TAINTED)
    third = {**TAINT1, "key": "example.com/third"}
    store.upsert(DEVICE_TAINT_RULE, rule("b", taint=third))
    store.upsert(DEVICE_TAINT_RULE, rule("a", taint=TAINT1))
    (listed,) = store.list_slices()
    assert listed["spec"]["devices"][0]["taints"] == [TAINT2, TAINT1, third]


def test_deleting_a_slice_drops_its_patched_copy() -> None:
    store = DraStore()
    store.upsert(DEVICE_TAINT_RULE, ALL_DEVICES)
    store.upsert(RESOURCE_SLICE, SLICE1)
    store.upsert(RESOURCE_SLICE, SLICE2)
    assert by_name(store.list_slices()) == [SLICE1_TAINTED, SLICE2_TAINTED]
    store.delete(RESOURCE_SLICE, SLICE1)
    assert store.list_slices() == [SLICE2_TAINTED]
    store.delete(DEVICE_TAINT_RULE, ALL_DEVICES)
    assert store.list_slices() == [SLICE2] and store.list_slices()[0] is SLICE2


def test_apply_rules_matches_each_selector_field() -> None:
    s = with_devices(SLICE1, THREE)
    assert apply_rules(s, [TaintRule(NO_SELECTOR)]) is s
    assert apply_rules(s, [TaintRule(rule(driver=DRIVER2))]) is s
    assert apply_rules(s, [TaintRule(rule(pool=POOL2))]) is s
    assert apply_rules(s, [TaintRule(rule(device="device-9"))]) is s
    assert apply_rules(s, [TaintRule(rule(device="device-1"))]) == with_devices(
        SLICE1, THREE_ONE_TAINTED
    )
    tainted = apply_rules(s, [TaintRule(ALL_DEVICES)])
    assert [d["taints"] for d in tainted["spec"]["devices"]] == [[TAINT1]] * 3
    assert s == with_devices(SLICE1, THREE)  # not written into


def test_patched_slices_without_rules_is_empty() -> None:
    patched = PatchedSlices()
    assert not patched
    patched.slice_changed("s1", SLICE1)
    assert patched.visible("s1", SLICE1) is SLICE1
    assert patched.rule_changed("r", None, {"s1": SLICE1}) == []
