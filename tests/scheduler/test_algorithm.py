"""schedulePod mechanics after upstream schedule_one_test.go."""

import random

import pytest

from builders import make_pod, node_dict
from fakes import CpuFit, framework, profile
from multisched.cache import Cache, NodeInfo
from multisched.framework import Code, CycleState, FitError
from multisched.scheduler import Algorithm, SchedulingError, num_feasible_nodes_to_find


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (0, 10, 10),  # under 100 nodes: all
        (40, 10, 10),
        (0, 1000, 420),  # adaptive: 50 - 1000/125 = 42%
        (40, 1000, 400),
        (0, 6000, 300),  # adaptive floors at 5%
        (10, 6000, 600),
        (1, 1000, 100),  # never fewer than 100
        (100, 1000, 1000),
    ],
)
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def _cache(n: int, cpu: str = "1", scores: dict[str, str] | None = None) -> Cache:
    cache = Cache()
    for i in range(n):
        name = f"n{i}"
        labels = {"score": (scores or {}).get(name, "0")}
        cache.add_node(node_dict(name, cpu=cpu, labels=labels))
    return cache


def test_fit_error_message_counts_and_sorts_reasons() -> None:
    cache = _cache(3, cpu="1")
    fwk = framework(cache)
    with pytest.raises(FitError) as exc:
        Algorithm().schedule_pod(fwk, CycleState(), make_pod(requests={"cpu": "2"}), cache.snapshot)
    assert str(exc.value) == "0/3 nodes are available: 3 Insufficient cpu."
    assert exc.value.diagnosis.unschedulable_plugins == {"CpuFit"}


def test_prefilter_rejection_is_reported_once() -> None:
    cache = _cache(3)
    fwk = framework(cache)
    pod = make_pod(labels={"only": "reject"})
    with pytest.raises(FitError) as exc:
        Algorithm().schedule_pod(fwk, CycleState(), pod, cache.snapshot)
    assert str(exc.value) == "0/3 nodes are available: pod says no."


def test_prefilter_narrowing_rejects_the_other_nodes_unresolvably() -> None:
    """v1.37's findNodesThatFitPod: every node outside a PreFilter result is
    UnschedulableAndUnresolvable, named by the plugins that narrowed the search (v1.28 gave
    them no status, and preemption tried them)."""
    cache = _cache(3, cpu="1")
    fwk = framework(cache)
    pod = make_pod(labels={"only": "n1"}, requests={"cpu": "2"})
    with pytest.raises(FitError) as exc:
        Algorithm().schedule_pod(fwk, CycleState(), pod, cache.snapshot)
    assert str(exc.value) == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) "
        "[OnlyNamed]."
    )
    statuses = exc.value.diagnosis.node_to_status
    assert {n: s.code for n, s in statuses.items() if n != "n1"} == {
        "n0": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "n2": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    }


def test_prefilter_naming_a_missing_node_rejects_the_others() -> None:
    """A name no node has (a PV's affinity naming a deleted node) is left out: v1.28 failed
    the cycle for good (kubernetes#123465), v1.37 rejects every node outside the result."""
    cache = _cache(3, cpu="1")
    fwk = framework(cache)
    pod = make_pod(labels={"only": "gone"}, requests={"cpu": "2"})
    with pytest.raises(FitError) as exc:
        Algorithm().schedule_pod(fwk, CycleState(), pod, cache.snapshot)
    assert str(exc.value) == (
        "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [OnlyNamed]."
    )
    codes = {s.code for s in exc.value.diagnosis.node_to_status.values()}
    assert codes == {Code.UNSCHEDULABLE_AND_UNRESOLVABLE}


def test_highest_score_wins() -> None:
    cache = _cache(5, scores={"n3": "90", "n1": "50"})
    result = Algorithm().schedule_pod(framework(cache), CycleState(), make_pod(), cache.snapshot)
    assert result.suggested_host == "n3"
    assert result.feasible_nodes == 5


def test_weights_multiply_scores() -> None:
    cache = _cache(2, scores={"n0": "10"})
    prof = profile(weights={"LabelScore": 7})
    result = Algorithm().schedule_pod(
        framework(cache, prof), CycleState(), make_pod(), cache.snapshot, explain=True
    )
    assert result.explain is not None and result.explain.scores is not None
    names, detail, totals = result.explain.scores
    assert totals[names.index("n0")] == 70
    assert detail[0].raw[names.index("n0")] == 10


def test_ties_are_broken_at_random_but_seeded() -> None:
    cache = _cache(10)
    fwk = framework(cache)

    def picks(seed: int) -> list[str]:
        algo = Algorithm(rng=random.Random(seed))
        return [
            algo.schedule_pod(fwk, CycleState(), make_pod(), cache.snapshot).suggested_host
            for _ in range(20)
        ]

    assert picks(1) == picks(1)
    assert len(set(picks(1))) > 1


@pytest.mark.parametrize("seed", range(5))
def test_a_tie_is_one_draw_among_the_tied_nodes_in_order(seed: int) -> None:
    """Of the nodes sharing the best score, the draw's k-th (in node order) is picked; a
    single best node takes no draw."""
    rng = random.Random(seed)
    nodes = [NodeInfo(f"n{i}") for i in range(200)]
    for _ in range(200):
        scores = [rng.choice([0, 50, 100, rng.randrange(300)]) for _ in nodes]
        best = max(scores)
        tied = [i for i, x in enumerate(scores) if x == best]
        algo, draws = Algorithm(rng=random.Random(seed)), random.Random(seed)
        want = tied[0] if len(tied) == 1 else tied[draws.randrange(len(tied))]
        assert algo._select_host(nodes, scores) == f"n{want}"
        assert algo.rng.random() == draws.random()  # as many draws taken


def test_stops_after_enough_feasible_nodes_and_rotates() -> None:
    cache = _cache(1000, cpu="4")
    fwk = framework(cache)
    algo = Algorithm()
    CpuFit.calls = 0
    first = algo.schedule_pod(fwk, CycleState(), make_pod(), cache.snapshot)
    assert first.feasible_nodes == 420
    assert CpuFit.calls == 420
    assert algo.next_start_node_index == 420
    algo.schedule_pod(fwk, CycleState(), make_pod(), cache.snapshot)
    assert algo.next_start_node_index == 840


def test_nominated_node_is_tried_first() -> None:
    cache = _cache(5, scores={"n4": "100"})
    raw_pod = make_pod().raw
    raw_pod["status"] = {"nominatedNodeName": "n2"}
    from multisched.cache import PodInfo

    result = Algorithm().schedule_pod(
        framework(cache), CycleState(), PodInfo.parse(raw_pod), cache.snapshot
    )
    assert result.suggested_host == "n2"


def test_no_nodes() -> None:
    cache = Cache()
    with pytest.raises(SchedulingError, match="no nodes available to schedule pods"):
        Algorithm().schedule_pod(framework(cache), CycleState(), make_pod(), cache.snapshot)
