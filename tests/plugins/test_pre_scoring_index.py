"""PodTopologySpread and InterPodAffinity read the cache's per-node counts (``SelectorIndex``,
``TermIndex``) instead of scanning every pod; they must decide exactly what the scanning path
decides. Randomised clusters that change between cycles (pods bound, assumed, forgotten,
relabelled, terminating or deleted; nodes relabelled, added and removed), and random pods with
hard and soft spread constraints, pod (anti-)affinity of every kind, namespace selectors,
node selectors and taint policies: every PreFilter state, Filter verdict (per node and in
batch), PreScore state and score of the indexed path equals the scanning path's.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from churn import (
    LABEL_VALUES,
    NAMESPACES,
    Churn,
    default_framework,
    populated,
    random_incoming,
)
from multisched.cache import Cache, PodInfo
from multisched.cache import pod_counts as pod_counts_module
from multisched.framework import CycleState, Framework
from multisched.plugins.interpodaffinity.plugin import (
    PRE_FILTER_STATE_KEY as IPA_PRE_FILTER,
)
from multisched.plugins.interpodaffinity.plugin import (
    PRE_SCORE_STATE_KEY as IPA_PRE_SCORE,
)
from multisched.plugins.podtopologyspread.plugin import (
    PRE_FILTER_STATE_KEY as PTS_PRE_FILTER,
)
from multisched.plugins.podtopologyspread.plugin import (
    PRE_SCORE_STATE_KEY as PTS_PRE_SCORE,
)


def _statuses(got: dict[int, Any]) -> dict[int, tuple[Any, ...]]:
    return {i: (s.code, s.reasons) for i, s in got.items()}


def _pts_filter_view(s: Any) -> Any:
    return (
        s.tp_value_to_match_num,
        [p.num0 for p in s.critical_paths],
        s.self_match,
        [s.min_match_num(i) for i in range(len(s.constraints))],
    )


def _ipa_filter_view(s: Any) -> Any:
    return (s.existing_anti_affinity_counts, s.affinity_counts, s.anti_affinity_counts)


def _compare_cycle(fwk: Framework, pod: PodInfo) -> None:
    pts = fwk.plugins["PodTopologySpread"]
    ipa = fwk.plugins["InterPodAffinity"]
    nodes = fwk.snapshot.node_info_list  # type: ignore[attr-defined]
    states = []
    for use_index in (True, False):
        pts.use_index = ipa.use_index = use_index  # type: ignore[attr-defined]
        state = CycleState()
        results = [
            pl.pre_filter(state, pod, nodes)  # type: ignore[attr-defined]
            for pl in (pts, ipa)
        ]
        states.append((state, [(r, s.code if s else None) for r, s in results]))
    (indexed, indexed_results), (scanned, scanned_results) = states
    assert indexed_results == scanned_results
    for key, view, plugin in (
        (PTS_PRE_FILTER, _pts_filter_view, pts),
        (IPA_PRE_FILTER, _ipa_filter_view, ipa),
    ):
        a, b = indexed.get(key), scanned.get(key)
        assert (a is None) == (b is None), key
        if a is None:
            continue
        assert view(a) == view(b), key
        per_node = {}
        for i, node in enumerate(nodes):
            st = plugin.filter(indexed, pod, node)  # type: ignore[attr-defined]
            if st is not None:
                per_node[i] = st
            ref = plugin.filter(scanned, pod, node)  # type: ignore[attr-defined]
            assert (st and (st.code, st.reasons)) == (ref and (ref.code, ref.reasons)), key
        batch = plugin.filter_nodes(indexed, pod, nodes)  # type: ignore[attr-defined]
        assert _statuses(batch) == _statuses(per_node), key
    # PreScore over a random half of the nodes as the candidates.
    candidates = [n for n in nodes if hash((n.name, pod.uid)) % 2] or list(nodes)
    for key, plugin in ((PTS_PRE_SCORE, pts), (IPA_PRE_SCORE, ipa)):
        results = []
        for use_index, state in ((True, indexed), (False, scanned)):
            plugin.use_index = use_index  # type: ignore[attr-defined]
            st = plugin.pre_score(state, pod, candidates)  # type: ignore[attr-defined]
            results.append(st and st.code)
        assert results[0] == results[1], key
        a, b = indexed.get(key), scanned.get(key)
        assert (a is None) == (b is None), key
        if a is None:
            continue
        scores = [plugin.score(indexed, pod, n) for n in candidates]  # type: ignore[attr-defined]
        ref = [plugin.score(scanned, pod, n) for n in candidates]  # type: ignore[attr-defined]
        assert scores == ref, key
        assert plugin.score_nodes(indexed, pod, candidates) == ref, key  # type: ignore[attr-defined]
        plugin.normalize_score(indexed, pod, candidates, scores)  # type: ignore[attr-defined]
        plugin.normalize_score(scanned, pod, candidates, ref)  # type: ignore[attr-defined]
        assert scores == ref, key
    pts.use_index = ipa.use_index = True  # type: ignore[attr-defined]


def _run(seed: int, nodes: int, pods: int, cycles: int) -> None:
    rng = random.Random(seed)
    cache, churn = populated(rng, nodes, pods)
    fwk = default_framework(cache)
    for k in range(cycles):
        _compare_cycle(fwk, random_incoming(rng, f"in{k}"))
        for _ in range(rng.randint(0, 6)):
            churn.step()


@pytest.mark.parametrize("seed", range(12))
def test_indexed_pre_scoring_equals_scanning(seed: int) -> None:
    _run(seed, nodes=30, pods=120, cycles=60)


@pytest.mark.parametrize("seed", range(3))
def test_equal_when_selectors_are_evicted(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # A handful of registered selectors at most: most cycles register anew after evicting.
    monkeypatch.setattr(pod_counts_module, "MAX_SELECTORS", 4)
    _run(100 + seed, nodes=20, pods=80, cycles=60)


def test_the_index_follows_every_change_of_the_cache() -> None:
    """After random churn, every registered selector's counts are what a scan counts."""
    rng = random.Random(7)
    cache = Cache()
    churn = Churn(rng, cache)
    for _ in range(15):
        churn.add_node()
    index = cache.selector_index
    selectors = []
    for k, values in LABEL_VALUES.items():
        for v in values:
            for ns in NAMESPACES:

                def matches(labels: Any, k: str = k, v: str = v) -> bool:
                    return bool(labels.get(k) == v)

                selectors.append((ns, (k, v), matches))
    for ns, key, matches in selectors:
        index.counts(ns, key, matches, key)
    for _ in range(600):
        churn.step()
    for ns, key, matches in selectors:
        entry = index.counts(ns, key, matches, key)
        expected: dict[str, int] = {}
        live: dict[str, int] = {}
        for pod in cache.pods():
            if pod.namespace == ns and matches(pod.labels):
                expected[pod.node_name] = expected.get(pod.node_name, 0) + 1
                if not pod.terminating:
                    live[pod.node_name] = live.get(pod.node_name, 0) + 1
        assert entry.per_node == expected
        assert {n: c for n, c in entry.live().items() if c} == live
    assert len(index) == len(selectors)
