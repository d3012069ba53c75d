"""One benchmark scenario in a fresh process (so peak RSS is its own)."""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import time
from collections import defaultdict
from typing import Any

from multisched.cache import Cache, PodInfo
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.framework import CycleState, Framework
from multisched.scheduler import Algorithm, Scheduler, default_registry

from .cluster import complex_pod, node, simple_pod

TIMED_POINTS = ("pre_filter", "filter", "pre_score", "score", "score_nodes", "normalize_score")


class NopClient:
    """Binds instantly (no API server): measures the scheduler, not the network."""

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        pass

    def record_preempted(self, pod: PodInfo, message: str) -> None:
        pass

    async def delete_pod(self, pod: PodInfo, reason: str, scheduler_name: str) -> None:
        pass

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        pass


def build(nodes: int, bound: int, seed: int) -> tuple[Scheduler, Any]:
    rng = random.Random(seed)
    registry = default_registry(load_entry_points=False)
    config = resolve(
        parse_scheduler_profile_spec({"profiles": [{"schedulerName": "bench"}]}), registry
    )
    cache = Cache()
    for i in range(nodes):
        cache.add_node(node(i, rng))
    for i in range(bound):
        cache.add_pod(PodInfo.parse(simple_pod(10_000_000 + i, f"node-{i % nodes:05d}")))
    sched = Scheduler(config, registry, cache=cache, client=NopClient(), rng=rng)
    return sched, config


def cycles(fwk: Framework, algo: Algorithm, cache: Cache, pods: list[PodInfo]) -> float:
    start = time.perf_counter()
    for pod in pods:
        algo.schedule_pod(fwk, CycleState(), pod, cache.snapshot)
    return len(pods) / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--bound", type=int, default=0)
    ap.add_argument("--pods", type=int, default=500)
    ap.add_argument("--kind", choices=("simple", "complex"), default="simple")
    ap.add_argument("--breakdown", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t0 = time.perf_counter()
    sched, _ = build(args.nodes, args.bound, args.seed)
    build_s = time.perf_counter() - t0
    fwk = sched.profiles["bench"]
    make = simple_pod if args.kind == "simple" else complex_pod
    pods = [PodInfo.parse(make(i)) for i in range(args.pods)]
    warm = [PodInfo.parse(make(i)) for i in range(50)]
    algo = Algorithm(rng=random.Random(args.seed))
    cycles(fwk, algo, sched.cache, warm)
    rate = cycles(fwk, algo, sched.cache, pods)

    # End to end through the queue with assume + bind (no API): pods really land.
    async def e2e() -> float:
        for p in pods[:200]:
            raw = dict(p.raw)
            raw["metadata"] = {**raw["metadata"], "uid": "e2e-" + p.uid}
            sched.feed.on_pod(PodInfo.parse(raw))
        start = time.perf_counter()
        n = 0
        while (qpi := sched.queue.pop_nowait()) is not None:
            await sched.schedule_one(qpi)
            n += 1
        await sched.wait_for_bindings()
        return n / (time.perf_counter() - start)

    e2e_rate = asyncio.run(e2e())
    out: dict[str, Any] = {
        "nodes": args.nodes,
        "bound": args.bound,
        "kind": args.kind,
        "cycles_per_s": round(rate, 1),
        "queue_cycles_per_s": round(e2e_rate, 1),
        "build_s": round(build_s, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if args.breakdown:
        spent: dict[str, float] = defaultdict(float)
        for name, plugin in fwk.plugins.items():
            for point in TIMED_POINTS:
                method = getattr(plugin, point, None)
                if method is None:
                    continue

                def timed(*a: Any, _m: Any = method, _k: str = f"{name}.{point}") -> Any:
                    t = time.perf_counter()
                    try:
                        return _m(*a)
                    finally:
                        spent[_k] += time.perf_counter() - t

                setattr(plugin, point, timed)
        fresh = Framework(fwk.profile, sched.registry, sched.cache.snapshot)
        fresh.plugins = fwk.plugins
        for attr in ("pre_filter_plugins", "filter_plugins", "pre_score_plugins", "score_plugins"):
            setattr(fresh, attr, getattr(fwk, attr))
        start = time.perf_counter()
        for pod in pods:
            algo.schedule_pod(fresh, CycleState(), pod, sched.cache.snapshot)
        total = time.perf_counter() - start
        out["breakdown_us_per_cycle"] = {
            k: round(v / len(pods) * 1e6, 1)
            for k, v in sorted(spent.items(), key=lambda kv: -kv[1])
        }
        out["instrumented_total_us_per_cycle"] = round(total / len(pods) * 1e6, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
