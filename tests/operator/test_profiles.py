"""Combining SchedulerProfile objects: validity per object, names by age, statuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from multisched.config import ResolvedConfig
from multisched.framework import Framework
from multisched.meta import now_time
from multisched.operator.profiles import ProfileBook, condition_message, too_deep
from multisched.scheduler import Scheduler, default_registry
from multisched.validation.limits import CONDITION_MESSAGE_LIMIT


def obj(
    name: str,
    spec: dict[str, Any],
    created: str = "2024-01-01T00:00:00Z",
    generation: int = 1,
    uid: str | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": uid or f"uid-{name}",
            "creationTimestamp": created,
            "generation": generation,
        },
        "spec": spec,
        "status": status or {},
    }


def names(*scheduler_names: str, **fields: Any) -> dict[str, Any]:
    return {"profiles": [{"schedulerName": n} for n in scheduler_names], **fields}


BAD = {"profiles": [{"schedulerName": "x", "plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}]}


@pytest.fixture
def book() -> ProfileBook:
    registry = default_registry(load_entry_points=False)
    scheduler = Scheduler(ResolvedConfig(profiles=()), registry)
    return ProfileBook(registry, scheduler.build_profiles)


def test_valid_object_is_applied(book: ProfileBook) -> None:
    assert book.observe(obj("a", names("s1", "s2")))
    combined = book.combine()
    assert [p.scheduler_name for p in combined.config.profiles] == ["s1", "s2"]
    assert set(combined.frameworks) == {"s1", "s2"}
    assert combined.owners == {"s1": "a", "s2": "a"}
    verdict = combined.verdicts["a"]
    assert (verdict.ready, verdict.reason) == (True, "Applied")


def test_the_same_generation_is_not_parsed_again(book: ProfileBook) -> None:
    assert book.observe(obj("a", names("s1")))
    assert not book.observe(obj("a", names("s1"), status={"observedGeneration": 1}))
    assert book.objects["a"].status == {"observedGeneration": 1}


def test_invalid_first_generation_applies_nothing(book: ProfileBook) -> None:
    book.observe(obj("a", BAD))
    combined = book.combine()
    assert combined.config.profiles == ()
    verdict = combined.verdicts["a"]
    assert (verdict.ready, verdict.reason) == (False, "InvalidConfiguration")
    assert "Nope" in verdict.message
    assert verdict.in_effect == ()


def test_invalid_edit_keeps_the_last_good_generation(book: ProfileBook) -> None:
    book.observe(obj("a", names("x")))
    first = book.combine().frameworks["x"]
    assert book.observe(obj("a", BAD, generation=2))
    combined = book.combine()
    assert combined.frameworks["x"] is first  # the very same instance keeps scheduling
    verdict = combined.verdicts["a"]
    assert (verdict.ready, verdict.reason) == (False, "InvalidConfiguration")
    assert "Nope" in verdict.message and "generation 1" in verdict.message
    assert [p.scheduler_name for p in verdict.in_effect] == ["x"]


def test_a_plugin_that_fails_to_start_is_an_invalid_configuration() -> None:
    registry = default_registry(load_entry_points=False)

    def refuse(config: ResolvedConfig) -> dict[str, Framework]:
        raise RuntimeError("profile x: plugin NodeAffinity failed to start: bad args")

    book = ProfileBook(registry, refuse)
    book.observe(obj("a", names("x")))
    verdict = book.combine().verdicts["a"]
    assert (verdict.ready, verdict.reason) == (False, "InvalidConfiguration")
    assert "failed to start" in verdict.message


def test_a_plugin_without_all_of_its_points_methods_is_an_invalid_configuration() -> None:
    class HalfReserve:  # a user's plugin: ReservePlugin asks for unreserve too
        name = "HalfReserve"

        def __init__(self, args: Any, handle: Any) -> None:
            pass

        def reserve(self, state: Any, pod: Any, node_name: str) -> None:
            return None

    registry = default_registry(load_entry_points=False)
    registry.register(HalfReserve)
    book = ProfileBook(registry, Scheduler(ResolvedConfig(profiles=()), registry).build_profiles)
    spec = {
        "profiles": [
            {"schedulerName": "x", "plugins": {"reserve": {"enabled": [{"name": "HalfReserve"}]}}}
        ]
    }
    book.observe(obj("a", spec))
    verdict = book.combine().verdicts["a"]
    assert (verdict.ready, verdict.reason) == (False, "InvalidConfiguration")
    assert verdict.message == (
        "profile x: plugin HalfReserve does not implement reserve: it has no unreserve"
    )


@pytest.mark.parametrize("order", [("older", "newer"), ("newer", "older")])
def test_the_older_object_keeps_a_contested_name(book: ProfileBook, order: tuple[str, str]) -> None:
    objects = {
        "older": obj("older", names("shared", "mine"), created="2024-01-01T00:00:00Z"),
        "newer": obj("newer", names("shared", "other"), created="2024-01-02T00:00:00Z"),
    }
    for name in order:
        book.observe(objects[name])
    combined = book.combine()
    assert combined.owners == {"shared": "older", "mine": "older"}
    # The newer object is left out as a whole, "other" included.
    assert "other" not in combined.frameworks
    verdict = combined.verdicts["newer"]
    assert (verdict.ready, verdict.reason) == (False, "SchedulerNameConflict")
    assert verdict.message == 'schedulerName "shared" is already served by SchedulerProfile "older"'


def test_equal_creation_times_are_ordered_by_name(book: ProfileBook) -> None:
    book.observe(obj("b", names("shared")))
    book.observe(obj("a", names("shared")))
    assert book.combine().owners == {"shared": "a"}


def test_deleting_the_owner_hands_the_name_over(book: ProfileBook) -> None:
    older = obj("older", names("shared"), created="2024-01-01T00:00:00Z")
    book.observe(older)
    book.observe(obj("newer", names("shared"), created="2024-01-02T00:00:00Z"))
    book.combine()
    assert book.forget(older)
    combined = book.combine()
    assert combined.owners == {"shared": "newer"}
    assert combined.verdicts["newer"].ready


def test_a_deleted_and_recreated_name_is_a_new_object(book: ProfileBook) -> None:
    book.observe(obj("a", names("s1"), uid="one"))
    assert not book.forget(obj("a", names("s1"), uid="two"))  # a stale deletion
    assert book.observe(obj("a", names("s2"), uid="two"))  # same generation, new object
    assert set(book.combine().frameworks) == {"s2"}


def test_global_settings_come_from_the_oldest_applied_object(book: ProfileBook) -> None:
    book.observe(
        obj(
            "young",
            names("y", percentageOfNodesToScore=10, podMaxBackoffSeconds=99),
            created="2024-02-01T00:00:00Z",
        )
    )
    book.observe(
        obj(
            "old",
            names("o", percentageOfNodesToScore=70, podInitialBackoffSeconds=2),
            created="2024-01-01T00:00:00Z",
        )
    )
    config = book.combine().config
    assert config.percentage_of_nodes_to_score == 70
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2, 10)


def test_desired_status_is_written_once(book: ProfileBook) -> None:
    book.observe(obj("a", names("s1")))
    book.combine()
    status = book.desired_status("a", now_time)
    assert status is not None
    assert status["observedGeneration"] == 1
    assert status["profiles"][0]["schedulerName"] == "s1"
    assert status["profiles"][0]["plugins"]["queueSort"] == ["PrioritySort"]
    (cond,) = status["conditions"]
    assert {k: cond[k] for k in ("type", "status", "reason", "observedGeneration")} == {
        "type": "Ready",
        "status": "True",
        "reason": "Applied",
        "observedGeneration": 1,
    }
    # Once the API shows it, nothing more to write.
    book.observe(obj("a", names("s1"), status=status))
    assert book.desired_status("a", now_time) is None


def test_transition_time_changes_only_with_the_status(book: ProfileBook) -> None:
    shown = {
        "observedGeneration": 1,
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "InvalidConfiguration",
                "message": "old problem",
                "observedGeneration": 1,
                "lastTransitionTime": "2020-01-01T00:00:00Z",
            }
        ],
    }
    book.observe(obj("a", BAD, generation=2, status=shown))
    book.combine()
    status = book.desired_status("a", now_time)
    assert status is not None
    assert status["conditions"][0]["lastTransitionTime"] == "2020-01-01T00:00:00Z"
    book.observe(obj("a", names("x"), generation=3, status=shown))
    book.combine()
    status = book.desired_status("a", now_time)
    assert status is not None
    assert status["conditions"][0]["status"] == "True"
    assert status["conditions"][0]["lastTransitionTime"] != "2020-01-01T00:00:00Z"


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("depth", [70, 5000])
def test_a_poison_object_is_invalid_and_the_others_keep_running(
    book: ProfileBook, depth: int
) -> None:
    """The issue's 900-deep args (the API server stores up to 10,000 levels): far past
    Python's recursion limit, yet only that object fails, on its status."""
    poison = names("poison")
    poison["profiles"][0]["pluginConfig"] = [{"name": "Custom", "args": _nested(depth)}]
    book.observe(obj("good", names("good")))
    assert book.observe(obj("poison", poison, created="2025-01-01T00:00:00Z"))
    combined = book.combine()
    assert set(combined.frameworks) == {"good"}
    verdict = combined.verdicts["poison"]
    assert (verdict.ready, verdict.reason) == (False, "InvalidConfiguration")
    assert verdict.message == (
        "profiles[0].pluginConfig[0].args.a.a.a.…: nested more than 64 levels deep"
    )
    status = book.desired_status("poison", now_time)
    assert status is not None and status["conditions"][0]["status"] == "False"


def test_ordinary_nesting_is_read(book: ProfileBook) -> None:
    spec = names("x")
    spec["profiles"][0]["pluginConfig"] = [{"name": "NodeAffinity", "args": _nested(40)}]
    book.observe(obj("a", spec))
    message = book.combine().verdicts["a"].message
    assert "levels deep" not in message and "unknown field" in message


def test_too_deep_walks_without_recursion() -> None:
    assert too_deep({"a": [1, {"b": 2}]}, 3) is None
    assert too_deep({"a": [1, {"b": {"c": 3}}]}, 3) == "a[1].b.c"
    assert too_deep(_nested(100_000), 64) == "a.a.a.a.a.a.a.a.…"


def test_a_recursion_error_in_a_plugin_is_the_objects_problem() -> None:
    registry = default_registry(load_entry_points=False)

    def recurse(config: ResolvedConfig) -> dict[str, Framework]:
        raise RecursionError("maximum recursion depth exceeded")

    book = ProfileBook(registry, recurse)
    book.observe(obj("a", names("x")))
    verdict = book.combine().verdicts["a"]
    assert (verdict.ready, verdict.message) == (False, "too deeply nested to read")


def test_a_condition_message_fits_the_api_limit(book: ProfileBook) -> None:
    """The issue's > 32,768-character Ready message: the API refused the whole status."""
    spec = names("x")
    spec["profiles"][0]["plugins"] = {
        "filter": {"enabled": [{"name": f"NoSuchPlugin{i:05}" + "é" * 40} for i in range(400)]}
    }
    book.observe(obj("a", spec))
    full = book.combine().verdicts["a"].message
    assert len(full.encode()) > CONDITION_MESSAGE_LIMIT
    status = book.desired_status("a", now_time)
    assert status is not None
    message = status["conditions"][0]["message"]
    assert len(message.encode()) <= CONDITION_MESSAGE_LIMIT
    kept, note = message.rsplit("\n", 1)
    assert full.startswith(kept)
    total = full.count("\n") + 1
    shown = kept.count("\n") + 1
    assert note == f"… ({total - shown} of {total} problems not shown)"
    assert shown > 100
    assert condition_message("short") == "short"


def test_a_reserved_name_is_never_served_and_the_object_is_left_out_whole() -> None:
    registry = default_registry(load_entry_points=False)
    scheduler = Scheduler(ResolvedConfig(profiles=()), registry)
    book = ProfileBook(
        registry, scheduler.build_profiles, frozenset({"default-scheduler", "volcano"})
    )
    book.observe(obj("greedy", names("mine", "volcano")))
    book.observe(obj("fine", names("other"), created="2024-02-01T00:00:00Z"))
    combined = book.combine()
    assert set(combined.frameworks) == {"other"}  # not even "mine": one object, one unit
    verdict = combined.verdicts["greedy"]
    assert (verdict.ready, verdict.reason) == (False, "ReservedSchedulerName")
    assert verdict.message == (
        'schedulerName "volcano" is reserved for another scheduler (--reserved-scheduler-names): '
        "multisched does not serve it"
    )
    status = book.desired_status("greedy", now_time)
    assert status is not None and status["conditions"][0]["status"] == "False"


WRITTEN_CONFIG = (
    Path(__file__).parents[1] / "config" / "fixtures" / "kube-scheduler-v1.37.2-write-config.yaml"
)


def _written_spec(scheduler_name: str) -> dict[str, Any]:
    """The profiles kube-scheduler v1.37.2 --write-config-to writes, as a SchedulerProfile's
    spec (its own schedulerName: default-scheduler is kube-scheduler's)."""
    written = yaml.safe_load(WRITTEN_CONFIG.read_text())
    profiles = written["profiles"]
    profiles[0]["schedulerName"] = scheduler_name
    keep = ("percentageOfNodesToScore", "podInitialBackoffSeconds", "podMaxBackoffSeconds")
    return {"profiles": profiles, **{k: written[k] for k in keep}}


def test_the_profiles_kube_scheduler_v137_writes_are_applied(book: ProfileBook) -> None:
    book.observe(obj("written", _written_spec("written")))
    combined = book.combine()
    verdict = combined.verdicts["written"]
    assert (verdict.ready, verdict.reason) == (True, "Applied"), verdict.message
    (prof,) = combined.config.profiles
    assert prof.score_weights["VolumeBinding"] == 1
    assert "DynamicResources" in prof.plugins["preFilter"]


@pytest.mark.parametrize("point", ["placementGenerate", "placementScore", "podGroupPostFilter"])
def test_a_plugin_at_a_pod_group_point_is_an_invalid_configuration(
    book: ProfileBook, point: str
) -> None:
    spec = _written_spec("written")
    spec["profiles"][0]["plugins"][point] = {"enabled": [{"name": "ImageLocality"}]}
    book.observe(obj("written", spec))
    verdict = book.combine().verdicts["written"]
    assert (verdict.ready, verdict.reason) == (False, "InvalidConfiguration")
    assert verdict.message == (
        f"profiles[0](written).plugins.{point}.enabled[0](ImageLocality): no built-in plugin "
        f"implements {point} yet"
    )
