"""Scenario (p): a burst of pods that each must preempt, into a running scheduler.

Every node is full with a filler pod of priority 0, and each pending pod, of a higher
PriorityClass, fits a node only once that node's filler is gone: each cycle dry-runs
preemption over the nodes, picks one, deletes its victim and nominates the pod, which binds
in a later cycle. Bench pods have terminationGracePeriodSeconds 0, so the API server removes a
victim at once (no kubelet runs here to end it). Pods are as many as nodes, and two never fit
one node, so the fewest victims is one per pod: the "victims per pod" row says whether a
scheduler evicted more.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

from .objects import ROLE_LABEL, RUN_LABEL, filler_pods, node_name, pending_pods
from .procs import Contender, started
from .report import Figure
from .scenarios import (
    NAMESPACE,
    PODS,
    QUIET_SECONDS,
    SETTLE_SECONDS,
    Bench,
    Drained,
    _per_pod,
    log,
)
from .watch import BindingWatch

PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
PREEMPTOR_CLASS = "bench-preemptor"
#: Of each bench node's 64 cpu, a filler takes 63; a preemptor needs 40, so it fits only a
#: node without its filler, and no two preemptors fit one node.
FILLER_CPU = "63"
PREEMPTOR_CPU = "40"
VICTIMS = "victims per pod"
#: Preemptors that wait for their victims through the backlog of the second row.
WAITING = 10


async def preemption_scenario(bench: Bench, key: str = "p") -> None:
    nodes = bench.sizes.nodes
    count = min(bench.sizes.backlog, nodes)
    await bench.kube.create(
        PRIORITY_CLASSES, {"metadata": {"name": PREEMPTOR_CLASS}, "value": 1000}, exist_ok=True
    )
    scenario = f"preemption: burst of {count} pods, {nodes} full nodes"
    for c in bench.contenders:
        run = f"{key}-{c.name}"
        await bench.kube.create_many(PODS, filler_pods(nodes, FILLER_CPU), bench.concurrency)
        await asyncio.sleep(QUIET_SECONDS)
        d = await _burst(bench, c, run, count)
        fillers, _ = await bench.kube.list(PODS, f"{ROLE_LABEL}=filler", limit=500)
        victims = (nodes - len(fillers)) / d.bound if d.bound else None
        bench.add_drained(key, scenario, c.name, d, d.shortfall())
        bench.table.add(key, scenario, VICTIMS, c.name, Figure(victims, ""))
        log(
            f"{key} {c.name}: {d.bound}/{count} bound, {Figure(d.rate, 'pods/s').text()}, "
            f"{Figure(d.cpu, 'ms').text()} CPU per pod, {nodes - len(fillers)} victims"
        )
        await _clear(bench, run)


async def waiting_preemptors_scenario(bench: Bench, key: str = "p") -> None:
    """A backlog of plain pods while pods that preempted wait for their victims to end:
    the victims have a grace period and no kubelet ends them, so the preemptors stay
    nominated to their nodes through the whole backlog, as while real victims terminate."""
    row_key = f"{key}-wait"
    count = bench.sizes.backlog
    waiting = min(WAITING, bench.sizes.nodes)
    scenario = f"backlog of {count} pods beside {waiting} nominated preemptors"
    for c in bench.contenders:
        run = f"{key}w-{c.name}"
        fillers = list(filler_pods(waiting, FILLER_CPU))
        for filler in fillers:
            filler["spec"]["terminationGracePeriodSeconds"] = 30
        await bench.kube.create_many(PODS, fillers, bench.concurrency)
        await asyncio.sleep(QUIET_SECONDS)
        pods = [*_preemptors(_pinned(pending_pods(f"{run}-p", c.scheduler_name, waiting)))]
        for preemptor in pods:  # counted with the run's pods, never bound
            preemptor["metadata"]["labels"][RUN_LABEL] = run
        pods.extend(pending_pods(run, c.scheduler_name, count))
        d = await bench.drain(c, run, pods, count)
        bench.add_drained(row_key, scenario, c.name, d, d.shortfall())
        log(
            f"{key} waiting, {c.name}: {d.bound}/{count} bound, "
            f"{Figure(d.rate, 'pods/s').text()}, {Figure(d.cpu, 'ms').text()} CPU per pod"
        )
        await _clear(bench, run)


async def _clear(bench: Bench, run: str) -> None:
    """The run's pods and every filler gone, and the API server quiet again."""
    await bench._clean(run)
    if not await bench.kube.delete_collection(PODS, f"{ROLE_LABEL}=filler", bench.timeout):
        log("warning: filler pods still present")
    await asyncio.sleep(QUIET_SECONDS)


def _pinned(pods: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The i-th pod only fits node i (a filler's node)."""
    for i, pod in enumerate(pods):
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node_name(i)}
        yield pod


async def _burst(bench: Bench, c: Contender, run: str, count: int) -> Drained:
    """Starts the scheduler, waits until it binds a probe pod and settles, then creates the
    ``count`` preemptors at once and waits until they are bound: pods/s and CPU from the
    first create to the last binding (a scheduler may preempt for every pod before it binds
    any, so the span from the first binding would miss that work)."""
    async with started(c, bench.cp.workdir, run, bench.cp.pids, bench.cp.cgroups) as proc:
        ready = await bench._ready(c, proc, f"{run}-ready")
        if ready:
            return Drained(count, 0, ready, None, None, None, None, None, None, [])
        await asyncio.sleep(SETTLE_SECONDS)
        await bench.collect_garbage()
        async with BindingWatch(bench.kube, NAMESPACE, f"{RUN_LABEL}={run}") as watch:
            begin = time.monotonic()
            pods = _preemptors(pending_pods(run, c.scheduler_name, count))
            await bench.kube.create_many(PODS, pods, bench.concurrency)
            why = await bench._wait_bound(watch, proc, count)
            await asyncio.sleep(0.3)  # a CPU sample after the last binding
            placed, _ = await bench.kube.list(PODS, f"{RUN_LABEL}={run}", limit=500)
            events = await bench.scheduled_events(placed)
            last, bound = max(watch.bound.values(), default=None), len(watch.bound)
            rate = cpu = cp_cpu = None
            if last is not None and bound:
                rate = bound / (last - begin)
                cpu = _per_pod(proc.cpu_at, begin, last, bound)
                cp_cpu = _per_pod(proc.control_plane_cpu_at, begin, last, bound)
            rss = proc.peak_rss_mb()
    shown = 100 * events / bound if bound else None
    return Drained(count, bound, why, rate, cpu, cp_cpu, None, rss, shown, placed)


def _preemptors(pods: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for pod in pods:
        pod["spec"]["priorityClassName"] = PREEMPTOR_CLASS
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = PREEMPTOR_CPU
        yield pod
