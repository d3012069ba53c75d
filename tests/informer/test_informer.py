"""The informer against a scripted API: list, watch, resume, relist and reconcile."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import AsyncIterator
from typing import Any
from unittest import mock

import pytest

from multisched.informer.informer import Backoff, Informer, InformerSettings
from multisched.operator.intake import Feed, Intake
from multisched.transport import Resource, list_pages
from multisched.transport import requests as requests_module
from multisched.transport.requests import continue_token

from .fake_api import FakeApi, Recorder, obj, until

NODES = Resource("", "v1", "nodes")
FAST = InformerSettings(page_size=2, backoff_initial_seconds=0.01, backoff_max_seconds=0.05)


@contextlib.asynccontextmanager
async def informing(
    api: FakeApi, rec: Recorder, **kwargs: Any
) -> AsyncIterator[tuple[Informer, asyncio.Task[None]]]:
    async with api as api_client:
        informer = Informer(
            api_client, NODES, rec.upsert, rec.delete, settings=FAST, rng=random.Random(1), **kwargs
        )
        task = asyncio.create_task(informer.run())
        try:
            yield informer, task
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def added(name: str, rv: int, uid: str | None = None) -> dict[str, Any]:
    return {"type": "ADDED", "object": obj(name, rv, uid)}


async def test_lists_every_page_then_watches_from_the_lists_version() -> None:
    api, rec = FakeApi(), Recorder()
    api.put(obj("a", 1), obj("b", 2), obj("c", 3), obj("d", 4), obj("e", 5))
    api.list_rv = "7"
    async with informing(api, rec) as (informer, _):
        await asyncio.wait_for(informer.synced.wait(), 5)
        await until("a watch", lambda: api.watch_requests)
        assert sorted(rec.live) == ["a", "b", "c", "d", "e"]
        assert [r.get("continue") for r in api.list_requests] == [None, "2", "4"]
        assert {r["limit"] for r in api.list_requests} == {"2"}
        watch = api.watch_requests[0]
        assert watch["resourceVersion"] == "7"
        assert watch["allowWatchBookmarks"] == "true"


async def test_a_relist_after_gone_deletes_what_vanished_and_only_that() -> None:
    api, rec = FakeApi(), Recorder()
    api.put(obj("a", 1), obj("b", 2), obj("c", 3))
    api.watches = [410]  # the first watch: our resourceVersion was compacted away
    relisted: list[int] = []
    async with informing(api, rec, on_relisted=lambda: relisted.append(1)) as (informer, _):
        await asyncio.wait_for(informer.synced.wait(), 5)
        # While the watch was down: b was deleted, c was replaced by a new object (new uid),
        # d appeared, a did not change.
        del api.objects["b"]
        api.put(obj("c", 9, uid="uid-c2"), obj("d", 10))
        api.list_rv = "10"
        await until("the relist", lambda: informer.lists == 2)
    assert sorted(rec.live) == ["a", "c", "d"]
    assert rec.live["c"]["metadata"]["uid"] == "uid-c2"
    after = rec.seen[3:]
    assert ("delete", "b") in after and ("delete", "c") in after and ("upsert", "d") in after
    assert ("upsert", "a") not in after  # same resourceVersion: nothing to tell
    assert relisted == [1]


async def test_an_error_event_with_410_relists() -> None:
    api, rec = FakeApi(), Recorder()
    api.put(obj("a", 1))
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
    api.watches = [[added("b", 2), gone]]
    async with informing(api, rec) as (informer, _):
        await until("the relist", lambda: informer.lists == 2)
    # b came by the watch, then the relist (which does not hold it) took it back.
    assert sorted(rec.live) == ["a"]
    assert ("delete", "b") in rec.seen


async def test_bookmarks_advance_the_resource_version_a_resumed_watch_uses() -> None:
    api, rec = FakeApi(), Recorder()
    api.put(obj("a", 1))
    api.list_rv = "1"
    bookmark = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "42"}}}
    api.watches = [[added("b", 5), bookmark]]  # then the stream ends (server timeout)
    async with informing(api, rec) as (informer, _):
        await until("the resumed watch", lambda: len(api.watch_requests) == 2)
        assert informer.lists == 1  # resumed, not listed again
    assert [r["resourceVersion"] for r in api.watch_requests] == ["1", "42"]
    assert rec.seen == [("upsert", "a"), ("upsert", "b")]


async def test_watch_events_reach_the_handlers_in_order() -> None:
    api, rec = FakeApi(), Recorder()
    api.watches = [
        [
            added("a", 2),
            {"type": "MODIFIED", "object": obj("a", 3)},
            {"type": "DELETED", "object": obj("a", 4)},
            added("a", 5, uid="uid-a2"),
            "...",
        ]
    ]
    async with informing(api, rec) as (informer, _):
        await until("four events", lambda: len(rec.seen) == 4)
        assert informer.resource_version == "5"
        assert informer.known == {"a": ("uid-a2", "5")}
    assert rec.seen == [("upsert", "a"), ("upsert", "a"), ("delete", "a"), ("upsert", "a")]


async def test_errors_back_off_and_an_outage_logs_one_line_each_way(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api, rec = FakeApi(), Recorder()
    api.watches = [500, 500, 503, 500, ["..."]]
    caplog.set_level(logging.INFO, "multisched.informer")
    async with informing(api, rec) as (informer, _):
        await until("the fifth watch", lambda: len(api.watch_requests) == 5)
        await until("recovery", lambda: informer.healthy)
        assert informer.backoff.failures == 0  # reset by the success
        assert informer.lists == 1  # a failed watch resumes; it does not list again
    lines = [r.getMessage() for r in caplog.records]
    assert len([m for m in lines if "watch failed" in m]) == 1
    assert len([m for m in lines if "watching again" in m and "4 failed attempts" in m]) == 1


def test_backoff_doubles_with_jitter_up_to_the_cap() -> None:
    backoff = Backoff(1.0, 8.0, random.Random(0))
    delays = [backoff.next_delay() for _ in range(6)]
    caps = [1, 2, 4, 8, 8, 8]
    assert all(cap / 2 <= d <= cap for d, cap in zip(delays, caps, strict=True))
    backoff.reset()
    assert backoff.next_delay() <= 1.0


async def test_a_failing_list_is_retried_and_the_kind_stays_unsynced_meanwhile() -> None:
    api, rec = FakeApi(), Recorder()
    api.put(obj("a", 1))
    api.list_status = 500
    async with informing(api, rec) as (informer, _):
        await until("three list attempts", lambda: len(api.list_requests) >= 3)
        assert not informer.synced.is_set() and not informer.healthy
        api.list_status = 200
        await asyncio.wait_for(informer.synced.wait(), 5)
    assert rec.live.keys() == {"a"}


async def test_an_undecodable_event_is_skipped_not_fatal() -> None:
    api, rec = FakeApi(), Recorder()
    # Nested deeper than any recursion limit lets Python decode, and a line cut short.
    meta = json.dumps(obj("poison", 2)["metadata"]).encode()
    deep = b'{"x":' * 200_000 + b"{}" + b"}" * 200_000
    poison = b'{"type":"ADDED","object":{"metadata":' + meta + b',"spec":' + deep + b"}}"
    cut = b'{"type":"ADDED","object":{"metadata":' + meta
    api.watches = [[poison, cut, added("b", 3), "..."]]
    async with informing(api, rec):
        await until("the next event", lambda: "b" in rec.live)
    assert "poison" not in rec.live


async def test_a_handler_that_raises_costs_one_object_only() -> None:
    api, rec = FakeApi(), Recorder()
    api.put(obj("a", 1), obj("b", 2))

    def upsert(o: dict[str, Any]) -> None:
        if o["metadata"]["name"] == "a":
            raise RuntimeError("bug")
        rec.upsert(o)

    async with api as api_client:
        informer = Informer(api_client, NODES, upsert, rec.delete, settings=FAST)
        task = asyncio.create_task(informer.run())
        await asyncio.wait_for(informer.synced.wait(), 5)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert rec.live.keys() == {"b"}


# -- the intake's barrier ------------------------------------------------------------------


async def test_the_gate_holds_until_every_kind_is_listed() -> None:
    api, rec = FakeApi(), Recorder()
    api.put(obj("a", 1))
    api.list_gate = asyncio.Event()
    async with api as api_client:
        intake = Intake(api_client, [Feed(NODES, rec.upsert, rec.delete)], settings=FAST)
        intake.start()
        try:
            gate = asyncio.ensure_future(intake.gate())
            await asyncio.sleep(0.3)
            assert not gate.done() and not intake.synced
            api.list_gate.set()
            await asyncio.wait_for(gate, 5)
            assert intake.synced and rec.live.keys() == {"a"}
        finally:
            await intake.stop()


async def test_a_stalled_process_relists_before_the_next_cycle() -> None:
    """After a freeze (SIGSTOP) the view may hold deleted nodes: the gate makes every
    kind list again, reconciling, before it lets a node be chosen."""
    api, rec = FakeApi(), Recorder()
    api.put(obj("a", 1), obj("b", 2))
    relisted: list[int] = []
    async with api as api_client:
        intake = Intake(
            api_client,
            [Feed(NODES, rec.upsert, rec.delete)],
            settings=FAST,
            on_relisted=lambda: relisted.append(1),
            stall_seconds=5.0,
        )
        intake.start()
        try:
            await asyncio.wait_for(intake.gate(), 5)
            del api.objects["b"]  # deleted while frozen; the open watch never said so
            intake._last_tick -= 10  # as if the loop had not run for 10 s
            await asyncio.wait_for(intake.gate(), 5)
            assert rec.live.keys() == {"a"}
            assert intake.stalls == 1 and relisted
            assert intake.informers[0].lists == 2
        finally:
            await intake.stop()


async def test_an_outage_of_several_kinds_is_one_line_down_and_one_line_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api, a, b = FakeApi(), Recorder(), Recorder()
    api.watches = [500, 503, 500, 500, 500, 500, ["..."], ["..."]]
    caplog.set_level(logging.DEBUG, "multisched")
    async with api as api_client:
        intake = Intake(
            api_client,
            [Feed(NODES, a.upsert, a.delete), Feed(NODES, b.upsert, b.delete)],
            settings=FAST,
        )
        intake.start()
        try:
            await until("both watching", lambda: len(api.watch_requests) >= 8 and intake.fresh)
        finally:
            await intake.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("watches failing (nodes")
    assert warnings[1].startswith("every watch is back after")
    assert "6 failed attempts" in warnings[1]


@pytest.mark.parametrize("status", [404, 403])
async def test_an_optional_kind_not_served_reads_as_none_until_it_is(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A CRD not installed (404), or not granted (403): synced with nothing, no outage,
    listed again later; once served it is watched like any kind."""
    api, rec = FakeApi(), Recorder()
    api.put(obj("a", 1))
    api.list_status = status
    caplog.set_level(logging.INFO, logger="multisched.informer")
    async with informing(api, rec, optional=True) as (informer, _):
        informer.absent_recheck_seconds = 0.05
        await asyncio.wait_for(informer.synced.wait(), 5)
        assert informer.absent and informer.healthy and not informer.in_outage
        assert rec.live == {} and not api.watch_requests
        await until("a second look", lambda: len(api.list_requests) >= 2)
        api.list_status = 200
        await until("the watch", lambda: api.watch_requests)
        assert sorted(rec.live) == ["a"] and not informer.absent
    said = [r.getMessage() for r in caplog.records]
    assert sum("read as none" in m for m in said) == 1  # once, not per look
    assert any("is served now" in m for m in said)


async def test_a_required_kind_not_served_is_an_outage() -> None:
    api, rec = FakeApi(), Recorder()
    api.list_status = 404
    async with informing(api, rec) as (informer, _):
        await until("the failure", lambda: informer.in_outage)
        assert not informer.synced.is_set()


async def test_the_next_page_is_asked_for_while_the_caller_digests_one() -> None:
    api = FakeApi()
    api.put(obj("a", 1), obj("b", 2), obj("c", 3), obj("d", 4), obj("e", 5))
    async with api as api_client:
        pages = list_pages(api_client, NODES, page_size=2)
        first = await anext(pages)
        assert [o["metadata"]["name"] for o in first.items] == ["a", "b"]
        # Page 2 is on its way before the caller asks for it.
        await until("the second page's request", lambda: len(api.list_requests) == 2)
        assert api.list_requests[1]["continue"] == "2"
        rest = [o["metadata"]["name"] async for page in pages for o in page.items]
        assert rest == ["c", "d", "e"]
        assert len(api.list_requests) == 3


async def test_a_caller_that_stops_early_cancels_the_page_on_its_way() -> None:
    api = FakeApi()
    api.put(obj("a", 1), obj("b", 2), obj("c", 3))
    api.list_gate = asyncio.Event()  # no page is answered until it is set
    async with api as api_client:
        pages = list_pages(api_client, NODES, page_size=2)
        api.list_gate.set()
        await anext(pages)
        api.list_gate.clear()  # the prefetched page hangs
        await until("the prefetch", lambda: len(api.list_requests) == 2)
        await asyncio.wait_for(pages.aclose(), 2)  # returns: the hanging request is cancelled
        api.list_gate.set()


def _names(pages: list[Any]) -> list[str]:
    return [o["metadata"]["name"] for page in pages for o in page.items]


async def test_the_next_page_is_asked_for_from_the_head_of_an_answer() -> None:
    """The continue token is read from the head of a page's bytes, and the next page's
    request is under way before this page is decoded."""
    api = FakeApi()
    api.put(obj("a", 1), obj("b", 2), obj("c", 3))
    started: list[str] = []
    started_at_decode: list[list[str]] = []
    real_request, real_decode = requests_module.request_raw, requests_module.decode_json

    async def request(*args: Any, **kwargs: Any) -> tuple[int, bytes]:
        started.append(dict(kwargs["query"]).get("continue", ""))
        return await real_request(*args, **kwargs)

    def decode(raw: bytes) -> Any:
        started_at_decode.append(list(started))
        return real_decode(raw)

    async with api as api_client:
        with (
            mock.patch.object(requests_module, "request_raw", request),
            mock.patch.object(requests_module, "decode_json", decode),
        ):
            pages = [page async for page in list_pages(api_client, NODES, page_size=2)]
    assert _names(pages) == ["a", "b", "c"]
    assert started == ["", "2"]
    assert started_at_decode == [["", "2"], ["", "2"]]


@pytest.mark.parametrize(
    "render",
    [
        # items before metadata: nothing at the head; the decoded list names the next page
        lambda body: json.dumps({"items": body["items"], "metadata": body["metadata"]}).encode(),
        # a head that names another token than the list (duplicate keys: the last one
        # counts when decoded): the early request is withdrawn, the right page asked for
        lambda body: (
            b'{"kind":"NodeList","metadata":{"continue":"0",'
            + json.dumps(body["metadata"])[1:].encode()
            + b',"items":'
            + json.dumps(body["items"]).encode()
            + b"}"
            if body["metadata"].get("continue")
            else json.dumps(body).encode()
        ),
    ],
    ids=["no-token-at-the-head", "a-wrong-token-at-the-head"],
)
async def test_a_head_that_misleads_still_lists_every_page_once(render: Any) -> None:
    api = FakeApi()
    api.put(*(obj(name, i) for i, name in enumerate("abcde", 1)))
    api.render_list = render
    async with api as api_client:
        pages = [page async for page in list_pages(api_client, NODES, page_size=2)]
    assert _names(pages) == ["a", "b", "c", "d", "e"]
    assert [p.resource_version for p in pages] == ["1", "1", "1"]


@pytest.mark.parametrize(
    ("raw", "token"),
    [
        (
            b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9",'
            b'"continue":"eyJydiI6OX0=","remainingItemCount":5},"items":[]}',
            "eyJydiI6OX0=",
        ),
        (b'{\n  "kind": "PodList",\n  "metadata": {\n    "continue": "abc"\n  }}', "abc"),
        (
            b'{"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[{"metadata":'
            b'{"continue":"no"}}]}',
            "",
        ),
        (b'{"items":[],"metadata":{"continue":"late"}}', ""),
        (b'{"kind":"Status","code":410}', ""),
    ],
)
def test_the_continue_token_at_the_head(raw: bytes, token: str) -> None:
    assert continue_token(raw) == token
