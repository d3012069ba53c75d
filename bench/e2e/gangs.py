"""Scenario (g): gangs. PodGroups of 8 pods, created one gang after another into a running
scheduler; pods/s, CPU per pod, and per gang the time from its last pod created to its last
pod bound.

multisched runs them with scheduler-plugins' Coscheduling (their CRDs, their documented
profile); every profile of one multisched must share its queueSort plugin, so for the
scenario's duration the bench's SchedulerProfile is swapped for a gang profile with the same
schedulerName, and restored after. kube-scheduler has no gang plugin in this build: it gets
the same pods without a group, created in the same batches of 8, so that its figures stand
beside multisched's as a plain-pod reference.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import yaml

from .controlplane import ROOT
from .objects import RUN_LABEL, pending_pod
from .procs import Contender, Running, started
from .report import MULTISCHEDS, Figure
from .scenarios import (
    CONTROL_PLANE_CPU,
    NAMESPACE,
    PODS,
    PROFILE,
    Bench,
    _per_pod,
    log,
    percentile,
)
from .watch import BindingWatch

GANG_SIZE = 8
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PLUGIN_CRDS = ROOT / "crds" / "scheduler-plugins"
PODGROUPS = f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{NAMESPACE}/podgroups"
PROFILES = "/apis/multisched.dev/v1alpha1/schedulerprofiles"
PERMIT_SECONDS = 30
#: How long multisched may take to show the swapped profile applied on its status.
PROFILE_APPLIED_SECONDS = 30.0

LATENCY = "gang last-created-to-bound"
WHOLE = "gangs bound whole"


def gang_profile_spec(scheduler_name: str) -> dict[str, Any]:
    """The e2e suite's gang profile (tests/e2e/gangs_support.py), under ``scheduler_name``."""
    from gangs_support import gang_profile_spec as spec

    return spec(scheduler_name, PERMIT_SECONDS)


def group_name(run: str, g: int) -> str:
    return f"{run}-gang-{g:04d}"


def pod_group(run: str, g: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": group_name(run, g), "labels": {RUN_LABEL: run}},
        "spec": {"minMember": GANG_SIZE},
    }


def gang_pods(run: str, scheduler_name: str, g: int, grouped: bool) -> list[dict[str, Any]]:
    """The ``g``-th batch of GANG_SIZE pods; labelled with their PodGroup when ``grouped``."""
    pods = [pending_pod(run, scheduler_name, g * GANG_SIZE + k) for k in range(GANG_SIZE)]
    if grouped:
        for pod in pods:
            pod["metadata"]["labels"][GROUP_LABEL] = group_name(run, g)
    return pods


def _gang_of(name: str) -> int:
    """The batch a pod of ``gang_pods`` belongs to, from its name's index."""
    return int(name.rsplit("-", 1)[1]) // GANG_SIZE


async def gang_scenario(bench: Bench, key: str = "g") -> None:
    """(g): multisched on gangs (Coscheduling), kube-scheduler on the same pods ungrouped."""
    gangs, nodes = bench.sizes.gangs, bench.sizes.nodes
    count = gangs * GANG_SIZE
    scenario = (
        f"{gangs} gangs of {GANG_SIZE} pods, {nodes} nodes "
        f"(kube-scheduler: the {count} pods ungrouped)"
    )
    for path in sorted(PLUGIN_CRDS.glob("*.yaml")):
        await bench.install_crd(path)
    for c in bench.contenders:
        grouped = c.name in MULTISCHEDS
        if grouped:
            async with gang_profile(bench, c.scheduler_name):
                await _one(bench, key, scenario, c, grouped)
        else:
            await _one(bench, key, scenario, c, grouped)


async def _one(bench: Bench, key: str, scenario: str, c: Contender, grouped: bool) -> None:
    gangs = bench.sizes.gangs
    count = gangs * GANG_SIZE
    run = f"{key}-{c.name}"
    try:
        async with started(c, bench.cp.workdir, run, bench.cp.pids, bench.cp.cgroups) as proc:
            ready = await bench._ready(c, proc, f"{run}-ready")
            if not ready and grouped:
                ready = await _profile_applied(bench, proc)
            if ready:
                bench.table.add(key, scenario, "pods/s", c.name, Figure(None, "", ready))
                log(f"{key} {c.name}: {ready}")
                return
            await bench.collect_garbage()
            async with BindingWatch(bench.kube, NAMESPACE, f"{RUN_LABEL}={run}") as watch:
                begin = time.monotonic()
                created = await _create_gangs(bench, run, c.scheduler_name, gangs, grouped)
                creating = time.monotonic() - begin
                why = await bench._wait_bound(watch, proc, count)
                await asyncio.sleep(0.3)  # a CPU sample after the last binding
                first, last, bound = watch.first_bound, watch.last_bound, len(watch.bound)
                rate = cpu = cp_cpu = None
                if first is not None and last is not None and bound > 1 and last > first:
                    rate = (bound - 1) / (last - first)
                    cpu = _per_pod(proc.cpu_at, first, last, bound - 1)
                    cp_cpu = _per_pod(proc.control_plane_cpu_at, first, last, bound - 1)
                per_gang: dict[int, list[float]] = {}
                for name, t in watch.bound.items():
                    per_gang.setdefault(_gang_of(name), []).append(t)
            # What the API server holds now, not what the watch saw: a gang bound in part.
            counts = await _bound_per_gang(bench, run)
    finally:
        await bench._clean(run)
        if grouped:
            await _delete_groups(bench, run)
    whole = [g for g in range(gangs) if len(per_gang.get(g, ())) == GANG_SIZE]
    latencies = [(max(per_gang[g]) - created[g]) * 1000 for g in whole]
    spreads = [(max(per_gang[g]) - min(per_gang[g])) * 1000 for g in whole]
    waits = [(min(per_gang[g]) - created[g]) * 1000 for g in whole]
    partial_gangs = sorted(g for g, n in counts.items() if 0 < n < GANG_SIZE)

    notes = [f"{bound}/{count} bound, {why}"] if bound < count else []
    created_rate = count / max(creating, 1e-9)
    if rate is not None and created_rate < 1.2 * rate:  # the creates set the pace
        notes.append(f"created at {created_rate:.0f}/s")
    note = f"({'; '.join(notes)})" if notes else ""
    bench.table.add(key, scenario, "pods/s", c.name, Figure(rate, "", note))
    bench.table.add(key, scenario, "CPU per pod", c.name, Figure(cpu, "ms"))
    bench.table.add(key, scenario, CONTROL_PLANE_CPU, c.name, Figure(cp_cpu, "ms"))
    lat_note = f"({len(latencies)}/{gangs} gangs)" if len(latencies) < gangs else ""
    for q in (50, 99):
        value = percentile(latencies, q) if latencies else None
        figure = Figure(value, "ms", lat_note)
        bench.table.add(key, scenario, f"p{q} {LATENCY}", c.name, figure)
    if grouped:
        whole_now = sum(1 for n in counts.values() if n == GANG_SIZE)
        text = f"{whole_now}/{gangs}, {len(partial_gangs)} in part"
        if partial_gangs:
            more = ", ..." if len(partial_gangs) > 3 else ""
            text += f" ({', '.join(group_name(run, g) for g in partial_gangs[:3])}{more})"
        figure = Figure(None, "", text)
    else:
        figure = Figure(None, "", "(no gangs)")
    bench.table.add(key, scenario, WHOLE, c.name, figure)
    slowest = ", ".join(
        f"{group_name(run, g)} {(max(per_gang[g]) - created[g]) * 1000:.0f} ms"
        for g in sorted(whole, key=lambda g: max(per_gang[g]) - created[g], reverse=True)[:3]
    )
    log(
        f"{key} {c.name}: {count} pods in {gangs} {'gangs' if grouped else 'batches'} created "
        f"in {creating:.1f} s ({created_rate:.0f}/s); {bound}/{count} bound, "
        f"{Figure(rate, 'pods/s').text()}, {Figure(cpu, 'ms').text()} CPU per pod; "
        f"a gang's last create to its first binding: p50 {_ms(waits, 50)}, p99 {_ms(waits, 99)}, "
        f"first to last binding: p50 {_ms(spreads, 50)}, p99 {_ms(spreads, 99)}; "
        f"{len(partial_gangs)} gangs bound in part; slowest: {slowest}"
    )


def _ms(values: list[float], q: float) -> str:
    return f"{percentile(values, q):.1f} ms" if values else "-"


async def _create_gangs(
    bench: Bench, run: str, scheduler_name: str, gangs: int, grouped: bool
) -> list[float]:
    """One gang after another (PodGroup, then its pods at once); when each last create returned."""
    limit = asyncio.Semaphore(min(GANG_SIZE, bench.concurrency))

    async def create(body: dict[str, Any]) -> float:
        async with limit:
            await bench.kube.create(PODS, body)
            return time.monotonic()

    done: list[float] = []
    for g in range(gangs):
        if grouped:
            await bench.kube.create(PODGROUPS, pod_group(run, g))
        returned = await asyncio.gather(
            *(create(p) for p in gang_pods(run, scheduler_name, g, grouped))
        )
        done.append(max(returned))
    return done


async def _bound_per_gang(bench: Bench, run: str) -> dict[int, int]:
    pods, _ = await bench.kube.list(PODS, f"{RUN_LABEL}={run}", limit=500)
    counts: dict[int, int] = {}
    for pod in pods:
        g = _gang_of(pod["metadata"]["name"])
        counts[g] = counts.get(g, 0) + (1 if (pod.get("spec") or {}).get("nodeName") else 0)
    return counts


async def _delete_groups(bench: Bench, run: str) -> None:
    if not await bench.kube.delete_collection(PODGROUPS, f"{RUN_LABEL}={run}", bench.timeout):
        log(f"warning: PodGroups of {run} still present after {bench.timeout:.0f} s")


# -- the profile swap ------------------------------------------------------------------------


@asynccontextmanager
async def gang_profile(bench: Bench, scheduler_name: str) -> AsyncIterator[None]:
    """The bench's SchedulerProfile with the gang spec for the block; its own spec after."""
    name = yaml.safe_load(PROFILE.read_text())["metadata"]["name"]
    path = f"{PROFILES}/{name}"
    obj = await bench.kube.request("GET", path)
    original = copy.deepcopy(obj["spec"])
    await _put_spec(bench, path, gang_profile_spec(scheduler_name))
    try:
        yield
    finally:
        await _put_spec(bench, path, original)
        if (await bench.kube.request("GET", path)).get("spec") != original:
            log(f"warning: SchedulerProfile {name} not restored")


async def _put_spec(bench: Bench, path: str, spec: dict[str, Any]) -> None:
    obj = await bench.kube.request("GET", path)
    obj["spec"] = spec
    await bench.kube.request("PUT", path, obj)


async def _profile_applied(bench: Bench, proc: Running) -> str:
    """Empty once the profile's status shows its current generation applied, else why not."""
    name = yaml.safe_load(PROFILE.read_text())["metadata"]["name"]
    deadline = time.monotonic() + PROFILE_APPLIED_SECONDS
    message = "no status"
    while time.monotonic() < deadline:
        obj = await bench.kube.request("GET", f"{PROFILES}/{name}")
        generation = (obj.get("metadata") or {}).get("generation")
        for cond in (obj.get("status") or {}).get("conditions") or ():
            if cond.get("type") != "Ready":
                continue
            if cond.get("observedGeneration") == generation:
                if cond.get("status") == "True":
                    return ""
                message = f"{cond.get('reason')}: {cond.get('message')}"
        if proc.exited() is not None:
            return f"not ready: exited ({proc.exited()})"
        await asyncio.sleep(0.2)
    return f"gang profile not applied in {PROFILE_APPLIED_SECONDS:.0f} s ({message})"
