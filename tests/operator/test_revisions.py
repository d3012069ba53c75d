"""SchedulerProfile history as ControllerRevisions (DaemonSet-style numbering and pruning),
and the book's rule that only a spec put in force becomes a revision."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from multisched.meta import now_time
from multisched.operator.profiles import ProfileBook
from multisched.operator.revisions import (
    CHANGE_CAUSE,
    PROFILE_UID_LABEL,
    RevisionKeeper,
    revision_name,
)
from multisched.scheduler import default_registry
from multisched.transport import ApiError


class FakeApi:
    """ControllerRevisions of one namespace, as the API server keeps them."""

    def __init__(self) -> None:
        self.store: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []

    async def request(self, method: str, path: str, body: Any = None, **kw: Any) -> dict[str, Any]:
        self.calls.append(method)
        name = path.rsplit("/", 1)[1]
        if method == "GET":
            return {"items": [copy.deepcopy(r) for r in self.store.values()]}
        if method == "POST":
            if body["metadata"]["name"] in self.store:
                raise ApiError(409, "already exists")
            self.store[body["metadata"]["name"]] = copy.deepcopy(body)
            return body
        if method == "PATCH":
            rev = self.store[name]
            rev["revision"] = body["revision"]
            rev["metadata"]["annotations"].update(body["metadata"]["annotations"])
            return rev
        if method == "DELETE":
            del self.store[name]
            return {}
        raise AssertionError(method)


def keeper() -> tuple[RevisionKeeper, FakeApi]:
    api = FakeApi()
    return RevisionKeeper(api, "multisched", lambda: True), api  # type: ignore[arg-type]


def spec(name: str, **extra: Any) -> dict[str, Any]:
    return {"profiles": [{"schedulerName": name}], **extra}


def numbers(api: FakeApi) -> dict[str, int]:
    return {n: r["revision"] for n, r in api.store.items()}


async def test_each_new_spec_is_the_next_revision_owned_by_its_profile() -> None:
    keep, api = keeper()
    first = await keep.record("team-a", "uid-1", 1, spec("a"), {CHANGE_CAUSE: "initial"})
    second = await keep.record("team-a", "uid-1", 2, spec("b"), {})
    assert first == (revision_name("team-a", spec("a")), 1)
    assert second == (revision_name("team-a", spec("b")), 2)
    rev = api.store[first[0]]
    assert rev["data"] == {"spec": spec("a")}
    assert rev["metadata"]["labels"] == {PROFILE_UID_LABEL: "uid-1"}
    assert rev["metadata"]["annotations"][CHANGE_CAUSE] == "initial"
    assert rev["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert rev["metadata"]["ownerReferences"][0]["controller"] is True


async def test_a_spec_that_comes_back_reuses_its_revision_with_the_next_number() -> None:
    keep, api = keeper()
    a = (await keep.record("p", "u", 1, spec("a"), {}))[0]
    b = (await keep.record("p", "u", 2, spec("b"), {}))[0]
    assert await keep.record("p", "u", 3, spec("a"), {}) == (a, 3)  # a rollback to a
    assert numbers(api) == {a: 3, b: 2}
    writes = len(api.calls)
    assert await keep.record("p", "u", 3, spec("a"), {}) == (a, 3)  # a restart: nothing new
    assert api.calls[writes:] == ["GET"]


async def test_history_is_bounded_but_never_drops_the_revision_in_force() -> None:
    keep, api = keeper()
    for i in range(5):
        await keep.record("p", "u", i + 1, spec(f"s{i}", revisionHistoryLimit=2), {})
    assert sorted(numbers(api).values()) == [3, 4, 5]  # two old ones and the one in force
    await keep.record("p", "u", 6, spec("last", revisionHistoryLimit=0), {})
    assert list(numbers(api).values()) == [6]


async def test_revisions_of_other_profiles_are_left_alone() -> None:
    keep, api = keeper()
    other = (await keep.record("q", "other-uid", 1, spec("q", revisionHistoryLimit=0), {}))[0]
    for i in range(3):
        await keep.record("p", "u", i + 1, spec(f"p{i}", revisionHistoryLimit=0), {})
    assert other in api.store
    assert [r["revision"] for r in await keep.history("u")] == [3]


async def test_a_labelled_revision_the_profile_does_not_own_is_ignored() -> None:
    keep, api = keeper()
    planted: dict[str, Any] = {
        "metadata": {"name": "p-planted", "labels": {PROFILE_UID_LABEL: "u"}, "annotations": {}},
        "data": {"spec": spec("evil")},
        "revision": 50,
    }
    api.store["p-planted"] = copy.deepcopy(planted)
    foreign = copy.deepcopy(planted)
    foreign["metadata"]["name"] = "p-foreign"
    foreign["metadata"]["ownerReferences"] = [{"kind": "SchedulerProfile", "uid": "other"}]
    api.store["p-foreign"] = foreign
    assert await keep.history("u") == []
    for i in range(2):
        await keep.record("p", "u", i + 1, spec(f"p{i}", revisionHistoryLimit=0), {})
    # Numbered as if they were not there, and never pruned as the profile's own.
    assert [r["revision"] for r in await keep.history("u")] == [2]
    assert api.store["p-planted"] == planted and "p-foreign" in api.store


def profile(name: str, generation: int, sched: str, plugin: str = "") -> dict[str, Any]:
    prof: dict[str, Any] = {"schedulerName": sched}
    if plugin:
        prof["plugins"] = {"score": {"enabled": [{"name": plugin}]}}
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "generation": generation},
        "spec": {"profiles": [prof]},
    }


@pytest.fixture
def book() -> ProfileBook:
    from multisched.config import ResolvedConfig
    from multisched.scheduler import Scheduler

    sched = Scheduler(ResolvedConfig(profiles=()), default_registry())
    return ProfileBook(default_registry(), sched.build_profiles)


def test_only_a_spec_in_force_awaits_a_revision(book: ProfileBook) -> None:
    book.observe(profile("a", 1, "s1"))
    book.combine()
    (obj,) = book.unrecorded()
    obj.revision, obj.revision_generation = ("a-x", 1), 1
    assert book.unrecorded() == []
    book.observe(profile("a", 2, "s1", plugin="NoSuchPlugin"))  # refused: last good stays
    book.combine()
    assert book.unrecorded() == []
    assert book.desired_status("a", now_time)["revision"] == 1  # type: ignore[index]
    # A valid spec that loses its schedulerName to an older object is not in force either.
    book.observe(profile("b", 1, "s1"))
    book.combine()
    assert [o.name for o in book.unrecorded()] == []
