"""Opportunistic batching changes no placement: random clusters, Deployment-like runs of
identical pods, scheduled with batching on and off from the same seed, pod for pod."""

from __future__ import annotations

import random
from typing import Any

import pytest

from builders import node_dict, pod_dict
from multisched.cache import Cache, PodInfo
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.framework import CycleState, FitError, Framework
from multisched.scheduler import Algorithm, Scheduler, default_registry

ZONE = "topology.kubernetes.io/zone"
IMAGES = [f"img-{i}" for i in range(6)]
CLUSTERS = 30


def _framework(cache: Cache, signable: bool) -> Framework:
    """The default plugins; ``signable``: PodTopologySpread without default constraints (with
    them, as by default, no pod can be signed and batching never starts)."""
    profile: dict[str, Any] = {"schedulerName": "s"}
    if signable:
        args = {"defaultingType": "List"}
        profile["pluginConfig"] = [{"name": "PodTopologySpread", "args": args}]
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [profile]}), registry)
    return Scheduler(config, registry, cache=cache).profiles["s"]


def _node(rng: random.Random, i: int) -> dict[str, Any]:
    taints = []
    if rng.random() < 0.15:
        taints.append({"key": "dedicated", "value": "infra", "effect": "NoSchedule"})
    if rng.random() < 0.2:
        taints.append({"key": "spot", "value": "true", "effect": "PreferNoSchedule"})
    images = [([img], rng.randint(50, 900) * 1024 * 1024) for img in rng.sample(IMAGES, 2)]
    return node_dict(
        f"n{i:03d}",
        cpu=str(rng.choice([2, 4, 8])),
        memory=f"{rng.choice([4, 8, 16])}Gi",
        pods=str(rng.choice([4, 10, 110])),
        labels={ZONE: f"z{rng.randrange(3)}", "disk": rng.choice(["ssd", "hdd"])},
        taints=taints,
        images=images,
    )


def _template(rng: random.Random) -> dict[str, Any]:
    """A Deployment's pod template: the keyword arguments of ``pod_dict``."""
    kw: dict[str, Any] = {
        "requests": {"cpu": rng.choice(["250m", "500m", "1"]), "memory": "512Mi"},
        "labels": {"app": f"a{rng.randrange(4)}"},
        "scheduler_name": "s",
        "images": [rng.choice(IMAGES)],
    }
    if rng.random() < 0.3:
        kw["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if rng.random() < 0.2:
        kw["node_selector"] = {"disk": "ssd"}
    if rng.random() < 0.2:
        pref = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1"]}]}
        kw["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "preference": pref}
                ]
            }
        }
    if rng.random() < 0.1:
        kw["host_ports"] = [8080]
    if rng.random() < 0.1:  # not signable: scheduled one by one
        kw["spread"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": kw["labels"]},
            }
        ]
    return kw


def _scenario(seed: int) -> tuple[list[dict[str, Any]], list[tuple[str, Any]]]:
    """The nodes, then the steps: ("pod", body) to schedule, ("node", body) a node added or
    updated between cycles, ("gone", uid) a bound pod deleted between cycles."""
    rng = random.Random(seed)
    nodes = [_node(rng, i) for i in range(rng.choice([5, 20, 60, 150]))]
    steps: list[tuple[str, Any]] = []
    serial = 0
    for _ in range(rng.randint(3, 6)):
        template = _template(rng)
        for _ in range(rng.randint(5, 40)):
            serial += 1
            steps.append(("pod", pod_dict(f"p{serial}", **template)))
            roll = rng.random()
            if roll < 0.03:
                steps.append(("node", _node(rng, rng.randrange(len(nodes) + 2))))
            elif roll < 0.06:
                steps.append(("gone", f"p{rng.randrange(1, serial + 1)}"))
    return nodes, steps


def _run(
    seed: int, batching: bool, signable: bool, percentage: int
) -> tuple[list[str], Algorithm, Framework]:
    nodes, steps = _scenario(seed)
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    fwk = _framework(cache, signable)
    algo = Algorithm(percentage, random.Random(seed), opportunistic_batching=batching)
    placed: list[str] = []
    by_name: dict[str, PodInfo] = {}
    for kind, item in steps:
        if kind == "node":
            cache.add_node(item)
            continue
        if kind == "gone":
            gone = by_name.pop(item, None)
            if gone is not None:
                cache.remove_pod(gone.uid)
            continue
        pod = PodInfo.parse(item)
        try:
            result = algo.schedule_pod(fwk, CycleState(), pod, cache.snapshot)
        except FitError:
            placed.append("")
            continue
        placed.append(f"{result.suggested_host}/{result.evaluated_nodes}/{result.feasible_nodes}")
        by_name[pod.name] = cache.assume_pod(pod, result.suggested_host)
    return placed, algo, fwk


@pytest.mark.parametrize("seed", range(CLUSTERS))
def test_batching_places_every_pod_where_one_by_one_does(seed: int) -> None:
    percentage = [0, 0, 30, 100][seed % 4]
    one_by_one, _, _ = _run(seed, False, True, percentage)
    batched, _, _ = _run(seed, True, True, percentage)
    assert batched == one_by_one
    assert any(one_by_one)


def test_the_differential_runs_exercise_batching() -> None:
    """Over the random clusters, most identical pods after the first come from a batch."""
    batched = 0
    pods = 0
    for seed in range(CLUSTERS):
        _, algo, fwk = _run(seed, True, True, [0, 0, 30, 100][seed % 4])
        batched += algo.batch(fwk).batched_pods
        pods += algo.scheduling_cycle
    assert batched > pods // 3


def test_default_profile_signs_no_pod() -> None:
    """Upstream: PodTopologySpread's system default constraints make every pod unsignable."""
    placed, algo, fwk = _run(3, True, False, 0)
    assert algo.batch(fwk).batched_pods == 0
    assert placed == _run(3, False, False, 0)[0]
