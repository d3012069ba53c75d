"""One running operator: the scheduler, its inputs from the watches, and its outputs.

The kopf handlers only translate events into calls here, so everything below can be
driven without kopf. Writes (bindings, events, status) happen only while this replica
schedules: with leader election off, or while it holds the Lease. A standby keeps its
cache and queue warm from the watches, like kube-scheduler's informers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from kubernetes_asyncio import client as k8s

from multisched.cache import NodeError, PodError, PodInfo
from multisched.config.resolved import LeaderElection, ResolvedConfig
from multisched.framework import Registry
from multisched.scheduler import Scheduler, default_registry

from .client import Api, ApiError, KubeClient, load_configuration
from .health import HealthServer
from .leader import KubeLeaseApi, LeaderElector, LeaseApi, new_identity
from .metrics import Metrics
from .options import COMPONENT, Options
from .profiles import GROUP, PLURAL, VERSION, ProfileBook

logger = logging.getLogger(__name__)

USER_AGENT = "multisched"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


#: Metadata that changes without the pod changing for scheduling (upstream ``isPodUpdated``).
_VOLATILE_METADATA = frozenset({"resourceVersion", "generation", "managedFields", "finalizers"})


def _pod_updated(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether anything but the status and bookkeeping changed (our own PodScheduled
    patches come back as updates and must not count as "the pod may fit now")."""
    if old.get("spec") != new.get("spec"):
        return True
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    keys = (set(old_meta) | set(new_meta)) - _VOLATILE_METADATA
    return any(old_meta.get(k) != new_meta.get(k) for k in keys)


def _key(body: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = body.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    name = str(meta.get("name") or "")
    return namespace, name, str(meta.get("uid") or f"{namespace or 'default'}/{name}")


class Runtime:
    def __init__(
        self,
        options: Options,
        api: Api,
        registry: Registry | None = None,
        configuration: k8s.Configuration | None = None,
        lease_api: LeaseApi | None = None,
        identity: str | None = None,
    ) -> None:
        self.options = options
        self.api = api
        self.configuration = configuration
        self.identity = identity or new_identity()
        self.lease_api: LeaseApi = lease_api or KubeLeaseApi(api)
        #: Unbound, live pods of every schedulerName, by uid: re-offered when a name appears.
        self.unbound: dict[str, PodInfo] = {}
        #: Set while this replica schedules; what ``KubeClient.may_write`` reports.
        self._leading = False
        self.client = KubeClient(
            api, is_pending=self.unbound.__contains__, may_write=lambda: self._leading
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
        self.metrics.track_pending(self.scheduler.queue.pending_counts)
        self.book = ProfileBook(registry, self.scheduler.build_profiles)
        #: Pods, nodes, namespaces and PDBs have been listed (kopf's index barrier passed).
        self.synced = False
        self.election: LeaderElection | None = None
        self.elector: LeaderElector | None = None
        self._elector_task: asyncio.Task[None] | None = None
        self._election_epoch = 0
        self._loop_task: asyncio.Task[None] | None = None
        self._loop_stop: asyncio.Event | None = None
        self._housekeeping: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._health: HealthServer | None = None
        #: Object name -> the (reason, message) last posted as a Warning event.
        self._warned: dict[str, tuple[str, str]] = {}
        #: Pods we could not read -> the message already reported.
        self._bad_pods: dict[str, str] = {}

    @classmethod
    async def create(cls, options: Options) -> Runtime:
        configuration = await load_configuration(options.kubeconfig)
        api_client = k8s.ApiClient(configuration)
        api_client.user_agent = USER_AGENT
        api = Api(api_client)
        return cls(options, api, configuration=configuration)

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        if self.options.http_port:
            self._health = HealthServer(
                self.options.http_host,
                self.options.http_port,
                ready=lambda: self.synced,
                metrics=self.metrics.render,
            )
            await self._health.start()
        self._apply_election(self.book.combined.config.leader_election)
        self._housekeeping = asyncio.create_task(self._housekeep(), name="multisched housekeeping")

    async def stop(self) -> None:
        tasks = [t for t in (self._housekeeping, self._elector_task) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._elector_task = self.elector = None
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
            await asyncio.wait(background, timeout=5)  # retired electors release their leases
        if self._health is not None:
            await self._health.stop()
        await self.client.close()
        await self.api.api_client.close()

    @property
    def scheduling(self) -> bool:
        """This replica schedules and writes (no election, or it holds the Lease)."""
        return self.client.may_write()

    # -- leader election ------------------------------------------------------------------

    def _apply_election(self, configured: LeaderElection) -> None:
        """Start, stop or retarget the election; called before a new config is set, so pods
        of new names wait for the lease when the config turns election on."""
        wanted = self.options.leader_election(configured)
        current = self.election
        self.election = wanted
        if not wanted.leader_elect:
            if self._elector_task is not None:
                self._retire_elector()
            self._start_loop()
            return
        same_lease = (
            current is not None
            and current.leader_elect
            and self.elector is not None
            and (current.resource_namespace, current.resource_name)
            == (wanted.resource_namespace, wanted.resource_name)
        )
        if same_lease and self.elector is not None:
            self.elector.settings = wanted  # new durations apply from the next round
            return
        self._retire_elector()
        self._stop_loop()
        self._election_epoch += 1
        epoch = self._election_epoch
        self.elector = LeaderElector(
            self.lease_api,
            wanted,
            self.identity,
            on_started_leading=functools.partial(self._leading_changed, epoch, True),
            on_stopped_leading=functools.partial(self._leading_changed, epoch, False),
        )
        self._elector_task = asyncio.create_task(self.elector.run(), name="multisched lease")

    def _retire_elector(self) -> None:
        """Cancel the elector; it releases the Lease on its way out. Its callbacks are
        ignored from now on (stale epoch)."""
        self._election_epoch += 1
        task = self._elector_task
        self._elector_task = self.elector = None
        if task is not None:
            task.cancel()
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _leading_changed(self, epoch: int, leading: bool) -> None:
        if epoch != self._election_epoch:
            return
        if leading:
            self._start_loop()
        else:
            self._stop_loop()

    # -- the scheduling loop --------------------------------------------------------------

    def _start_loop(self) -> None:
        was = self._leading
        self._leading = True
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
            self._spawn(self._sync_statuses(self.book.objects))

    def _stop_loop(self) -> None:
        """Stop at once: no new cycle starts, and bindings not yet posted are refused."""
        self._leading = False
        self.metrics.leader.set(0)
        if self._loop_stop is not None:
            self._loop_stop.set()

    async def _run_loop(self, stop: asyncio.Event, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.wait({previous})
        logger.info("scheduling loop started")
        try:
            await self.scheduler.run(stop)
        finally:
            logger.info("scheduling loop stopped")

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _housekeep(self) -> None:
        """Upstream's periodic flushes, plus retrying status writes that failed."""
        while True:
            await asyncio.sleep(self.options.housekeeping_seconds)
            self.scheduler.housekeep()
            await self._sync_statuses(self.book.objects)

    # -- watch input: pods, nodes, namespaces, PDBs ---------------------------------------

    def mark_synced(self) -> None:
        if not self.synced:
            self.synced = True
            logger.info("caches synced")

    async def on_pod(self, body: Mapping[str, Any]) -> None:
        """A pod was listed, added or modified (re-listing the same pod is a no-op)."""
        uid = _key(body)[2]
        if (body.get("status") or {}).get("phase") in TERMINAL_PHASES:
            self.on_pod_deleted(body)  # finished pods hold no resources (upstream filters them)
            return
        try:
            pod = PodInfo.parse(body)
        except PodError as exc:
            await self._unreadable_pod(body, uid, str(exc))
            return
        self._bad_pods.pop(uid, None)
        if pod.node_name or pod.terminating:
            self.unbound.pop(uid, None)
            self.scheduler.on_pod(pod)
            return
        old = self.unbound.get(uid)
        self.unbound[uid] = pod
        if old is not None and not _pod_updated(old.raw, pod.raw):
            # Status only: keep its place in the queue, just read the fresh object from now on.
            queued = self.scheduler.queue.info(uid)
            if queued is not None:
                queued.pod = pod
            return
        self.scheduler.on_pod(pod)

    def on_pod_deleted(self, body: Mapping[str, Any]) -> None:
        _, _, uid = _key(body)
        self.unbound.pop(uid, None)
        self._bad_pods.pop(uid, None)
        self.scheduler.on_pod_deleted(uid)

    async def _unreadable_pod(self, body: Mapping[str, Any], uid: str, message: str) -> None:
        """Log it (once per problem), drop it, and tell the pod's owner if the pod is ours."""
        self.unbound.pop(uid, None)
        self.scheduler.queue.delete(uid)
        if self._bad_pods.get(uid) == message:
            return
        self._bad_pods[uid] = message
        logger.warning("%s", message)
        spec = body.get("spec") or {}
        ours = (spec.get("schedulerName") or "default-scheduler") in self.scheduler.profiles
        if not ours or spec.get("nodeName") or not self.scheduling:
            return
        namespace, name, _ = _key(body)
        involved = {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": namespace}
        meta = body.get("metadata") or {}
        if meta.get("uid"):
            involved["uid"] = meta["uid"]
        try:
            await self.client.post_event(
                involved,
                namespace or "default",
                "Warning",
                "FailedScheduling",
                message,
                spec.get("schedulerName") or COMPONENT,
                "Scheduling",
            )
        except Exception as exc:
            logger.warning("could not post an event for %s/%s: %s", namespace, name, exc)

    def on_node(self, body: Mapping[str, Any]) -> None:
        try:
            self.scheduler.on_node(dict(body))
        except NodeError as exc:
            logger.warning("ignoring node %s: %s", _key(body)[1], exc)

    def on_node_deleted(self, body: Mapping[str, Any]) -> None:
        self.scheduler.on_node_deleted(_key(body)[1])

    def on_namespace(self, body: Mapping[str, Any], deleted: bool = False) -> None:
        labels = (body.get("metadata") or {}).get("labels") or {}
        self.scheduler.cache.set_namespace(_key(body)[1], None if deleted else dict(labels))

    def on_pdb(self, body: Mapping[str, Any], deleted: bool = False) -> None:
        namespace, name, _ = _key(body)
        self.scheduler.cache.set_pdb(f"{namespace}/{name}", None if deleted else dict(body))

    # -- SchedulerProfiles ----------------------------------------------------------------

    async def on_profile(self, body: Mapping[str, Any], deleted: bool = False) -> None:
        name = _key(body)[1]
        changed = self.book.forget(body) if deleted else self.book.observe(body)
        if not changed:
            await self._sync_statuses((name,))
            return
        if deleted:
            logger.info("SchedulerProfile %s deleted: its schedulerNames retire", name)
            self._warned.pop(name, None)
        self._reconfigure()
        await self._report_problems()
        await self._sync_statuses(self.book.objects)

    def _reconfigure(self) -> None:
        before = set(self.scheduler.profiles)
        combined = self.book.combine()
        self._apply_election(combined.config.leader_election)
        self.scheduler.set_config(combined.config, combined.frameworks)
        served = sorted(combined.frameworks)
        logger.info("serving schedulerNames: %s", ", ".join(served) or "(none)")
        added = set(combined.frameworks) - before
        if added:
            for pod in list(self.unbound.values()):
                if pod.scheduler_name in added:
                    self.scheduler.on_pod(pod)

    async def _report_problems(self) -> None:
        """A Warning event per newly failing object (our own object, so kopf-like)."""
        for name, verdict in self.book.combined.verdicts.items():
            if verdict.ready:
                self._warned.pop(name, None)
                continue
            key = (verdict.reason, verdict.message)
            if self._warned.get(name) == key or not self.scheduling:
                continue
            self._warned[name] = key
            logger.warning("SchedulerProfile %s: %s: %s", name, verdict.reason, verdict.message)
            try:
                await self.client.post_event(
                    self.book.involved(name),
                    "default",
                    "Warning",
                    verdict.reason,
                    verdict.message,
                    COMPONENT,
                )
            except Exception as exc:
                logger.warning("could not post an event for SchedulerProfile %s: %s", name, exc)

    async def _sync_statuses(self, names: Iterable[str]) -> None:
        if not self.scheduling:
            return
        for name in list(names):
            desired = self.book.desired_status(name)
            if desired is None:
                continue
            try:
                await self.client.patch_cluster_status(GROUP, VERSION, PLURAL, name, desired)
            except ApiError as exc:
                if exc.status != 404:
                    logger.warning("could not update SchedulerProfile %s status: %s", name, exc)
                continue
            obj = self.book.objects.get(name)
            if obj is not None:
                obj.status = desired  # until the watch shows it, do not write it again
