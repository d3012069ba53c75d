"""One running operator: the scheduler, its inputs, and its outputs, wired together.

- ``cluster`` (event_handlers.py): pending pods from kopf, and what the intake's informers
  (intake.py) bring: nodes, assigned pods, namespaces and PDBs, into the scheduler.
- ``profile_sync`` (profile_sync.py): SchedulerProfiles from kopf into the live config.
- here: the lifecycle, leader election, the scheduling loop and housekeeping.

Everything can be driven without kopf. Writes (bindings, events, status) happen only
while this replica schedules: with leader election off, or while it holds the Lease. A
standby keeps its cache and queue warm, like kube-scheduler's informers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import signal
from collections.abc import Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from multisched.config.resolved import ResolvedConfig
from multisched.framework import Registry
from multisched.scheduler import Scheduler, default_registry
from multisched.scheduler.introspect import CacheDiff, EngineView
from multisched.transport import Api, Configuration
from multisched.transport.internals import skip_env_lookups
from multisched.transport.kubeconfig import connect, load_configuration
from multisched.transport.reviews import KubeReviewer
from multisched.transport.serving import Reply, Request

from . import debug
from .client import KubeClient
from .event_handlers import ClusterEventHandlers
from .group_status import GroupStatusController
from .handlers_sync import HandlersSync, pending_lister
from .health import HealthServer
from .intake import Intake
from .leader import KubeLeaseApi, LeaderElector, LeaseApi, new_identity
from .metrics import Metrics
from .options import Options
from .profile_sync import ProfileSync
from .profiles import ProfileBook
from .revisions import RevisionKeeper
from .secure import (
    CachingReviewer,
    Reviewer,
    SecureServer,
    ServingCertificate,
    service_dns_names,
    serving_context,
)

logger = logging.getLogger(__name__)

USER_AGENT = "multisched"
#: The start-up heap is frozen (heap.py) once, after the first listing, when no pod has been
#: popped or was in flight (its binding cycle included) and none waited for this long (looked
#: at every tenth of it), or this long after the listing at the latest.
SYNCED_HOOK_QUIET_SECONDS = 1.0
SYNCED_HOOK_MAX_DELAY_SECONDS = 30.0
#: ``on_listed`` is called when every informer has listed, or this long after start-up at the
#: latest (an API server that does not answer must not hold the collector off for good).
LISTED_HOOK_MAX_DELAY_SECONDS = 60.0
#: What a second concurrent ``/debug/cache`` is told to wait: a comparison of 10,000 pods
#: takes a second or more (100 pages).
COMPARE_RETRY_AFTER_SECONDS = 5


class Runtime:
    def __init__(
        self,
        options: Options,
        api: Api,
        registry: Registry | None = None,
        configuration: Configuration | None = None,
        lease_api: LeaseApi | None = None,
        identity: str | None = None,
    ) -> None:
        self.options = options
        self.api = api
        self.configuration = configuration
        self.identity = identity or new_identity()
        self.lease_api: LeaseApi = lease_api or KubeLeaseApi(api)
        #: This replica runs its scheduling loop (election off, or it won the lease).
        self._writing = False
        self.client = KubeClient(
            api, is_pending=lambda uid: uid in self.cluster.unbound, may_write=self.may_write
        )
        registry = registry if registry is not None else default_registry()
        self.metrics = Metrics()
        self.scheduler = Scheduler(
            ResolvedConfig(profiles=()),
            registry,
            client=self.client,
            events=self.client,
            observer=self.metrics,
        )
        #: What metrics and the debug endpoints read of the scheduler's queue and cache.
        self.engine = EngineView.of(self.scheduler)
        self.metrics.track_scheduler(self.engine)
        self.cluster = ClusterEventHandlers(self.scheduler.feed, self.client, self.may_write)
        self.group_status: GroupStatusController | None = None
        if options.group_status:
            self.group_status = GroupStatusController(api, self.engine.groups, self.may_write)
            self.cluster.group_status = self.group_status
        self.book = ProfileBook(
            registry, self.scheduler.build_profiles, options.reserved_scheduler_names
        )
        self.metrics.track_profiles(
            lambda: {name: v.ready for name, v in self.book.combined.verdicts.items()}
        )
        self.profile_sync = ProfileSync(
            self.book,
            self.scheduler,
            self.client,
            api.api_client,
            self.cluster,
            self.may_write,
            RevisionKeeper(api, options.revision_namespace, self.may_write),
        )
        #: The informers behind ``cluster``; built by ``start``.
        self.intake: Intake | None = None
        #: kopf's first listing of pending pods, all handed over (WaitForHandlersSync).
        self.handlers_sync = HandlersSync(pending_lister(api.api_client))
        #: Called once, when the scheduler is first quiet after the first listing (heap.freeze).
        self.on_synced: Callable[[], None] | None = None
        #: Called once, when every informer has first listed (heap.listed); also when the
        #: runtime stops before that.
        self.on_listed: Callable[[], None] | None = None
        self.elector: LeaderElector | None = None
        self._elector_task: asyncio.Task[None] | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._loop_stop: asyncio.Event | None = None
        self._housekeeping: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._health: HealthServer | None = None
        self._secure: SecureServer | None = None
        #: Who checks the secure port's callers (tests put their own).
        self.reviewer: Reviewer | None = None
        self._kube_reviewer: KubeReviewer | None = None
        #: Held by the cache comparison in progress (``/debug/cache``, SIGUSR2).
        self._comparing = asyncio.Lock()

    @classmethod
    async def create(cls, options: Options) -> Runtime:
        configuration = await load_configuration(options.kubeconfig)
        api_client = connect(configuration, USER_AGENT)
        skip_env_lookups(api_client)
        api = Api(api_client)
        return cls(options, api, configuration=configuration)

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        """Every informer has listed its kind (``/readyz``)."""
        return self.intake is not None and self.intake.synced

    async def start(self) -> None:
        self._spawn(self.handlers_sync.run())
        self.intake = Intake(
            self.api.api_client, self.cluster.feeds(), on_relisted=self.profile_sync.resync
        )
        self.intake.start()
        self._spawn(self._after_first_listing(self.intake))
        if self.options.http_port:
            self._health = HealthServer(
                self.options.http_host, self.options.http_port, ready=lambda: self.synced
            )
            await self._health.start()
        if self.options.secure_port:
            await self._start_secure()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            # kube-scheduler's cache debugger: compare and dump on SIGUSR2 (main thread only).
            asyncio.get_running_loop().add_signal_handler(
                signal.SIGUSR2, lambda: self._spawn(self.log_debug_dump())
            )
        if self.group_status is not None:
            self.group_status.start()
        self._start_election()
        self._housekeeping = asyncio.create_task(self._housekeep(), name="multisched housekeeping")
        self._spawn(self._retry_lost_bindings())

    async def stop(self) -> None:
        if self.intake is not None:
            await self.intake.stop()
        await self.profile_sync.stop()
        if self.group_status is not None:
            await self.group_status.stop()
        tasks = [t for t in (self._housekeeping, self._elector_task) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._stop_loop()
        if self._loop_task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._loop_task, 5)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.scheduler.wait_for_bindings(), 5)
        background = list(self._background)
        for task in background:
            task.cancel()
        if background:
            await asyncio.wait(background, timeout=5)
        if self._health is not None:
            await self._health.stop()
        if self._secure is not None:
            await self._secure.stop()
        if self._kube_reviewer is not None:
            await self._kube_reviewer.close()
        await self.client.close()
        await self.api.api_client.close()

    # -- the secure port -----------------------------------------------------------------

    async def _start_secure(self) -> None:
        options = self.options
        cert, key = options.tls_cert_file, options.tls_private_key_file
        dns_names = service_dns_names(options.service_name, options.service_namespace)
        context = serving_context(cert, key, options.advertise_address, dns_names)
        # Given files (a mounted Secret) are reloaded when renewed; a self-signed pair is not.
        certificate = ServingCertificate(context, cert, key) if cert and key else None
        reviewer = self.reviewer
        if reviewer is None:
            self._kube_reviewer = KubeReviewer(self.api.api_client.configuration)
            reviewer = CachingReviewer(self._kube_reviewer)
        self._secure = SecureServer(
            options.bind_address,
            options.secure_port,
            context,
            reviewer,
            {
                "/metrics": self._serve_metrics,
                "/configz": self._serve_configz,
                "/debug/queue": self._serve_queue,
                "/debug/cache": self._serve_cache,
            },
            certificate=certificate,
        )
        await self._secure.start()

    @property
    def secure_port(self) -> int | None:
        """The secure port actually bound (tests ask for any free one)."""
        return self._secure.port if self._secure is not None else None

    async def _serve_metrics(self, request: Request) -> Reply:
        return Reply(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _serve_configz(self, request: Request) -> Reply:
        return _json(debug.configz(self.book))

    async def _serve_queue(self, request: Request) -> Reply:
        limit = request.query.get("limit", "")
        view = debug.queue_view(
            self.engine,
            leading=self.scheduling,
            pod=request.query.get("pod") or None,
            limit=min(int(limit), debug.MAX_LIMIT) if limit.isdigit() else debug.DEFAULT_LIMIT,
            notes=functools.partial(debug.scheduler_notes, self.scheduler),
        )
        view["identity"] = self.identity
        return _json(view)

    async def _serve_cache(self, request: Request) -> Reply:
        # One comparison at a time, and a second caller is turned away (429) rather than
        # queued: each one lists every node and assigned pod, so waiting callers would
        # only pile up connections and API-server reads behind the first, and a client
        # that retries after Retry-After gets a fresher answer than a queued one would.
        if self._comparing.locked():
            return _json(
                {"message": "a cache comparison is already running; retry later"},
                status=429,
                headers={"Retry-After": str(COMPARE_RETRY_AFTER_SECONDS)},
            )
        return _json(debug.diff_document(await self.compare_cache()))

    async def compare_cache(self) -> CacheDiff:
        """The cache against a fresh listing of nodes and assigned pods (one at a time)."""
        async with self._comparing:
            return await debug.compare_with_api(self.engine, self.api.api_client)

    async def log_debug_dump(self) -> None:
        """SIGUSR2: the cache comparison and the queue, to the log (as upstream dumps them)."""
        if self._comparing.locked():  # signals in a row must not stack listings up
            logger.warning("cache comparison: skipped, another one is running")
        else:
            try:
                diff = await self.compare_cache()
            except Exception as exc:
                logger.warning("cache comparison: cannot list nodes and pods: %s", exc)
            else:
                for line in diff.lines():
                    logger.info("cache comparison: %s", line)
        view = debug.queue_view(self.engine, leading=self.scheduling)
        logger.info("scheduling queue: %s", json.dumps(view["profiles"], sort_keys=True))
        for entry in view["pods"]:
            logger.info(
                "queued pod %s: %s, %d attempts, %s",
                entry["pod"],
                entry["queue"],
                entry["attempts"],
                entry["message"] or "no failure yet",
            )

    @property
    def scheduling(self) -> bool:
        """This replica schedules and writes (no election, or it holds the Lease)."""
        return self.may_write()

    def may_write(self) -> bool:
        """Whether a write may be sent now: the loop runs and, with election on, the lease
        is provably ours at this instant (not merely when the loop was last told)."""
        return self._writing and (self.elector is None or self.elector.is_leader())

    # -- leader election ------------------------------------------------------------------

    def _start_election(self) -> None:
        """Leader election is fixed for the process (flags): elect, or schedule at once."""
        settings = self.options.leader_election()
        if not settings.leader_elect:
            self._start_loop()
            return
        self.elector = LeaderElector(
            self.lease_api,
            settings,
            self.identity,
            on_started_leading=functools.partial(self._leading_changed, True),
            on_stopped_leading=functools.partial(self._leading_changed, False),
        )
        self._elector_task = asyncio.create_task(self.elector.run(), name="multisched lease")

    def _leading_changed(self, leading: bool) -> None:
        if leading:
            self._start_loop()
        else:
            self._stop_loop()

    # -- the scheduling loop --------------------------------------------------------------

    def _start_loop(self) -> None:
        was = self._writing
        self._writing = True
        self.metrics.leader.set(1)
        if self._loop_task is not None and not self._loop_task.done():
            if self._loop_stop is not None and not self._loop_stop.is_set():
                return  # already running
            previous: asyncio.Task[None] | None = self._loop_task
        else:
            previous = None
        self._loop_stop = asyncio.Event()
        self._loop_task = asyncio.create_task(
            self._run_loop(self._loop_stop, previous), name="multisched scheduling loop"
        )
        if not was:
            # The previous leader may have left statuses behind; they are ours to write now.
            self._spawn(self.profile_sync.publish())
            if self.group_status is not None:
                self.group_status.mark_all()

    def _stop_loop(self) -> None:
        """Stop at once: no new cycle starts, and bindings not yet posted are refused."""
        self._writing = False
        self.metrics.leader.set(0)
        if self._loop_stop is not None:
            self._loop_stop.set()

    async def _run_loop(self, stop: asyncio.Event, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.wait({previous})
        gate = None
        if self.intake is not None:
            await self.intake.wait_synced()  # WaitForCacheSync
            await self.handlers_sync.wait_synced()  # WaitForHandlersSync
            # Pods kopf handed over before their schedulerName was served are listed again.
            await self.cluster.claims_settled()
            # The backlog in the order an informer's first listing would have queued it.
            self.scheduler.queue.order_as_listed(self.handlers_sync.listed)
            self.handlers_sync.listed = frozenset()
            hook, self.on_synced = self.on_synced, None
            if hook is not None:
                self._spawn(self._when_idle(hook))
            gate = self.intake.gate
        logger.info("scheduling loop started")
        try:
            await self.scheduler.run(stop, gate=gate)
        finally:
            logger.info("scheduling loop stopped")

    async def _after_first_listing(self, intake: Intake) -> None:
        try:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(intake.wait_synced(), LISTED_HOOK_MAX_DELAY_SECONDS)
        finally:
            hook, self.on_listed = self.on_listed, None
            if hook is not None:
                hook()

    async def _when_idle(self, hook: Callable[[], None]) -> None:
        """``hook`` once the scheduler has been quiet for ``SYNCED_HOOK_QUIET_SECONDS`` after
        the first listing (at the latest ``SYNCED_HOOK_MAX_DELAY_SECONDS`` on): a full
        collection of the listed cluster (0.6 s at 10,000 running pods) then holds up no pod.
        A queue that runs dry for a moment is no quiet: in a backlog, pods come in through
        kopf in bursts, and the queue ran dry between them. Nor are bindings in flight: a
        backlog's cycles can end seconds before its bindings do (plain pods at 500 nodes: 3 s
        before), and a collection there stopped them for 0.3 s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SYNCED_HOOK_MAX_DELAY_SECONDS
        engine = self.engine
        poll = SYNCED_HOOK_QUIET_SECONDS / 10
        quiet_since = loop.time()
        popped = engine.pods_popped()
        while loop.time() < deadline:
            await asyncio.sleep(poll)
            if engine.has_active() or engine.pods_popped() != popped or engine.pods_in_flight():
                popped = engine.pods_popped()
                quiet_since = loop.time()
            elif loop.time() - quiet_since >= SYNCED_HOOK_QUIET_SECONDS:
                break
        hook()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _retry_lost_bindings(self) -> None:
        """A binding whose response was lost is sent again once the API answers, so a pod
        that was never bound does not wait for the assumption's TTL."""
        while True:
            await asyncio.sleep(self.options.lost_binding_retry_seconds)
            if self.may_write():
                try:
                    await self.scheduler.retry_unconfirmed_bindings()
                except Exception:
                    logger.exception("resending lost bindings failed")

    async def _housekeep(self) -> None:
        """Upstream's periodic flushes, plus retrying status writes that failed."""
        while True:
            await asyncio.sleep(self.options.housekeeping_seconds)
            self.scheduler.housekeep()
            self.profile_sync.resync()
            await self.profile_sync.publish()


def _json(document: object, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(document, indent=2), "application/json", headers)
