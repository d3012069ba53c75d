"""``framework.Framework`` (framework/runtime.py): the runtime itself, driven by small fake
plugins, as upstream's framework/runtime/framework_test.go tests its runtime.

Each fake is a class built by ``fake``: a name and the extension-point methods a test gives
it (the registry reads the points from the methods, as for real plugins); every call is
logged as ``"Name.method"`` so tests can assert which plugins ran and in what order.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Collection, Sequence
from typing import Any

import pytest

from builders import make_node, make_pod
from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.config.resolved import ResolvedProfile
from multisched.framework import (
    Code,
    CycleState,
    Framework,
    FrameworkError,
    PluginError,
    PodNominator,
    PostFilterResult,
    PreFilterResult,
    Registry,
    Status,
)
from multisched.framework.events import ADD, NODE, WILDCARD_EVENT, ClusterEvent

Log = list[str]
_ASYNC = frozenset({"post_filter", "pre_bind", "bind"})

N1, N2, N3 = make_node("n1"), make_node("n2"), make_node("n3")
NODES = [N1, N2, N3]


def fake(name: str, log: Log | None = None, **methods: Callable[..., Any]) -> type:
    """A plugin class ``name`` whose ``methods`` are the given functions (called without
    ``self``); PostFilter, PreBind and Bind become coroutines, as the runtime awaits them."""
    calls = log if log is not None else []

    def method(point: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if point in _ASYNC:

            async def call_async(self: Any, *args: Any) -> Any:
                calls.append(f"{name}.{point}")
                return fn(*args)

            return call_async

        def call(self: Any, *args: Any) -> Any:
            calls.append(f"{name}.{point}")
            return fn(*args)

        return call

    namespace: dict[str, Any] = {"name": name, "__init__": lambda self, args, handle: None}
    for point, fn in methods.items():
        namespace[point] = method(point, fn)
    if "pre_filter" in methods and "pre_filter_extensions" not in methods:
        namespace["pre_filter_extensions"] = lambda self: None
    if "reserve" in methods and "unreserve" not in methods:
        namespace["unreserve"] = method("unreserve", lambda *a: None)
    return type(name, (), namespace)


def framework(
    plugins: Sequence[type],
    weights: dict[str, int] | None = None,
    nominator: PodNominator | None = None,
    **points: Sequence[str],
) -> Framework:
    """A profile with ``points`` (config spelling, e.g. ``preFilter=["A", "B"]``)."""
    profile = ResolvedProfile(
        scheduler_name="test",
        percentage_of_nodes_to_score=None,
        plugins={point: tuple(names) for point, names in points.items()},
        score_weights=weights or {},
    )
    return Framework(profile, Registry(plugins), Cache().snapshot, nominator=nominator)


def ok(*_: Any) -> None:
    return None


def pod(name: str = "p", **kw: Any) -> PodInfo:
    return make_pod(name, **kw)


def narrow(*names: str) -> Callable[..., tuple[PreFilterResult, None]]:
    return lambda *_: (PreFilterResult(frozenset(names)), None)


# -- building ------------------------------------------------------------------------------


def test_each_point_runs_its_plugins_in_profile_order_not_registry_order() -> None:
    log: Log = []
    a = fake("A", log, filter=ok, pre_filter=lambda *_: (None, None))
    b = fake("B", log, filter=ok, pre_filter=lambda *_: (None, None))
    c = fake("C", log, filter=ok)
    fw = framework([a, b, c], preFilter=["B", "A"], filter=["C", "A", "B"])
    state = CycleState()
    fw.run_pre_filter(state, pod(), NODES)
    fw.run_filter_plugins(state, pod(), N1)
    assert log == ["B.pre_filter", "A.pre_filter", "C.filter", "A.filter", "B.filter"]
    assert [pl.name for pl in fw.filter_plugins] == ["C", "A", "B"]


def test_a_plugin_at_several_points_is_one_instance() -> None:
    a = fake("A", filter=ok, pre_filter=lambda *_: (None, None), reserve=ok)
    fw = framework([a], preFilter=["A"], filter=["A"], reserve=["A"])
    assert list(fw.plugins) == ["A"]
    assert fw.pre_filter_plugins[0] is fw.filter_plugins[0] is fw.reserve_plugins[0]
    assert fw.plugins["A"] is fw.filter_plugins[0]


def test_a_plugin_the_profile_does_not_name_is_not_built() -> None:
    fw = framework([fake("A", filter=ok), fake("B", filter=ok)], filter=["A"])
    assert list(fw.plugins) == ["A"]


def test_a_failing_factory_is_a_framework_error_naming_profile_and_plugin() -> None:
    class Broken:
        name = "Broken"

        def __init__(self, args: Any, handle: Any) -> None:
            raise ValueError("no disk")

        def filter(self, *_: Any) -> None:
            return None

    with pytest.raises(FrameworkError) as err:
        framework([Broken], filter=["Broken"])
    assert str(err.value) == "profile test: plugin Broken failed to start: no disk"


def test_events_to_register_default_to_every_event() -> None:
    declared = (ClusterEvent(NODE, ADD),)
    fw = framework(
        [
            fake("Quiet", filter=ok),
            fake("Picky", filter=ok, events_to_register=lambda: declared),
        ],
        filter=["Quiet", "Picky"],
    )
    assert fw.plugin_events == {"Quiet": (WILDCARD_EVENT,), "Picky": declared}


def test_events_to_register_that_are_not_cluster_events_are_refused() -> None:
    bad = fake("Bad", filter=ok, events_to_register=lambda: ["Node/Add"])
    with pytest.raises(FrameworkError, match="plugin Bad: events_to_register returned 'Node/Add'"):
        framework([bad], filter=["Bad"])


# -- PreEnqueue and QueueSort --------------------------------------------------------------


def test_pre_enqueue_stops_at_the_first_rejection_and_names_it() -> None:
    log: Log = []
    gate = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "gated")
    fw = framework(
        [
            fake("A", log, pre_enqueue=ok),
            fake("B", log, pre_enqueue=lambda _: gate),
            fake("C", log, pre_enqueue=ok),
        ],
        preEnqueue=["A", "B", "C"],
    )
    status = fw.run_pre_enqueue(pod())
    assert status is gate and status.plugin == "B"
    assert log == ["A.pre_enqueue", "B.pre_enqueue"]


def test_less_asks_the_queue_sort_plugin() -> None:
    fw = framework([fake("Sort", less=lambda a, b: a == "x")], queueSort=["Sort"])
    assert fw.queue_sort_plugin is not None and fw.queue_sort_plugin.name == "Sort"
    assert fw.less("x", "y") is True  # type: ignore[arg-type]
    assert fw.less("y", "x") is False  # type: ignore[arg-type]


# -- PreFilter -----------------------------------------------------------------------------


def test_pre_filter_results_are_intersected_and_name_the_plugins_that_narrowed() -> None:
    fw = framework(
        [
            fake("A", pre_filter=narrow("n1", "n2")),
            fake("All", pre_filter=lambda *_: (PreFilterResult(None), None)),
            fake("B", pre_filter=narrow("n2", "n3")),
        ],
        preFilter=["A", "All", "B"],
    )
    result, status = fw.run_pre_filter(CycleState(), pod(), NODES)
    assert status is None
    assert result is not None
    assert result.node_names == frozenset({"n2"})
    assert result.plugins == ("A", "B")


def test_pre_filter_without_narrowing_returns_no_result() -> None:
    fw = framework(
        [fake("A", pre_filter=lambda *_: (PreFilterResult(None), None))], preFilter=["A"]
    )
    assert fw.run_pre_filter(CycleState(), pod(), NODES) == (None, None)


def test_pre_filter_stops_once_the_intersection_is_empty() -> None:
    log: Log = []
    fw = framework(
        [
            fake("A", log, pre_filter=narrow("n1")),
            fake("B", log, pre_filter=narrow("n2")),
            fake("C", log, pre_filter=narrow("n3")),
        ],
        preFilter=["A", "B", "C"],
    )
    result, status = fw.run_pre_filter(CycleState(), pod(), NODES)
    assert result is None
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "node(s) didn't satisfy plugin(s) [A B] simultaneously"
    assert log == ["A.pre_filter", "B.pre_filter"]


def test_one_plugin_narrowing_to_nothing_is_named_alone() -> None:
    fw = framework([fake("A", pre_filter=narrow())], preFilter=["A"])
    _, status = fw.run_pre_filter(CycleState(), pod(), NODES)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "node(s) didn't satisfy plugin A"


def test_pre_filter_skip_drops_the_plugin_from_this_cycles_filters() -> None:
    log: Log = []
    a = fake("A", log, pre_filter=lambda *_: (None, Status.skip()), filter=ok)
    b = fake("B", log, pre_filter=lambda *_: (None, None), filter=ok)
    fw = framework([a, b], preFilter=["A", "B"], filter=["A", "B"])
    state = CycleState()
    assert fw.run_pre_filter(state, pod(), NODES) == (None, None)
    assert state.skip_filter_plugins == {"A"}
    assert [name for name, _ in fw.active_filters(state)] == ["B"]
    log.clear()
    assert fw.run_filter_plugins(state, pod(), N1) is None
    assert log == ["B.filter"]
    # A new cycle filters with A again.
    assert [name for name, _ in fw.active_filters(CycleState())] == ["A", "B"]


def test_a_pre_filter_rejection_lets_the_rest_run_and_the_last_one_stands() -> None:
    """v1.37's RunPreFilterPlugins (kubernetes#119770): after Unschedulable the other
    PreFilters still run, so that preemption has their state; the last rejection is the
    cycle's."""
    log: Log = []
    fw = framework(
        [
            fake("A", log, pre_filter=lambda *_: (None, Status.unschedulable("too big"))),
            fake("B", log, pre_filter=lambda *_: (None, None)),
            fake("C", log, pre_filter=lambda *_: (None, Status.unschedulable("too wide"))),
        ],
        preFilter=["A", "B", "C"],
    )
    result, status = fw.run_pre_filter(CycleState(), pod(), NODES)
    assert result is None
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert (status.plugin, status.message()) == ("C", "too wide")
    assert log == ["A.pre_filter", "B.pre_filter", "C.pre_filter"]


def test_an_unresolvable_pre_filter_rejection_stops_the_rest() -> None:
    log: Log = []
    unresolvable = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "never")
    fw = framework(
        [
            fake("A", log, pre_filter=lambda *_: (None, unresolvable)),
            fake("B", log, pre_filter=lambda *_: (None, None)),
        ],
        preFilter=["A", "B"],
    )
    _, status = fw.run_pre_filter(CycleState(), pod(), NODES)
    assert status is not None and (status.code, status.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "A",
    )
    assert log == ["A.pre_filter"]


def test_a_pre_filter_error_is_wrapped_with_its_plugin() -> None:
    fw = framework([fake("A", pre_filter=lambda *_: (None, Status.error("boom")))], preFilter=["A"])
    _, status = fw.run_pre_filter(CycleState(), pod(), NODES)
    assert status is not None and status.code == Code.ERROR
    assert status.message() == 'running PreFilter plugin "A": boom'
    assert status.plugin == "A"


def test_a_plugin_error_raised_in_pre_filter_becomes_an_error_status() -> None:
    def raises(*_: Any) -> None:
        raise PluginError("state missing")

    fw = framework([fake("A", pre_filter=raises)], preFilter=["A"])
    _, status = fw.run_pre_filter(CycleState(), pod(), NODES)
    assert status is not None and status.code == Code.ERROR
    assert (status.plugin, status.message()) == ("A", "state missing")


# -- Filter --------------------------------------------------------------------------------


def _only(*names: str, code: Code = Code.UNSCHEDULABLE) -> Callable[..., Status | None]:
    """A filter that passes ``names`` and rejects every other node with ``code``."""
    return lambda state, p, node: None if node.name in names else Status(code, f"not {node.name}")


def test_filter_statuses_per_node_stop_at_the_first_failing_plugin() -> None:
    log: Log = []
    fw = framework(
        [
            fake("Hard", log, filter=_only("n1", "n2", code=Code.UNSCHEDULABLE_AND_UNRESOLVABLE)),
            fake("Soft", log, filter=_only("n1")),
        ],
        filter=["Hard", "Soft"],
    )
    state = CycleState()
    statuses = {}
    for node in NODES:
        log.clear()
        statuses[node.name] = fw.run_filter_plugins(state, pod(), node)
        if node.name == "n3":
            # The unresolvable verdict short-circuits: Soft never sees n3.
            assert log == ["Hard.filter"]
        else:
            assert log == ["Hard.filter", "Soft.filter"]
    assert statuses["n1"] is None
    s2, s3 = statuses["n2"], statuses["n3"]
    assert s2 is not None and (s2.code, s2.plugin, s2.message()) == (
        Code.UNSCHEDULABLE,
        "Soft",
        "not n2",
    )
    assert s3 is not None and (s3.code, s3.plugin, s3.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "Hard",
        "not n3",
    )


def test_a_filter_error_is_wrapped_and_named() -> None:
    fw = framework([fake("A", filter=lambda *_: Status.error("no state"))], filter=["A"])
    status = fw.run_filter_plugins(CycleState(), pod(), N1)
    assert status is not None and status.code == Code.ERROR
    assert status.message() == 'running "A" filter plugin: no state'
    assert status.plugin == "A"


def test_a_success_status_from_filter_passes_the_node() -> None:
    fw = framework([fake("A", filter=lambda *_: Status(Code.SUCCESS))], filter=["A"])
    assert fw.run_filter_plugins(CycleState(), pod(), N1) is None


def test_batch_filters_only_when_every_active_filter_has_filter_nodes() -> None:
    def judge(*_: Any) -> dict[int, Status]:
        return {}

    batch = fake("Batch", filter=ok, filter_nodes=judge)
    plain = fake("Plain", filter=ok, pre_filter=lambda *_: (None, Status.skip()))
    fw = framework([batch, plain], preFilter=["Plain"], filter=["Batch", "Plain"])
    assert fw.batch_filters(CycleState()) is None
    state = CycleState()
    fw.run_pre_filter(state, pod(), NODES)  # Plain skips: only Batch is active
    judges = fw.batch_filters(state)
    assert judges is not None and [name for name, _ in judges] == ["Batch"]


def test_a_subclass_overriding_filter_alone_is_not_judged_by_its_parents_batch() -> None:
    parent = fake("Parent", filter=ok, filter_nodes=lambda *_: {})

    class Child(parent):  # type: ignore[valid-type, misc]
        name = "Child"

        def filter(self, *_: Any) -> Status:
            return Status.unschedulable("child says no")

    fw = framework([Child], filter=["Child"])
    assert fw.batch_filters(CycleState()) is None


class _Nominator:
    def __init__(self, node: str, *pods: PodInfo) -> None:
        self.node, self.pods = node, pods

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self.pods if node_name == self.node else ()

    def add_nominated_pod(self, pod: PodInfo, node_name: str) -> None:
        pass

    def delete_nominated_pod(self, pod: PodInfo) -> None:
        pass

    def nominated_node(self, uid: str) -> str | None:
        return None

    def nominated_node_names(self) -> Collection[str]:
        return (self.node,)


def test_nominated_pods_of_higher_priority_are_filtered_with_then_without() -> None:
    seen: list[int] = []
    added: list[str] = []

    class Ext:
        def add_pod(self, state: Any, p: Any, pod_to_add: PodInfo, node: Any) -> None:
            added.append(pod_to_add.name)

        def remove_pod(self, *_: Any) -> None:
            return None

    def count_pods(state: Any, p: Any, node: NodeInfo) -> Status | None:
        seen.append(len(node.pods))
        return None if len(node.pods) == 0 else Status.unschedulable("taken")

    a = fake("A", filter=count_pods, pre_filter=lambda *_: (None, None))
    a.pre_filter_extensions = lambda self: Ext()  # type: ignore[attr-defined]
    high, low = pod("high", priority=10), pod("low", priority=0)
    fw = framework([a], nominator=_Nominator("n1", high, low), preFilter=["A"], filter=["A"])
    incoming = pod("p", priority=5)
    state = CycleState()
    fw.run_pre_filter(state, incoming, NODES)
    status = fw.run_filter_plugins_with_nominated_pods(state, incoming, N1)
    assert status is not None and status.message() == "taken"
    assert added == ["high"]  # only pods of higher or equal priority count
    assert seen == [1]
    assert len(N1.pods) == 0  # the pass with nominated pods works on a copy of the node
    seen.clear()
    assert fw.run_filter_plugins_with_nominated_pods(state, incoming, N2) is None
    assert seen == [0]  # no nominated pods there: one pass


# -- PostFilter ----------------------------------------------------------------------------


async def test_post_filter_returns_the_first_success() -> None:
    log: Log = []
    reject = (None, Status.unschedulable("no victims"))
    fw = framework(
        [
            fake("A", log, post_filter=lambda *_: reject),
            fake("B", log, post_filter=lambda *_: (PostFilterResult("n2"), None)),
            fake("C", log, post_filter=lambda *_: (None, None)),
        ],
        postFilter=["A", "B", "C"],
    )
    result, status = await fw.run_post_filter(CycleState(), pod(), {})
    assert result is not None and result.nominated_node_name == "n2"
    assert status.code == Code.SUCCESS and status.plugin == "B"
    assert log == ["A.post_filter", "B.post_filter"]


async def test_post_filter_rejections_are_gathered_under_the_first_rejector() -> None:
    fw = framework(
        [
            fake("A", post_filter=lambda *_: (None, Status.unschedulable("a: none"))),
            fake("B", post_filter=lambda *_: (None, Status.unschedulable("b: none"))),
        ],
        postFilter=["A", "B"],
    )
    result, status = await fw.run_post_filter(CycleState(), pod(), {})
    assert result is None
    assert (status.code, status.reasons, status.plugin) == (
        Code.UNSCHEDULABLE,
        ("a: none", "b: none"),
        "A",
    )


async def test_post_filter_unresolvable_stops_and_errors_are_errors() -> None:
    log: Log = []
    fw = framework(
        [
            fake("A", log, post_filter=lambda *_: (None, Status.unresolvable("never"))),
            fake("B", log, post_filter=lambda *_: (None, None)),
        ],
        postFilter=["A", "B"],
    )
    _, status = await fw.run_post_filter(CycleState(), pod(), {})
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "A")
    assert log == ["A.post_filter"]

    error = fake("E", post_filter=lambda *_: (None, Status.error("api")))
    fw = framework([error], postFilter=["E"])
    result, status = await fw.run_post_filter(CycleState(), pod(), {})
    assert result is None
    assert (status.code, status.plugin, status.message()) == (Code.ERROR, "E", "api")


# -- PreScore and Score --------------------------------------------------------------------


def _by_node(**scores: int) -> Callable[..., int]:
    return lambda state, p, node: scores[node.name]


def test_score_totals_are_weighted_sums_over_plugins() -> None:
    fw = framework(
        [
            fake("A", score=_by_node(n1=10, n2=20, n3=30)),
            fake("B", score=_by_node(n1=5, n2=0, n3=1)),
        ],
        weights={"A": 1, "B": 3},
        score=["A", "B"],
    )
    totals, detail = fw.run_score(CycleState(), pod(), NODES, explain=True)
    assert totals == [10 + 15, 20 + 0, 30 + 3]
    assert [(d.plugin, d.weight, d.raw, d.weighted) for d in detail] == [
        ("A", 1, [10, 20, 30], [10, 20, 30]),
        ("B", 3, [5, 0, 1], [15, 0, 3]),
    ]
    # Without explain no detail is kept.
    assert fw.run_score(CycleState(), pod(), NODES) == (totals, [])


@pytest.mark.parametrize("weight", [1, 2, 4, 5, 100])
def test_score_totals_hold_for_small_and_large_weights(weight: int) -> None:
    # Small weights enter the totals as repeated columns, large ones multiplied: one sum.
    fw = framework(
        [
            fake("A", score=_by_node(n1=10, n2=0, n3=100)),
            fake("B", score=_by_node(n1=7, n2=3, n3=0)),
        ],
        weights={"A": weight, "B": 1},
        score=["A", "B"],
    )
    totals, _ = fw.run_score(CycleState(), pod(), NODES)
    assert totals == [10 * weight + 7, 3, 100 * weight]
    # One plugin alone, and none at all.
    alone = framework(
        [fake("A", score=_by_node(n1=1, n2=2, n3=3))], weights={"A": weight}, score=["A"]
    )
    assert alone.run_score(CycleState(), pod(), NODES)[0] == [weight, 2 * weight, 3 * weight]
    assert framework([]).run_score(CycleState(), pod(), NODES)[0] == [0, 0, 0]


@pytest.mark.parametrize("seed", range(8))
def test_score_totals_with_uniform_plugins_equal_the_weighted_sums(seed: int) -> None:
    # A plugin that gives every node one integer score is added once, not per node: the
    # totals (values and types) must equal the plain weighted sums whatever the mix of
    # uniform, zero, varied, boolean and float columns and of weights.
    rng = random.Random(seed)
    nodes = [make_node(f"n{i}") for i in range(rng.randint(1, 40))]
    plugins, weights, columns = [], {}, {}
    for k in range(rng.randint(1, 6)):
        name = f"P{k}"
        shape = rng.choice(["uniform", "zero", "varied", "bool", "float"])
        if shape == "uniform":
            column: list[Any] = [rng.randint(0, 100)] * len(nodes)
        elif shape == "zero":
            column = [0] * len(nodes)
        elif shape == "varied":
            column = [rng.randint(0, 100) for _ in nodes]
        elif shape == "bool":
            column = [rng.random() < 0.5 for _ in nodes]
        else:
            column = [rng.choice([0.5, 99.5, 100.0]) for _ in nodes]
        columns[name] = dict(zip([n.name for n in nodes], column, strict=True))
        weights[name] = rng.choice([1, 2, 3, 4, 5, 100])
        plugins.append(fake(name, score=lambda state, p, node, c=columns[name]: c[node.name]))
    fw = framework(plugins, weights=weights, score=list(columns))
    totals, _ = fw.run_score(CycleState(), pod(), nodes)
    expected = [sum(columns[name][node.name] * weights[name] for name in columns) for node in nodes]
    assert totals == expected
    assert [type(x) for x in totals] == [type(x) for x in expected]


@pytest.mark.parametrize("weight", [0, -2])
def test_weights_that_validation_refuses_still_multiply(weight: int) -> None:
    # A Framework built without the config checks: the totals are still score x weight.
    fw = framework(
        [
            fake("A", score=_by_node(n1=10, n2=20, n3=30)),
            fake("B", score=_by_node(n1=1, n2=2, n3=3)),
        ],
        weights={"A": weight},
        score=["A", "B"],
    )
    assert fw.run_score(CycleState(), pod(), NODES)[0] == [
        10 * weight + 1,
        20 * weight + 2,
        30 * weight + 3,
    ]


def test_scores_in_range_pass_whatever_their_type_and_below_range_fail() -> None:
    mixed: dict[str, float] = {"n1": 0.5, "n2": 100.0, "n3": True}
    fw = framework([fake("A", score=lambda state, p, node: mixed[node.name])], score=["A"])
    assert fw.run_score(CycleState(), pod(), NODES)[0] == [0.5, 100.0, 1]
    # Booleans add up as the integers they are.
    flags = {"n1": True, "n2": False, "n3": True}
    fw = framework([fake("A", score=lambda state, p, node: flags[node.name])], score=["A"])
    totals = fw.run_score(CycleState(), pod(), NODES)[0]
    assert totals == [1, 0, 1] and [type(x) for x in totals] == [int, int, int]
    fw = framework([fake("A", score=_by_node(n1=3, n2=-1, n3=5))], score=["A"])
    with pytest.raises(PluginError, match='plugin "A" returns an invalid score -1'):
        fw.run_score(CycleState(), pod(), NODES)


def test_normalize_score_rescales_the_raw_scores_before_weighting() -> None:
    seen: list[list[int]] = []

    def normalize(state: Any, p: Any, nodes: Any, scores: list[int]) -> None:
        seen.append(list(scores))
        top = max(scores)
        scores[:] = [s * 100 // top for s in scores]

    fw = framework(
        [fake("A", score=_by_node(n1=1, n2=2, n3=4), normalize_score=normalize)],
        weights={"A": 2},
        score=["A"],
    )
    totals, _ = fw.run_score(CycleState(), pod(), NODES)
    assert seen == [[1, 2, 4]]
    assert totals == [2 * 25, 2 * 50, 2 * 100]


def test_score_nodes_replaces_per_node_score_calls() -> None:
    log: Log = []
    fw = framework(
        [fake("A", log, score=_by_node(n1=1, n2=1, n3=1), score_nodes=lambda *_: [7, 8, 9])],
        score=["A"],
    )
    totals, _ = fw.run_score(CycleState(), pod(), NODES)
    assert totals == [7, 8, 9]
    assert log == ["A.score_nodes"]


def test_pre_score_skip_leaves_the_plugin_out_of_score() -> None:
    log: Log = []
    a = fake("A", log, pre_score=lambda *_: Status.skip(), score=_by_node(n1=50, n2=50, n3=50))
    b = fake("B", log, pre_score=ok, score=_by_node(n1=1, n2=2, n3=3))
    fw = framework([a, b], preScore=["A", "B"], score=["A", "B"])
    state = CycleState()
    assert fw.run_pre_score(state, pod(), NODES) is None
    assert state.skip_score_plugins == {"A"}
    totals, _ = fw.run_score(state, pod(), NODES)
    assert totals == [1, 2, 3]
    assert "A.score" not in log


def test_a_pre_score_error_is_wrapped_and_stops() -> None:
    log: Log = []
    fw = framework(
        [fake("A", log, pre_score=lambda *_: Status.error("bad")), fake("B", log, pre_score=ok)],
        preScore=["A", "B"],
    )
    status = fw.run_pre_score(CycleState(), pod(), NODES)
    assert status is not None and status.code == Code.ERROR
    assert (status.plugin, status.message()) == ("A", 'running PreScore plugin "A": bad')
    assert log == ["A.pre_score"]


def test_a_score_out_of_range_after_normalizing_is_an_error() -> None:
    fw = framework([fake("A", score=_by_node(n1=0, n2=101, n3=5))], score=["A"])
    with pytest.raises(PluginError) as err:
        fw.run_score(CycleState(), pod(), NODES)
    assert str(err.value) == (
        'plugin "A" returns an invalid score 101, it should in the range of [0, 100] '
        "after normalizing"
    )


def test_score_and_normalize_errors_name_the_plugin() -> None:
    def raises(*_: Any) -> int:
        raise PluginError("no state")

    fw = framework([fake("A", score=raises)], score=["A"])
    with pytest.raises(PluginError) as err:
        fw.run_score(CycleState(), pod(), NODES)
    assert str(err.value) == 'running Score plugin "A": no state'

    fw = framework(
        [fake("B", score=_by_node(n1=1, n2=1, n3=1), normalize_score=lambda *_: Status.error("x"))],
        score=["B"],
    )
    with pytest.raises(PluginError) as err:
        fw.run_score(CycleState(), pod(), NODES)
    assert str(err.value) == 'running Score plugin "B": x'


def test_score_nodes_must_score_every_node() -> None:
    fw = framework([fake("A", score=ok, score_nodes=lambda *_: [1, 2])], score=["A"])
    with pytest.raises(PluginError, match='plugin "A" returned 2 scores for 3 nodes'):
        fw.run_score(CycleState(), pod(), NODES)


# -- Reserve -------------------------------------------------------------------------------


def test_reserve_stops_at_a_failure_and_unreserve_runs_every_plugin_in_reverse() -> None:
    log: Log = []
    fw = framework(
        [
            fake("A", log, reserve=ok),
            fake("B", log, reserve=lambda *_: Status.error("disk full")),
            fake("C", log, reserve=ok),
        ],
        reserve=["A", "B", "C"],
    )
    state, p = CycleState(), pod()
    status = fw.run_reserve(state, p, "n1")
    assert status is not None and status.code == Code.ERROR
    assert (status.plugin, status.message()) == ("B", 'running Reserve plugin "B": disk full')
    assert log == ["A.reserve", "B.reserve"]
    log.clear()
    fw.run_unreserve(state, p, "n1")
    assert log == ["C.unreserve", "B.unreserve", "A.unreserve"]


def test_a_reserve_rejection_keeps_its_code() -> None:
    fw = framework([fake("A", reserve=lambda *_: Status.unschedulable("quota"))], reserve=["A"])
    status = fw.run_reserve(CycleState(), pod(), "n1")
    assert status is not None
    assert (status.code, status.plugin, status.message()) == (Code.UNSCHEDULABLE, "A", "quota")


def test_a_failing_unreserve_is_logged_and_the_rest_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log: Log = []

    def raises(*_: Any) -> None:
        raise RuntimeError("gone")

    fw = framework(
        [fake("A", log, reserve=ok), fake("B", log, reserve=ok, unreserve=raises)],
        reserve=["A", "B"],
    )
    with caplog.at_level(logging.ERROR, logger="multisched.framework.runtime"):
        fw.run_unreserve(CycleState(), pod("web"), "n1")
    assert log == ["B.unreserve", "A.unreserve"]
    assert "Unreserve of plugin B failed for pod default/web" in caplog.text


# -- Permit --------------------------------------------------------------------------------


def _permit(code: Code | None, timeout: float = 0.0, msg: str = "") -> Callable[..., Any]:
    status = None if code is None else Status(code, msg) if msg else Status(code)
    return lambda *_: (status, timeout)


async def test_permit_wait_holds_the_pod_until_every_waiting_plugin_allows() -> None:
    fw = framework(
        [
            fake("A", permit=_permit(Code.WAIT, 10)),
            fake("B", permit=_permit(None)),
            fake("C", permit=_permit(Code.WAIT, 10)),
        ],
        permit=["A", "B", "C"],
    )
    p = pod()
    status = fw.run_permit(CycleState(), p, "n1")
    assert status is not None and status.code == Code.WAIT
    assert status.message() == "one or more plugins asked to wait: ['A', 'C']"
    waiting = fw.get_waiting_pod(p.uid)
    assert waiting is not None and fw.iterate_over_waiting_pods() == [waiting]
    assert waiting.pending_plugins == ["A", "C"]

    done = asyncio.ensure_future(fw.wait_on_permit(p))
    waiting.allow("A")
    await asyncio.sleep(0)
    assert not done.done()
    waiting.allow("C")
    assert await done is None
    assert fw.get_waiting_pod(p.uid) is None


async def test_a_waiting_pod_rejected_by_a_plugin_is_unschedulable() -> None:
    fw = framework([fake("A", permit=_permit(Code.WAIT, 10))], permit=["A"])
    p = pod()
    fw.run_permit(CycleState(), p, "n1")
    waiting = fw.get_waiting_pod(p.uid)
    assert waiting is not None
    done = asyncio.ensure_future(fw.wait_on_permit(p))
    waiting.reject("A", "gang broke up")
    status = await done
    assert status is not None
    assert (status.code, status.plugin, status.message()) == (
        Code.UNSCHEDULABLE,
        "A",
        "gang broke up",
    )
    assert fw.waiting_pods == {}


async def test_a_waiting_pod_times_out_at_its_plugins_timeout() -> None:
    fw = framework([fake("A", permit=_permit(Code.WAIT, 0.01))], permit=["A"])
    p = pod()
    fw.run_permit(CycleState(), p, "n1")
    status = await asyncio.wait_for(fw.wait_on_permit(p), timeout=5)
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message() == "rejected due to timeout after waiting 0.01s at plugin A"
    assert fw.waiting_pods == {}


async def test_permit_timeouts_are_capped_at_fifteen_minutes() -> None:
    fw = framework([fake("A", permit=_permit(Code.WAIT, 3600.0))], permit=["A"])
    p = pod()
    fw.run_permit(CycleState(), p, "n1")
    waiting = fw.get_waiting_pod(p.uid)
    assert waiting is not None
    assert 899.0 < waiting.seconds_left() <= 900.0
    waiting.allow("A")


async def test_a_permit_rejection_wins_over_earlier_waits_and_registers_nothing() -> None:
    log: Log = []
    fw = framework(
        [
            fake("A", log, permit=_permit(Code.WAIT, 10)),
            fake("B", log, permit=_permit(Code.UNSCHEDULABLE, msg="no")),
            fake("C", log, permit=_permit(None)),
        ],
        permit=["A", "B", "C"],
    )
    status = fw.run_permit(CycleState(), pod(), "n1")
    assert status is not None
    assert (status.code, status.plugin, status.message()) == (Code.UNSCHEDULABLE, "B", "no")
    assert log == ["A.permit", "B.permit"]
    assert fw.waiting_pods == {}


def test_a_permit_error_is_wrapped() -> None:
    fw = framework([fake("A", permit=_permit(Code.ERROR, msg="lost"))], permit=["A"])
    status = fw.run_permit(CycleState(), pod(), "n1")
    assert status is not None and status.code == Code.ERROR
    assert (status.plugin, status.message()) == ("A", 'running Permit plugin "A": lost')


async def test_wait_on_permit_of_a_pod_not_waiting_is_success() -> None:
    fw = framework([fake("A", permit=_permit(None))], permit=["A"])
    assert fw.run_permit(CycleState(), pod(), "n1") is None
    assert await fw.wait_on_permit(pod()) is None


# -- PreBind, Bind, PostBind ---------------------------------------------------------------


async def test_a_pre_bind_error_is_wrapped_with_its_plugin_and_stops() -> None:
    log: Log = []
    fw = framework(
        [
            fake("A", log, pre_bind=ok),
            fake("B", log, pre_bind=lambda *_: Status.error("pv lost")),
            fake("C", log, pre_bind=ok),
        ],
        preBind=["A", "B", "C"],
    )
    status = await fw.run_pre_bind(CycleState(), pod(), "n1")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == 'running PreBind plugin "B": pv lost'
    assert status.plugin == "B"
    assert log == ["A.pre_bind", "B.pre_bind"]


async def test_a_pre_bind_rejection_keeps_its_code_and_message() -> None:
    fw = framework([fake("A", pre_bind=lambda *_: Status.unresolvable("gone"))], preBind=["A"])
    status = await fw.run_pre_bind(CycleState(), pod(), "n1")
    assert status is not None
    assert (status.code, status.plugin, status.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "A",
        "gone",
    )


async def test_bind_goes_to_the_first_binder_that_does_not_skip() -> None:
    log: Log = []
    fw = framework(
        [
            fake("Skip", log, bind=lambda *_: Status.skip()),
            fake("Binder", log, bind=ok),
            fake("Never", log, bind=ok),
        ],
        bind=["Skip", "Binder", "Never"],
    )
    assert await fw.run_bind(CycleState(), pod(), "n1") is None
    assert log == ["Skip.bind", "Binder.bind"]


async def test_bind_failure_is_named_and_all_skipping_is_a_skip() -> None:
    fw = framework([fake("A", bind=lambda *_: Status.error("conflict"))], bind=["A"])
    status = await fw.run_bind(CycleState(), pod(), "n1")
    assert status is not None
    assert (status.code, status.plugin, status.message()) == (Code.ERROR, "A", "conflict")

    fw = framework([fake("S", bind=lambda *_: Status.skip())], bind=["S"])
    status = await fw.run_bind(CycleState(), pod(), "n1")
    assert status is not None and status.code == Code.SKIP
    assert status.message() == "all bind plugins skipped the pod"


def test_post_bind_errors_are_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    log: Log = []

    def raises(*_: Any) -> None:
        raise RuntimeError("metrics down")

    fw = framework(
        [fake("A", log, post_bind=raises), fake("B", log, post_bind=ok)], postBind=["A", "B"]
    )
    with caplog.at_level(logging.ERROR, logger="multisched.framework.runtime"):
        fw.run_post_bind(CycleState(), pod("web"), "n1")
    assert log == ["A.post_bind", "B.post_bind"]
    assert "PostBind of plugin A failed for pod default/web" in caplog.text
    assert "metrics down" in caplog.text


# -- plugin metrics ------------------------------------------------------------------------


def _observed(fw: Framework) -> list[tuple[str, str, str]]:
    seen: list[tuple[str, str, str]] = []

    def observe(plugin: str, point: str, code: str, seconds: float) -> None:
        assert seconds >= 0.0
        seen.append((plugin, point, code))

    fw.plugin_observer = observe
    return seen


def _everything() -> Framework:
    a = fake(
        "A",
        pre_filter=lambda *_: (None, None),
        filter=_only("n1"),
        pre_score=ok,
        score=_by_node(n1=1, n2=2, n3=3),
        reserve=ok,
        permit=_permit(None),
    )
    b = fake("B", pre_bind=ok, bind=ok, post_filter=lambda *_: (None, Status.unschedulable()))
    return framework(
        [a, b],
        preFilter=["A"],
        filter=["A"],
        postFilter=["B"],
        preScore=["A"],
        score=["A"],
        reserve=["A"],
        permit=["A"],
        preBind=["B"],
        bind=["B"],
    )


async def test_plugin_calls_are_observed_when_the_cycle_records_metrics() -> None:
    fw = _everything()
    seen = _observed(fw)
    state, p = CycleState(record_plugin_metrics=True), pod()
    fw.run_pre_filter(state, p, NODES)
    filters = fw.timed_filters(state, fw.active_filters(state))
    assert filters is not None
    for node in NODES:
        fw.run_filter_plugins(state, p, node, filters)
    await fw.run_post_filter(state, p, {})
    fw.run_pre_score(state, p, NODES)
    fw.run_score(state, p, NODES)
    fw.run_reserve(state, p, "n1")
    fw.run_permit(state, p, "n1")
    await fw.run_pre_bind(state, p, "n1")
    await fw.run_bind(state, p, "n1")
    assert seen == [
        ("A", "PreFilter", "Success"),
        ("A", "Filter", "Success"),
        ("A", "Filter", "Unschedulable"),
        ("A", "Filter", "Unschedulable"),
        ("B", "PostFilter", "Unschedulable"),
        ("A", "PreScore", "Success"),
        ("A", "Score", "Success"),  # once per plugin and cycle, not per node
        ("A", "Reserve", "Success"),
        ("A", "Permit", "Success"),
        ("B", "PreBind", "Success"),
        ("B", "Bind", "Success"),
    ]


async def test_run_filter_plugins_times_its_own_filters_when_given_none() -> None:
    fw = _everything()
    seen = _observed(fw)
    fw.run_filter_plugins(CycleState(record_plugin_metrics=True), pod(), N2)
    assert seen == [("A", "Filter", "Unschedulable")]


async def test_nothing_is_observed_when_the_cycle_does_not_record_metrics() -> None:
    fw = _everything()
    seen = _observed(fw)
    state, p = CycleState(), pod()
    fw.run_pre_filter(state, p, NODES)
    assert fw.timed_filters(state, fw.active_filters(state)) is None
    fw.run_filter_plugins(state, p, N1)
    fw.run_pre_score(state, p, NODES)
    fw.run_score(state, p, NODES)
    fw.run_reserve(state, p, "n1")
    await fw.run_bind(state, p, "n1")
    assert seen == []


def test_without_an_observer_recording_cycles_run_untimed() -> None:
    fw = _everything()
    state = CycleState(record_plugin_metrics=True)
    assert fw.timed_filters(state, fw.active_filters(state)) is None
    fw.run_pre_filter(state, pod(), NODES)
    assert fw.run_filter_plugins(state, pod(), N1) is None
