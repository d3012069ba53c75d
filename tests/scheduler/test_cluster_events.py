"""Node updates as cluster events (upstream ``nodeSchedulingPropertiesChange``), and the
built-in plugins' registrations deciding which unschedulable pods they move."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from builders import make_pod, node_dict
from multisched.cache import Cache, PodInfo
from multisched.config import parse_scheduler_profile_spec, resolve
from multisched.framework import Framework, FrameworkError, Registry
from multisched.framework import events as ev
from multisched.scheduler import Scheduler, default_registry
from multisched.scheduler.cluster_events import (
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)


def ready_node(name: str = "n1", **kw: Any) -> dict[str, Any]:
    raw = node_dict(name, **kw)
    raw["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "lastHeartbeatTime": "2024-01-01T00:00:00Z"}
    ]
    return raw


def changed(edit: Any, old: dict[str, Any] | None = None) -> list[ev.ClusterEvent]:
    old = old or ready_node()
    new = copy.deepcopy(old)
    edit(new)
    return node_scheduling_properties_change(old, new)


def test_kubelet_heartbeats_and_images_are_no_event() -> None:
    def heartbeat(n: dict[str, Any]) -> None:
        n["status"]["conditions"][0]["lastHeartbeatTime"] = "2024-01-01T00:00:10Z"
        n["status"]["images"] = [{"names": ["nginx"], "sizeBytes": 1}]
        n["metadata"]["resourceVersion"] = "2"

    assert changed(heartbeat) == []


@pytest.mark.parametrize(
    ("edit", "action", "label"),
    [
        (
            lambda n: n["status"]["allocatable"].update(cpu="8"),
            ev.UPDATE_NODE_ALLOCATABLE,
            "NodeUpdateNodeAllocatable",
        ),
        (
            lambda n: n["metadata"]["labels"].update(zone="a"),
            ev.UPDATE_NODE_LABEL,
            "NodeUpdateNodeLabel",
        ),
        (
            lambda n: n["spec"].update(taints=[{"key": "k", "effect": "NoSchedule"}]),
            ev.UPDATE_NODE_TAINT,
            "NodeUpdateNodeTaint",
        ),
        (
            lambda n: n["status"]["conditions"][0].update(status="False"),
            ev.UPDATE_NODE_CONDITION,
            "NodeUpdateNodeCondition",
        ),
        (
            lambda n: n["metadata"].update(annotations={"node.alpha.kubernetes.io/ttl": "0"}),
            ev.UPDATE_NODE_ANNOTATION,
            "NodeUpdateNodeAnnotation",
        ),
        (
            lambda n: n["spec"].update(podPreemptionPolicy={"mode": "Never"}),
            ev.UPDATE_NODE_PREEMPTION_POLICY,
            "NodeUpdateNodePreemptionPolicy",
        ),
    ],
)
def test_each_scheduling_property_is_its_event(edit: Any, action: int, label: str) -> None:
    (event,) = changed(edit)
    assert (event.resource, event.action, event.label) == (ev.NODE, action, label)


def test_only_a_node_becoming_schedulable_again_is_an_event() -> None:
    cordoned = ready_node()
    cordoned["spec"]["unschedulable"] = True
    assert changed(lambda n: n["spec"].update(unschedulable=True)) == []
    (event,) = changed(lambda n: n["spec"].pop("unschedulable"), old=cordoned)
    assert (event.action, event.label) == (ev.UPDATE_NODE_TAINT, "NodeUpdateNodeTaint")


def test_several_changes_make_one_event_each_in_upstream_order() -> None:
    def both(n: dict[str, Any]) -> None:
        n["metadata"]["labels"]["zone"] = "a"
        n["status"]["allocatable"]["cpu"] = "8"

    assert [e.action for e in changed(both)] == [ev.UPDATE_NODE_ALLOCATABLE, ev.UPDATE_NODE_LABEL]


# -- through the scheduler, with the built-in plugins' registrations ----------------------


def default_scheduler() -> Scheduler:
    registry = default_registry(load_entry_points=False)
    config = resolve(parse_scheduler_profile_spec({"profiles": [{"schedulerName": "s"}]}), registry)
    return Scheduler(config, registry, cache=Cache())


async def fail_once(sched: Scheduler, name: str, **kw: Any) -> str:
    pod = make_pod(name, scheduler_name="s", **kw)
    sched.feed.on_pod(pod)
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    outcome = await sched.schedule_one(qpi)
    assert outcome.result == "unschedulable", outcome.message
    assert sched.queue.where(pod.uid) == "unschedulable"
    return pod.uid


async def test_status_churn_leaves_the_pool_alone_and_relevant_changes_move_the_right_pods() -> (
    None
):
    sched = default_scheduler()
    taint = {"key": "dedicated", "effect": "NoSchedule"}
    tolerate = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    sched.feed.on_node(ready_node("n1", cpu="1", taints=[taint]))
    tainted = await fail_once(sched, "tainted")  # only TaintToleration rejects it
    big = await fail_once(sched, "big", requests={"cpu": "2"}, tolerations=tolerate)
    picky = await fail_once(sched, "picky", node_selector={"zone": "a"}, tolerations=tolerate)
    plugins = {uid: sched.queue.info(uid).unschedulable_plugins for uid in (tainted, big, picky)}  # type: ignore[union-attr]
    assert plugins == {
        tainted: {"TaintToleration"},
        big: {"NodeResourcesFit"},
        picky: {"NodeAffinity"},
    }

    heartbeat = ready_node("n1", cpu="1", taints=[taint])
    heartbeat["status"]["conditions"][0]["lastHeartbeatTime"] = "2024-01-01T00:01:00Z"
    for _ in range(3):
        sched.feed.on_node(heartbeat)
    pool = {uid for uid in (tainted, big, picky) if sched.queue.where(uid) == "unschedulable"}
    assert pool == {tainted, big, picky}

    labelled = ready_node("n1", cpu="1", taints=[taint], labels={"zone": "a"})
    sched.feed.on_node(labelled)  # NodeAffinity registered label changes; the others did not
    assert sched.queue.where(picky) in ("active", "backoff")
    assert sched.queue.where(big) == "unschedulable"
    assert sched.queue.where(tainted) == "unschedulable"

    grown = ready_node("n1", cpu="4", taints=[taint], labels={"zone": "a"})
    sched.feed.on_node(grown)  # NodeResourcesFit registered allocatable changes
    assert sched.queue.where(big) in ("active", "backoff")
    assert sched.queue.where(tainted) == "unschedulable"

    sched.feed.on_node(ready_node("n1", cpu="4", labels={"zone": "a"}))  # taint removed
    assert sched.queue.where(tainted) in ("active", "backoff")


async def test_a_new_node_moves_every_node_reader() -> None:
    sched = default_scheduler()
    sched.feed.on_node(ready_node("n1", cpu="1"))
    big = await fail_once(sched, "big", requests={"cpu": "2"})
    sched.feed.on_node(ready_node("n2", cpu="4"))
    assert sched.queue.where(big) in ("active", "backoff")


def test_built_in_filters_register_events_and_plugins_without_them_get_all() -> None:
    sched = default_scheduler()
    fwk = sched.profiles["s"]
    events = fwk.plugin_events
    # v1.37.2's: a bound pod's scale-down (InPlacePodVerticalScaling, GA) and the pod's
    # own (upstream's AssignedPod and TargetPod, both Pod here), and its new tolerations;
    # DeviceClasses for the extended resources they back (DRAExtendedResource, GA).
    assert events["NodeResourcesFit"] == (
        ev.ClusterEvent(ev.POD, ev.DELETE),
        ev.ClusterEvent(ev.NODE, ev.ADD | ev.UPDATE_NODE_ALLOCATABLE),
        ev.ClusterEvent("DeviceClass", ev.ADD | ev.UPDATE),
        ev.ClusterEvent(ev.POD, ev.UPDATE_POD_SCALE_DOWN),
        ev.ClusterEvent(ev.POD, ev.UPDATE_POD_SCALE_DOWN),
    )
    assert events["TaintToleration"] == (
        ev.ClusterEvent(ev.NODE, ev.ADD | ev.UPDATE_NODE_TAINT),
        ev.ClusterEvent(ev.POD, ev.UPDATE_POD_TOLERATION),
    )
    # Each with its hint.
    assert all(r.hint is not None for r in fwk.plugin_hints["TaintToleration"])
    # Score/bind-only plugins reject no pod: upstream's shouldHaveEnqueueExtensions leaves
    # them out (registered for everything, they would make every event one of interest).
    assert "DefaultBinder" not in events and "ImageLocality" not in events
    assert sched.queue.plugin_events["NodeAffinity"] == events["NodeAffinity"]


class _SilentFilter:
    """A filter that names no event (an out-of-tree plugin written before hints)."""

    name = "SilentFilter"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: Any, pod: Any, node: Any) -> None:
        return None


class _BrokenEvents(_SilentFilter):
    name = "BrokenEvents"

    def events_to_register(self) -> list[str]:
        return ["NodeAdd"]  # a label, not a ClusterEvent


def test_a_plugin_returning_garbage_events_fails_its_profile_clearly() -> None:
    from multisched.config.resolved import ResolvedProfile

    prof = ResolvedProfile("x", None, {"filter": ("BrokenEvents",)}, {})
    with pytest.raises(FrameworkError, match="BrokenEvents: events_to_register returned"):
        Framework(prof, Registry([_BrokenEvents]), Cache().snapshot)


async def test_a_bound_pod_moves_only_the_pods_whose_required_affinity_it_matches() -> None:
    sched = default_scheduler()
    sched.feed.on_node(ready_node("n1", cpu="8"))
    near_db = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    waiting = await fail_once(sched, "web", affinity=near_db)
    big = await fail_once(sched, "big", requests={"cpu": "16"})
    assert sched.queue.info(waiting).unschedulable_plugins == {"InterPodAffinity"}  # type: ignore[union-attr]

    sched.feed.on_pod(make_pod("cache", labels={"app": "cache"}, node_name="n1"))
    assert sched.queue.where(waiting) == "unschedulable"
    sched.feed.on_pod(make_pod("db", labels={"app": "db"}, node_name="n1"))
    assert sched.queue.where(waiting) in ("active", "backoff")
    assert sched.queue.where(big) == "unschedulable"  # no affinity term: not a candidate


NEAR_DB = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "db"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


async def test_a_bound_pods_label_change_moves_the_pods_its_new_labels_help() -> None:
    """updateAssignedPodInCache: a bound pod's update is AssignedPod/UpdatePodLabel (or
    another specific change, else a general Update), asked of the pooled pods' hints."""
    sched = default_scheduler()
    sched.feed.on_node(ready_node("n1", cpu="8"))
    waiting = await fail_once(sched, "web", affinity=NEAR_DB)
    bound = make_pod("x", labels={"app": "cache"}, node_name="n1")
    sched.feed.on_pod(bound)
    assert sched.queue.where(waiting) == "unschedulable"
    raw = copy.deepcopy(bound.raw)
    raw["metadata"]["labels"] = {"app": "db"}
    sched.feed.on_pod(PodInfo.parse(raw))
    assert sched.queue.where(waiting) in ("active", "backoff")


async def test_a_pod_bound_while_another_is_in_flight_is_an_event_for_it() -> None:
    """addAssignedPodToCache raises AssignedPodAdd with an empty pool too: the pod in its
    attempt sees it when the attempt fails, and backs off rather than wait in the pool."""
    sched = default_scheduler()
    sched.feed.on_node(ready_node("n1", cpu="8"))
    sched.feed.on_pod(make_pod("web", scheduler_name="s", affinity=NEAR_DB))
    qpi = sched.queue.pop_nowait()
    assert qpi is not None
    assert not sched.queue.has_unschedulable()
    sched.feed.on_pod(make_pod("db", labels={"app": "db"}, node_name="n1"))
    sched.queue.add_unschedulable(qpi, {"InterPodAffinity"})
    assert sched.queue.where(qpi.pod.uid) == "backoff"


# -- a pending pod's own update (v1.37 PodSchedulingPropertiesChange, as the target) ------


@pytest.mark.parametrize(
    ("before", "after", "labels"),
    [
        ({"labels": {"a": "1"}}, {"labels": {"a": "2"}}, ["TargetPodUpdatePodLabel"]),
        ({"requests": {"cpu": "2"}}, {"requests": {"cpu": "1"}}, ["TargetPodUpdatePodScaleDown"]),
        ({"requests": {"cpu": "1"}}, {"requests": {"cpu": "2"}}, ["TargetPodUpdatePodScaleUp"]),
        (
            {},
            {"tolerations": [{"key": "k", "operator": "Exists"}]},
            ["TargetPodUpdatePodToleration"],
        ),
        (
            {"requests": {"cpu": "1"}, "labels": {"a": "1"}},
            {"requests": {"memory": "1Gi"}, "labels": {"a": "2"}},
            ["TargetPodUpdatePodLabel", "TargetPodUpdatePodScaleDown", "TargetPodUpdatePodScaleUp"],
        ),
        ({"priority": 1}, {"priority": 2}, ["TargetPodUpdate"]),
    ],
)
def test_a_pending_pods_update_is_one_event_per_changed_property(
    before: dict[str, Any], after: dict[str, Any], labels: list[str]
) -> None:
    events = pod_scheduling_properties_change(make_pod("p", **before), make_pod("p", **after))
    assert [e.label for e in events] == labels
    assert all(e.resource == ev.TARGET_POD for e in events)


async def test_a_node_update_hands_the_hints_the_node_before_and_after() -> None:
    sched = default_scheduler()
    sched.feed.on_node(ready_node("n1", labels={"zone": "a"}))
    seen: list[tuple[str, Any, Any]] = []
    real = sched.queue.move_all_to_active_or_backoff

    def spy(event: Any, only: Any = None, old: Any = None, new: Any = None) -> int:
        seen.append((event.label, old, new))
        return real(event, only, old, new)

    sched.queue.move_all_to_active_or_backoff = spy  # type: ignore[method-assign]
    sched.feed.on_node(ready_node("n1", labels={"zone": "b"}))
    ((label, old, new),) = seen
    assert label == "NodeUpdateNodeLabel"
    assert (old.labels["zone"], new.labels["zone"]) == ("a", "b")
    assert new is sched.cache.snapshot.get("n1") and old is not new


async def test_a_nominated_pending_pod_leaving_its_node_moves_pods_of_lower_or_equal_priority() -> (
    None
):
    """deletePodFromSchedulingQueue and hasNominatedNodeNameChanged: pods of lower or equal
    priority counted the nominated pod on its node, so its deletion, or a nomination that
    changed, is an AssignedPodDelete for them; pods of higher priority did not count it."""
    sched = default_scheduler()
    sched.feed.on_node(ready_node("n1", cpu="8"))
    low = await fail_once(sched, "low", requests={"cpu": "16"}, priority=1)
    high = await fail_once(sched, "high", requests={"cpu": "16"}, priority=20)
    nominated = make_pod("nom", scheduler_name="s", priority=10, status={"nominatedNodeName": "n1"})
    sched.feed.on_pod(nominated)
    raw = copy.deepcopy(nominated.raw)
    raw["status"]["nominatedNodeName"] = "n1"
    sched.feed.on_pod_status(PodInfo.parse(raw))  # the same nomination: no event
    assert (sched.queue.where(low), sched.queue.where(high)) == ("unschedulable",) * 2
    raw["status"]["nominatedNodeName"] = ""
    sched.feed.on_pod_status(PodInfo.parse(raw))
    assert sched.queue.where(low) in ("active", "backoff")
    assert sched.queue.where(high) == "unschedulable"


async def test_a_nominated_pending_pod_deleted_moves_pods_of_lower_or_equal_priority() -> None:
    sched = default_scheduler()
    sched.feed.on_node(ready_node("n1", cpu="8"))
    low = await fail_once(sched, "low", requests={"cpu": "16"}, priority=1)
    nominated = make_pod("nom", scheduler_name="s", priority=10, status={"nominatedNodeName": "n1"})
    sched.feed.on_pod(nominated)
    sched.feed.on_pod_deleted(nominated.uid)
    assert sched.queue.where(low) in ("active", "backoff")


def test_a_rejecting_plugin_that_names_no_event_is_registered_for_all() -> None:
    """Upstream's defaultEnqueueExtension: every event may help the pods it rejected."""
    from multisched.config.resolved import ResolvedProfile

    prof = ResolvedProfile("x", None, {"filter": ("SilentFilter",)}, {})
    fwk = Framework(prof, Registry([_SilentFilter]), Cache().snapshot)
    assert fwk.plugin_events["SilentFilter"] == (ev.WILDCARD_EVENT,)
