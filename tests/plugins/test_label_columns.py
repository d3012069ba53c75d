"""The snapshot's label columns (``Snapshot.label_values``), which PodTopologySpread's and
InterPodAffinity's batch Filter and Score read a topology key from: they give what each node's
labels give, through node relabelling, nodes added and removed, and for nodes that are not the
snapshot's own (a clone, as preemption makes; a node of another cache); and the plugins' batch
verdicts and scores over such a mix equal their per-node ones."""

from __future__ import annotations

import random

import pytest

from churn import KEYS, default_framework, populated, random_incoming
from multisched.cache import NodeInfo
from multisched.framework import MAX_NODE_SCORE, CycleState
from multisched.plugins.interpodaffinity.plugin import PRE_SCORE_STATE_KEY as IPA_PRE_SCORE
from multisched.plugins.podtopologyspread.plugin import PRE_SCORE_STATE_KEY as PTS_PRE_SCORE


def _mixed_nodes(
    rng: random.Random, listed: list[NodeInfo], others: list[NodeInfo]
) -> list[NodeInfo]:
    """A random subset in random order, some replaced by clones or by another cache's nodes."""
    nodes = rng.sample(listed, rng.randint(1, len(listed)))
    for i in range(len(nodes)):
        roll = rng.random()
        if roll < 0.1:
            nodes[i] = nodes[i].clone()
        elif roll < 0.2:
            nodes[i] = rng.choice(others)
    return nodes


@pytest.mark.parametrize("seed", range(8))
def test_columns_equal_the_nodes_labels(seed: int) -> None:
    rng = random.Random(seed)
    cache, churn = populated(rng, 40, 20)
    other, _ = populated(random.Random(seed + 100), 10, 0)
    snapshot = cache.snapshot
    for _ in range(120):
        nodes = _mixed_nodes(rng, snapshot.node_info_list, other.snapshot.node_info_list)
        for key in (*KEYS, "absent"):
            assert snapshot.label_values(key, nodes) == [n.labels.get(key) for n in nodes], key
        for _ in range(rng.randint(1, 4)):
            churn.step()


@pytest.mark.parametrize("seed", range(6))
def test_batch_verdicts_and_scores_over_clones_and_other_nodes(seed: int) -> None:
    rng = random.Random(seed)
    cache, churn = populated(rng, 60, 150)
    other, _ = populated(random.Random(seed + 100), 10, 20)
    fwk = default_framework(cache)
    plugins = [fwk.plugins["PodTopologySpread"], fwk.plugins["InterPodAffinity"]]
    listed = cache.snapshot.node_info_list
    judged = scored = 0
    for k in range(60):
        pod = random_incoming(rng, f"p{k}")
        state = CycleState()
        _, status = fwk.run_pre_filter(state, pod, listed)
        nodes = _mixed_nodes(rng, listed, other.snapshot.node_info_list)
        if status is None:
            for pl in plugins:
                want = {}
                for i, node in enumerate(nodes):
                    verdict = pl.filter(state, pod, node)  # type: ignore[attr-defined]
                    if verdict is not None:
                        want[i] = (verdict.code, verdict.reasons)
                got = pl.filter_nodes(state, pod, nodes)  # type: ignore[attr-defined]
                assert {i: (s.code, s.reasons) for i, s in got.items()} == want, pl.name
                judged += bool(want)
        if fwk.run_pre_score(state, pod, nodes) is None:
            for pl in plugins:
                if pl.name in state.skip_score_plugins:
                    continue
                want_scores = [pl.score(state, pod, n) for n in nodes]  # type: ignore[attr-defined]
                got_scores = pl.score_nodes(state, pod, nodes)  # type: ignore[attr-defined]
                assert got_scores == want_scores, pl.name
                normalized, expected = list(got_scores), list(want_scores)
                pl.normalize_score(state, pod, nodes, normalized)  # type: ignore[attr-defined]
                _per_node_normalize(pl, state, pod, nodes, expected)
                assert normalized == expected, pl.name
                scored += any(want_scores)
        for _ in range(rng.randint(0, 4)):
            churn.step()
    assert judged and scored  # the mix did reject nodes and give scores


def _per_node_normalize(
    pl: object, state: CycleState, pod: object, nodes: list[NodeInfo], scores: list[int]
) -> None:
    """Upstream's NormalizeScore of each plugin, written out node by node."""
    if pl.name == "PodTopologySpread":  # type: ignore[attr-defined]
        ignored = state.read(PTS_PRE_SCORE).ignored_nodes
        valid = [i for i, n in enumerate(nodes) if n.name not in ignored]
        low = min((scores[i] for i in valid), default=0)
        high = max([0, *(scores[i] for i in valid)])
        for i, node in enumerate(nodes):
            if node.name in ignored:
                scores[i] = 0
            elif high == 0:
                scores[i] = MAX_NODE_SCORE
            else:
                scores[i] = MAX_NODE_SCORE * (high + low - scores[i]) // high
    else:
        if not state.read(IPA_PRE_SCORE).topology_score or not scores:
            return
        low, high = min(scores), max(scores)
        for i, score in enumerate(scores):
            scores[i] = int(MAX_NODE_SCORE * ((score - low) / (high - low))) if high > low else 0
