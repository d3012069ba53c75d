"""NodeResourcesFit's and NodeResourcesBalancedAllocation's per-node values kept between cycles
(``NodeValues``, fed by the snapshot's change log) equal what they compute afresh: random
clusters changing between cycles (pods bound, assumed, forgotten, relabelled, deleted; nodes
updated, added, removed), random requests (repeated, so kept values are read), nodes passed in
random subsets and orders, and clones with pods added, as preemption makes them."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from builders import node_dict, pod_dict
from churn import Churn, default_framework, populated
from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.framework import CycleState
from multisched.plugins._node_values import NodeValues
from multisched.plugins.node_resources_balanced_allocation import (
    NodeResourcesBalancedAllocation,
)
from multisched.plugins.node_resources_fit import NodeResourcesFit

REQUESTS = [
    {"cpu": "100m", "memory": "128Mi"},
    {"cpu": "2", "memory": "1Gi"},
    {"cpu": "30", "memory": "100Gi"},
    {"cpu": "500m"},
    {},
]


def _pod(rng: random.Random, name: str) -> PodInfo:
    requests = rng.choice(REQUESTS) if rng.random() < 0.9 else {"cpu": f"{rng.randint(1, 999)}m"}
    return PodInfo.parse(pod_dict(name, requests=requests or None))


def _nodes(rng: random.Random, cache: Cache, k: int) -> list[NodeInfo]:
    """A random subset of the snapshot's nodes in random order, some swapped for clones
    that hold one more pod (never the snapshot's own, so never kept)."""
    listed = cache.snapshot.node_info_list
    nodes = rng.sample(listed, min(len(listed), rng.randint(1, len(listed))))
    for i, node in enumerate(nodes):
        if rng.random() < 0.1:
            twin = node.clone()
            twin.add_pod(PodInfo.parse(pod_dict(f"extra-{k}-{i}", requests={"cpu": "8"})))
            nodes[i] = twin
    return nodes


@pytest.mark.parametrize("seed", range(10))
def test_kept_values_equal_fresh_ones(seed: int) -> None:
    rng = random.Random(seed)
    cache, churn = populated(rng, 25, 60)
    fwk = default_framework(cache)
    fit = fwk.plugins["NodeResourcesFit"]
    balanced = fwk.plugins["NodeResourcesBalancedAllocation"]
    # The same plugins without a snapshot: no values kept, every call computes.
    fresh_fit = NodeResourcesFit(None, None)  # type: ignore[arg-type]
    fresh_balanced = NodeResourcesBalancedAllocation(None, None)  # type: ignore[arg-type]
    for k in range(150):
        pod = _pod(rng, f"p{k}")
        nodes = _nodes(rng, cache, k)
        state, reference = CycleState(), CycleState()
        fit.pre_filter(state, pod, nodes)  # type: ignore[attr-defined]
        fresh_fit.pre_filter(reference, pod, nodes)
        got = fit.filter_nodes(state, pod, nodes)  # type: ignore[attr-defined]
        want = fresh_fit.filter_nodes(reference, pod, nodes)
        assert {i: (s.code, s.reasons) for i, s in got.items()} == {
            i: (s.code, s.reasons) for i, s in want.items()
        }
        for plugin, fresh in ((fit, fresh_fit), (balanced, fresh_balanced)):
            plugin.pre_score(state, pod, nodes)  # type: ignore[attr-defined]
            fresh.pre_score(reference, pod, nodes)
            assert plugin.score_nodes(state, pod, nodes) == fresh.score_nodes(  # type: ignore[attr-defined]
                reference, pod, nodes
            ), plugin.name
        if rng.random() < 0.3 and cache.snapshot.node_info_list:
            cache.assume_pod(pod, rng.choice(cache.snapshot.node_info_list).name)
        for _ in range(rng.randint(0, 5)):
            churn.step()


def test_the_change_log_names_every_changed_node() -> None:
    """Every change to a listed node's pods or object is logged by its index; rebuilding
    the list (a node removed) restarts the log under a new epoch."""
    rng = random.Random(3)
    cache = Cache()
    churn = Churn(rng, cache)
    for _ in range(10):
        churn.add_node()
    snap = cache.snapshot
    assert [n.index for n in snap.node_info_list] == list(range(10))
    epoch, start = snap.log_epoch, len(snap.node_log)
    pod = churn.add_pod()
    assert pod is not None
    target = snap.node_info_map[pod.node_name]
    assert snap.node_log[start:] == [target.index]
    cache.remove_pod(pod.uid)
    assert snap.node_log[start:] == [target.index, target.index]
    removed = snap.node_info_list[3]
    cache.remove_node(removed.name)
    assert snap.log_epoch == epoch + 1 and snap.node_log == []
    assert removed.index == -1
    assert [n.index for n in snap.node_info_list] == list(range(9))


def test_a_failed_compute_leaves_no_stale_value() -> None:
    """Applying the change log recomputes the changed nodes a table holds; if that fails,
    they are computed when next asked for, never read from before the change."""
    cache = Cache()
    for name in ("n1", "n2"):
        cache.add_node(node_dict(name))
    snap = cache.snapshot
    nodes = list(snap.node_info_list)
    calls: list[list[str]] = []

    def pods(batch: Sequence[NodeInfo]) -> list[int]:
        calls.append([n.name for n in batch])
        return [len(n.pods) for n in batch]

    def broken(batch: Sequence[NodeInfo]) -> list[int]:
        raise RuntimeError("compute failed")

    kept: NodeValues[int] = NodeValues()
    assert kept.values(snap, "k", nodes, pods) == [0, 0]
    cache.add_pod(PodInfo.parse(pod_dict("a", node_name="n1")))
    with pytest.raises(RuntimeError):
        kept.values(snap, "k", nodes, broken)
    calls.clear()
    assert kept.values(snap, "k", nodes, pods) == [1, 0]
    assert calls == [["n1"]]  # only the changed node is computed again
    # A change is applied once: the next cycle reads every node without computing.
    calls.clear()
    assert kept.values(snap, "k", nodes, pods) == [1, 0]
    assert calls == []
