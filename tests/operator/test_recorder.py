"""The event recorder (client-go EventCorrelator semantics): aggregation into a count,
series patches, the per-object spam filter, the bounded queue, outages and step-downs."""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import pytest

from builders import pod_dict
from multisched.cache import PodInfo
from multisched.operator.recorder import (
    DROP_WARNING_SECONDS,
    SPAM_BURST,
    SPAM_REFILL_SECONDS,
    Recorder,
)
from multisched.transport import ApiError, Reachability, Unreachable


class Sink:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []
        self.statuses: list[tuple[str, dict[str, Any]]] = []
        self.down = 0  # fail this many sends as unreachable
        self.refuse: Exception | None = None
        self._names = itertools.count()

    def _maybe_fail(self) -> None:
        if self.down:
            self.down -= 1
            raise Unreachable("connection refused", maybe_sent=False)
        if self.refuse is not None:
            raise self.refuse

    async def create_event(self, body: dict[str, Any]) -> str:
        self._maybe_fail()
        self.created.append(body)
        return f"ev{next(self._names)}"

    async def patch_event(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self._maybe_fail()
        self.patched.append((name, patch))

    async def patch_pod_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        self._maybe_fail()
        self.statuses.append((f"{namespace}/{name}", status))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def event(pod: str = "web", message: str = "0/3 nodes are available", **kw: Any) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": pod, "namespace": "default", "uid": f"u-{pod}"},
        "type": "Warning",
        "reason": "FailedScheduling",
        "message": message,
        "source": {"component": "sched"},
        **kw,
    }


def recorder(sink: Sink, **kw: Any) -> Recorder:
    stamps = (f"2024-01-01T00:00:{i:02d}Z" for i in itertools.count())
    return Recorder(sink, now_stamp=lambda: next(stamps), retry_seconds=(0, 0), **kw)


async def test_identical_events_while_queued_become_one_with_a_count() -> None:
    sink = Sink()
    rec = recorder(sink)
    for _ in range(3):
        rec.record_event(event())
    rec.record_event(event(message="other"))
    await rec.flush()
    assert [(e["message"], e["count"]) for e in sink.created] == [
        ("0/3 nodes are available", 3),
        ("other", 1),
    ]
    first = sink.created[0]
    assert (first["firstTimestamp"], first["lastTimestamp"]) == (
        "2024-01-01T00:00:00Z",
        "2024-01-01T00:00:02Z",
    )
    await rec.close()


async def test_an_event_already_posted_is_patched_as_a_series() -> None:
    sink = Sink()
    rec = recorder(sink)
    rec.record_event(event())
    await rec.flush()
    rec.record_event(event())
    rec.record_event(event())
    await rec.flush()
    assert len(sink.created) == 1
    assert sink.patched == [("ev0", {"count": 3, "lastTimestamp": "2024-01-01T00:00:02Z"})]
    # The Event expired meanwhile (404 on the patch): a new one is posted.
    sink.refuse = ApiError(404, "not found")
    rec.record_event(event())
    await rec.flush()
    sink.refuse = None
    rec.record_event(event())
    await rec.flush()
    assert len(sink.created) == 2
    await rec.close()


async def test_one_object_is_rate_limited_others_are_not() -> None:
    sink, clock = Sink(), Clock()
    rec = recorder(sink, clock=clock)
    for i in range(SPAM_BURST + 5):
        rec.record_event(event("noisy", message=f"attempt {i}"))
    rec.record_event(event("quiet"))
    await rec.flush()
    posted = [e["involvedObject"]["name"] for e in sink.created]
    assert posted.count("noisy") == SPAM_BURST
    assert posted.count("quiet") == 1
    assert rec.dropped["events rate-limited"] == 5
    clock.now += SPAM_REFILL_SECONDS  # one more token after five minutes
    rec.record_event(event("noisy", message="later"))
    rec.record_event(event("noisy", message="too soon"))
    await rec.flush()
    assert [e["message"] for e in sink.created][-1] == "later"
    await rec.close()


async def test_a_full_queue_drops_the_oldest_and_counts() -> None:
    sink = Sink()
    rec = recorder(sink, max_queued=3)
    for i in range(5):
        rec.record_event(event(f"p{i}"))
    await rec.flush()
    assert [e["involvedObject"]["name"] for e in sink.created] == ["p2", "p3", "p4"]
    assert rec.take_dropped() == {"events dropped": 2}
    assert rec.take_dropped() == {}
    await rec.close()


async def test_a_full_queue_drops_events_never_a_pods_condition() -> None:
    """One sender, so the order is the recorder's: each pod's condition goes before any
    event, as kube-scheduler writes it before it moves on, and a full queue drops events."""
    sent: list[str] = []

    class Ordered(Sink):
        async def create_event(self, body: dict[str, Any]) -> str:
            sent.append(f"event {body['involvedObject']['name']}")
            return await super().create_event(body)

    def patch(pod: str) -> Any:
        async def send() -> None:
            sent.append(f"patch {pod}")

        return send

    rec = recorder(Ordered(), max_queued=3, senders=1)
    for i in range(5):
        rec.record_event(event(f"p{i}"))
        rec.record_patch(("PodScheduled", f"u-p{i}"), patch(f"p{i}"))
    await rec.flush()
    assert sent == [f"patch p{i}" for i in range(5)] + [f"event p{i}" for i in (2, 3, 4)]
    assert rec.take_dropped() == {"events dropped": 2}
    await rec.close()


async def test_a_full_queue_warns_once_per_five_minutes(caplog: Any) -> None:
    sink, clock = Sink(), Clock()
    sink.down = 10**6  # nothing leaves the queue
    rec = recorder(sink, max_queued=3, clock=clock)
    for i in range(6):
        rec.record_event(event(f"p{i}"))
    clock.now += DROP_WARNING_SECONDS - 1
    rec.record_event(event("p6"))
    clock.now += 1
    rec.record_event(event("p7"))
    warnings = [r.getMessage() for r in caplog.records if r.name.endswith("recorder")]
    assert warnings == [
        "the event queue is full (3 waiting): the oldest events are dropped (1 so far)",
        "the event queue is full (3 waiting): the oldest events are dropped (5 so far)",
    ]
    await rec.close()


async def test_writes_wait_out_an_outage_and_are_sent_once_it_ends() -> None:
    sink = Sink()
    rec = recorder(sink)
    sink.down = 4
    rec.record_event(event("a"))
    rec.record_event(event("b"))
    sent: list[str] = []

    async def patch() -> None:
        sent.append("patch")

    rec.record_patch(("PodScheduled", "u-a"), patch)
    await rec.flush()
    assert [e["involvedObject"]["name"] for e in sink.created] == ["a", "b"]
    assert sent == ["patch"]
    await rec.close()


async def test_a_newer_patch_for_the_same_pod_replaces_the_queued_one() -> None:
    sink = Sink()
    rec = recorder(sink)
    sent: list[str] = []

    def patch(text: str) -> Any:
        async def send() -> None:
            sent.append(text)

        return send

    sink.down = 1
    rec.record_event(event())  # holds the queue while "unreachable"
    rec.record_patch(("PodScheduled", "u-web"), patch("old"))
    rec.record_patch(("PodScheduled", "u-web"), patch("new"))
    await rec.flush()
    assert sent == ["new"]
    await rec.close()


async def test_refused_writes_are_dropped_and_logged_once_per_reason(caplog: Any) -> None:
    sink = Sink()
    rec = recorder(sink)
    sink.refuse = ApiError(403, "events is forbidden")
    for i in range(3):
        rec.record_event(event(f"p{i}"))
    await rec.flush()
    assert rec.dropped["events refused"] == 3
    assert [r.getMessage() for r in caplog.records if r.name.endswith("recorder")] == [
        "the API server refused a queued event: ApiError: events is forbidden (403)"
    ]
    await rec.close()


async def test_a_replica_that_stepped_down_sends_nothing_queued() -> None:
    sink = Sink()
    leading = [True]
    rec = recorder(sink, may_write=lambda: leading[0])
    sink.down = 1
    rec.record_event(event("a"))
    rec.record_event(event("b"))
    leading[0] = False
    await rec.flush()
    assert sink.created == []
    assert rec.dropped["writes skipped (not leading)"] == 2
    await rec.close()


class SlowSink(Sink):
    """Each request takes a while: what matters is how many are in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most_in_flight = 0
        self.release = asyncio.Event()

    async def create_event(self, body: dict[str, Any]) -> str:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await self.release.wait()
        self.in_flight -= 1
        return await super().create_event(body)


async def test_a_burst_is_posted_by_several_senders_never_two_of_one_key() -> None:
    sink = SlowSink()
    rec = recorder(sink, senders=4)
    for i in range(10):
        rec.record_event(event(pod=f"p{i}"))
    await asyncio.sleep(0.01)
    assert sink.most_in_flight == 4  # not one at a time, and no more than asked
    rec.record_event(event(pod="p0"))  # a copy of one in flight waits for it
    sink.release.set()
    await asyncio.wait_for(rec.flush(), 5)
    assert len(sink.created) == 10  # p0's copy became a series patch, not a second Event
    assert len(sink.patched) == 1 and sink.patched[0][1]["count"] == 2
    await rec.close()


async def test_room_holds_the_caller_while_two_rounds_wait_but_not_in_an_outage() -> None:
    sink = SlowSink()
    reachability = Reachability()
    rec = recorder(sink, senders=2, reachable=lambda: reachability.reachable)
    reachability.on_unreachable.append(rec.release)  # as KubeClient wires them
    for i in range(2 + 2 * 2):  # two in flight, two rounds of two queued
        rec.record_event(event(pod=f"p{i}"))
    await asyncio.sleep(0.01)
    held = asyncio.create_task(rec.room())
    await asyncio.sleep(0.01)
    assert not held.done()
    sink.release.set()  # the senders take jobs: room again
    await asyncio.wait_for(held, 5)
    await asyncio.wait_for(rec.flush(), 5)
    # Requests that hang (until their timeout) when another request finds the API server
    # unreachable: whoever waits is let go at once, and no one is held meanwhile.
    sink.release.clear()
    for i in range(6):
        rec.record_event(event(pod=f"q{i}"))
    await asyncio.sleep(0.01)
    held = asyncio.create_task(rec.room())
    await asyncio.sleep(0.01)
    assert not held.done()
    reachability.unreachable("bindings", OSError("connection refused"))
    await asyncio.wait_for(held, 1)
    await asyncio.wait_for(rec.room(), 1)
    reachability.answered()
    await rec.close()
    await asyncio.wait_for(rec.room(), 5)  # closed: nothing will leave, nothing waits
    # Refused requests: the senders wait out the outage, and hold no one meanwhile.
    refused = Sink()
    refused.down = 10**6
    rec = Recorder(refused, retry_seconds=(0.5, 0.5), senders=2)
    for i in range(6):
        rec.record_event(event(pod=f"r{i}"))
    await asyncio.sleep(0.01)
    await asyncio.wait_for(rec.room(), 5)
    await rec.close()


class StoringSink(Sink):
    """An API server that stores the first POST but whose answer is lost, as during a
    restart: the event exists, and the sender only learns that from the retry."""

    def __init__(self) -> None:
        super().__init__()
        self.stored: dict[str, dict[str, Any]] = {}
        self.lose_answers = 1

    async def create_event(self, body: dict[str, Any]) -> str:
        name = body["metadata"]["name"]
        self.stored.setdefault(name, body)  # a second POST of one name is AlreadyExists
        if self.lose_answers:
            self.lose_answers -= 1
            raise Unreachable("connection reset after sending", maybe_sent=True)
        return str(name)


async def test_an_event_whose_answer_was_lost_is_sent_again_under_the_same_name() -> None:
    sink = StoringSink()
    rec = recorder(sink)
    rec.record_event(event(pod="web", reason="Scheduled", type="Normal"))
    await asyncio.wait_for(rec.flush(), 5)
    assert len(sink.stored) == 1  # one Event object, not one per attempt
    (name,) = sink.stored
    assert name.startswith("web.")
    rec.record_event(event(pod="web", reason="Scheduled", type="Normal"))
    await asyncio.wait_for(rec.flush(), 5)
    assert [n for n, _ in sink.patched] == [name]  # the series continues that Event
    await rec.close()


async def test_a_copy_queued_while_a_lost_answer_is_retried_joins_it() -> None:
    """The same event recorded again while its first POST is in flight and that POST's
    answer is lost: one Event object, counting both, not a second one beside it."""
    sink = StoringSink()
    sent = asyncio.Event()
    create = sink.create_event

    async def slow_create(body: dict[str, Any]) -> str:
        sent.set()
        await asyncio.sleep(0.01)
        return await create(body)

    sink.create_event = slow_create  # type: ignore[method-assign]
    rec = recorder(sink)
    rec.record_event(event(pod="web"))
    await asyncio.wait_for(sent.wait(), 5)
    rec.record_event(event(pod="web"))  # a copy, while the first is in flight
    await asyncio.wait_for(rec.flush(), 5)
    assert len(sink.stored) == 1
    await rec.close()


def test_an_answer_to_a_request_sent_before_the_outage_does_not_end_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server shutting down still answers what it already took: only a request sent
    after the outage began shows it is back (else the log flaps down, up, down)."""
    now = [10.0]
    reach = Reachability(clock=lambda: now[0])
    with caplog.at_level(logging.WARNING):
        reach.unreachable("bindings", ConnectionResetError("reset"))
        now[0] = 10.5
        reach.answered(sent_at=9.9)  # in flight when the outage began
        assert not reach.reachable
        reach.answered(sent_at=10.2)  # sent since: the server is back
        assert reach.reachable
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and "unreachable" in lines[0] and "reachable again" in lines[1]


async def test_a_pods_condition_and_nomination_go_out_in_one_patch_after_an_outage() -> None:
    """The recorder writes a pod's status itself: what was recorded for it meanwhile goes
    out in one patch, sent again after the API server was unreachable."""
    sink = Sink()
    pending = {"u-web"}
    rec = recorder(sink, is_pending=lambda uid: uid in pending)
    raw = pod_dict("web")
    raw["metadata"]["uid"] = "u-web"
    pod = PodInfo.parse(raw)
    sink.down = 1
    rec.record_status(pod, ("Unschedulable", "0/1 nodes are available"), None)
    rec.record_status(pod, None, "node-1")
    await asyncio.wait_for(rec.flush(), 5)
    ((key, status),) = sink.statuses
    assert key == "default/web" and status["nominatedNodeName"] == "node-1"
    (condition,) = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    # A pod bound (or deleted) while its patch waited is not written.
    pending.clear()
    rec.record_status(pod, None, "node-2")
    await asyncio.wait_for(rec.flush(), 5)
    assert len(sink.statuses) == 1
    await rec.close()
