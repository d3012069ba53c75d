"""Scenario (s): backlogs of pods of one shape each, as kube-scheduler's scheduler_perf shapes
its workloads (objects.shaped_pod): plain, spread, anti-affinity, affinity, and the four mixed.

Each shape is measured as scenario (c) measures its backlog: the pods are created, then the
scheduler is started; pods/s and CPU per pod from the first binding to the last. Both schedulers
run each shape in turn, on the bench's nodes or on as many as ``--shape-nodes`` asks for: nodes
are added (or removed) for the scenario, and the bench's count is restored after it.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

from .objects import (
    GROUP_LABEL,
    GROUP_PODS,
    SHAPES,
    ZONES,
    node,
    node_name,
    node_status,
    shaped_pods,
)
from .report import Figure
from .scenarios import QUIET_SECONDS, Bench, log

NODES = "/api/v1/nodes"


async def shape_scenario(
    bench: Bench, node_counts: list[int], shapes: tuple[str, ...] = SHAPES, key: str = "s"
) -> None:
    """(s): the backlog of each of ``shapes``, for each contender, at each node count in
    ``node_counts``."""
    count = bench.sizes.shape_backlog
    current = bench.sizes.nodes
    for nodes in node_counts:
        current = await resize(bench, current, nodes)
        for shape in shapes:
            n = SHAPES.index(shape)
            # Keys sort the rows: by node count, then in SHAPES' order.
            row_key = f"{key}-{nodes:06d}-{n}"
            scenario = f"shape {shape}: backlog of {count} pods, {nodes} nodes"
            if shape in ("anti-affinity", "mixed"):
                scenario += f", groups of {min(GROUP_PODS, nodes)}"
            for c in bench.contenders:
                run = f"{key}{nodes}-{shape}-{c.name}"
                pods = shaped_pods(run, c.scheduler_name, count, shape, nodes)
                d = await bench.drain(c, run, pods, count)
                broken = violations(d.pods)
                if broken:
                    log(f"warning: {c.name} broke hard constraints of {shape}: {broken}")
                note = "; ".join(x for x in (d.shortfall(), broken) if x)
                bench.add_drained(row_key, scenario, c.name, d, note)
                log(
                    f"{key} {shape} at {nodes} nodes, {c.name}: {d.bound}/{count} bound, "
                    f"{Figure(d.rate, 'pods/s').text()}, {Figure(d.cpu, 'ms').text()} CPU "
                    f"per pod, {Figure(d.cp_cpu, 'ms').text()} API server + etcd CPU per pod"
                )
                await bench._clean(run)
    await resize(bench, current, bench.sizes.nodes)


async def resize(bench: Bench, current: int, wanted: int) -> int:
    """Adds nodes ``current`` .. ``wanted - 1`` (Ready), or deletes those from ``wanted`` on."""
    if wanted == current:
        return current
    begin = time.monotonic()
    if wanted > current:
        await bench.kube.create_many(
            NODES, (node(i) for i in range(current, wanted)), bench.concurrency
        )
        await bench._concurrently(
            bench.kube.patch_status(f"{NODES}/{node_name(i)}", node_status())
            for i in range(current, wanted)
        )
    else:
        await bench._concurrently(
            bench.kube.request("DELETE", f"{NODES}/{node_name(i)}", allow=(404,))
            for i in range(wanted, current)
        )
    log(f"nodes: {current} -> {wanted} in {time.monotonic() - begin:.1f} s")
    await asyncio.sleep(QUIET_SECONDS)
    return wanted


def violations(pods: list[dict[str, Any]]) -> str:
    """The hard constraints the bound ``pods`` break, said briefly; "" when none.

    Two pods of one anti-affinity group on one node; an app's pods with a zone spread whose
    counts per zone differ by more than 1 (every zone is eligible: the nodes have no taints and
    the pods no node selector, so the counts after the last binding are bounded so too).
    """
    per_node: Counter[tuple[str, str]] = Counter()
    per_zone: dict[str, Counter[int]] = {}
    for pod in pods:
        spec, labels = pod.get("spec") or {}, pod["metadata"].get("labels") or {}
        where = spec.get("nodeName")
        if not where:
            continue
        if GROUP_LABEL in labels:
            per_node[labels[GROUP_LABEL], where] += 1
        if spec.get("topologySpreadConstraints"):
            zones = per_zone.setdefault(labels["app"], Counter({z: 0 for z in range(ZONES)}))
            zones[int(where.rsplit("-", 1)[1]) % ZONES] += 1
    crowded = sum(1 for n in per_node.values() if n > 1)
    skewed = sum(1 for z in per_zone.values() if max(z.values()) - min(z.values()) > 1)
    found = []
    if crowded:
        found.append(f"{crowded} nodes with 2+ pods of one anti-affinity group")
    if skewed:
        found.append(f"{skewed} apps with zone skew > 1")
    return ", ".join(found)
