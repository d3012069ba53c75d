"""Scenario (s): backlogs of pods of one shape each, as kube-scheduler's scheduler_perf shapes
its workloads (objects.shaped_pod): plain, spread, anti-affinity, affinity, and the four mixed.

Each shape is measured as scenario (c) measures its backlog: the pods are created, then the
scheduler is started; pods/s and CPU per pod from the first binding to the last. Both schedulers
run each shape in turn, on the bench's nodes or on as many as ``--shape-nodes`` asks for: nodes
are added (or removed) for the scenario, and the bench's count is restored after it.
"""

from __future__ import annotations

import time

from .objects import GROUP_PODS, SHAPES, node, node_name, node_status, shaped_pods
from .report import Figure
from .scenarios import CONTROL_PLANE_CPU, QUIET_SECONDS, Bench, log

NODES = "/api/v1/nodes"


async def shape_scenario(bench: Bench, node_counts: list[int], key: str = "s") -> None:
    """(s): each shape's backlog, for each contender, at each node count in ``node_counts``."""
    count = bench.sizes.shape_backlog
    current = bench.sizes.nodes
    try:
        for nodes in node_counts:
            current = await resize(bench, current, nodes)
            for n, shape in enumerate(SHAPES):
                # Keys sort the rows: by node count, then in SHAPES' order.
                row_key = f"{key}-{nodes:06d}-{n}"
                scenario = f"{shape} backlog of {count} pods, {nodes} nodes"
                if shape in ("anti-affinity", "mixed"):
                    scenario += f" (groups of {min(GROUP_PODS, nodes)})"
                for c in bench.contenders:
                    run = f"{key}{nodes}-{shape}-{c.name}"
                    pods = shaped_pods(run, c.scheduler_name, count, shape, nodes)
                    try:
                        d = await bench.drain(c, run, pods, count)
                    finally:
                        await bench._clean(run)
                    figure = Figure(d.rate, "", d.partial())
                    bench.table.add(row_key, scenario, "pods/s", c.name, figure)
                    bench.table.add(row_key, scenario, "CPU per pod", c.name, Figure(d.cpu, "ms"))
                    figure = Figure(d.cp_cpu, "ms")
                    bench.table.add(row_key, scenario, CONTROL_PLANE_CPU, c.name, figure)
                    log(
                        f"{key} {shape} at {nodes} nodes, {c.name}: {d.bound}/{count} bound, "
                        f"{Figure(d.rate, 'pods/s').text()}, {Figure(d.cpu, 'ms').text()} CPU "
                        f"per pod, {Figure(d.cp_cpu, 'ms').text()} API server + etcd"
                    )
    finally:
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
    await asyncio_sleep(QUIET_SECONDS)
    return wanted
