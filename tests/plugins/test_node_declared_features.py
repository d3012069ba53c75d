"""NodeDeclaredFeatures: cases from upstream nodedeclaredfeatures/nodedeclaredfeatures_test.go
(PreFilter, Filter, the node events it waits for), with the features of the real registry,
and the plugin in the default profile, in a scheduling cycle and in the queue."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from builders import make_pod, node_dict, pod_dict
from multisched.cache import Cache, NodeInfo, PodInfo
from multisched.cache.declared_features import DEFAULT_FRAMEWORK
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.framework import Code, CycleState
from multisched.framework import events as ev
from multisched.framework.events import QueueingHint
from multisched.plugins.node_declared_features import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    PRE_FILTER_STATE_KEY,
    NodeDeclaredFeatures,
    is_schedulable_after_node_change,
    is_schedulable_after_target_pod_update,
)
from multisched.scheduler import Scheduler, default_registry
from multisched.scheduler.cluster_events import node_scheduling_properties_change

FEATURE_A = "RestartAllContainersOnContainerExits"
FEATURE_B = "UserNamespacesHostNetworkSupport"
FEATURE_C = "VolumeBindMountOptions"


def features(*names: str) -> int:
    return DEFAULT_FRAMEWORK.try_map(names)


def node(name: str = "node-1", declared: list[str] | None = None, **kw: Any) -> dict[str, Any]:
    raw = node_dict(name, **kw)
    if declared is not None:
        raw["status"]["declaredFeatures"] = declared
    return raw


def node_info(declared: list[str] | None = None) -> NodeInfo:
    return NodeInfo.from_node(node(declared=declared))


def restarting(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with a container whose exit restarts the whole pod (needs FEATURE_A)."""
    raw["spec"]["containers"][0].update(
        restartPolicy="Never",
        restartPolicyRules=[
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
        ],
    )
    return raw


def needing_a(name: str = "test-pod", **kw: Any) -> PodInfo:
    return PodInfo.parse(restarting(pod_dict(name, **kw)))


def needing_a_and_b(name: str = "test-pod") -> PodInfo:
    return PodInfo.parse(restarting(pod_dict(name, hostNetwork=True, hostUsers=False)))


# -- PreFilter (TestPreFilter) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (needing_a(), features(FEATURE_A)),
        (needing_a_and_b(), features(FEATURE_A, FEATURE_B)),
    ],
    ids=["one requirement", "multiple requirements"],
)
def test_pre_filter_keeps_the_pods_requirements(pod: PodInfo, expected: int) -> None:
    state = CycleState()
    result, status = NodeDeclaredFeatures(None, None).pre_filter(state, pod, [])
    assert (result, status) == (None, None)
    assert state.read(PRE_FILTER_STATE_KEY) == expected


def test_pre_filter_skips_a_pod_with_no_requirements() -> None:
    state = CycleState()
    result, status = NodeDeclaredFeatures(None, None).pre_filter(state, make_pod("plain"), [])
    assert result is None
    assert status is not None and status.code == Code.SKIP
    assert state.get(PRE_FILTER_STATE_KEY) is None


# -- Filter (TestFilter) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "required", "fits"),
    [
        ([FEATURE_A, FEATURE_B], [FEATURE_A], True),
        ([FEATURE_B], [FEATURE_A], False),
        ([FEATURE_A, FEATURE_B, FEATURE_C], [FEATURE_A, FEATURE_C], True),
        (None, [FEATURE_A], False),  # the node declares nothing
        ([FEATURE_A], [FEATURE_A, FEATURE_B], False),  # some but not all
        (["SomeFutureFeature", FEATURE_A], [FEATURE_A], True),  # unknown ones are ignored
    ],
    ids=[
        "node matches requirements",
        "node does not match requirements",
        "node with multiple features, pod requires subset",
        "node has no declared features",
        "node with some but not all required features",
        "node declares features this scheduler does not know",
    ],
)
def test_filter(declared: list[str] | None, required: list[str], fits: bool) -> None:
    plugin = NodeDeclaredFeatures(None, None)
    state = CycleState()
    state.write(PRE_FILTER_STATE_KEY, features(*required))
    pod, target = make_pod("test-pod"), node_info(declared)
    status = plugin.filter(state, pod, target)
    batch = plugin.filter_nodes(state, pod, [node_info([FEATURE_A, FEATURE_B]), target])
    if fits:
        assert status is None
        assert 1 not in batch
    else:
        assert status is not None
        assert (status.code, status.message()) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ERR_REASON_UNSATISFIED_REQUIREMENTS,
        )
        assert batch[1].code == status.code
        assert batch[1].message() == status.message()
    assert (0 in batch) is not (features(*required) & ~features(FEATURE_A, FEATURE_B) == 0)


def test_filter_without_pre_filter_state_is_an_error() -> None:
    plugin = NodeDeclaredFeatures(None, None)
    expected = 'error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found'
    status = plugin.filter(CycleState(), make_pod(), node_info())
    assert status is not None
    assert (status.code, status.message()) == (Code.ERROR, expected)
    batch = plugin.filter_nodes(CycleState(), make_pod(), [node_info(), node_info()])
    assert [(s.code, s.message()) for s in batch.values()] == [(Code.ERROR, expected)] * 2


# -- Events (TestEventsToRegister, TestEnqueueExtensionsNodeUpdate) ----------------------


def test_events_to_register_are_node_add_and_declared_feature_updates_and_pod_updates() -> None:
    """TestEventsToRegister "plugin enabled" (GA in v1.37): two registrations, with hints."""
    node_event, pod_event = NodeDeclaredFeatures(None, None).events_to_register()
    assert node_event.event == ev.ClusterEvent(ev.NODE, ev.ADD | ev.UPDATE_NODE_DECLARED_FEATURE)
    assert node_event.hint is is_schedulable_after_node_change
    assert node_event.event.matches(ev.NODE_ADD)
    assert node_event.event.matches(ev.NODE_DECLARED_FEATURE_CHANGE)
    for other in (ev.NODE_LABEL_CHANGE, ev.NODE_TAINT_CHANGE, ev.ASSIGNED_POD_DELETE):
        assert not node_event.event.matches(other)
    # Upstream's {TargetPod, Update}: the pending pod's own updates, no bound pod's.
    assert pod_event.event == ev.ClusterEvent(ev.TARGET_POD, ev.UPDATE)
    assert pod_event.hint is is_schedulable_after_target_pod_update
    assert pod_event.event.matches(ev.ClusterEvent(ev.TARGET_POD, ev.UPDATE_POD_LABEL))
    assert not pod_event.event.matches(ev.ASSIGNED_POD_UPDATE)


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, ["FeatureA"], QueueingHint.QUEUE, id="Node Add with feature"),
        pytest.param([], ["FeatureA"], QueueingHint.QUEUE, id="Node Update (Features Added)"),
        pytest.param(
            ["FeatureA"],
            ["FeatureA"],
            QueueingHint.QUEUE_SKIP,
            id="Node Update (Features Unchanged)",
        ),
        # Ours: the lists are compared as listed, known features or not.
        pytest.param([FEATURE_A], [], QueueingHint.QUEUE, id="features removed"),
        pytest.param([FEATURE_A], [FEATURE_A, FEATURE_B], QueueingHint.QUEUE, id="known added"),
    ],
)
def test_enqueue_extensions_node_update(
    old: list[str] | None, new: list[str], hint: QueueingHint
) -> None:
    """TestEnqueueExtensionsNodeUpdate (its features unknown to the registry still count)."""
    before = None if old is None else NodeInfo.from_node(node(declared=old or None))
    after = NodeInfo.from_node(node(declared=new))
    assert is_schedulable_after_node_change(make_pod("test-pod"), before, after) is hint


def _target_update(old: PodInfo, new: PodInfo) -> QueueingHint:
    return is_schedulable_after_target_pod_update(new, old, new)


@pytest.mark.parametrize(
    ("old_needs", "new_needs", "hint"),
    [
        pytest.param(False, True, QueueingHint.QUEUE, id="Pod Update adds requirement"),
        pytest.param(True, False, QueueingHint.QUEUE, id="Pod Update removes requirement"),
        pytest.param(
            False, False, QueueingHint.QUEUE_SKIP, id="Pod Update with no change in requirements"
        ),
        pytest.param(True, True, QueueingHint.QUEUE_SKIP, id="requirement kept"),
    ],
)
def test_is_schedulable_after_target_pod_update(
    old_needs: bool, new_needs: bool, hint: QueueingHint
) -> None:
    """TestIsSchedulableAfterTargetPodUpdate, with a real feature (FEATURE_A) for the mock."""
    raw = pod_dict("test-pod", labels={"foo": "bar"})
    raw["metadata"]["uid"] = "123"
    old = PodInfo.parse(restarting(copy.deepcopy(raw)) if old_needs else raw)
    new = PodInfo.parse(restarting(copy.deepcopy(raw)) if new_needs else raw)
    assert _target_update(old, new) is hint


def test_another_pods_update_is_not_the_target_pods() -> None:
    """Upstream registers TargetPod: another pod's new needs are not this pod's."""
    other_old, other_new = make_pod("other"), needing_a("other")
    assert (
        is_schedulable_after_target_pod_update(make_pod("test-pod"), other_old, other_new)
        is QueueingHint.QUEUE_SKIP
    )


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [
        (None, [FEATURE_A], True),  # features added
        ([FEATURE_A], [FEATURE_A], False),  # unchanged
        ([FEATURE_A], [], True),  # features removed
        ([FEATURE_A], [FEATURE_A, FEATURE_B], True),
    ],
)
def test_a_declared_features_update_is_its_own_node_event(
    old: list[str] | None, new: list[str], changed: bool
) -> None:
    events = node_scheduling_properties_change(node(declared=old), node(declared=new))
    if not changed:
        assert events == []
        return
    (event,) = events
    assert (event.resource, event.action, event.label) == (
        ev.NODE,
        ev.UPDATE_NODE_DECLARED_FEATURE,
        "NodeUpdateNodeDeclaredFeature",
    )
    assert event.action & ev.UPDATE  # a plugin registered for any node update sees it too


# -- In the default profile ----------------------------------------------------------------


def default_scheduler() -> Scheduler:
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [{"schedulerName": "s"}]}), registry)
    return Scheduler(config, registry, cache=Cache())


def test_the_default_profile_runs_it_last_among_the_filters() -> None:
    prof = default_scheduler().profiles["s"].profile
    for point in ("preFilter", "filter"):
        assert prof.plugins[point][-1] == "NodeDeclaredFeatures"
    assert "NodeDeclaredFeatures" not in prof.plugins["score"]


async def test_a_pod_lands_only_on_the_node_declaring_what_it_needs() -> None:
    sched = default_scheduler()
    sched.feed.on_node(node("plain", cpu="64"))  # roomier: every score prefers it
    sched.feed.on_node(node("featured", declared=[FEATURE_A], cpu="2"))
    pod = needing_a("restarter", scheduler_name="s")
    sched.feed.on_pod(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    outcome = await sched.schedule_one(qpi)
    # Assumed there and handed to the binding cycle.
    assert (outcome.result, outcome.node) == ("binding", "featured")


async def test_a_pod_no_node_can_take_waits_for_a_node_to_declare_the_feature() -> None:
    sched = default_scheduler()
    sched.feed.on_node(node("n1"))
    sched.feed.on_node(node("n2", declared=[FEATURE_B]))
    pod = needing_a("restarter", scheduler_name="s")
    sched.feed.on_pod(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    outcome = await sched.schedule_one(qpi)
    assert outcome.result == "unschedulable"
    assert outcome.message == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's required features. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert sched.queue.where(pod.uid) == "unschedulable"
    # Relabelling a node cannot help it ...
    relabelled = node("n1", labels={"zone": "a"})
    sched.feed.on_node(relabelled)
    assert sched.queue.where(pod.uid) == "unschedulable"
    # ... a node declaring the feature can.
    upgraded = copy.deepcopy(relabelled)
    upgraded["status"]["declaredFeatures"] = [FEATURE_A]
    sched.feed.on_node(upgraded)
    assert sched.queue.where(pod.uid) in ("active", "backoff")
