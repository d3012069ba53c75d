"""Scenario (u): backlogs of pods no node can take, measured as (c) measures a backlog but up
to each pod's report (its PodScheduled=False, which cluster-autoscaler scales up for) rather
than its binding.

Two causes, as a cluster at capacity meets them:
- too big: each pod asks for more cpu than any node has, so preemption cannot help either;
- full: every node holds a pod of the same priority that leaves too little room, so each pod's
  preemption looks for victims on every node and finds none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from .objects import ROLE_LABEL, filler_pods, pending_pods
from .report import Figure
from .scenarios import PODS, QUIET_SECONDS, Bench, log

#: Each bench node has 64 cpu: a filler takes 63, so a 2-cpu pod fits on none of them.
CAUSES = {"too big": ("1000", ""), "full": ("2", "63")}
FAILED_EVENTS = "FailedScheduling events by the last report"


async def unschedulable_scenario(bench: Bench, key: str = "u") -> None:
    count = bench.sizes.backlog
    nodes = bench.sizes.nodes
    for n, (cause, (cpu, filler_cpu)) in enumerate(CAUSES.items()):
        row_key = f"{key}-{n}"
        scenario = f"unschedulable ({cause}): backlog of {count} pods, {nodes} nodes"
        if filler_cpu:
            await bench.kube.create_many(PODS, filler_pods(nodes, filler_cpu), bench.concurrency)
            await asyncio.sleep(QUIET_SECONDS)
        for c in bench.contenders:
            run = f"{key}{n}-{c.name}"
            pods = _asking(cpu, pending_pods(run, c.scheduler_name, count))
            d = await bench.drain(c, run, pods, count, unschedulable=True)
            note = f"{d.bound}/{count} reported, {d.why}" if d.why else ""
            bench.add_drained(row_key, scenario, c.name, d, note, FAILED_EVENTS)
            log(
                f"{key} {cause}, {c.name}: {d.bound}/{count} reported unschedulable, "
                f"{Figure(d.rate, 'pods/s').text()}, {Figure(d.cpu, 'ms').text()} CPU per pod"
            )
            await bench._clean(run)
        if filler_cpu:
            if not await bench.kube.delete_collection(PODS, f"{ROLE_LABEL}=filler", bench.timeout):
                log("warning: filler pods still present")
            await asyncio.sleep(QUIET_SECONDS)


def _asking(cpu: str, pods: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for pod in pods:
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
        yield pod
