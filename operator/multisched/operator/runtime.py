"""One running operator: the scheduler, its inputs, and its outputs.

Inputs: kopf's handlers bring pending pods and SchedulerProfiles; the intake's informers
bring nodes, assigned pods, namespaces and PDBs (intake.py). Both only call methods here,
so everything below can be driven without kopf. Writes (bindings, events, status) happen
only while this replica schedules: with leader election off, or while it holds the Lease.
A standby keeps its cache and queue warm, like kube-scheduler's informers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s

from multisched.cache import NodeError, PodError, PodInfo
from multisched.config.resolved import ResolvedConfig
from multisched.framework import Registry
from multisched.informer import ApiStatusError, Resource, list_objects
from multisched.scheduler import Scheduler, default_registry

from .client import Api, ApiError, KubeClient, load_configuration
from .health import HealthServer
from .intake import ASSIGNED_PODS, NAMESPACES, NODES, PDBS, PODS, Feed, Intake
from .leader import KubeLeaseApi, LeaderElector, LeaseApi, new_identity
from .metrics import Metrics
from .options import COMPONENT, Options
from .profiles import GROUP, PLURAL, VERSION, ProfileBook

logger = logging.getLogger(__name__)

USER_AGENT = "multisched"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
DEFAULT_SCHEDULER_NAME = "default-scheduler"
PROFILES = Resource(GROUP, VERSION, PLURAL)


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


def _skip_env_lookups(api_client: k8s.ApiClient) -> None:
    """kubernetes_asyncio opens its session with ``trust_env=True``: aiohttp then reads
    ~/.netrc and the proxy variables in a worker thread before *every* request, two thread
    hops per binding. With no proxy in the environment there is nothing to find."""
    session: Any = getattr(api_client.rest_client, "pool_manager", None)
    if not urllib.request.getproxies() and hasattr(session, "_trust_env"):
        session._trust_env = False


def _scheduler_name(body: Mapping[str, Any]) -> str:
    return str((body.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME)


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
        #: Unbound, live pods of served schedulerNames, by uid.
        self.unbound: dict[str, PodInfo] = {}
        #: Unbound pods of other schedulerNames, as listed: parsed when their name appears.
        self.others: dict[str, dict[str, Any]] = {}
        #: This replica runs its scheduling loop (election off, or it won the lease).
        self._writing = False
        self.client = KubeClient(
            api, is_pending=self.unbound.__contains__, may_write=self.may_write
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
        #: Nodes, assigned pods, namespaces and PDBs; built by ``start``.
        self.intake: Intake | None = None
        self._profile_resync: asyncio.Task[None] | None = None
        self.elector: LeaderElector | None = None
        self._elector_task: asyncio.Task[None] | None = None
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
        _skip_env_lookups(api_client)
        api = Api(api_client)
        return cls(options, api, configuration=configuration)

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        """Every informer has listed its kind (``/readyz``)."""
        return self.intake is not None and self.intake.synced

    def feeds(self) -> list[Feed]:
        return [
            Feed(NODES, self.on_node, self.on_node_deleted),
            Feed(PODS, self.on_assigned_pod, self.on_assigned_pod_deleted, ASSIGNED_PODS),
            Feed(NAMESPACES, self.on_namespace, self.on_namespace_deleted),
            Feed(PDBS, self.on_pdb, self.on_pdb_deleted),
        ]

    async def start(self) -> None:
        self.intake = Intake(self.api.api_client, self.feeds(), on_relisted=self.resync_profiles)
        self.intake.start()
        if self.options.http_port:
            self._health = HealthServer(
                self.options.http_host,
                self.options.http_port,
                ready=lambda: self.synced,
                metrics=self.metrics.render,
            )
            await self._health.start()
        self._start_election()
        self._housekeeping = asyncio.create_task(self._housekeep(), name="multisched housekeeping")

    async def stop(self) -> None:
        if self.intake is not None:
            await self.intake.stop()
        tasks = [
            t
            for t in (self._housekeeping, self._elector_task, self._profile_resync)
            if t is not None
        ]
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
        await self.client.close()
        await self.api.api_client.close()

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
            self._spawn(self._sync_statuses(self.book.objects))

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
            gate = self.intake.gate
        logger.info("scheduling loop started")
        try:
            await self.scheduler.run(stop, gate=gate)
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
            self.resync_profiles()
            await self._sync_statuses(self.book.objects)

    # -- pending pods (kopf, unscheduled only) ---------------------------------------------

    async def on_pod(self, body: Mapping[str, Any]) -> None:
        """A pending pod was listed, added or modified (re-listing the same pod is a no-op)."""
        uid = _key(body)[2]
        spec = body.get("spec") or {}
        phase = (body.get("status") or {}).get("phase")
        if spec.get("nodeName") or phase in TERMINAL_PHASES:
            self.on_pending_pod_gone(body)  # the assigned-pod informer takes it from here
            return
        if (spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME) not in self.scheduler.profiles:
            self.unbound.pop(uid, None)
            self.scheduler.forget_pending(uid)
            self.others[uid] = dict(body)  # not ours (yet): parse only if its name appears
            return
        self.others.pop(uid, None)
        try:
            pod = PodInfo.parse(body)
        except PodError as exc:
            await self._unreadable_pod(body, uid, str(exc))
            return
        self._bad_pods.pop(uid, None)
        if pod.terminating:
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

    def on_pending_pod_gone(self, body: Mapping[str, Any]) -> None:
        """The pod left the unscheduled selection: bound, finished or deleted. It is no
        longer pending; whether it holds resources is the assigned-pod informer's news."""
        _, _, uid = _key(body)
        self.unbound.pop(uid, None)
        self.others.pop(uid, None)
        self._bad_pods.pop(uid, None)
        self.scheduler.forget_pending(uid)

    # -- informers: assigned pods, nodes, namespaces, PDBs ----------------------------------

    def on_assigned_pod(self, body: dict[str, Any]) -> None:
        spec = body.get("spec") or {}
        if not spec.get("nodeName"):
            return  # a pending pod (an API that ignored the field selector): kopf's
        if (body.get("status") or {}).get("phase") in TERMINAL_PHASES:
            self.on_assigned_pod_deleted(body)  # finished pods hold no resources
            return
        uid = _key(body)[2]
        try:
            pod = PodInfo.parse(body)
        except PodError as exc:
            if self._bad_pods.get(uid) != str(exc):
                self._bad_pods[uid] = str(exc)
                logger.warning("not counting a bound pod: %s", exc)
            return
        self._bad_pods.pop(uid, None)
        self.unbound.pop(uid, None)
        self.scheduler.on_pod(pod.compact())

    def on_assigned_pod_deleted(self, body: dict[str, Any]) -> None:
        _, _, uid = _key(body)
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

    def on_namespace(self, body: Mapping[str, Any]) -> None:
        labels = (body.get("metadata") or {}).get("labels") or {}
        self.scheduler.cache.set_namespace(_key(body)[1], dict(labels))

    def on_namespace_deleted(self, body: Mapping[str, Any]) -> None:
        self.scheduler.cache.set_namespace(_key(body)[1], None)

    def on_pdb(self, body: Mapping[str, Any]) -> None:
        namespace, name, _ = _key(body)
        self.scheduler.cache.set_pdb(f"{namespace}/{name}", dict(body))

    def on_pdb_deleted(self, body: Mapping[str, Any]) -> None:
        namespace, name, _ = _key(body)
        self.scheduler.cache.set_pdb(f"{namespace}/{name}", None)

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
        await self._reconfigure()
        await self._report_problems()
        await self._sync_statuses(self.book.objects)

    async def _reconfigure(self) -> None:
        before = set(self.scheduler.profiles)
        combined = self.book.combine()
        self.scheduler.set_config(combined.config, combined.frameworks)
        served = sorted(combined.frameworks)
        logger.info("serving schedulerNames: %s", ", ".join(served) or "(none)")
        added = set(combined.frameworks) - before
        retired = before - set(combined.frameworks)
        for uid, pod in list(self.unbound.items()):
            if pod.scheduler_name in retired:  # not ours any more: back to raw
                del self.unbound[uid]
                self.others[uid] = pod.raw
        if added:
            for body in [b for b in self.others.values() if _scheduler_name(b) in added]:
                await self.on_pod(body)

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

    # -- SchedulerProfiles gone while no watch was looking ----------------------------------

    def resync_profiles(self) -> None:
        """List SchedulerProfiles and retire those gone: kopf lists again after a gap but
        reports no deletion it missed. Called after any informer relisted, and periodically."""
        if self._profile_resync is None or self._profile_resync.done():
            self._profile_resync = asyncio.ensure_future(self._resync_profiles())

    async def _resync_profiles(self) -> None:
        # Only what was known before the LIST can be missing from it for being deleted;
        # an object kopf brings in meanwhile is newer than the list.
        known = {name: obj.uid for name, obj in self.book.objects.items()}
        try:
            listed = await list_objects(self.api.api_client, PROFILES)
        except (TimeoutError, ApiStatusError, aiohttp.ClientError, OSError) as exc:
            logger.info("could not list SchedulerProfiles to reconcile them: %s", exc)
            return
        except (ValueError, RecursionError) as exc:
            logger.warning("could not decode the SchedulerProfile list: %s", str(exc)[:200])
            return
        present = {str((o.get("metadata") or {}).get("name") or "") for o in listed.items}
        for name, uid in known.items():
            if name not in present:
                await self.on_profile({"metadata": {"name": name, "uid": uid}}, deleted=True)
