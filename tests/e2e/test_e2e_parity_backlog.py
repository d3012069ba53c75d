"""A mixed backlog with preemption, as kube-scheduler (v1.37.2) works it off on the same API
server (issue 43): pods of several priorities, some that fit, some that must preempt, some
that cannot be placed, all created before the scheduler starts. Each scheduler gets its own
copy of the backlog on its own nodes; placements, victims and the order of bindings are
compared. Skipped, saying so, without a ``kube-scheduler`` binary on PATH."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from parity_support import PROFILE, UPSTREAM, apply_profile, asking
from test_e2e_operator import pod
from test_e2e_preemption import priority_class

from apiserver import AuditLog
from conftest import Kube

LABEL = "e2e=backlog-parity"
CLASSES = {"top": 1000, "hi": 500, "mid": 100, "v70": 70, "v55": 55, "v50": 50, "lo": 10}
#: Each run's nodes (4 cpu each): ``a`` and ``d`` take the pods that fit (pinned, so no
#: node scores tie: upstream breaks ties at random), ``b`` and ``c`` are full of victims.
NODES = ("a", "b", "c", "d")
#: Pods bound to their node before the backlog: (name, node, class, cpu).
VICTIMS = (
    ("b-victim-1", "b", "v50", "2"),
    ("b-victim-2", "b", "v55", "2"),
    ("c-victim", "c", "v70", "4"),
)
#: The backlog, listed in no particular order: (name, where, class, cpu); ``where`` is a
#: node, or "victims" for nodes b and c alike. On a (room for 4 of these 6) the priority
#: order decides who is bound and who waits; d takes all of its pods. The preemptors fit
#: only where victims are: b (whose highest victim has the lowest priority) for both, the
#: second beside the first's nomination; ``z-lo`` finds no victim of lower priority.
BACKLOG = (
    ("a-lo-1", "a", "lo", "1"),
    ("a-lo-3", "a", "lo", "1"),
    ("a-hi-2", "a", "hi", "1"),
    ("d-lo", "d", "lo", "1"),
    ("a-lo-2", "a", "lo", "1"),
    ("a-hi-1", "a", "hi", "1"),
    ("d-mid", "d", "mid", "1"),
    ("p-top", "victims", "top", "2"),
    ("p-hi", "victims", "hi", "2"),
    ("z-lo", "victims", "lo", "1"),
    ("a-top", "a", "top", "1"),
    ("d-hi", "d", "hi", "1"),
)
PREEMPTORS = ("p-top", "p-hi")
RUNS = {"ms": PROFILE, "up": UPSTREAM}


def _klass(name: str) -> str:
    return f"e2e-backlog-{name}"


def _docs(run: str, scheduler: str) -> list[dict[str, Any]]:
    docs = []
    for name, node, klass, cpu in VICTIMS:
        body = asking(pod(f"{run}-{name}"), cpu, nodeName=f"{run}-{node}")
        docs.append((body, klass, "victim"))
    for name, where, klass, cpu in BACKLOG:
        if where == "victims":
            selector = {"e2e-backlog-pool": f"{run}-victims"}
        else:
            selector = {"kubernetes.io/hostname": f"{run}-{where}"}
        body = asking(pod(f"{run}-{name}", scheduler), cpu, nodeSelector=selector)
        docs.append((body, klass, "backlog"))
    for body, klass, role in docs:
        body["spec"]["priorityClassName"] = _klass(klass)
        body["spec"]["terminationGracePeriodSeconds"] = 0  # no kubelet: gone at deletion
        body["metadata"]["labels"].update({"e2e": "backlog-parity", "role": role})
    return [body for body, _, _ in docs]


@pytest.fixture
def backlogs(kube: Kube) -> Iterator[None]:
    """Both runs' nodes, victims and backlogs, before either scheduler starts."""
    for name, value in CLASSES.items():
        kube.apply(priority_class(_klass(name), value))
    for run in RUNS:
        for node in NODES:
            pool = {"e2e-backlog-pool": f"{run}-victims"} if node in ("b", "c") else {}
            kube.add_node(f"{run}-{node}", labels=pool, cpu="4")
    apply_profile(kube, {})
    yield
    kube.run(
        "delete", "pods", "-n", "default", "-l", LABEL,
        "--force", "--grace-period=0", "--wait=false", check=False,
    )  # fmt: skip
    kube.run("delete", "schedulerprofile", PROFILE, "--ignore-not-found", "--wait=false")


class History:
    """One run's pods as the watch saw them: when (etcd revision) each was bound or deleted."""

    def __init__(self, events: list[dict[str, Any]], run: str) -> None:
        self.bound_at: dict[str, int] = {}
        self.deleted_at: dict[str, int] = {}
        self.priority: dict[str, int] = {}
        for event in events:
            obj = event["object"]
            name = obj["metadata"]["name"]
            if not name.startswith(f"{run}-"):
                continue
            name, rev = name.removeprefix(f"{run}-"), int(obj["metadata"]["resourceVersion"])
            self.priority[name] = obj["spec"].get("priority", 0)
            if event["type"] == "DELETED":
                self.deleted_at.setdefault(name, rev)
            elif obj["spec"].get("nodeName") and obj["metadata"]["labels"]["role"] == "backlog":
                self.bound_at.setdefault(name, rev)

    def bindings(self) -> list[str]:
        return sorted(self.bound_at, key=self.bound_at.__getitem__)


def _placements(kube: Kube, run: str) -> dict[str, str] | None:
    """Each backlog pod's node ('' while pending) once the run has settled: both preemptors
    bound, every other pod bound or marked unschedulable."""
    out: dict[str, str] = {}
    for p in kube.get("pods", "-n", "default", "-l", f"{LABEL},role=backlog")["items"]:
        name = p["metadata"]["name"]
        if not name.startswith(f"{run}-"):
            continue
        name, node = name.removeprefix(f"{run}-"), p["spec"].get("nodeName") or ""
        conditions = p["status"].get("conditions") or []
        failed = any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)
        if not node and (name in PREEMPTORS or not failed):
            return None
        out[name] = node.removeprefix(f"{run}-")
    return out if len(out) == len(BACKLOG) else None


def _settled(kube: Kube, op: Any, run: str) -> dict[str, str]:
    """The run's placements once settled; if it does not settle, the failure says what the
    scheduler held (its queue and cache, as SIGUSR2 logs them) and what the API holds."""
    try:
        placements: dict[str, str] = kube.wait_for(
            f"{run}'s backlog settled", lambda: _placements(kube, run), 60
        )
        return placements
    except AssertionError as exc:
        mark = op.mark()
        if op.alive:
            op.proc.send_signal(signal.SIGUSR2)
            time.sleep(2)
        pods = kube.get("pods", "-n", "default", "-l", LABEL)["items"]
        ours = [p for p in pods if p["metadata"]["name"].startswith(f"{run}-")]
        names = {p["metadata"]["name"].removeprefix(f"{run}-") for p in ours}
        gone = sorted(b[0] for b in BACKLOG if b[0] not in names)
        held = "\n".join(_held(p) for p in ours)
        raise AssertionError(
            f"{exc}\n--- the API's pods (backlog pods gone: {gone}) ---\n{held}\n"
            f"--- the scheduler's dump ---\n{op.output_since(mark)[-12000:]}"
        ) from None


def _held(pod: dict[str, Any]) -> str:
    """A pod as the API holds it: its node, deletion, nomination and PodScheduled."""
    meta, status = pod["metadata"], pod["status"]
    scheduled = [c["status"] for c in status.get("conditions") or () if c["type"] == "PodScheduled"]
    return (
        f"{meta['name']}: node={pod['spec'].get('nodeName') or '-'} "
        f"deleting={bool(meta.get('deletionTimestamp'))} "
        f"nominated={status.get('nominatedNodeName') or '-'} PodScheduled={scheduled}"
    )


def _survivors(kube: Kube, run: str) -> set[str]:
    pods = kube.get("pods", "-n", "default", "-l", f"{LABEL},role=victim")["items"]
    names = (p["metadata"]["name"] for p in pods)
    return {n.removeprefix(f"{run}-") for n in names if n.startswith(f"{run}-")}


def _sent(kube: Kube, run: str) -> list[str] | None:
    """The run's bindings in the order the API server received them (the local control
    plane's audit log: each request's arrival, to the microsecond); None against another
    cluster. The order the watch shows is that of their commits, which the API server's
    own goroutines may reorder."""
    path = kube.kubeconfig.parent / "audit.log"
    if os.environ.get("E2E_KUBECONFIG") or not path.exists():
        return None
    records = [r for r in AuditLog(path).bindings() if r.ok and r.name.startswith(f"{run}-")]
    return [r.name.removeprefix(f"{run}-") for r in sorted(records, key=lambda r: r.time)]


def test_a_mixed_backlog_is_worked_off_as_kube_scheduler_does(
    kube: Kube, start_operator: Any, request: pytest.FixtureRequest, backlogs: None
) -> None:
    """Placements and victims alike; each preemptor bound only once room was made for it;
    the bindings sent in the order the queue hands the pods out (priority, then arrival)."""
    with kube.watching("pods", "-n", "default", "-l", LABEL, "--output-watch-events") as events:
        kube.apply(yaml.safe_dump_all([d for run, s in RUNS.items() for d in _docs(run, s)]))
        op = start_operator()
        request.getfixturevalue("kube_scheduler")  # started now: the backlog is waiting
        settled = {run: _settled(kube, op, run) for run in RUNS}
    histories = {run: History(events, run) for run in RUNS}
    log = op.output()[-3000:]

    # kube-scheduler's answer, spelled out: priority order on a, the preemptors both on b
    # (its highest victim has the lower priority), the second beside the first's nomination.
    assert settled["up"] == {
        **{n: "a" for n in ("a-top", "a-hi-1", "a-hi-2", "a-lo-1")},
        **{n: "d" for n in ("d-hi", "d-mid", "d-lo")},
        **{n: "b" for n in PREEMPTORS},
        **{n: "" for n in ("a-lo-2", "a-lo-3", "z-lo")},
    }
    # The tied pods too: both queue a backlog that waited for them in the order of its
    # first listing (by name), whatever order kopf hands the pods over in.
    assert settled["ms"] == settled["up"], log
    assert _survivors(kube, "ms") == _survivors(kube, "up") == {"c-victim"}, log
    # When a preemptor is bound against when its node's victims went is up to the API
    # server; what is determined is that room was made first (etcd revisions, as watched).
    for h in histories.values():
        victims = [h.deleted_at[v] for v in ("b-victim-1", "b-victim-2")]
        preemptors = sorted(h.bound_at[p] for p in PREEMPTORS)
        assert min(victims) < preemptors[0] and max(victims) < preemptors[1], log

    # The order of bindings. PrioritySort hands the pods out by priority, then arrival: for
    # a backlog that waited for the scheduler, the order of its first listing (by name).
    # Binding runs beside the next cycles in both schedulers, so what is compared is the
    # order of the bindings' priorities as the API server received them (two pods of one
    # priority, one cycle apart, may arrive either way round). kube-scheduler's arrive on
    # one HTTP/2 connection, and still race now and then (about one run in eight out of
    # priority order), so only its placements are held to it. multisched's go on separate
    # HTTP/1.1 connections, which the API server may take up a few ms apart in either
    # order: a binding of a lower priority is sent once the higher ones made before it are
    # answered (SendOrder's ranks), so its order holds in every run.
    sent = {run: _sent(kube, run) for run in RUNS}
    if sent["ms"] is not None:
        assert set(sent["ms"]) == {n for n, node in settled["ms"].items() if node}, sent
        priorities = [histories["ms"].priority[n] for n in sent["ms"] if n not in PREEMPTORS]
        assert priorities == sorted(priorities, reverse=True), (sent, log)
