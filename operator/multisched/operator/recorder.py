"""Events and pod status patches, posted off the scheduling path (client-go's
EventBroadcaster + EventCorrelator, kopf's posting queue): the one queue of those writes,
which it sends itself, through transport (``RecordWrites``).

- Aggregation: an event identical to one still queued (same object, type, reason,
  message, source) only bumps that one's count; identical to one already posted, it
  becomes a PATCH of that Event's ``count`` and ``lastTimestamp`` (a series), not a new
  object.
- A per-object token bucket (burst 25, one more every 5 minutes, as client-go's spam
  filter) drops the rest.
- Pod condition patches are keyed by pod: a newer one replaces a queued older one, and a
  nomination goes out in the same patch as the condition (``record_status``). They
  go out before events, and are never dropped: a pod's PodScheduled=False is what
  cluster-autoscaler scales up for, and an unschedulable pod may wait minutes for its next
  attempt (kube-scheduler writes the condition before it schedules the next pod). One per
  pod bounds them.
- Events are bounded (client-go ``maxQueuedEvents``); when full, the oldest event is
  dropped and counted, with a warning at most every 5 minutes.
- ``room()`` holds a caller while two rounds of jobs per sender wait: the scheduling loop
  awaits it after a failure, as kube-scheduler's waits for its condition write, so a backlog
  of unschedulable pods (fast to judge) does not outrun the API server until events drop.
  Not during an outage: then the queue's bound does its work.
- Background senders post concurrently, as many as the scheduler has bindings in flight:
  a pod's Scheduled event follows its binding, so fewer would fall behind a backlog (one
  event per binding, at the API server's latency) until the full queue dropped events.
  Two jobs of one key are never in flight at once. When the API server is unreachable a
  sender keeps the job and retries with backoff; ``Reachability`` logs the outage once
  and the recovery once, with counts, instead of a traceback per pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Protocol

from multisched.cache import PodInfo
from multisched.meta import now_time
from multisched.scheduler.scheduler import MAX_CONCURRENT_BINDS
from multisched.transport import ApiError, Unreachable
from multisched.transport.reachability import describe

from .pod_status import PendingStatus

logger = logging.getLogger(__name__)

#: client-go ``maxQueuedEvents``.
MAX_QUEUED = 1000
#: client-go ``defaultSpamBurst`` / ``defaultSpamQPS`` (one token per 5 minutes).
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
#: client-go ``maxLruCacheEntries``: posted events remembered for series.
MAX_SERIES = 4096
MAX_SPAM_KEYS = 4096
#: Requests in flight at once: one per binding slot (see the module's docstring).
SENDERS = MAX_CONCURRENT_BINDS
#: ``room()`` waits while this many jobs per sender are queued.
ROUNDS_AHEAD = 2
#: At most one "queue full" warning per this many seconds.
DROP_WARNING_SECONDS = 300.0
RETRY_INITIAL_SECONDS = 0.5
RETRY_MAX_SECONDS = 10.0


class EventSink(Protocol):
    """The writes the recorder makes (transport's ``RecordWrites``)."""

    async def create_event(self, body: dict[str, Any]) -> str:
        """POST the Event (under ``metadata.name`` when given; an AlreadyExists answer then
        means an earlier attempt was stored); returns its name."""
        ...

    async def patch_event(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Merge-patch an Event (raises ``ApiError`` 404 when it is gone)."""
        ...

    async def patch_pod_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        """Strategic-merge ``status`` into the pod's status (conditions merge by type)."""
        ...


class _Event:
    __slots__ = ("body", "count", "first", "last", "name")

    def __init__(self, body: dict[str, Any], stamp: str) -> None:
        self.body = body
        self.count = 1
        self.first = stamp
        self.last = stamp
        #: Chosen at the first attempt and kept: a POST whose answer was lost is sent again
        #: under the same name, so the API server stores one Event, not two (client-go names
        #: an event once, when it is made).
        self.name = ""


class _Patch:
    __slots__ = ("send",)

    def __init__(self, send: Callable[[], Awaitable[None]]) -> None:
        self.send = send


class _Bucket:
    __slots__ = ("tokens", "updated")

    def __init__(self, now: float) -> None:
        self.tokens = float(SPAM_BURST)
        self.updated = now

    def take(self, now: float) -> bool:
        self.tokens = min(SPAM_BURST, self.tokens + (now - self.updated) / SPAM_REFILL_SECONDS)
        self.updated = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class Recorder:
    """The bounded, rate-limited, aggregating posting queue; ``record_*`` never await."""

    def __init__(
        self,
        sink: EventSink,
        may_write: Callable[[], bool] = lambda: True,
        *,
        max_queued: int = MAX_QUEUED,
        clock: Callable[[], float] = time.monotonic,
        now_stamp: Callable[[], str] | None = None,
        retry_seconds: tuple[float, float] = (RETRY_INITIAL_SECONDS, RETRY_MAX_SECONDS),
        senders: int = SENDERS,
        reachable: Callable[[], bool] = lambda: True,
        is_pending: Callable[[str], bool] | None = None,
    ) -> None:
        self.sink = sink
        #: Whether a pod (by uid) is still unbound and alive: a status patch of one that is
        #: not any more is not sent.
        self.is_pending = is_pending
        #: Whether the API server answers (``Reachability.reachable``): ``room()`` holds no
        #: one while it does not.
        self.reachable = reachable
        self.senders = senders
        self.retry_seconds = retry_seconds
        self.may_write = may_write
        self.max_queued = max_queued
        self.clock = clock
        self.now_stamp = now_stamp or now_time
        self._events: OrderedDict[Hashable, _Event] = OrderedDict()
        self._patches: OrderedDict[Hashable, _Patch] = OrderedDict()
        #: Event key -> (Event name, count) of what was posted: later copies patch it.
        self._series: OrderedDict[Hashable, tuple[str, str, int]] = OrderedDict()
        self._buckets: OrderedDict[Hashable, _Bucket] = OrderedDict()
        self.dropped: Counter[str] = Counter()
        self._reported: Counter[str] = Counter()
        #: Senders waiting for work; a job wakes one of them, not all (a herd per event).
        self._waiting: list[asyncio.Future[None]] = []
        self._idle = asyncio.Event()
        self._idle.set()
        self._room = asyncio.Event()
        self._room.set()
        #: Senders waiting out an unreachable API server.
        self._backing_off = 0
        self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        #: Keys being sent right now: their newer copies wait in the queue.
        self._in_flight: set[Hashable] = set()
        self._last_error = ""
        self._drop_warned_at: float | None = None
        #: What each pod's queued status patch writes (by uid): its PodScheduled=False and
        #: its nomination go out together, through one key, in the order set.
        self._statuses: dict[str, PendingStatus] = {}

    # -- intake ---------------------------------------------------------------------------

    def record_event(self, body: dict[str, Any]) -> None:
        """Queue a core/v1 Event body (``count`` and timestamps are filled in here)."""
        involved = body.get("involvedObject") or {}
        obj = (
            body.get("metadata", {}).get("namespace"),
            involved.get("kind"),
            involved.get("name"),
            involved.get("uid"),
            (body.get("source") or {}).get("component"),
        )
        key = ("event", *obj, body.get("type"), body.get("reason"), body.get("message"))
        queued = self._events.get(key)
        if queued is not None:
            queued.count += 1
            queued.last = self.now_stamp()
            return
        if not self._allow(obj):
            self.dropped["events rate-limited"] += 1
            return
        if len(self._events) >= self.max_queued:
            self._events.popitem(last=False)
            self.dropped["events dropped"] += 1
            self._warn_dropped()
        self._events[key] = _Event(body, self.now_stamp())
        self._queued()

    def record_patch(self, key: Hashable, send: Callable[[], Awaitable[None]]) -> None:
        """Queue a write where only the newest per ``key`` matters (a pod's condition)."""
        key = ("patch", key)
        replacing = key in self._patches
        self._patches[key] = _Patch(send)  # a replacement keeps its turn
        if not replacing:
            self._queued()

    def record_status(
        self, pod: PodInfo, condition: tuple[str, str] | None, nominated: str | None
    ) -> None:
        """Queue the pod's PodScheduled=False (reason, message) and/or nomination ("" clears
        it): merged into its pending status patch (newer parts win), written in one patch."""
        pending = self._statuses.get(pod.uid)
        if pending is None:
            pending = self._statuses[pod.uid] = PendingStatus(pod)
        pending.pod = pod
        if condition is not None:
            pending.condition = condition
        if nominated is not None:
            pending.nominated = nominated
        uid = pod.uid
        self.record_patch(("PodScheduled", uid), lambda: self._write_status(uid))

    async def _write_status(self, uid: str) -> None:
        """The pod's pending status patch (upstream ``updatePod``)."""
        pending = self._statuses.pop(uid, None)
        if pending is None:
            return  # written by an earlier job of the same key
        if self.is_pending is not None and not self.is_pending(uid):
            return  # bound or deleted while this waited in the recorder
        patch = pending.patch()
        if not patch:
            return
        try:
            await self.sink.patch_pod_status(pending.pod.namespace, pending.pod.name, patch)
        except Unreachable:
            # This key is sent again (or a newer job of it): keep what is not newer
            # meanwhile.
            newer = self._statuses.setdefault(uid, pending)
            if newer is not pending:
                pending.keep_unless_newer(newer)
            raise
        except ApiError as exc:
            if exc.status != 404:
                raise

    def _allow(self, obj: Hashable) -> bool:
        now = self.clock()
        bucket = self._buckets.get(obj)
        if bucket is None:
            bucket = self._buckets[obj] = _Bucket(now)
            if len(self._buckets) > MAX_SPAM_KEYS:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(obj)
        return bucket.take(now)

    def _queued(self) -> None:
        self._idle.clear()
        self._wake_one()
        self._tasks = {t for t in self._tasks if not t.done()}
        while len(self._tasks) < self.senders:
            self._tasks.add(
                asyncio.get_running_loop().create_task(
                    self._run(), name="multisched event recorder"
                )
            )

    def _warn_dropped(self) -> None:
        now = self.clock()
        if self._drop_warned_at is not None and now - self._drop_warned_at < DROP_WARNING_SECONDS:
            return
        self._drop_warned_at = now
        logger.warning(
            "the event queue is full (%d waiting): the oldest events are dropped (%d so far)",
            self.max_queued,
            self.dropped["events dropped"],
        )

    def _wake_one(self) -> None:
        while self._waiting:
            waiter = self._waiting.pop()
            if not waiter.done():  # not cancelled with its sender
                waiter.set_result(None)
                return

    def __len__(self) -> int:
        return len(self._events) + len(self._patches)

    def _full(self) -> bool:
        if self._closed or self._backing_off or not self.reachable():
            return False
        return len(self) >= ROUNDS_AHEAD * self.senders

    async def room(self) -> None:
        """Return once fewer than ``ROUNDS_AHEAD`` rounds of jobs wait (at once, mostly)."""
        while self._full():
            self._room.clear()
            await self._room.wait()

    def release(self) -> None:
        """Let ``room()``'s callers look again (the API server was found unreachable: a
        sender's request may hang until its timeout before it says so itself)."""
        self._room.set()

    def take_dropped(self) -> dict[str, int]:
        """Drops since the last call (for ``Reachability``'s recovery line)."""
        out = {k: v - self._reported[k] for k, v in self.dropped.items() if v > self._reported[k]}
        self._reported.update(out)
        return out

    # -- sending --------------------------------------------------------------------------

    async def _run(self) -> None:
        first, most = self.retry_seconds
        delay = first
        while True:
            taken = self._take()
            if taken is None:
                if not len(self) and not self._in_flight:
                    self._idle.set()
                waiter = asyncio.get_running_loop().create_future()
                self._waiting.append(waiter)
                await waiter
                continue
            key, job = taken
            if not self._full():
                self._room.set()
            if not self.may_write():
                # Stepped down: the new leader reports for itself.
                self.dropped["writes skipped (not leading)"] += len(self) + 1
                self._events.clear()
                self._patches.clear()
                self._statuses.clear()  # stale: what the dropped patches were to write
                self._room.set()
                continue
            self._in_flight.add(key)
            try:
                if isinstance(job, _Event):
                    await self._send_event(key, job)
                else:
                    await job.send()
            except Unreachable:
                self._put_back(key, job)
                self._in_flight.discard(key)
                self._backing_off += 1
                self._room.set()  # an outage is no reason to hold the scheduling loop
                try:
                    await asyncio.sleep(delay)
                finally:
                    self._backing_off -= 1
                delay = min(delay * 2, most)
                continue
            except Exception as exc:
                if self.may_write():
                    self._failed(key, exc)
                else:  # refused at the wire: leadership was lost meanwhile
                    self.dropped["writes skipped (not leading)"] += 1
            finally:
                self._in_flight.discard(key)
                if len(self):  # a newer copy of this key may be waiting
                    self._wake_one()
            delay = first

    def _take(self) -> tuple[Hashable, _Event | _Patch] | None:
        """The oldest job not in flight (two of one key never are at once), patches first."""
        for key in self._patches:
            if key not in self._in_flight:
                return key, self._patches.pop(key)
        for key in self._events:
            if key not in self._in_flight:
                return key, self._events.pop(key)
        return None

    def _put_back(self, key: Hashable, job: _Event | _Patch) -> None:
        """First in line again. A patch superseded meanwhile by a newer one is dropped; an
        event copied meanwhile becomes one with its copy, counting both, under the name the
        failed attempt used (that POST may have been stored)."""
        if isinstance(job, _Event):
            copy = self._events.get(key)
            if copy is None:
                self._events[key] = job
                self._events.move_to_end(key, last=False)
            else:
                copy.count += job.count
                copy.first = job.first
                copy.name = job.name or copy.name
        elif key not in self._patches:
            self._patches[key] = job
            self._patches.move_to_end(key, last=False)

    async def _send_event(self, key: Hashable, job: _Event) -> None:
        series = self._series.get(key)
        if series is not None:
            namespace, name, count = series
            total = count + job.count
            try:
                await self.sink.patch_event(
                    namespace, name, {"count": total, "lastTimestamp": job.last}
                )
            except Unreachable:
                raise
            except Exception:
                self._series.pop(key, None)  # gone (events expire after an hour): post anew
            else:
                self._series[key] = (namespace, name, total)
                self._series.move_to_end(key)
                return
        body = dict(job.body)
        body.update(count=job.count, firstTimestamp=job.first, lastTimestamp=job.last)
        if not job.name:
            involved = body.get("involvedObject") or {}
            job.name = f"{involved.get('name') or 'object'}.{time.time_ns():x}"
        body["metadata"] = {**(body.get("metadata") or {}), "name": job.name}
        name = await self.sink.create_event(body)
        self._series[key] = (str(body["metadata"]["namespace"]), name, job.count)
        if len(self._series) > MAX_SERIES:
            self._series.popitem(last=False)

    def _failed(self, key: Hashable, exc: Exception) -> None:
        """A refused write (RBAC, validation) is dropped; each new reason is logged once."""
        what = "event" if isinstance(key, tuple) and key[0] == "event" else "patch"
        self.dropped[f"{what}es refused" if what == "patch" else "events refused"] += 1
        text = describe(exc)
        if text != self._last_error:
            self._last_error = text
            logger.warning("the API server refused a queued %s: %s", what, text)

    async def flush(self) -> None:
        """Wait until everything queued was sent (or dropped)."""
        await self._idle.wait()

    async def close(self) -> None:
        self._closed = True
        self._room.set()  # nothing will be sent: no one waits for room
        tasks, self._tasks = self._tasks, set()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
