"""The four scenarios of issue 7, each run once per scheduler on the same API server and data.

A scheduler is started for each measurement and stopped after it; the pods it bound are deleted
before the next one starts, so both see the same cluster.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from . import volumes
from .controlplane import ROOT, ControlPlane
from .kube import Kube
from .objects import (
    RUN_LABEL,
    node,
    node_name,
    node_status,
    pending_pod,
    pending_pods,
    running_pods,
)
from .procs import Contender, Running, started
from .report import Figure, Table, Target
from .watch import BindingWatch

NAMESPACE = "bench"
RUNNING_NAMESPACE = "bench-running"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
EVENTS = f"/api/v1/namespaces/{NAMESPACE}/events"
STORAGE_CLASSES = "/apis/storage.k8s.io/v1/storageclasses"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRD = ROOT / "crds" / "schedulerprofiles.multisched.dev.yaml"
PROFILE = ROOT / "examples" / "profiles" / "my-scheduler.yaml"
#: After a start-up's first binding: time to finish the initial sync before reading VmHWM.
SETTLE_SECONDS = 2.0
#: After populating: the API server's own catch-up (watch cache, etcd) is not a scheduler's cost.
QUIET_SECONDS = 5.0

FIRST = "first binding after start"
RSS = "peak RSS (VmHWM)"
CONTROL_PLANE_CPU = "API server + etcd CPU per pod"
#: Go's heap profile, after a full collection (``gc=1``); on kube-apiserver and etcd alike.
GC_PATH = "/debug/pprof/heap?gc=1"
SCHEDULED_EVENTS = "Scheduled events by the last binding"
#: Issue 7's targets for multisched, by (scenario, measure); they are set for scale 1.
TARGETS = {
    ("a", FIRST): Target(5, "s"),
    ("a", RSS): Target(250, "MB"),
    ("b", FIRST): Target(20, "s"),
    ("c", "pods/s"): Target(0.8, at_most=False, relative=True),
    ("c", "CPU per pod"): Target(3, relative=True),
    ("c", FIRST): Target(1, "s"),
    ("d", "p50 creation-to-bound"): Target(10, "ms"),
    ("d", "p99 creation-to-bound"): Target(100, "ms"),
}


@dataclass(frozen=True, slots=True)
class Sizes:
    """Issue 7's sizes times ``scale``."""

    nodes: int
    running: int
    running_large: int
    backlog: int
    stream_rate: float
    stream_seconds: float
    #: Scenario (g): PodGroups of GANG_SIZE pods each.
    gangs: int
    #: Scenario (s): the backlog of each pod shape.
    shape_backlog: int

    @classmethod
    def scaled(cls, scale: float) -> Sizes:
        def n(full: int, least: int) -> int:
            return max(least, round(full * scale))

        return cls(
            nodes=n(500, 5),
            running=n(10_000, 10),
            running_large=n(50_000, 10),
            backlog=n(2_000, 10),
            stream_rate=max(5.0, 150 * scale),
            stream_seconds=max(5.0, 20 * min(scale, 1.0)),
            gangs=n(100, 5),
            shape_backlog=n(2_000, 10),
        )


@dataclass(frozen=True, slots=True)
class Drained:
    """What ``Bench.drain`` measured: pods/s, and CPU in ms per pod, from the first binding to
    the last; the first binding's delay after the scheduler's start; its peak RSS."""

    count: int
    bound: int
    #: Why not every pod was bound ("" when all were).
    why: str
    rate: float | None
    cpu: float | None
    cp_cpu: float | None
    took: float | None
    rss: float | None
    #: The run's Scheduled events stored 0.3 s after the last binding, per bound pod (%):
    #: events posted later are CPU outside the measured window.
    events: float | None
    #: The run's pods as the API server has them after the drain.
    pods: list[dict[str, Any]]

    def shortfall(self) -> str:
        """Says "N/M bound, why" when some pods were left unbound, else nothing."""
        return f"{self.bound}/{self.count} bound, {self.why}" if self.bound < self.count else ""

    def partial(self) -> str:
        return f"({self.shortfall()})" if self.bound < self.count else ""


def percentile(values: list[float], q: float) -> float:
    """Nearest rank: the smallest value with at least ``q`` percent of the values at or below."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def profile_scheduler_name() -> str:
    doc = yaml.safe_load(PROFILE.read_text())
    return str(doc["spec"]["profiles"][0]["schedulerName"])


class Bench:
    def __init__(
        self,
        kube: Kube,
        cp: ControlPlane,
        contenders: list[Contender],
        sizes: Sizes,
        timeout: float,
        concurrency: int,
    ) -> None:
        self.kube = kube
        self.cp = cp
        self.contenders = contenders
        self.sizes = sizes
        self.timeout = timeout
        self.concurrency = concurrency
        self.table = Table(TARGETS)
        self.running = 0
        self._gc_refused = False

    # -- the cluster -------------------------------------------------------------------------

    async def setup(self) -> None:
        for ns in (NAMESPACE, RUNNING_NAMESPACE):
            await self.kube.create("/api/v1/namespaces", {"metadata": {"name": ns}}, exist_ok=True)
            # No controller manager: the ServiceAccount pod admission insists on.
            await self.kube.create(
                f"/api/v1/namespaces/{ns}/serviceaccounts",
                {"metadata": {"name": "default"}},
                exist_ok=True,
            )
        await self._install_profile()
        begin = time.monotonic()
        count = self.sizes.nodes
        await self.kube.create_many(
            "/api/v1/nodes", (node(i) for i in range(count)), self.concurrency
        )
        await self._concurrently(
            self.kube.patch_status(f"/api/v1/nodes/{node_name(i)}", node_status())
            for i in range(count)
        )
        log(f"{count} nodes created and Ready in {time.monotonic() - begin:.1f} s")

    async def install_crd(self, file: Path) -> None:
        """Creates the CRD of ``file`` (if absent) and waits until it is Established."""
        crd = next(doc for doc in yaml.safe_load_all(file.read_text()) if doc)
        name = crd["metadata"]["name"]
        await self.kube.create(CRDS, crd, exist_ok=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            obj = await self.kube.request("GET", f"{CRDS}/{name}")
            conditions = (obj.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return
            await asyncio.sleep(0.2)
        raise RuntimeError(f"the CRD {name} was not Established in 30 s")

    async def _install_profile(self) -> None:
        await self.install_crd(CRD)
        await self.kube.create(
            "/apis/multisched.dev/v1alpha1/schedulerprofiles",
            yaml.safe_load(PROFILE.read_text()),
            exist_ok=True,
        )

    async def _concurrently(self, calls: Any) -> None:
        limit = asyncio.Semaphore(self.concurrency)

        async def one(call: Any) -> None:
            async with limit:
                await call

        async with asyncio.TaskGroup() as group:
            for call in calls:
                group.create_task(one(call))

    async def populate_running(self, total: int) -> None:
        if total <= self.running:
            return
        begin = time.monotonic()
        added = await self.kube.create_many(
            f"/api/v1/namespaces/{RUNNING_NAMESPACE}/pods",
            running_pods(self.running, total, self.sizes.nodes),
            self.concurrency,
        )
        self.running = total
        spent = time.monotonic() - begin
        log(
            f"{added} running pods created in {spent:.1f} s ({added / spent:.0f}/s); {total} in all"
        )
        await asyncio.sleep(QUIET_SECONDS)

    async def collect_garbage(self) -> None:
        """A full garbage collection in kube-apiserver and etcd, just before a measured span
        (Go's ``runtime.GC``, through ``/debug/pprof/heap?gc=1``). Go collects when its heap
        has doubled: left alone, a span of a few seconds pays for one cycle or none, and for
        garbage that the run before it (its deletes) and the populating left, whichever
        scheduler made it. Each span now starts from a collected heap and pays for what is
        made during it."""
        async with self.kube.session.get(GC_PATH) as resp:
            await resp.read()
            refused = [] if resp.status == 200 else [f"kube-apiserver ({resp.status})"]
        if self.cp.etcd_url:  # its own session: the API server's token is not etcd's
            url = self.cp.etcd_url + GC_PATH
            async with aiohttp.ClientSession() as etcd, etcd.get(url) as got:
                await got.read()
                refused += [] if got.status == 200 else [f"etcd ({got.status})"]
        if refused and not self._gc_refused:
            self._gc_refused = True
            log(f"warning: no garbage collection before the spans: {', '.join(refused)}")

    async def _clean(self, run: str) -> None:
        if not await self.kube.delete_collection(PODS, f"{RUN_LABEL}={run}", self.timeout):
            log(f"warning: pods of {run} still present after {self.timeout:.0f} s")
        # Events live an hour: kept, a long bench's later runs would share an etcd (and an
        # API server's memory) grown by every earlier run's.
        await self.kube.request("DELETE", EVENTS)  # deletecollection answers once done

    # -- waiting -----------------------------------------------------------------------------

    async def _wait_bound(
        self, watch: BindingWatch, proc: Running, count: int, goal: dict[str, float] | None = None
    ) -> str:
        """Empty once ``count`` pods are bound (or in ``goal``: ``watch.unschedulable``), else
        why not (a timeout, or the process died)."""
        goal = watch.bound if goal is None else goal
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if await watch.wait_for(goal, count, min(1.0, deadline - time.monotonic())):
                return ""
            code = proc.exited()
            if code is not None:
                log(f"{proc.contender.name} exited with {code}; log tail:\n{proc.log_tail()}")
                return f"exited ({code})"
        return f"none in {self.timeout:.0f} s" if not goal else f"timeout {self.timeout:.0f} s"

    # -- scenarios ---------------------------------------------------------------------------

    async def startup(self, key: str, running: int) -> None:
        """(a), (b): from process start to the binding of a pod already pending."""
        await self.populate_running(running)
        scenario = f"{self.sizes.nodes} nodes + {running} running pods"
        for c in self.contenders:
            run = f"{key}-{c.name}"
            async with BindingWatch(self.kube, NAMESPACE, f"{RUN_LABEL}={run}") as watch:
                await self.kube.create(PODS, pending_pod(run, c.scheduler_name, 0))
                async with started(c, self.cp.workdir, run, cgroups=self.cp.cgroups) as proc:
                    why = await self._wait_bound(watch, proc, 1)
                    if not why:
                        await asyncio.sleep(SETTLE_SECONDS)
                    rss = proc.peak_rss_mb()
                    first = watch.first_bound
                    # Without a binding: what the wait cost, as "none in N s" says.
                    cpu = proc.cpu_at(first) if first is not None else proc.cpu_now()
                took = first - proc.started if first is not None else None
            figures = {
                FIRST: Figure(took, "s", why),
                RSS: Figure(rss, "MB"),
                "CPU until first binding": Figure(
                    cpu, "s", "" if took is not None else "(no binding)"
                ),
            }
            for measure, figure in figures.items():
                self.table.add(key, scenario, measure, c.name, figure)
            log(f"{key} {c.name}: " + ", ".join(f"{m} {f.text()}" for m, f in figures.items()))
            await self._clean(run)

    async def backlog(self, key: str = "c") -> None:
        """(c): pods pending before the scheduler starts; throughput and CPU while it drains."""
        count = self.sizes.backlog
        scenario = f"backlog of {count} pending pods, {self.sizes.nodes} nodes"
        for c in self.contenders:
            run = f"{key}-{c.name}"
            d = await self.drain(c, run, pending_pods(run, c.scheduler_name, count), count)
            self.add_drained(key, scenario, c.name, d, d.shortfall())
            self.table.add(
                key,
                scenario,
                FIRST,
                c.name,
                Figure(d.took, "s", d.why if d.took is None else ""),
            )
            self.table.add(key, scenario, RSS, c.name, Figure(d.rss, "MB"))
            log(
                f"{key} {c.name}: {d.bound}/{count} bound, {Figure(d.rate, 'pods/s').text()}, "
                f"{Figure(d.cpu, 'ms').text()} CPU per pod, first after "
                f"{Figure(d.took, 's').text()}"
            )
            await self._clean(run)

    async def drain(
        self,
        c: Contender,
        run: str,
        pods: Iterable[dict[str, Any]],
        count: int,
        unschedulable: bool = False,
    ) -> Drained:
        """Creates ``pods`` (``count`` of them, labelled ``run``), then starts the scheduler and
        waits until it has bound them all (``unschedulable``: until each is reported so, by
        its PodScheduled condition); the run's pods are left for the caller to delete. The
        figures of ``Drained`` then count reports, not bindings."""
        async with BindingWatch(self.kube, NAMESPACE, f"{RUN_LABEL}={run}") as watch:
            goal = watch.unschedulable if unschedulable else watch.bound
            await self.kube.create_many(PODS, pods, self.concurrency)
            await self.collect_garbage()
            async with started(c, self.cp.workdir, run, self.cp.pids, self.cp.cgroups) as proc:
                why = await self._wait_bound(watch, proc, count, goal)
                await asyncio.sleep(0.3)  # a CPU sample after the last binding
                placed, _ = await self.kube.list(PODS, f"{RUN_LABEL}={run}", limit=500)
                reason = "FailedScheduling" if unschedulable else "Scheduled"
                events = await self.scheduled_events(placed, reason)
                rss = proc.peak_rss_mb()
                first = min(goal.values(), default=None)
                last, bound = max(goal.values(), default=None), len(goal)
                rate = cpu = cp_cpu = None
                if first is not None and last is not None and bound > 1 and last > first:
                    rate = (bound - 1) / (last - first)
                    cpu = _per_pod(proc.cpu_at, first, last, bound - 1)
                    cp_cpu = _per_pod(proc.control_plane_cpu_at, first, last, bound - 1)
        took = first - proc.started if first is not None else None
        shown = 100 * events / bound if bound else None
        return Drained(count, bound, why, rate, cpu, cp_cpu, took, rss, shown, placed)

    def add_drained(
        self,
        key: str,
        scenario: str,
        name: str,
        d: Drained,
        note: str,
        events: str = SCHEDULED_EVENTS,
    ) -> None:
        """A drain's rows: pods/s (``note`` beside it), CPU per pod, the control plane's, and
        the share of the pods with their event (under the measure ``events``)."""
        add = self.table.add
        add(key, scenario, "pods/s", name, Figure(d.rate, "", f"({note})" if note else ""))
        add(key, scenario, "CPU per pod", name, Figure(d.cpu, "ms"))
        add(key, scenario, CONTROL_PLANE_CPU, name, Figure(d.cp_cpu, "ms"))
        add(key, scenario, events, name, Figure(d.events, "%"))

    async def scheduled_events(self, pods: list[dict[str, Any]], reason: str = "Scheduled") -> int:
        """How many of ``pods`` have a Scheduled (or ``reason``) event (core/v1 and
        events.k8s.io/v1 alike), by uid: a repeat's pods have the names of the run before."""
        uids = {p["metadata"]["uid"] for p in pods}
        events, _ = await self.kube.list(EVENTS, field_selector=f"reason={reason}", limit=500)
        return len(uids & {(e.get("involvedObject") or {}).get("uid") for e in events})

    async def volume_backlog(self, key: str = "v") -> None:
        """(v): a backlog of pods with a claim each, on local PVs (volumes.py)."""
        missing = volumes.controller_manager_missing()
        if missing:
            log(missing)
            return
        count = max(10, self.sizes.backlog // 4)
        scenario = f"backlog of {count} pods with local-PV claims, {self.sizes.nodes} nodes"
        await self.kube.create(STORAGE_CLASSES, volumes.storage_class(), exist_ok=True)
        with volumes.pv_controller(self.cp.kubeconfig, self.cp.workdir):
            for c in self.contenders:
                run = f"{key}-{c.name}"
                nodes = self.sizes.nodes
                # Two local PVs per claim, as a node's disk pool has spares: the schedulers'
                # choices, not the last free disk, decide the pace.
                await self.kube.create_many(
                    volumes.PVS, (volumes.local_pv(run, i, nodes) for i in range(2 * count)),
                    self.concurrency,
                )  # fmt: skip
                # A new PV is Pending until the PV controller marks it Available: a scheduler
                # started before that would measure the controller's pace, not its own.
                await self._all_available(run, 2 * count)
                await self.kube.create_many(
                    volumes.claims_path(NAMESPACE),
                    (volumes.claim(run, i) for i in range(count)),
                    self.concurrency,
                )
                async with BindingWatch(self.kube, NAMESPACE, f"{RUN_LABEL}={run}") as watch:
                    await self.kube.create_many(
                        PODS,
                        (volumes.stateful_pod(run, c.scheduler_name, i) for i in range(count)),
                        self.concurrency,
                    )
                    await self.collect_garbage()
                    async with started(
                        c, self.cp.workdir, run, self.cp.pids, self.cp.cgroups
                    ) as proc:
                        why = await self._wait_bound(watch, proc, count)
                        await asyncio.sleep(0.3)
                        first, last, bound = watch.first_bound, watch.last_bound, len(watch.bound)
                        rate = cpu = None
                        if first is not None and last is not None and bound > 1 and last > first:
                            rate = (bound - 1) / (last - first)
                            cpu = _per_pod(proc.cpu_at, first, last, bound - 1)
                partial = f"({bound}/{count} bound, {why})" if bound < count else ""
                self.table.add(key, scenario, "pods/s", c.name, Figure(rate, "", partial))
                self.table.add(key, scenario, "CPU per pod", c.name, Figure(cpu, "ms"))
                log(
                    f"{key} {c.name}: {bound}/{count} bound, {Figure(rate, 'pods/s').text()}, "
                    f"{Figure(cpu, 'ms').text()} CPU per pod"
                )
                await self._clean(run)
                for path in (volumes.claims_path(NAMESPACE), volumes.PVS):
                    if not await self.kube.delete_collection(
                        path, f"{RUN_LABEL}={run}", self.timeout
                    ):
                        log(f"warning: {path} of {run} still present after {self.timeout:.0f} s")

    async def _all_available(self, run: str, count: int) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            pvs, _ = await self.kube.list(volumes.PVS, f"{RUN_LABEL}={run}")
            ready = sum(1 for pv in pvs if (pv.get("status") or {}).get("phase") == "Available")
            if ready >= count:
                return
            await asyncio.sleep(0.5)
        log(f"warning: not every PV of {run} was Available after {self.timeout:.0f} s")

    async def stream(self, key: str = "d") -> None:
        """(d): pods created at a steady rate into a running scheduler; creation-to-bound."""
        rate, seconds = self.sizes.stream_rate, self.sizes.stream_seconds
        count = round(rate * seconds)
        scenario = f"stream of {rate:g} pods/s for {seconds:g} s, {self.sizes.nodes} nodes"
        for c in self.contenders:
            run = f"{key}-{c.name}"
            async with started(c, self.cp.workdir, run, cgroups=self.cp.cgroups) as proc:
                ready = await self._ready(c, proc, f"{run}-ready")
                if ready:
                    self.table.add(
                        key, scenario, "p50 creation-to-bound", c.name, Figure(None, "", ready)
                    )
                    continue
                async with BindingWatch(self.kube, NAMESPACE, f"{RUN_LABEL}={run}") as watch:
                    cpu_before, harness_before = proc.cpu_now(), harness_cpu()
                    sent, achieved = await self._paced(run, c.scheduler_name, count, rate)
                    why = await self._wait_bound(watch, proc, count)
                    cpu_after, harness = proc.cpu_now(), harness_cpu() - harness_before
                    latencies = [
                        (t - watch.added.get(name, sent.get(name, t))) * 1000
                        for name, t in watch.bound.items()
                    ]
            notes = [f"{len(latencies)}/{count} bound, {why}"] if why else []
            if achieved < 0.9 * rate:  # the harness (or the machine) could not keep the pace
                notes.append(f"created at {achieved:.0f}/s")
            note = f"({'; '.join(notes)})" if notes else ""
            for q in (50, 99):
                value = percentile(latencies, q) if latencies else None
                self.table.add(
                    key, scenario, f"p{q} creation-to-bound", c.name, Figure(value, "ms", note)
                )
            cpu = None
            if cpu_before is not None and cpu_after is not None and latencies:
                cpu = (cpu_after - cpu_before) / len(latencies) * 1000
            self.table.add(key, scenario, "CPU per pod", c.name, Figure(cpu, "ms"))
            log(
                f"{key} {c.name}: created {count} at {achieved:.0f}/s, {len(latencies)} bound; "
                f"the harness used {harness:.1f} CPU-s meanwhile"
            )
            await self._clean(run)

    async def _ready(self, c: Contender, proc: Running, run: str) -> str:
        """Waits until the scheduler binds a probe pod: "" when it did, else why not."""
        async with BindingWatch(self.kube, NAMESPACE, f"{RUN_LABEL}={run}") as watch:
            await self.kube.create(PODS, pending_pod(run, c.scheduler_name, 0))
            why = await self._wait_bound(watch, proc, 1)
        await self._clean(run)
        return f"not ready: {why}" if why else ""

    async def _paced(
        self, run: str, scheduler_name: str, count: int, rate: float
    ) -> tuple[dict[str, float], float]:
        """Creates ``count`` pods at ``rate`` per second; when each create was sent."""
        sent: dict[str, float] = {}
        limit = asyncio.Semaphore(self.concurrency)
        loop = asyncio.get_running_loop()

        async def create(body: dict[str, Any]) -> None:
            try:
                sent[body["metadata"]["name"]] = time.monotonic()
                await self.kube.create(PODS, body)
            finally:
                limit.release()

        begin = loop.time()
        async with asyncio.TaskGroup() as group:
            for i in range(count):
                delay = begin + i / rate - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                await limit.acquire()
                group.create_task(create(pending_pod(run, scheduler_name, i)))
        return sent, count / max(loop.time() - begin, 1e-9)


def _per_pod(
    cpu_at: Callable[[float], float | None], first: float, last: float, pods: int
) -> float | None:
    """Milliseconds of CPU per pod between two instants."""
    c0, c1 = cpu_at(first), cpu_at(last)
    return None if c0 is None or c1 is None else (c1 - c0) / pods * 1000


def harness_cpu() -> float:
    """This process's CPU seconds: it shares the machine with what it measures."""
    times = os.times()
    return times.user + times.system


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)
