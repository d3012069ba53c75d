"""Gangs and quotas on a real API server, with scheduler-plugins' own CRDs (v0.28.9) and
its plugins' semantics (v0.34.7):
Coscheduling binds a PodGroup all together or not at all, and CapacityScheduling holds an
ElasticQuota's max and reclaims only what a namespace borrowed. Each scenario has its own
API server (the fault suite's), so no other test's profiles or pods are in the way."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from gangs_support import gang_profile_spec
from harness import MERGE_PATCH
from test_e2e_operating import https_get

from apiserver import TOKEN
from conftest import FaultCluster, Operator

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_CRDS = ROOT / "crds" / "scheduler-plugins"
SCHED = "gang-scheduler"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def install(faults: FaultCluster, profile_spec: dict[str, Any]) -> None:
    kube = faults.kube
    kube.run("apply", "-f", str(PLUGIN_CRDS))
    kube.wait_established(*(f"{crd}.scheduling.x-k8s.io" for crd in ("podgroups", "elasticquotas")))
    kube.apply(
        {
            "apiVersion": "multisched.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": "batch"},
            "spec": profile_spec,
        }
    )


def gang_profile(permit_seconds: int = 30, reject_percentage: int | None = None) -> dict[str, Any]:
    return gang_profile_spec(SCHED, permit_seconds, reject_percentage)


def quota_profile() -> dict[str, Any]:
    """scheduler-plugins' documented CapacityScheduling configuration."""
    return {
        "profiles": [
            {
                "schedulerName": SCHED,
                "plugins": {
                    "preFilter": {"enabled": [{"name": "CapacityScheduling"}]},
                    "postFilter": {
                        "enabled": [{"name": "CapacityScheduling"}],
                        "disabled": [{"name": "*"}],
                    },
                    "reserve": {"enabled": [{"name": "CapacityScheduling"}]},
                },
            }
        ]
    }


def pod_group(
    name: str, min_member: int, namespace: str = "default", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, **spec},
    }


def pod(
    name: str, cpu: str = "1", group: str = "", namespace: str = "default", **spec: Any
) -> dict[str, Any]:
    labels = {GROUP_LABEL: group} if group else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "schedulerName": SCHED,
            "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}
            ],
            **spec,
        },
    }


def nodes_of(faults: FaultCluster, names: list[str], namespace: str = "default") -> dict[str, str]:
    pods = faults.api.call(faults.api.list_all(f"/api/v1/namespaces/{namespace}/pods"))[0]
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName") or ""
        for p in pods
        if p["metadata"]["name"] in names
    }


def start_running(faults: FaultCluster, namespace: str, names: list[str]) -> None:
    """The kubelet's part: the pods run."""
    for n in names:
        faults.api.call(
            faults.api.request(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/pods/{n}/status",
                {"status": {"phase": "Running"}},
                content_type=MERGE_PATCH,
            )
        )


def bound(faults: FaultCluster, names: list[str], namespace: str = "default") -> list[str]:
    return sorted(n for n, node in nodes_of(faults, names, namespace).items() if node)


def events(faults: FaultCluster, name: str, namespace: str = "default") -> list[dict[str, Any]]:
    return faults.kube.events_for("Pod", name, namespace)


def test_a_gang_that_does_not_fit_binds_nobody_until_a_node_comes(faults: FaultCluster) -> None:
    install(faults, gang_profile())
    faults.api.create_nodes([f"g-{i}" for i in range(7)], cpu="1")
    op = faults.start_operator()
    faults.kube.apply(pod_group("train", 8))
    names = [f"train-{i}" for i in range(8)]
    faults.api.create_pods(pod(n, group="train") for n in names)
    # Every member is tried, 7 fit, one does not: the 7 are released, not bound.
    faults.kube.wait_for(
        "the gang's failed attempts",
        lambda: all(
            any(e["reason"] == "FailedScheduling" for e in events(faults, n)) for n in names
        ),
        60,
    )
    time.sleep(2)
    assert bound(faults, names) == []
    assert faults.bound_count() == 0
    group = faults.kube.get("podgroup", "train")
    assert group["status"]["phase"] in ("Pending", "Scheduling")

    added = time.monotonic()
    faults.api.create_nodes(["g-7"], cpu="1")
    faults.wait_bindings(8, timeout=60)
    took = time.monotonic() - added
    placed = nodes_of(faults, names)
    assert sorted(placed.values()) == sorted(f"g-{i}" for i in range(8))
    print(f"\n[gang 8 on 8 nodes] all bound {took:.1f}s after the 8th node came")
    assert op.alive
    group = faults.kube.wait_for(
        "the PodGroup status",
        lambda: (
            (g := faults.kube.get("podgroup", "train"))["status"].get("phase") == "Scheduling" and g
        ),
        30,
    )
    assert group["status"].get("scheduleStartTime")
    # The test plays the kubelet: the pods run, the group runs.
    start_running(faults, "default", names)
    faults.kube.wait_for(
        "phase Running",
        lambda: (
            faults.kube.get("podgroup", "train")["status"].get("running") == 8
            and faults.kube.get("podgroup", "train")["status"]["phase"] == "Running"
        ),
        30,
    )


def test_a_gang_past_its_timeout_frees_its_room_for_the_next_pod(faults: FaultCluster) -> None:
    # A third of the gang may be missing without PostFilter rejecting the rest: the two that
    # fit wait at Permit for the third, which has no room. (A gated third member would not
    # do: gated pods are left out of the quorum, so PreFilter would turn all three away.)
    install(faults, gang_profile(permit_seconds=300, reject_percentage=50))
    faults.api.create_nodes(["t-0", "t-1"], cpu="1")
    # Ready before the pods come: the two must be waiting at Permit before "after" is created
    # (start-up takes seconds on a loaded machine).
    op = faults.start_operator()
    faults.kube.wait_for("the operator's /readyz", op.ready, 60)
    # The group's own timeout (3 s) wins over the plugin's 300 s.
    faults.kube.apply(pod_group("short", 3, scheduleTimeoutSeconds=3))
    gang = [f"short-{i}" for i in range(3)]
    faults.api.create_pods(pod(n, group="short") for n in gang)
    time.sleep(1)
    assert faults.bound_count() == 0  # two wait at Permit, holding both nodes
    faults.api.create_pods([pod("after")])
    time.sleep(1)
    assert bound(faults, ["after"]) == []  # no room while the gang holds it
    # After the timeout the two are rejected, their room goes back, and the pod takes it.
    faults.wait_bindings(1, keys={"default/after"}, timeout=30)
    assert bound(faults, gang) == []
    rejected = [
        e["message"] for n in gang for e in events(faults, n) if e["reason"] == "FailedScheduling"
    ]
    assert any("rejected due to timeout after waiting" in m for m in rejected), rejected


def test_two_gangs_competing_for_the_same_room_both_finish(faults: FaultCluster) -> None:
    install(faults, gang_profile())
    faults.api.create_nodes([f"c-{i}" for i in range(6)], cpu="1")
    faults.start_operator()
    faults.kube.apply(pod_group("first", 4))
    faults.kube.apply(pod_group("second", 4))
    first, second = [f"first-{i}" for i in range(4)], [f"second-{i}" for i in range(4)]
    # Interleaved, so that a scheduler taking pods in creation order half-assumes both.
    faults.api.create_pods(
        pod(n, group=g) for pair in zip(first, second, strict=True)
        for n, g in zip(pair, ("first", "second"), strict=True)
    )  # fmt: skip
    faults.wait_bindings(4, timeout=60)
    time.sleep(2)
    done = {"first": bound(faults, first), "second": bound(faults, second)}
    winner = "first" if done["first"] else "second"
    loser = "second" if winner == "first" else "first"
    assert len(done[winner]) == 4 and done[loser] == [], done
    # The winner's job ends; the other gang gets the room, all of it at once.
    faults.api.force_delete_pods(f"default/{n}" for n in done[winner])
    losers = second if loser == "second" else first
    faults.wait_bindings(8, timeout=60)
    assert len(bound(faults, losers)) == 4


def test_a_gang_waiting_at_permit_survives_a_kill_9_unbound(faults: FaultCluster) -> None:
    # A quarter of the gang may be missing without PostFilter rejecting the rest: three
    # members wait at Permit for the fourth, which has no node until one comes.
    install(faults, gang_profile(permit_seconds=120, reject_percentage=25))
    faults.api.create_nodes([f"k-{i}" for i in range(3)], cpu="1")
    op = faults.start_operator()
    faults.kube.apply(pod_group("job", 4))
    names = [f"job-{i}" for i in range(4)]
    faults.api.create_pods(pod(n, group="job") for n in names)
    faults.kube.wait_for("three members waiting at Permit", lambda: in_flight(op) == 3, 30)
    # What the running scheduler says of one of them (kubectl multisched queue POD).
    held = (in_flight_pods(op) or ["?"])[0]
    code, body = https_get(f"https://127.0.0.1:{op.secure_port}/debug/queue?pod={held}", TOKEN)
    assert code == 200
    (entry,) = json.loads(body)["pods"]
    assert entry["gang"].startswith("gang default/job: 3 of 4 assumed, waiting at Permit, ")
    assert entry["permit"]["waitingFor"] == ["Coscheduling"]
    assert 0 < entry["permit"]["secondsLeft"] <= 120
    op.kill9()
    faults.start_operator()
    time.sleep(3)
    assert bound(faults, names) == []  # what waited at Permit was only ever in memory
    faults.api.create_nodes(["k-3"], cpu="1")
    faults.wait_bindings(4, timeout=60)
    assert len(bound(faults, names)) == 4


def in_flight(op: Operator) -> int:
    """How many pods the running scheduler holds between its queue and a binding (at
    Permit here), as its secure port reports them; -1 before it answers."""
    pods = in_flight_pods(op)
    return -1 if pods is None else len(pods)


def in_flight_pods(op: Operator) -> list[str] | None:
    try:
        status, body = https_get(f"https://127.0.0.1:{op.secure_port}/debug/queue", TOKEN)
    except OSError:  # not listening yet
        return None
    if status != 200:
        return None
    return [p["pod"] for p in json.loads(body)["pods"] if p["queue"] == "in-flight"]


def quota(name: str, namespace: str, min_cpu: str, max_cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"min": {"cpu": min_cpu}, "max": {"cpu": max_cpu}},
    }


def namespace(faults: FaultCluster, name: str) -> None:
    faults.kube.run("create", "namespace", name, check=False)
    faults.kube.run("create", "serviceaccount", "default", "-n", name, check=False)


def test_a_quota_max_holds_under_a_burst_of_500_pods(faults: FaultCluster) -> None:
    install(faults, quota_profile())
    namespace(faults, "burst")
    faults.kube.apply(quota("burst", "burst", "5", "10"))
    # Another team's min, unused: what "burst" may borrow beyond its own min, up to its max.
    namespace(faults, "idle")
    faults.kube.apply(quota("idle", "idle", "20", "20"))
    faults.api.create_nodes([f"q-{i}" for i in range(5)], cpu="40")
    faults.start_operator()
    names = [f"b-{i:03d}" for i in range(500)]
    faults.api.create_pods(pod(n, cpu="100m", namespace="burst") for n in names)
    faults.wait_bindings(100, timeout=120)
    time.sleep(3)
    placed = bound(faults, names, "burst")
    assert len(placed) == 100  # 10 cpu of 100m pods, not one more
    pending = next(n for n in names if n not in placed)
    messages = [e["message"] for e in events(faults, pending, "burst")]
    refusal = (
        f"Pod burst/{pending} is rejected in PreFilter because ElasticQuota burst is more than Max"
    )
    assert any(refusal in m for m in messages), messages
    # status.used counts Running pods: play the kubelet for ten of them.
    start_running(faults, "burst", placed[:10])
    faults.kube.wait_for(
        "status.used",
        lambda: (
            faults.kube.get("elasticquota", "burst", "-n", "burst")
            .get("status", {})
            .get("used", {})
            .get("cpu")
            == "1"
        ),
        30,
    )


def test_reclaiming_borrowed_room_preempts_only_borrowed_pods(faults: FaultCluster) -> None:
    install(faults, quota_profile())
    for ns in ("team-a", "team-b"):
        namespace(faults, ns)
        faults.kube.apply(quota(ns, ns, "2", "4"))
    faults.api.create_nodes(["r-0", "r-1"], cpu="2")
    faults.start_operator()
    a = [f"a-{i}" for i in range(4)]
    faults.api.create_pods(pod(n, namespace="team-a") for n in a)
    faults.wait_bindings(4, timeout=60)  # team-a borrows team-b's unused min
    b = ["b-0", "b-1"]
    faults.api.create_pods(pod(n, namespace="team-b") for n in b)

    # team-b takes back its min: two of team-a's pods are preempted, never team-b's.
    def victims() -> list[str]:
        pods = faults.api.call(faults.api.list_all("/api/v1/namespaces/team-a/pods"))[0]
        return [p["metadata"]["name"] for p in pods if p["metadata"].get("deletionTimestamp")]

    doomed = faults.kube.wait_for("two victims", lambda: len(victims()) == 2 and victims(), 60)
    faults.api.force_delete_pods(f"team-a/{n}" for n in doomed)  # the kubelet's part
    faults.wait_bindings(6, timeout=60)
    assert len(bound(faults, b, "team-b")) == 2
    assert len(bound(faults, [n for n in a if n not in doomed], "team-a")) == 2
    # Each victim was told why (a second preemptor may pick a victim still terminating
    # again, as upstream may); team-b's pods never were.
    told = {n for n in a if any(e["reason"] == "Preempted" for e in events(faults, n, "team-a"))}
    assert told == set(doomed)
    assert not [e for n in b for e in events(faults, n, "team-b") if e["reason"] == "Preempted"]
