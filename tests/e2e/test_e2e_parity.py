"""Word for word and point for point with kube-scheduler (v1.28, default profile) on the same
API server: the same unschedulable pods, one copy each, must get the same FailedScheduling
events and PodScheduled conditions; the same pod must get the same weighted score from every
Score plugin on every node; a pod that must preempt must evict the same victims on the same node.

Skipped, saying so, without a ``kube-scheduler`` binary on PATH."""

from __future__ import annotations

import copy
import json
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_e2e_explain import multisched
from test_e2e_operator import pod, profile
from test_e2e_preemption import priority_class

from apiserver import free_port, signal_process
from conftest import Kube

PROFILE = "e2e-parity"
#: kube-scheduler's profile: its own name, so that it leaves other tests' pods alone.
UPSTREAM = "e2e-parity-upstream"


@pytest.fixture
def profile_fields() -> dict[str, Any]:
    """What both schedulers' profile holds besides its schedulerName: the defaults here; a
    test parametrizes it to compare another configuration."""
    return {}


@pytest.fixture
def kube_scheduler(
    kubeconfig: Path, tmp_path: Path, request: pytest.FixtureRequest, profile_fields: dict[str, Any]
) -> Iterator[Path]:
    """kube-scheduler serving ``UPSTREAM`` with ``profile_fields``, logging at -v=10 (its
    per-plugin scores); yields the log's path."""
    binary = shutil.which("kube-scheduler")
    if binary is None:
        pytest.skip("parity skipped: no kube-scheduler on PATH to compare with")
    config = tmp_path / "kube-scheduler.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"clientConnection: {{kubeconfig: '{kubeconfig}'}}\n"
        "leaderElection: {leaderElect: false}\n"
        f"profiles: [{json.dumps({'schedulerName': UPSTREAM, **profile_fields})}]\n"
    )
    log = tmp_path / "kube-scheduler.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                binary,
                f"--config={config}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                "-v=10",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield log
    finally:
        signal_process(proc, signal.SIGTERM)
        proc.wait(15)
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            print(f"--- kube-scheduler log ---\n{log.read_text(errors='replace')[-4000:]}")


def _container_with_port(port: int) -> dict[str, Any]:
    return {
        "name": "c",
        "image": "registry.k8s.io/pause:3.9",
        "ports": [{"containerPort": port, "hostPort": port}],
    }


def _hog_term() -> dict[str, Any]:
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"parity-role": "hog"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }


#: Each class's binding mode and provisioner; each has a claim of its name.
STORAGE_CLASSES = {
    "parity-immediate": ("Immediate", "example.com/parity-none"),
    "parity-local": ("WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
}


def _claiming(claim: str) -> dict[str, Any]:
    return {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}


def _storage(kube: Kube) -> None:
    """An Immediate class with no provisioner running, and a local (no-provisioner) class,
    each with a claim."""
    for name, (mode, provisioner) in STORAGE_CLASSES.items():
        kube.apply(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": name},
                "provisioner": provisioner,
                "volumeBindingMode": mode,
            }
        )
        kube.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": name,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        )


def asking(body: dict[str, Any], cpu: str | None = None, **spec: Any) -> dict[str, Any]:
    body["spec"].update(spec)
    if cpu is not None:
        body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return body


#: What each pair of pods asks for; no node can take any of them.
CASES: dict[str, dict[str, Any]] = {
    # beyond the small node's allocatable, short on the busy one, a taint, a cordon
    "big": {"cpu": "3"},
    "selector": {"nodeSelector": {"parity": "nowhere"}},
    "claim": _claiming("parity-missing"),
    # an Immediate claim no volume is bound to; a local-volume claim no volume can serve
    "unbound-claim": _claiming("parity-immediate"),
    "no-volume": _claiming("parity-local"),
    # the busy node's port is taken by the hog, the small node is short
    "ports": {"cpu": "3", "containers": [_container_with_port(8080)]},
    # only the busy node is selected, and the hog repels the pod there
    "anti-affinity": {
        "nodeSelector": {"kubernetes.io/hostname": "parity-busy"},
        "affinity": {"podAntiAffinity": _hog_term()},
    },
    "affinity": {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"parity-role": "nobody"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    },
    "spread": {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "parity-zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"name": "multischeduler-example"}},
            }
        ]
    },
}


def _failure(kube: Kube, name: str) -> tuple[str, str] | None:
    """The pod's first FailedScheduling message and its PodScheduled condition, once both
    are written."""
    events = [e for e in kube.events_for("Pod", name) if e["reason"] == "FailedScheduling"]
    conditions = kube.get("pod", name)["status"].get("conditions") or []
    scheduled = [c for c in conditions if c["type"] == "PodScheduled"]
    if not events or not scheduled:
        return None
    first = min(events, key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or "")
    cond = scheduled[0]
    return first["message"], f"{cond['status']} {cond.get('reason')}: {cond.get('message')}"


@pytest.fixture
def tidy(kube: Kube) -> Iterator[None]:
    """The test's pods, profile and storage go when it ends: the API server is shared, and a
    later test's operator would otherwise go on retrying these pods."""
    yield
    pods = [
        "parity-hog",
        *(f"{who}-{case}" for case in CASES for who in ("upstream", "multisched")),
    ]
    kube.run("delete", "pod", *pods, "--force", "--grace-period=0", "--wait=false", check=False)
    kube.run("delete", "schedulerprofile", PROFILE, "--ignore-not-found", "--wait=false")
    kube.run("delete", "pvc", *STORAGE_CLASSES, "--ignore-not-found", "--wait=false")
    kube.run("delete", "storageclass", *STORAGE_CLASSES, "--ignore-not-found", "--wait=false")


def test_failed_scheduling_reads_as_kube_schedulers(
    kube: Kube,
    start_operator: Any,
    kube_scheduler: Path,
    tidy: None,
    profile_fields: dict[str, Any],
) -> None:
    kube.add_node("parity-small", cpu="2")
    kube.add_node("parity-busy", cpu="4")
    kube.add_node("parity-tainted", cpu="8")
    kube.add_node("parity-cordoned", cpu="8")
    kube.run("taint", "node", "parity-tainted", "dedicated=parity:NoSchedule")
    kube.run("cordon", "parity-cordoned")
    kube.apply(priority_class("e2e-parity-high", 1000))
    hog = asking(pod("parity-hog"), "3", nodeName="parity-busy")
    hog["spec"]["priorityClassName"] = "e2e-parity-high"
    hog["spec"]["containers"] = [_container_with_port(8080)]
    hog["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
    hog["metadata"]["labels"]["parity-role"] = "hog"
    kube.apply(hog)

    _storage(kube)
    op = start_operator()
    kube.apply(profile(PROFILE, {"profiles": [{"schedulerName": PROFILE, **profile_fields}]}))
    for case, asks in CASES.items():
        spec = copy.deepcopy(asks)
        cpu = spec.pop("cpu", None)
        kube.apply(asking(pod(f"upstream-{case}", UPSTREAM), cpu, **spec))
        kube.apply(asking(pod(f"multisched-{case}", PROFILE), cpu, **spec))

    for case in CASES:
        theirs = kube.wait_for(
            f"kube-scheduler's verdict on {case}",
            lambda c=case: _failure(kube, f"upstream-{c}"),
            60,
        )
        ours = kube.wait_for(
            f"multisched's verdict on {case}", lambda c=case: _failure(kube, f"multisched-{c}"), 60
        )
        assert ours == theirs, f"{case}: {op.output()[-3000:]}"
    # The message the plugins' v1.28 statuses make for the first case, spelled out.
    big, _ = _failure(kube, "multisched-big") or ("", "")
    assert big == (
        "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: parity}, "
        "1 node(s) were unschedulable, 2 Insufficient cpu. preemption: 0/4 nodes are "
        "available: 2 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.."
    )


ZONE = "topology.kubernetes.io/zone"
#: The scoring cluster: name, cpu, labels.
SCORE_NODES = (
    ("score-a", "4", {ZONE: "z1", "disk": "ssd"}),
    ("score-b", "8", {ZONE: "z1"}),
    ("score-c", "4", {ZONE: "z2", "disk": "ssd"}),
    ("score-d", "2", {ZONE: "z2"}),
)
IMAGE = "registry.k8s.io/parity-big:1"
_SCORED = re.compile(
    r'"Plugin scored node for pod" pod="default/upstream-probe" plugin="(\w+)" '
    r'node="([^"]+)" score=(\d+)'
)


def _term(labels: dict[str, str], topology: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": topology}


def _running(name: str, node: str, app: str, cpu: str, **spec: Any) -> dict[str, Any]:
    body = asking(pod(name), cpu, nodeName=node, **spec)
    body["metadata"]["labels"]["app"] = app
    return body


def _probe(name: str, scheduler: str) -> dict[str, Any]:
    """Every default Score plugin has something to say about this pod."""
    body = asking(
        pod(name, scheduler),
        "500m",
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 20,
                        "preference": {
                            "matchExpressions": [
                                {"key": "disk", "operator": "In", "values": ["ssd"]}
                            ]
                        },
                    }
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "podAffinityTerm": _term({"app": "parity-web"}, ZONE)}
                ]
            },
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": _term({"app": "parity-db"}, "kubernetes.io/hostname"),
                    }
                ]
            },
        },
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "parity-web"}},
            }
        ],
    )
    body["metadata"]["labels"]["app"] = "parity-web"
    container = body["spec"]["containers"][0]
    container["image"] = IMAGE
    container["resources"]["requests"]["memory"] = "512Mi"
    return body


@pytest.fixture
def scoring_cluster(kube: Kube, profile_fields: dict[str, Any]) -> Iterator[None]:
    for name, cpu, labels in SCORE_NODES:
        kube.add_node(name, labels, cpu=cpu)
    kube.run("taint", "node", "score-b", "soft=yes:PreferNoSchedule")
    images = {"status": {"images": [{"names": [IMAGE], "sizeBytes": 600_000_000}]}}
    for name in ("score-a", "score-c"):
        kube.run(
            "patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(images)
        )
    # v1.28's cache counts an image's nodes when each node is added or updated, so score-a
    # would keep a count of 1 (fixed later, kubernetes#116938); multisched counts at scoring
    # time. An update of score-a makes both counts 2.
    kube.run("annotate", "node", "score-a", "parity/images-counted=yes")
    running = [
        _running("score-web-1", "score-a", "parity-web", "1"),
        _running("score-web-2", "score-c", "parity-web", "2"),
        _running("score-web-3", "score-d", "parity-web", "500m"),
        # required affinity of an existing pod: worth hardPodAffinityWeight to a web pod
        _running(
            "score-fan-1",
            "score-d",
            "parity-fan",
            "100m",
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        _term({"app": "parity-web"}, ZONE)
                    ]
                }
            },
        ),
        _running(
            "score-db-1",
            "score-b",
            "parity-db",
            "1",
            affinity={
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 30,
                            "podAffinityTerm": _term(
                                {"app": "parity-web"}, "kubernetes.io/hostname"
                            ),
                        }
                    ]
                }
            },
        ),
    ]
    for body in running:
        kube.apply(body)
    kube.apply(profile(PROFILE, {"profiles": [{"schedulerName": PROFILE, **profile_fields}]}))
    yield
    pods = [b["metadata"]["name"] for b in running] + ["upstream-probe", "multisched-probe"]
    kube.run("delete", "pod", *pods, "--force", "--grace-period=0", "--wait=false", check=False)
    kube.run("delete", "schedulerprofile", PROFILE, "--ignore-not-found", "--wait=false")


#: Profiles beside the default one, in KubeSchedulerConfiguration v1's shape: another scoring
#: strategy, weights set per extension point over multiPoint's, a plugin disabled, args.
PROFILES = {
    "default": {},
    "most-allocated": {
        "plugins": {
            "score": {
                "disabled": [{"name": "ImageLocality"}],
                "enabled": [
                    {"name": "NodeResourcesFit", "weight": 3},
                    {"name": "InterPodAffinity", "weight": 5},
                ],
            }
        },
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "MostAllocated",
                        "resources": [
                            {"name": "cpu", "weight": 2},
                            {"name": "memory", "weight": 1},
                        ],
                    }
                },
            },
            {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 3}},
        ],
    },
    "requested-to-capacity": {
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "RequestedToCapacityRatio",
                        "resources": [{"name": "cpu", "weight": 1}],
                        "requestedToCapacityRatio": {
                            "shape": [
                                {"utilization": 0, "score": 10},
                                {"utilization": 60, "score": 2},
                                {"utilization": 100, "score": 0},
                            ]
                        },
                    }
                },
            },
            {
                "name": "NodeResourcesBalancedAllocation",
                "args": {
                    "resources": [{"name": "cpu", "weight": 1}, {"name": "pods", "weight": 1}]
                },
            },
        ],
    },
}


@pytest.mark.parametrize("profile_fields", PROFILES.values(), ids=PROFILES.keys())
def test_scores_read_as_kube_schedulers(
    kube: Kube, kube_scheduler: Path, scoring_cluster: None
) -> None:
    """The weighted score of every default Score plugin on every node, as ``explain`` gives
    it, against kube-scheduler's own (-v=10) for the same pod on the same cluster state."""
    _compare_scores(kube, kube_scheduler, _probe)


def _compare_scores(kube: Kube, log: Path, probe: Callable[[str, str], dict[str, Any]]) -> None:
    """``probe(name, schedulerName)`` explained by multisched, then scheduled by
    kube-scheduler: each plugin's weighted score on each node must be the same."""
    kube.apply(probe("multisched-probe", PROFILE))
    out = multisched(kube, "explain", "multisched-probe", "-o", "json")
    assert out.returncode == 0, out.stderr
    (rec,) = json.loads(out.stdout)["pods"]
    ours = {
        (node, plugin): detail["weighted"]
        for node, scored in rec["explain"]["score"].items()
        for plugin, detail in scored["plugins"].items()
    }

    kube.apply(probe("upstream-probe", UPSTREAM))
    chosen = kube.wait_for("kube-scheduler's binding", lambda: kube.node_of("upstream-probe"), 60)
    theirs = {
        (node, plugin): int(score)
        for plugin, node, score in _SCORED.findall(log.read_text(errors="replace"))
    }
    assert theirs, "kube-scheduler logged no scores at -v=10"
    # A plugin one side leaves out (VolumeBinding scores nothing without its gate) is 0 there.
    for key in theirs.keys() | ours.keys():
        assert ours.get(key, 0) == theirs.get(key, 0), (key, ours, theirs)
    # Every plugin that gives a node points in kube-scheduler gives them in ours (one that
    # gives none may be skipped: NodeAffinity without preferences, VolumeBinding).
    assert {p for _, p in ours} >= {p for (_, p), score in theirs.items() if score}, ours
    totals = {node: scored["total"] for node, scored in rec["explain"]["score"].items()}
    assert totals[chosen] == max(totals.values()), (chosen, totals)


#: A ReplicaSet's pods: no spread constraints of their own, so PodTopologySpread's system
#: defaults (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway) apply over the RS's selector.
RS_LABELS = {"app": "parity-rs", "pod-template-hash": "5d8f7c"}


@pytest.fixture
def replica_set(kube: Kube) -> Iterator[dict[str, Any]]:
    """An inert ReplicaSet (no controller runs, 0 replicas) and three running pods it owns."""
    kube.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "parity-rs", "namespace": "default"},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": RS_LABELS},
                "template": {
                    "metadata": {"labels": RS_LABELS},
                    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
                },
            },
        }
    )
    rs = kube.get("replicaset", "parity-rs")
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "parity-rs",
        "uid": rs["metadata"]["uid"],
        "controller": True,
    }
    running = [("parity-rs-1", "score-a"), ("parity-rs-2", "score-c"), ("parity-rs-3", "score-c")]
    for name, node in running:
        kube.apply(_owned(asking(pod(name), "500m", nodeName=node), owner))
    yield owner
    pods = [name for name, _ in running]
    kube.run("delete", "pod", *pods, "--force", "--grace-period=0", "--wait=false", check=False)
    kube.run("delete", "replicaset", "parity-rs", "--ignore-not-found", "--wait=false")


def _owned(body: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    body["metadata"]["labels"].update(RS_LABELS)
    body["metadata"]["ownerReferences"] = [owner]
    return body


def test_default_spreading_reads_as_kube_schedulers(
    kube: Kube, kube_scheduler: Path, scoring_cluster: None, replica_set: dict[str, Any]
) -> None:
    """A ReplicaSet's pod with no constraints of its own is spread by the system defaults, as
    kube-scheduler spreads it: the same scores on every node."""
    _compare_scores(
        kube,
        kube_scheduler,
        lambda name, sched: _owned(asking(pod(name, sched), "500m"), replica_set),
    )


#: The preemption cluster: victims per node (name, priority class, cpu); each node has 4 cpu.
VICTIMS = {
    "preempt-p1": (("victim-a", "e2e-parity-low", "2"), ("victim-b", "e2e-parity-low", "2")),
    "preempt-p2": (("victim-c", "e2e-parity-mid", "3"), ("victim-d", "e2e-parity-low", "1")),
    "preempt-p3": (("victim-e", "e2e-parity-low", "4"),),
}
#: victim-e is guarded by a PodDisruptionBudget that allows no disruption.
GUARDED = "victim-e"


def _preemptor(name: str, scheduler: str) -> dict[str, Any]:
    body = asking(pod(name, scheduler), "3", priorityClassName="e2e-parity-top")
    body["spec"]["terminationGracePeriodSeconds"] = 0
    return body


@pytest.fixture
def preemption_cluster(kube: Kube, profile_fields: dict[str, Any]) -> Iterator[list[str]]:
    for name, value in (("e2e-parity-low", 10), ("e2e-parity-mid", 20), ("e2e-parity-top", 10**5)):
        kube.apply(priority_class(name, value))
    victims = []
    for node, pods in VICTIMS.items():
        kube.add_node(node, cpu="4")
        for name, klass, cpu in pods:
            body = asking(pod(name), cpu, nodeName=node, priorityClassName=klass)
            body["spec"]["terminationGracePeriodSeconds"] = 0  # no kubelet: gone at deletion
            if name == GUARDED:
                body["metadata"]["labels"]["parity-guard"] = "yes"
            kube.apply(body)
            victims.append(name)
    kube.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "parity-guard", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"parity-guard": "yes"}}},
        }
    )
    kube.apply(profile(PROFILE, {"profiles": [{"schedulerName": PROFILE, **profile_fields}]}))
    yield victims
    pods = [*victims, "upstream-preemptor", "multisched-preemptor"]
    kube.run("delete", "pod", *pods, "--force", "--grace-period=0", "--wait=false", check=False)
    kube.run("delete", "pdb", "parity-guard", "--ignore-not-found", "--wait=false")
    kube.run("delete", "schedulerprofile", PROFILE, "--ignore-not-found", "--wait=false")


def test_preemption_picks_kube_schedulers_node_and_victims(
    kube: Kube, kube_scheduler: Path, preemption_cluster: list[str]
) -> None:
    """The node and victims ``simulate --from-cluster`` picks for a pending pod that must
    preempt, against the ones kube-scheduler then picks and evicts: fewest PDB violations
    first (not preempt-p3), then the lowest highest-priority victim (preempt-p1)."""
    kube.apply(_preemptor("multisched-preemptor", PROFILE))
    out = multisched(kube, "simulate", "--from-cluster", "-o", "json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    ours = {p["pod"]: p for p in result["pods"]}["default/multisched-preemptor"]
    our_victims = {key.split("/", 1)[1] for key in result["preempted"]} & set(preemption_cluster)

    kube.apply(_preemptor("upstream-preemptor", UPSTREAM))
    node = kube.wait_for(
        "kube-scheduler's preemptor bound", lambda: kube.node_of("upstream-preemptor"), 60
    )
    left = {p["metadata"]["name"] for p in kube.get("pods", "-n", "default")["items"]}
    their_victims = set(preemption_cluster) - left

    assert (ours["node"], our_victims) == (node, their_victims)
    assert (node, their_victims) == ("preempt-p1", {"victim-a", "victim-b"})
