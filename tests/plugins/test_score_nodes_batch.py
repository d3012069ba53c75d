"""The batch Score path (``score_nodes``) gives exactly what per-node ``score`` gives.

Randomised clusters: nodes of mixed sizes, some without memory or cpu, some over-full,
images on some; pods with and without requests, several containers, extended resources.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from builders import node_dict, pod_dict
from multisched.cache import Cache, PodInfo
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.framework import CycleState, Framework
from multisched.scheduler import default_registry

IMAGES = ["app:v1", "app:v2", "db", "registry.example/cache:7"]


def _cluster(rng: random.Random) -> Cache:
    cache = Cache()
    for i in range(40):
        images = [([img], rng.randint(1, 2000) * 1024 * 1024) for img in rng.sample(IMAGES, 2)]
        cache.add_node(
            node_dict(
                f"n{i}",
                cpu=rng.choice(["0", "1", "2500m", "8"]),
                memory=rng.choice(["0", "1Gi", "3Gi", "16Gi"]),
                images=images if i % 3 else None,
                extra={"example.com/gpu": "2"} if i % 4 == 0 else None,
            )
        )
    for j in range(60):
        cache.add_pod(PodInfo.parse(_pod(rng, f"bound-{j}", node=f"n{rng.randrange(40)}")))
    return cache


def _pod(rng: random.Random, name: str, node: str = "") -> dict[str, Any]:
    containers = []
    for c in range(rng.randint(1, 3)):
        requests = {}
        if rng.random() < 0.7:
            requests["cpu"] = rng.choice(["100m", "500m", "1", "3"])
        if rng.random() < 0.7:
            requests["memory"] = rng.choice(["64Mi", "1Gi", "2Gi"])
        if rng.random() < 0.1:
            requests["example.com/gpu"] = "1"
        containers.append(
            {"name": f"c{c}", "image": rng.choice(IMAGES), "resources": {"requests": requests}}
        )
    spec: dict[str, Any] = {"containers": containers}
    if node:
        spec["nodeName"] = node
    body = pod_dict(name)
    body["spec"] = spec
    return body


@pytest.mark.parametrize(
    "profile",
    [
        {"schedulerName": "s"},
        {
            "schedulerName": "s",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {"scoringStrategy": {"type": "MostAllocated"}},
                },
                {
                    "name": "NodeResourcesBalancedAllocation",
                    "args": {
                        "resources": [
                            {"name": "cpu", "weight": 1},
                            {"name": "memory", "weight": 1},
                            {"name": "example.com/gpu", "weight": 1},
                        ]
                    },
                },
            ],
        },
        {
            "schedulerName": "s",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "LeastAllocated",
                            "resources": [
                                {"name": "cpu", "weight": 3},
                                {"name": "memory", "weight": 1},
                            ],
                        }
                    },
                }
            ],
        },
    ],
)
@pytest.mark.parametrize("seed", range(5))
def test_batch_scores_equal_per_node_scores(profile: dict[str, Any], seed: int) -> None:
    rng = random.Random(seed)
    cache = _cluster(rng)
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [profile]}), registry)
    fwk = Framework(config.profiles[0], registry, cache.snapshot)
    nodes = cache.snapshot.node_info_list
    batched = [pl for pl in fwk.score_plugins if hasattr(pl, "score_nodes")]
    assert {pl.name for pl in batched} >= {
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
    }
    for i in range(10):
        pod = PodInfo.parse(_pod(rng, f"incoming-{i}"))
        state = CycleState()
        fwk.run_pre_filter(state, pod, nodes)
        assert fwk.run_pre_score(state, pod, nodes) is None
        for pl in batched:
            if pl.name in state.skip_score_plugins:
                continue
            expected = [pl.score(state, pod, n) for n in nodes]
            assert pl.score_nodes(state, pod, nodes) == expected, pl.name
