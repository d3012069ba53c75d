"""A list-and-watch informer for one kind, after client-go's reflector.

- One paginated LIST, then a WATCH from the list's resourceVersion with bookmarks.
- A stream that ends (server timeout, dropped connection) resumes from the last
  resourceVersion seen, so nothing is missed and nothing is listed again.
- 410 Gone (the resourceVersion was compacted away) lists again and *reconciles*: every
  object known before and missing from the new list is reported deleted, so a deletion
  made while the watch was down is not lost.
- Errors back off exponentially with jitter; an outage is logged once when it starts and
  once when it ends, with the number of failed attempts, not once per attempt.

Handlers get plain JSON dicts. The informer itself remembers only each object's key, uid
and resourceVersion: the store behind the handlers decides what to keep.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from multisched.meta import object_key
from multisched.transport import (
    ApiClient,
    ApiError,
    Resource,
    TransportError,
    decode_json,
    list_pages,
    watch,
)

logger = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class InformerSettings:
    """Timing of one informer; the defaults are client-go's."""

    #: Objects per LIST page.
    page_size: int = 500
    #: A watch asks the server to end it after this many seconds, times 1-2 at random
    #: (reflector's minWatchTimeout), so that watches of many clients do not end together.
    watch_timeout_seconds: float = 300.0
    #: Backoff after a failure: doubles from ``initial`` up to ``max``, with full jitter
    #: (client-go's 800 ms / 30 s backoff manager).
    backoff_initial_seconds: float = 0.8
    backoff_max_seconds: float = 30.0
    #: Timeout of one LIST page and of connecting a watch.
    request_timeout_seconds: float = 60.0
    #: Handlers run synchronously; yield to the loop after this many objects of a list.
    yield_every: int = 256


class Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


class ClosedAtOnce(Exception):
    """The server closed a watch before it delivered anything (reflector: "very short
    watch"): a sign of trouble, so back off before the next one."""


class Backoff:
    """Exponential backoff with jitter, reset by a success."""

    def __init__(self, initial: float, maximum: float, rng: random.Random | None = None) -> None:
        self.initial = initial
        self.maximum = maximum
        self.failures = 0
        self._rng = rng or random.Random()

    def next_delay(self) -> float:
        base = min(self.maximum, self.initial * (2**self.failures))
        self.failures += 1
        return float(base * (1.0 + self._rng.random()) / 2.0)

    def reset(self) -> None:
        self.failures = 0


def tombstone(key: str, uid: str) -> dict[str, Any]:
    """What a deletion found by a relist reports: the object's identity, no more."""
    namespace, _, name = key.rpartition("/")
    meta: dict[str, Any] = {"name": name, "uid": uid}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta}


#: What ends a watch or a list without being a bug of ours.
TRANSIENT = (
    TransportError,
    TimeoutError,
    OSError,
    ApiError,
    ValueError,
    ClosedAtOnce,
)


class Informer:
    """Keeps handlers told of every object of one kind that matches the selectors."""

    def __init__(
        self,
        api_client: ApiClient,
        resource: Resource,
        on_upsert: Handler,
        on_delete: Handler,
        *,
        field_selector: str = "",
        label_selector: str = "",
        settings: InformerSettings | None = None,
        on_relisted: Callable[[], None] | None = None,
        on_outage: Callable[[Informer, str], None] | None = None,
        rng: random.Random | None = None,
        optional: bool = False,
    ) -> None:
        self.api_client = api_client
        self.resource = resource
        self.on_upsert = on_upsert
        self.on_delete = on_delete
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.settings = settings or InformerSettings()
        #: Called after every LIST but the first (the view was rebuilt after a gap).
        self.on_relisted = on_relisted
        #: Told when an outage of this kind starts or ends (see ``_report``).
        self.on_outage = on_outage
        self._rng = rng or random.Random()
        self.backoff = Backoff(
            self.settings.backoff_initial_seconds, self.settings.backoff_max_seconds, self._rng
        )
        #: Set once the first LIST has been handed to the handlers (WaitForCacheSync).
        self.synced = asyncio.Event()
        #: key -> (uid, resourceVersion) of every object the handlers were told about.
        self.known: dict[str, tuple[str, str]] = {}
        self.resource_version = ""
        self.lists = 0
        self._relist_wanted = True
        self._stream: asyncio.Task[None] | None = None
        self._outage_since: float | None = None
        self._outage_failures = 0
        #: A kind whose CRD may not be installed (or that RBAC may not grant): "not
        #: served" or "forbidden" lists as empty, and the listing is tried again every
        #: ``absent_recheck_seconds``.
        self.optional = optional
        self.absent = False
        self.absent_recheck_seconds = 30.0

    # -- control --------------------------------------------------------------------------

    @property
    def healthy(self) -> bool:
        """Listed, and not between a failure and the next successful list or watch."""
        return self.synced.is_set() and self._outage_since is None and not self._relist_wanted

    def resync(self) -> None:
        """List again and reconcile now (e.g. after the process was frozen)."""
        self._relist_wanted = True
        if self._stream is not None:
            self._stream.cancel()

    async def run(self) -> None:
        """List, then watch, forever; cancel the task to stop."""
        while True:
            try:
                if self._relist_wanted:
                    self._relist_wanted = False
                    try:
                        await self._list_and_reconcile()
                    except BaseException:
                        self._relist_wanted = True
                        raise
                    self._recovered()
                if self.absent:
                    await asyncio.sleep(self.absent_recheck_seconds)
                    self._relist_wanted = True
                    continue
                self._stream = asyncio.ensure_future(self._watch())
                try:
                    await asyncio.wait({self._stream})
                finally:
                    if not self._stream.done():
                        self._stream.cancel()
                if not self._stream.cancelled():
                    self._stream.result()
            except Gone:
                logger.info(
                    "%s: resourceVersion %s is too old; listing again",
                    self.resource,
                    self.resource_version,
                )
                self._relist_wanted = True
            except TRANSIENT as exc:
                await asyncio.sleep(self._failed(exc))

    # -- LIST -----------------------------------------------------------------------------

    async def _list_and_reconcile(self) -> None:
        previous, self.known = self.known, {}
        resource_version, count = "", 0
        try:
            async for page in list_pages(
                self.api_client,
                self.resource,
                field_selector=self.field_selector,
                label_selector=self.label_selector,
                page_size=self.settings.page_size,
                timeout=self.settings.request_timeout_seconds,
            ):
                resource_version = page.resource_version or resource_version
                for obj in page.items:
                    self._reconcile_one(obj, previous)
                    count += 1
                    if count % self.settings.yield_every == 0:
                        await asyncio.sleep(0)
        except ApiError as exc:
            if not (self.optional and exc.status in (403, 404)):
                self._keep_known(previous)
                if exc.status == 410:
                    raise Gone() from exc  # a continue token expired mid-list: start over
                raise
            if not self.absent:
                # A CRD not installed is a choice; a grant missing is worth a warning.
                logger.log(
                    logging.INFO if exc.status == 404 else logging.WARNING,
                    "%s %s: read as none; checking again every %.0f s",
                    self.resource,
                    "is not served (its CRD is not installed)"
                    if exc.status == 404
                    else "may not be listed (RBAC)",
                    self.absent_recheck_seconds,
                )
            self.absent = True  # an empty list: whatever was known is gone
        except BaseException:
            self._keep_known(previous)
            raise
        else:
            if self.absent:
                logger.info("%s is served now", self.resource)
            self.absent = False
        for key, (uid, _) in previous.items():  # deleted while we were not watching
            self._deliver(self.on_delete, tombstone(key, uid))
        self.resource_version = resource_version
        self.lists += 1
        first = not self.synced.is_set()
        self.synced.set()
        logger.debug("%s: listed %d objects at %s", self.resource, count, resource_version)
        if not first and self.on_relisted is not None:
            self.on_relisted()

    def _keep_known(self, previous: dict[str, tuple[str, str]]) -> None:
        """Nothing of a partial list is final: what was known stays known, so the next
        list reconciles against it and misses no deletion."""
        for key, entry in previous.items():
            self.known.setdefault(key, entry)

    def _reconcile_one(self, obj: dict[str, Any], previous: dict[str, tuple[str, str]]) -> None:
        key = object_key(obj)
        meta = obj.get("metadata") or {}
        uid, rv = str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
        old = previous.pop(key, None)
        if old is not None and old[0] != uid:
            self._deliver(self.on_delete, tombstone(key, old[0]))
            old = None
        self.known[key] = (uid, rv)
        if old is None or not rv or old[1] != rv:
            self._deliver(self.on_upsert, obj)

    # -- WATCH ----------------------------------------------------------------------------

    async def _watch(self) -> None:
        timeout = self.settings.watch_timeout_seconds * (1.0 + self._rng.random())
        query: list[tuple[str, str]] = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(int(timeout))),
        ]
        if self.resource_version:
            query.append(("resourceVersion", self.resource_version))
        if self.field_selector:
            query.append(("fieldSelector", self.field_selector))
        if self.label_selector:
            query.append(("labelSelector", self.label_selector))
        opened = watch(
            self.api_client,
            self.resource,
            query,
            connect_timeout=self.settings.request_timeout_seconds,
            # The server ends the stream at ``timeout``; the read timeout only catches a
            # server that went silent without closing the connection.
            read_timeout=timeout + 30.0,
        )
        try:
            async with opened as stream:
                self._recovered()
                started = time.monotonic()
                lines = await stream.lines(self._on_line)
        except ApiError as exc:
            if exc.status == 410:
                raise Gone() from exc
            raise
        if not lines and time.monotonic() - started < 1.0:
            raise ClosedAtOnce(f"the watch of {self.resource} closed at once")

    def _on_line(self, line: bytes) -> None:
        try:
            event = decode_json(line)
        except (ValueError, RecursionError) as exc:
            # One undecodable object must not stop the kind: skip it, say so.
            logger.warning(
                "%s: skipping an undecodable watch event: %s", self.resource, str(exc)[:200]
            )
            return
        kind = event.get("type") if isinstance(event, dict) else None
        obj = event.get("object") if isinstance(event, dict) else None
        if not isinstance(obj, dict):
            return
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "ERROR":
            code = int(obj.get("code") or 0)
            if code == 410:
                raise Gone()
            raise ApiError(code, str(obj.get("message") or ""), str(obj.get("reason") or ""))
        if kind == "BOOKMARK":
            self.resource_version = rv or self.resource_version
            return
        key = object_key(obj)
        if kind in ("ADDED", "MODIFIED"):
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            old = self.known.get(key)
            if old is not None and old[0] != uid:
                self._deliver(self.on_delete, tombstone(key, old[0]))
            self.known[key] = (uid, rv)
            self._deliver(self.on_upsert, obj)
        elif kind == "DELETED":
            self.known.pop(key, None)
            self._deliver(self.on_delete, obj)
        if rv:
            self.resource_version = rv

    def _deliver(self, handler: Handler, obj: dict[str, Any]) -> None:
        try:
            handler(obj)
        except Exception:
            # A handler's bug costs that one object, never the kind's view.
            logger.exception("%s: handler failed for %s", self.resource, object_key(obj))

    # -- outage bookkeeping ---------------------------------------------------------------

    def _failed(self, exc: BaseException) -> float:
        delay = self.backoff.next_delay()
        self._outage_failures += 1
        if self._outage_since is None:
            self._outage_since = time.monotonic()
            self._report(f"watch failed ({_describe(exc)}); retrying with backoff")
        return delay

    def _recovered(self) -> None:
        self.backoff.reset()
        if self._outage_since is not None:
            elapsed = time.monotonic() - self._outage_since
            self._outage_since = None
            self._report(
                f"watching again after {elapsed:.1f} s and {self._outage_failures} failed attempts"
            )
            self._outage_failures = 0

    def _report(self, what: str) -> None:
        """An outage began or ended: the owner aggregates it with other kinds' (one line
        per outage, not one per kind), else it is logged here."""
        if self.on_outage is not None:
            self.on_outage(self, what)
        else:
            logger.warning("%s: %s", self.resource, what)

    @property
    def outage_failures(self) -> int:
        return self._outage_failures

    @property
    def in_outage(self) -> bool:
        return self._outage_since is not None


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
