"""The kopf handlers: ``kopf run -A -m multisched.operator`` (or ``multisched run``).

Nothing is stored on watched objects: no finalizers, no progress annotations, no diff-base.

kopf watches what it is made for, and nothing of high volume beyond that:

- *Unscheduled* pods, selected server-side (``spec.nodeName=``, not finished), through
  ``on.event``. A pod that leaves the selection - bound by us or anyone, finished, or
  deleted - arrives as DELETED: it is no longer pending, and nothing more; the cache
  learns what it holds on a node from the assigned-pod informer (intake.py).
- SchedulerProfiles, reconciled level-style from ``on.event``: each event carries the
  whole object, the book skips generations it has seen, and statuses are written only
  when they differ. kopf reports no deletion that happened while its watch was down, so
  the runtime also lists SchedulerProfiles after a gap and retires the missing ones.

Nodes, assigned pods, namespaces and PDBs come from the intake's informers, never from
``kopf.index``: indexing every pod of a cluster through kopf is quadratic at start-up.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import kopf

from multisched import heap

from .depth import NoDiffBase, NoProgress, allow_api_depth
from .intake import UNASSIGNED_PODS
from .options import Options
from .profiles import GROUP, PLURAL, VERSION
from .runtime import Runtime

logger = logging.getLogger(__name__)

#: How long kopf keeps an object's worker after its last event (kopf's default is 5 s).
#: A pending pod has two or three events; kept 5 s, a backlog's workers (coroutines, queues,
#: contexts, timers: thousands at once) were what each young collection walked, 20-40 ms a
#: second. Not 0: kopf's worker would then never take the event it was started for.
WORKER_IDLE_SECONDS = 0.2


def _runtime(memo: Any) -> Runtime:
    runtime: Runtime = memo.runtime
    return runtime


class QuietRetries(logging.Filter):
    """kopf logs every failed attempt of a retried request at ERROR: a few lines per watch
    per outage. The intake and the client already say once that the API is gone and once
    that it is back; kopf's own retries go to DEBUG, and only its final failure stays."""

    LOGGERS = (
        "kopf._cogs.clients.api",
        "kopf._cogs.clients.watching",
        "kopf._cogs.clients.fetching",
    )

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.levelno >= logging.WARNING and message.startswith("Request attempt"):
            if "will retry" not in message:
                return True
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True

    @classmethod
    def install(cls) -> None:
        for name in cls.LOGGERS:
            target = logging.getLogger(name)
            if not any(isinstance(f, cls) for f in target.filters):
                target.addFilter(cls())


def configure(settings: kopf.OperatorSettings) -> None:
    # Leader election is our own Lease; kopf's peering would pause the watches instead.
    settings.peering.standalone = True
    settings.watching.field_selectors["", "v1", "pods"] = UNASSIGNED_PODS
    settings.queueing.idle_timeout = WORKER_IDLE_SECONDS
    QuietRetries.install()
    # Survive the deepest objects the API server stores (see depth.py).
    settings.persistence.diffbase_storage = NoDiffBase()
    settings.persistence.progress_storage = NoProgress()
    allow_api_depth()


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    configure(settings)
    options = memo.get("options")
    if not isinstance(options, Options):
        options = Options.from_env()
    try:
        runtime = await Runtime.create(options)
    except Exception as exc:
        raise kopf.PermanentError(f"cannot load the cluster credentials: {exc}") from exc
    heap.tune()
    runtime.on_listed = heap.listed
    runtime.on_synced = heap.freeze
    heap.pause()
    try:
        await runtime.start()
    except Exception as exc:  # e.g. the health port is taken: retrying will not help
        await runtime.stop()
        heap.listed()
        raise kopf.PermanentError(f"cannot start: {exc}") from exc
    memo.runtime = runtime


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    runtime = memo.get("runtime")
    if isinstance(runtime, Runtime):
        await runtime.stop()


@kopf.on.login()
async def login(memo: kopf.Memo, **_: Any) -> kopf.ConnectionInfo | None:
    """kopf watches with the credentials the runtime loaded (same source, same refresh)."""
    runtime = memo.get("runtime")
    cfg = runtime.configuration if isinstance(runtime, Runtime) else None
    if cfg is None:
        return None
    header: Any = cfg.get_api_key_with_prefix("BearerToken")
    if inspect.isawaitable(header):
        header = await header
    parts = str(header).split(" ", 1) if header else []
    scheme, token = (
        (None, None) if not parts else (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
    )
    return kopf.ConnectionInfo(
        server=str(cfg.host),
        ca_path=cfg.ssl_ca_cert,
        insecure=not cfg.verify_ssl,
        username=cfg.username or None,
        password=cfg.password or None,
        scheme=scheme,
        token=token,
        certificate_path=cfg.cert_file,
        private_key_path=cfg.key_file,
        proxy_url=cfg.proxy,
    )


# -- unscheduled pods ------------------------------------------------------------------


@kopf.on.event("", "v1", "pods")
async def pending_pod_event(type: str, event: Any, memo: kopf.Memo, **_: Any) -> None:
    runtime = _runtime(memo)
    # The raw object under kopf's Body view: parsing reads it at plain-dict speed.
    body: dict[str, Any] = event["object"]
    sync = runtime.handlers_sync
    if sync.waiting:
        sync.seen(body)
    if type == "DELETED":
        runtime.cluster.on_pending_pod_gone(body)
    else:
        await runtime.cluster.on_pod(body)


# -- SchedulerProfiles -------------------------------------------------------------------


@kopf.on.event(GROUP, VERSION, PLURAL)
async def profile_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    await _runtime(memo).profile_sync.on_profile(body, deleted=type == "DELETED")
