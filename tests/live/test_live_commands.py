"""``explain``, ``snapshot`` and ``simulate --from-cluster/--diff`` against a kmock cluster."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml
from kmock import ResourceInfo
from kmock._internal.rendering import Response

from kmock_support import write_kubeconfig
from live_support import LiveCluster, run_cli
from multisched.validation.yamlsafe import json_documents

SCHED = "my-scheduler"

#: TaintToleration's reason for the control-plane node below, as v1.28 words it.
CONTROL_PLANE_TAINT = "node(s) had untolerated taint(s)"


def node(name: str, cpu: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            "managedFields": [{"manager": "kubelet"}],
        },
        "spec": spec,
        "status": {
            "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "x"}],
        },
    }


def pod(name: str, cpu: str, scheduler: str = SCHED, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "schedulerName": scheduler,
            "priority": 0,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": cpu}},
                    "terminationMessagePath": "/dev/termination-log",
                }
            ],
            **spec,
        },
        "status": {"phase": "Pending"},
    }


def profile(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": name},
        "spec": {"profiles": [{"schedulerName": SCHED, **fields}]},
    }


GOLD_ONLY = {
    "pluginConfig": [
        {
            "name": "NodeAffinity",
            "args": {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "tier", "operator": "In", "values": ["gold"]}
                                ]
                            }
                        ]
                    }
                }
            },
        }
    ]
}


async def populate(live: LiveCluster) -> None:
    """worker-1 (2 cpu), worker-2 (4 cpu, gold, 3 cpu in use), a tainted control plane."""
    await live.create("nodes", node("worker-1", "2"))
    await live.create("nodes", node("worker-2", "4", {"tier": "gold"}))
    await live.create(
        "nodes",
        node(
            "cp",
            "8",
            taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
        ),
    )
    await live.create(
        "priorityclasses",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "important"},
            "value": 1000,
        },
    )
    hog = pod("hog", "3", priority=1000, priorityClassName="important", nodeName="worker-2")
    hog["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    await live.create("pods", hog)
    await live.create("pods", pod("big", "2500m"))
    await live.create("pods", pod("small", "500m"))
    await live.create("pods", pod("theirs", "100m", scheduler="default-scheduler"))
    done = pod("finished", "8", nodeName="worker-1")
    done["status"] = {"phase": "Succeeded"}
    await live.create("pods", done)
    await live.create("schedulerprofiles", profile(SCHED))


async def test_explain_pending_pod_node_by_node(live: LiveCluster) -> None:
    await populate(live)
    before = len(live.writes())
    code, out, err = await live.run("explain", "big", "-o", "json")
    assert code == 0, err
    data = json.loads(out)
    (rec,) = data["pods"]
    assert rec["status"] == "Unschedulable"
    assert rec["message"] == (
        f"0/3 nodes are available: 1 {CONTROL_PLANE_TAINT}, 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )  # worker-1's 2 cpu can never hold 2.5: unresolvable there since v1.34, as on the
    # tainted node; worker-2's hog outranks "big"
    assert rec["explain"]["filter"] == {
        "cp": f"{CONTROL_PLANE_TAINT} (TaintToleration)",
        "worker-1": "Insufficient cpu (NodeResourcesFit)",
        "worker-2": "Insufficient cpu (NodeResourcesFit)",
    }
    assert data["profile"] == f"SchedulerProfile/{SCHED}"
    assert len(live.writes()) == before  # read-only


async def test_explain_table_names_profile_and_verdicts(live: LiveCluster) -> None:
    await populate(live)
    code, out, _ = await live.run("explain", "default/big")
    assert code == 0
    lines = out.splitlines()
    assert (
        lines[0] == f"pod default/big: schedulerName {SCHED}, profile from SchedulerProfile {SCHED}"
    )
    assert "    worker-1: Insufficient cpu (NodeResourcesFit)" in lines
    assert any(line.startswith("default/big") and "Unschedulable" in line for line in lines)


async def test_explain_schedulable_pod_scores(live: LiveCluster) -> None:
    await populate(live)
    code, out, err = await live.run("explain", "small", "-o", "yaml", "--seed", "1")
    assert code == 0, err
    (rec,) = yaml.safe_load(out)["pods"]
    assert rec["status"] == "Scheduled"
    scores = rec["explain"]["score"]
    assert set(scores) == {"worker-1", "worker-2"}
    for detail in scores.values():
        plugins = detail["plugins"]
        assert detail["total"] == sum(p["weighted"] for p in plugins.values())
        for p in plugins.values():
            assert p["weighted"] == p["raw"] * p["weight"]
    best = max(s["total"] for s in scores.values())
    assert scores[rec["node"]]["total"] == best
    # worker-1 is emptier: LeastAllocated ranks it higher.
    fit = {n: s["plugins"]["NodeResourcesFit"]["raw"] for n, s in scores.items()}
    assert fit["worker-1"] > fit["worker-2"]


async def test_explain_bound_pod_says_where_it_would_go(live: LiveCluster) -> None:
    await populate(live)
    code, out, _ = await live.run("explain", "hog", "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert data["currentNode"] == "worker-2"
    (rec,) = data["pods"]
    # Its own 3 cpu are not counted: worker-2 (4) fits it, worker-1 (2) does not.
    assert rec["status"] == "Scheduled" and rec["node"] == "worker-2"
    assert rec["explain"]["filter"]["worker-1"] == "Insufficient cpu (NodeResourcesFit)"


async def test_explain_with_proposed_profile(live: LiveCluster, tmp_path: Path) -> None:
    await populate(live)
    proposed = tmp_path / "gold.yaml"
    proposed.write_text(yaml.safe_dump(profile(SCHED, **GOLD_ONLY)))
    code, out, _ = await live.run("explain", "small", "--profile", str(proposed), "-o", "json")
    assert code == 0
    (rec,) = json.loads(out)["pods"]
    assert rec["node"] == "worker-2"
    assert rec["explain"]["filter"]["worker-1"] == (
        "node(s) didn't match scheduler-enforced node affinity (NodeAffinity)"
    )


async def test_explain_unknown_pod_is_one_line_exit_2(live: LiveCluster) -> None:
    await populate(live)
    code, out, err = await live.run("explain", "nope", "-n", "kube-system")
    assert (code, out) == (2, "")
    assert err == "error: pod kube-system/nope not found\n"


async def test_forbidden_names_what_is_missing(live: LiveCluster) -> None:
    await populate(live)
    message = (
        'nodes is forbidden: User "system:serviceaccount:default:viewer" cannot list '
        'resource "nodes" in API group "" at the cluster scope'
    )
    live.kmock[lambda r: r.resource is not None and r.resource.plural == "nodes"] << Response(
        status=403,
        payload={
            "kind": "Status",
            "status": "Failure",
            "reason": "Forbidden",
            "code": 403,
            "message": message,
        },
    )
    for argv in (("explain", "big"), ("snapshot",), ("simulate", "--from-cluster")):
        code, out, err = await live.run(*argv)
        assert (code, out) == (2, "")
        assert err == (
            'error: cannot list nodes: forbidden: User "system:serviceaccount:default:viewer" '
            'cannot list resource "nodes" in API group "" at the cluster scope\n'
        )


def test_unreachable_api_server(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = write_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{port}")
    code, out, err = run_cli("snapshot", "--kubeconfig", str(kubeconfig))
    assert (code, out) == (2, "")
    assert err.startswith(
        f"error: cannot list nodes: cannot reach the API server at http://127.0.0.1:{port}"
    )
    assert err.count("\n") == 1


def test_no_kubeconfig(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    code, _, err = run_cli("explain", "x", "--kubeconfig", str(missing))
    assert code == 2
    assert (
        err == f"error: no kubeconfig: {missing} not found (set KUBECONFIG or pass --kubeconfig)\n"
    )


async def test_invalid_proposal_gets_validate_messages(live: LiveCluster, tmp_path: Path) -> None:
    await populate(live)
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(profile(SCHED, plugins={"filter": {"enabled": [{"name": "Nope"}]}}))
    )
    _, _, expected = await asyncio.to_thread(run_cli, "validate", str(bad))
    assert "Nope" in expected
    for argv in (("explain", "small"), ("simulate", "--from-cluster", "--diff")):
        code, out, err = await live.run(*argv, "--profile", str(bad))
        assert (code, out, err) == (2, "", expected)


async def test_snapshot_keeps_only_scheduling_fields_sorted(
    live: LiveCluster, tmp_path: Path
) -> None:
    await populate(live)
    target = tmp_path / "snap.yaml"
    code, out, _ = await live.run("snapshot", "-o", str(target))
    assert (code, out) == (0, "")
    docs = list(yaml.safe_load_all(target.read_text()))
    kinds = [d["kind"] for d in docs]
    assert kinds == [
        "Namespace",
        "PriorityClass",
        "Node",
        "Node",
        "Node",
        "Pod",
        "Pod",
        "Pod",
        "Pod",
        "SchedulerProfile",
    ]
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Node"] == [
        "cp",
        "worker-1",
        "worker-2",
    ]
    # Finished pods hold nothing; pods come in creation order (the scheduler's queue order).
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Pod"] == [
        "hog",
        "big",
        "small",
        "theirs",
    ]
    n = next(d for d in docs if d["kind"] == "Node")
    assert set(n["metadata"]) == {"name", "labels"}
    assert "conditions" not in n["status"]
    p = next(d for d in docs if d["kind"] == "Pod")
    assert "resourceVersion" not in p["metadata"]
    assert p["spec"]["containers"] == [
        {"name": "c", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": "3"}}}
    ]
    code, again, _ = await live.run("snapshot")
    assert again == target.read_text()  # stable: two snapshots diff cleanly


async def test_round_trip_snapshot_then_simulate_equals_from_cluster(live: LiveCluster) -> None:
    """``multisched snapshot | multisched simulate -`` gives what ``--from-cluster`` gives."""
    await populate(live)
    code, snap, _ = await live.run("snapshot")
    assert code == 0
    for extra in ((), ("--explain",)):
        code, offline, _ = await asyncio.to_thread(
            run_cli, "simulate", "-", "-o", "json", "--seed", "3", *extra, stdin=snap
        )
        assert code == 0
        code, online, _ = await live.run(
            "simulate", "--from-cluster", "-o", "json", "--seed", "3", *extra
        )
        assert code == 0
        assert online == offline
    pods = {p["pod"]: p for p in json.loads(online)["pods"]}
    assert pods["default/hog"]["status"] == "Bound"
    assert pods["default/big"]["status"] == "Unschedulable"
    assert pods["default/small"]["status"] == "Scheduled"
    assert pods["default/theirs"]["status"] == "Pending"
    # The same documents through the YAML parser (JSON is YAML): the fast path changes nothing.
    assert json_documents(snap) == list(yaml.safe_load_all(snap))


def test_json_documents_falls_back_to_yaml_for_anything_else() -> None:
    assert json_documents('---\n{"a": 1}\n---\n{"b": [2]}\n') == [{"a": 1}, {"b": [2]}]
    assert json_documents('---\n{"a": 1}\n---\nb: 2\n') is None  # a YAML document
    assert json_documents("a: 1\n") is None
    assert json_documents('---\n{"a": 1,}\n') is None  # YAML flow, not JSON


async def test_diff_exit_codes(live: LiveCluster, tmp_path: Path) -> None:
    await populate(live)
    same = tmp_path / "same.yaml"
    same.write_text(yaml.safe_dump(profile(SCHED)))
    code, out, err = await live.run("simulate", "--from-cluster", "--diff", "--profile", str(same))
    assert (code, err) == (0, "")
    assert out == "no pod changes placement under the proposed profile\n"

    gold = tmp_path / "gold.yaml"
    gold.write_text(yaml.safe_dump(profile(SCHED, **GOLD_ONLY)))
    # worker-1 is emptier, so "small" goes there today; gold-only moves it to worker-2.
    code, out, err = await live.run(
        "simulate", "--from-cluster", "--diff", "--profile", str(gold), "-o", "json"
    )
    assert (code, err) == (1, "")
    assert json.loads(out)["changes"] == [
        {"pod": "default/small", "before": "worker-1", "after": "worker-2", "message": None}
    ]


async def test_diff_reports_schedulable_to_unschedulable(live: LiveCluster, tmp_path: Path) -> None:
    await populate(live)
    # Only gold nodes, and the gold node is nearly full: "small" still fits, a 2-cpu pod not.
    await live.create("pods", pod("medium", "1500m"))
    gold = tmp_path / "gold.yaml"
    gold.write_text(yaml.safe_dump(profile(SCHED, **GOLD_ONLY)))
    code, out, _ = await live.run("simulate", "--from-cluster", "--diff", "--profile", str(gold))
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith("default/medium"))
    assert "worker-1 -> unschedulable: 0/3 nodes are available:" in line
    assert "node(s) didn't match scheduler-enforced node affinity" in line
    assert out.splitlines()[-1].endswith("pod(s) change placement")


async def test_explain_counts_nominated_pods_as_the_api_shows_them(live: LiveCluster) -> None:
    """A pending pod nominated to worker-1 (status.nominatedNodeName, set by an earlier
    preemption) holds its room there for pods of no higher priority, as upstream's
    RunFilterPluginsWithNominatedPods does; a higher-priority pod ignores it."""
    await populate(live)
    nominated = pod("nominee", "1500m", priority=500)
    nominated["status"] = {"phase": "Pending", "nominatedNodeName": "worker-1"}
    await live.create("pods", nominated)
    code, out, _ = await live.run("explain", "small", "-o", "json")
    assert code == 0
    (rec,) = json.loads(out)["pods"]
    # 2 cpu - 1.5 nominated leaves 0.5: "small" (0.5) still fits worker-1 exactly.
    assert rec["explain"]["filter"]["worker-1"] == "passed"
    await live.create("pods", pod("medium", "1"))
    code, out, _ = await live.run("explain", "medium", "-o", "json")
    (rec,) = json.loads(out)["pods"]
    assert rec["explain"]["filter"]["worker-1"] == "Insufficient cpu (NodeResourcesFit)"
    urgent = pod("urgent", "1", priority=900)
    await live.create("pods", urgent)
    code, out, _ = await live.run("explain", "urgent", "-o", "json")
    (rec,) = json.loads(out)["pods"]
    assert rec["explain"]["filter"]["worker-1"] == "passed"


async def test_explain_agrees_with_from_cluster(live: LiveCluster) -> None:
    """explain reads the objects as listed, --from-cluster their slimmed form: the verdicts
    must not differ (slimming keeps every field scheduling reads)."""
    await populate(live)
    code, out, _ = await live.run("simulate", "--from-cluster", "-o", "json", "--explain")
    assert code == 0
    simulated = {p["pod"]: p for p in json.loads(out)["pods"]}
    code, out, _ = await live.run("explain", "big", "-o", "json")
    assert code == 0
    (explained,) = json.loads(out)["pods"]
    assert explained["message"] == simulated["default/big"]["message"]
    assert explained["explain"] == simulated["default/big"]["explain"]


async def test_explain_defaults_to_the_context_namespace(live: LiveCluster) -> None:
    """Like kubectl, ``-n`` defaults to the kubeconfig context's namespace."""
    await populate(live)
    text = live.kubeconfig.read_text()
    live.kubeconfig.write_text(
        text.replace(
            "context: {cluster: kmock, user: kmock}",
            "context: {cluster: kmock, user: kmock, namespace: team}",
        )
    )
    code, _, err = await live.run("explain", "small")
    assert (code, err) == (2, "error: pod team/small not found\n")
    code, out, _ = await live.run("explain", "small", "-n", "default", "-o", "json")
    assert code == 0
    assert json.loads(out)["pods"][0]["pod"] == "default/small"


async def test_snapshot_and_explain_read_podgroups_and_elasticquotas(live: LiveCluster) -> None:
    """scheduler-plugins' kinds come along when served (a cluster without their CRDs reads
    as none: the other tests), and explain says what the gang waits for."""
    for plural, kind in (("podgroups", "PodGroup"), ("elasticquotas", "ElasticQuota")):
        live.kmock.resources[f"scheduling.x-k8s.io/v1alpha1/{plural}"] = ResourceInfo(
            kind=kind, singular=kind.lower(), namespaced=True, verbs={"get", "list", "create"}
        )
    await live.create("nodes", node("worker-1", "4"))
    await live.create(
        "podgroups",
        {"metadata": {"name": "train", "namespace": "default"}, "spec": {"minMember": 2}},
    )
    await live.create(
        "elasticquotas",
        {
            "metadata": {"name": "q", "namespace": "default"},
            "spec": {"min": {"cpu": "3"}, "max": {"cpu": "3"}},
        },
    )
    profile = {
        "metadata": {"name": "batch"},
        "spec": {
            "profiles": [
                {
                    "schedulerName": "batch",
                    "plugins": {
                        "multiPoint": {
                            "enabled": [{"name": "Coscheduling"}, {"name": "CapacityScheduling"}]
                        },
                        "queueSort": {
                            "enabled": [{"name": "Coscheduling"}],
                            "disabled": [{"name": "PrioritySort"}],
                        },
                    },
                }
            ]
        },
    }
    await live.create("schedulerprofiles", profile)
    for name in ("w0", "w1"):
        body = pod(name, "1")
        body["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "train"}
        body["spec"]["schedulerName"] = "batch"
        await live.create("pods", body)
    code, out, err = await live.run("snapshot")
    assert code == 0, err
    docs = list(yaml.safe_load_all(out))
    (group,) = [d for d in docs if d["kind"] == "PodGroup"]
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["spec"] == {"minMember": 2}
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "ElasticQuota"] == ["q"]
    code, out, err = await live.run("explain", "w0")
    assert code == 0, err
    assert "gang default/train: 1 of 2 assumed, waiting at Permit" in out
    assert "quota default/q: cpu 1 used (min 3, max 3)" in out


async def test_snapshot_keeps_the_selectors_default_spreading_reads(live: LiveCluster) -> None:
    """Services and pod controllers come along as their selectors (a ReplicaSet's template
    as its labels only), and the snapshot reads back into simulate as the cluster itself
    does: web-1 is spread away from its Service's pod on worker-1."""
    await live.create("nodes", node("worker-1", "4"))
    await live.create("nodes", node("worker-2", "4"))
    service = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    await live.create("services", service)
    labels = {"app": "web"}
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    replica_set = {
        "metadata": {"name": "web-5d9c", "namespace": "default", "managedFields": [{}]},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": template},
    }
    await live.create("replicasets", replica_set)
    await live.create("schedulerprofiles", profile(SCHED))
    web0 = pod("web-0", "1", nodeName="worker-1")
    web0["metadata"]["labels"] = labels
    await live.create("pods", web0)
    other = pod("other", "1", nodeName="worker-2")
    await live.create("pods", other)
    web1 = pod("web-1", "1")
    web1["metadata"]["labels"] = labels
    await live.create("pods", web1)
    code, snap, err = await live.run("snapshot")
    assert code == 0, err
    docs = list(yaml.safe_load_all(snap))
    (svc,) = [d for d in docs if d["kind"] == "Service"]
    assert (svc["apiVersion"], svc["spec"]) == ("v1", {"selector": {"app": "web"}})
    (rs,) = [d for d in docs if d["kind"] == "ReplicaSet"]
    assert rs["apiVersion"] == "apps/v1"
    assert rs["metadata"] == {"name": "web-5d9c", "namespace": "default"}
    assert rs["spec"] == {
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}},
    }
    code, offline, err = await asyncio.to_thread(
        run_cli, "simulate", "-", "-o", "json", "--seed", "1", stdin=snap
    )
    assert code == 0, err
    code, online, _ = await live.run("simulate", "--from-cluster", "-o", "json", "--seed", "1")
    assert online == offline
    pods = {p["pod"]: p for p in json.loads(online)["pods"]}
    assert pods["default/web-1"]["node"] == "worker-2"
