"""The fault suite of issues 7 and 8: the operator as ``multisched run`` against a real
kube-apiserver + etcd that the scenarios crash, restart and change behind its back.

Every scenario has its own control plane and ends with the same check
(``harness.check_invariants``): every pod meant to be bound is bound, no ``nodeName`` ever
changed once set (a pod watch records them all run long), no node is above its allocatable,
no pod is bound to a missing node, and the operators that should be alive are. Who sent
which binding comes from the API server's audit log (each replica has its own user).

Figures (recovery and takeover seconds, log lines per outage) are printed, not asserted on
time: run with ``pytest -s -rs tests/e2e/test_e2e_faults.py`` to see them.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import pytest
from harness import ClusterApi, key, pod_body, profile_body, wait_bound

from apiserver import AuditRecord
from conftest import FaultCluster, Operator, problem_lines, report_figure, summarize

pytestmark = pytest.mark.timeout(300)

#: Short lease timings (upstream's defaults are 15s/10s/2s).
LEASE_S, RENEW_S, RETRY_S = 4.0, 3.0, 0.5
#: client-go's JitterFactor: acquire attempts come every retryPeriod x [1, 2.2).
JITTER = 1.2
#: A standby judges expiry from when it first saw the last renewal (up to one jittered
#: retry after it) and then tries once per jittered retry: the longest a correct standby
#: waits after the leader's last renewal. The issue's "leaseDuration + retryPeriod" with
#: the retry period taken as the jittered one, on both ends.
TAKEOVER_BOUND_S = LEASE_S + 2 * (1 + JITTER) * RETRY_S
#: How long each API-server outage of the restart scenario lasts.
OUTAGE_S = 6.0
#: WARNING-or-worse lines (tracebacks included) one outage may put in the log. The issue
#: asks for one line when the API goes and one when it is back; this leaves room for a few
#: per-watch reconnect lines, but nothing that grows with the number of pods.
MAX_PROBLEM_LINES_PER_OUTAGE = 10


def no_problems(problems: list[str]) -> None:
    """Fails with every problem on its own line (an assert's repr would be cut short)."""
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def leader_args(lease: str) -> tuple[str, ...]:
    return (
        "--leader-elect=true",
        "--lease-namespace",
        "default",
        "--lease-name",
        lease,
        "--leader-elect-lease-duration",
        f"{LEASE_S}s",
        "--leader-elect-renew-deadline",
        f"{RENEW_S}s",
        "--leader-elect-retry-period",
        f"{RETRY_S}s",
    )


def burst(
    prefix: str, scheduler: str, count: int, cpu: str, start: int = 0
) -> list[dict[str, Any]]:
    return [pod_body(f"{prefix}-{i:03d}", scheduler, cpu=cpu) for i in range(start, count)]


def keys_of(pods: Iterable[dict[str, Any]]) -> set[str]:
    return {key(p) for p in pods}


def bindings_by_pod(records: Iterable[AuditRecord]) -> dict[str, list[AuditRecord]]:
    out: dict[str, list[AuditRecord]] = defaultdict(list)
    for r in records:
        out[f"{r.namespace}/{r.name}"].append(r)
    return out


def double_bindings(fc: FaultCluster) -> list[str]:
    """Pods bound more than once, or bound by one replica and sent by another that the API
    server answered (stored, or refused: it tried to bind a bound pod). A POST cut off by
    its sender's death (a 5xx, never stored) before the new leader's is a takeover: make e2e
    once saw the killed leader's last binding logged 504 and the pod bound by the standby."""
    bad = []
    for pod, recs in sorted(bindings_by_pod(fc.audit.bindings()).items()):
        users = {r.user for r in recs if r.code < 500}
        stored = sum(r.ok for r in recs)
        if len(users) > 1 or stored > 1:
            codes = ", ".join(f"{r.user}:{r.code}" for r in recs)
            bad.append(f"{pod} ({codes})")
    return bad


def wait_holder(fc: FaultCluster, lease: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ok = [r for r in fc.audit.lease_writes(lease) if r.ok]
        if ok:
            return ok[-1].user
        time.sleep(0.1)
    raise AssertionError(f"no replica acquired lease {lease} within {timeout}s")


def first_after(records: Iterable[AuditRecord], user: str, after: float) -> float | None:
    times = [r.time for r in records if r.ok and r.user == user and r.time > after]
    return min(times) if times else None


def two_replicas(fc: FaultCluster, lease: str) -> tuple[Operator, str, Operator, str]:
    """Starts replica-a and replica-b; returns (leader, its user, standby, its user)."""
    a = fc.start_operator(*leader_args(lease), user="replica-a")
    b = fc.start_operator(*leader_args(lease), user="replica-b")
    holder = wait_holder(fc, lease)
    if holder == "replica-a":
        return a, "replica-a", b, "replica-b"
    return b, "replica-b", a, "replica-a"


# -- kill -9 ---------------------------------------------------------------------------------


def test_kill9_mid_burst(faults: FaultCluster) -> None:
    fc = faults
    fc.api.create_nodes([f"k-node-{i:02d}" for i in range(40)], cpu="2")
    first = burst("k", "kill9", 300, "200m")
    fc.api.create_pods(first)
    op = fc.start_operator()
    fc.kube.apply(profile_body("kill9"))
    at_kill = fc.wait_bindings(60, timeout=90)
    op.kill9()
    # Pods that arrive while no scheduler runs.
    second = burst("k", "kill9", 350, "200m", start=300)
    fc.api.create_pods(second)
    restarted = fc.start_operator()
    verdict = fc.check(keys_of(first + second), [restarted])
    doubles = double_bindings(fc)
    report_figure(
        f"[kill -9] {at_kill}/300 bound when killed; after restart all 350 bound in "
        f"{verdict.bound_after_s and round(verdict.bound_after_s, 1)}s; "
        f"double bindings: {len(doubles)}"
    )
    no_problems(verdict.problems + [f"double bindings: {d}" for d in doubles])


# -- API server restart ----------------------------------------------------------------------


def test_apiserver_restart_mid_burst(faults: FaultCluster) -> None:
    fc = faults
    fc.api.create_nodes([f"r-node-{i:02d}" for i in range(40)], cpu="4")
    op = fc.start_operator()
    problems: list[str] = []
    everything: set[str] = set()
    for n, kill in enumerate((False, True)):
        how = "SIGKILL" if kill else "SIGTERM"
        sched = f"burst-{n}"
        pods = burst(sched, sched, 200, "100m")
        keys = keys_of(pods)
        everything |= keys
        # The pods wait for their profile, so the whole burst becomes schedulable at once.
        fc.api.create_pods(pods)
        fc.kube.apply(profile_body(sched))
        fc.wait_bindings(40, keys, timeout=90)
        mark = op.mark()
        down_at = fc.plane.stop_apiserver(kill=kill)
        at_stop = fc.bound_count(keys)
        time.sleep(OUTAGE_S)
        restart_at = time.time()
        ready_at = fc.plane.start_apiserver()
        unbound, waited = wait_bound(fc.api, keys, 90)
        time.sleep(2)  # what the recovery itself logs belongs to the outage too
        text = op.output_since(mark)
        lines, tracebacks = problem_lines(text)
        first = min(
            (r.time for r in fc.audit.bindings() if r.ok and r.time >= restart_at), default=None
        )
        recovery = (
            "no binding after the restart"
            if first is None
            else f"first binding {first - restart_at:.2f}s ({first - ready_at:+.2f}s from /readyz)"
        )
        report_figure(
            f"[apiserver {how}] down {restart_at - down_at:.1f}s with {at_stop}/200 bound; "
            f"restarted: /readyz {ready_at - restart_at:.2f}s, {recovery}, all bound "
            f"{waited:.1f}s after /readyz; log during outage: {len(text.splitlines())} lines, "
            f"{len(lines)} WARNING+ lines, {tracebacks} tracebacks"
        )
        if unbound:
            problems.append(f"{how}: {len(unbound)} pods unbound 90s after the restart")
        if tracebacks or len(lines) > MAX_PROBLEM_LINES_PER_OUTAGE:
            problems.append(
                f"{how}: {len(lines)} WARNING+ log lines ({tracebacks} tracebacks) for one "
                f"outage, at most {MAX_PROBLEM_LINES_PER_OUTAGE} and no traceback wanted; "
                f"most frequent: {summarize(lines)}"
            )
    problems += scheduled_event_problems(fc.api, everything)
    verdict = fc.check(everything, [op])
    no_problems(verdict.problems + problems)


def scheduled_event_problems(api: ClusterApi, keys: set[str], timeout: float = 30) -> list[str]:
    """One ``Scheduled`` event per pod, counted as ``kubectl describe`` shows them (Event
    objects times their count): a binding or an event resent after the restart must not
    add a second one. Events are posted off the binding path, so wait for them first."""
    deadline = time.monotonic() + timeout
    while True:
        events, _ = api.call(api.list_all("/api/v1/events", fieldSelector="reason=Scheduled"))
        per_pod: dict[str, int] = defaultdict(int)
        for ev in events:
            obj = ev.get("involvedObject") or {}
            per_pod[f"{obj.get('namespace')}/{obj.get('name')}"] += int(ev.get("count") or 1)
        missing = keys - set(per_pod)
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    twice = sorted(k for k in keys if per_pod.get(k, 0) > 1)
    out = []
    if twice:
        out.append(f"{len(twice)} pods have more than one Scheduled event: {twice[:5]}")
    if missing:
        out.append(f"{len(missing)} bound pods have no Scheduled event: {sorted(missing)[:5]}")
    return out


# -- ghosts after a watch gap ----------------------------------------------------------------


def _gap_changes(api: ClusterApi, victims: list[str]) -> None:
    api.force_delete_pods(victims)
    api.delete_node("doomed")
    api.delete_profile("ghost-retired")


@pytest.mark.parametrize("gap", ["sigstop", "apiserver-stop"])
def test_ghosts_after_watch_gap(faults: FaultCluster, gap: str) -> None:
    """While the watches are down, the pods of half the full nodes are force-deleted, an
    empty node and a SchedulerProfile are deleted. Afterwards pods that fit only in the
    freed room must go there, nothing to the deleted node, nothing of the deleted profile."""
    fc = faults
    full = [f"full-{i:02d}" for i in range(20)]
    freed = set(full[:10])
    fc.api.create_nodes(full, cpu="1")
    fc.kube.apply(profile_body("ghost"))
    fc.kube.apply(profile_body("ghost-retired"))
    op = fc.start_operator()
    fillers = burst("filler", "ghost", 40, "500m")
    fc.api.create_pods(fillers)
    unbound, _ = wait_bound(fc.api, keys_of(fillers), 90)
    assert not unbound, f"setup: fillers unbound: {sorted(unbound)[:5]}"
    # An empty node with plenty of room, known to the operator (a canary was bound there).
    fc.api.create_nodes(["doomed"], cpu="16")
    canary = pod_body("canary", "ghost", cpu="100m")
    canary["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "doomed"}
    fc.api.create_pods([canary])
    unbound, _ = wait_bound(fc.api, {key(canary)}, 60)
    assert not unbound, "setup: the canary was not bound to the doomed node"
    victims = [key(p) for p in fc.api.pods() if (p.get("spec") or {}).get("nodeName") in freed] + [
        key(canary)
    ]

    if gap == "sigstop":
        # Frozen, the operator keeps its connections; the restart under it breaks them, and
        # the restarted API server cannot resume its watches (410): it must relist.
        op.freeze()
        fc.plane.stop_apiserver()
        fc.plane.start_apiserver()
        _gap_changes(fc.api, victims)
        op.thaw()
    else:
        # Down on the operator's port; the changes go through a second API server.
        fc.plane.stop_apiserver()
        with fc.plane.side_apiserver() as side_config:
            side = ClusterApi(side_config)
            try:
                _gap_changes(side, victims)
            finally:
                side.close()
        fc.plane.start_apiserver()

    retired = burst("retired", "ghost-retired", 5, "100m")
    fc.api.create_pods(retired)
    probes = burst("probe", "ghost", 20, "500m")
    fc.api.create_pods(probes)
    survivors = keys_of(fillers) - set(victims)
    verdict = fc.check(survivors | keys_of(probes), [op], timeout=60)
    time.sleep(3)  # the retired profile's pods had as long as the probes, and then some
    pods = {key(p): p for p in fc.api.pods()}
    placed = {k: (pods.get(k, {}).get("spec") or {}).get("nodeName") for k in keys_of(probes)}
    elsewhere = sorted(f"{k} on {n}" for k, n in placed.items() if n and n not in freed)
    retired_bound = sorted(
        f"{k} on {n}"
        for k in keys_of(retired)
        if (n := (pods.get(k, {}).get("spec") or {}).get("nodeName"))
    )
    on_freed = sum(1 for n in placed.values() if n in freed)
    report_figure(
        f"[ghosts via {gap}] probes on freed nodes: {on_freed}/20; elsewhere: "
        f"{len(elsewhere)}; retired-profile pods bound: {len(retired_bound)}/5; "
        f"unbound probes: {sum(1 for n in placed.values() if not n)}"
    )
    problems = list(verdict.problems)
    if elsewhere:
        problems.append(f"probes bound outside the freed room: {elsewhere[:5]}")
    if retired_bound:
        problems.append(f"pods of the deleted profile were bound: {retired_bound}")
    no_problems(problems)


# -- two replicas ------------------------------------------------------------------------------


def test_leader_killed_mid_burst(faults: FaultCluster) -> None:
    fc = faults
    fc.api.create_nodes([f"ha-node-{i:02d}" for i in range(30)], cpu="2")
    fc.kube.apply(profile_body("ha"))
    lease = "ha-kill"
    leader, leader_user, standby, standby_user = two_replicas(fc, lease)
    pods = burst("ha", "ha", 250, "200m")
    fc.api.create_pods(pods)
    at_kill = fc.wait_bindings(50, timeout=90)
    killed_at = time.time()
    leader.kill9()
    verdict = fc.check(keys_of(pods), [standby])
    writes = fc.audit.lease_writes(lease)
    renewals = [r.time for r in writes if r.ok and r.user == leader_user and r.time <= killed_at]
    last_renew = max(renewals)
    acquired = first_after(writes, standby_user, last_renew)
    first_binding = first_after(fc.audit.bindings(), standby_user, killed_at)
    doubles = double_bindings(fc)
    by_user: dict[str, int] = defaultdict(int)
    for r in fc.audit.bindings():
        by_user[f"{r.user}:{r.code}"] += 1
    takeover = None if acquired is None else acquired - last_renew

    def since_kill(t: float | None) -> str:
        return "never" if t is None else f"{t - killed_at:.2f}s after the kill"

    report_figure(
        f"[leader kill -9] {at_kill}/250 bound at the kill; lease taken "
        f"{since_kill(acquired)}, "
        f"{'-' if takeover is None else f'{takeover:.2f}s'} after the last renewal "
        f"(bound {TAKEOVER_BOUND_S:.1f}s; lease+retry {LEASE_S + RETRY_S:.1f}s); first binding "
        f"by the new leader {since_kill(first_binding)}; bindings by user:code "
        f"{dict(by_user)}; double bindings {len(doubles)}"
    )
    problems = list(verdict.problems)
    if takeover is None or takeover > TAKEOVER_BOUND_S:
        problems.append(f"takeover {takeover}s after the last renewal > {TAKEOVER_BOUND_S}s")
    if doubles:
        problems.append(f"pods bound by both replicas or twice: {doubles[:5]}")
    no_problems(problems)


def _scheduled_false(fc: FaultCluster, keys: set[str]) -> bool:
    pods = {key(p): p for p in fc.api.pods()}
    return all(
        any(
            c.get("type") == "PodScheduled" and c.get("status") == "False"
            for c in ((pods.get(k) or {}).get("status") or {}).get("conditions") or ()
        )
        for k in keys
    )


def test_frozen_leader_sends_no_binding_after_takeover(faults: FaultCluster) -> None:
    """The leader is frozen with a queue of pods that fit nowhere yet, so no binding of its
    own is in flight at the freeze. While it is frozen the standby takes over and nodes
    arrive that fit those pods. Once thawed, the old leader sees the nodes and new pods, but
    it can no longer prove it holds the lease: it must not send a single binding."""
    fc = faults
    fc.api.create_nodes([f"fz-node-{i:02d}" for i in range(10)], cpu="2")
    fc.kube.apply(profile_body("frozen"))
    lease = "ha-freeze"
    leader, leader_user, standby, standby_user = two_replicas(fc, lease)
    first = burst("fz", "frozen", 100, "100m")
    fc.api.create_pods(first)
    unbound, _ = wait_bound(fc.api, keys_of(first), 90)
    assert not unbound, f"setup: the leader did not bind {len(unbound)} pods"
    waiting = burst("fz-big", "frozen", 40, "3")  # more cpu than any node has, for now
    fc.api.create_pods(waiting)
    fc.kube.wait_for(
        "the leader to find the big pods unschedulable",
        lambda: _scheduled_false(fc, keys_of(waiting)),
        60,
    )
    frozen_at = time.time()
    leader.freeze()
    deadline = time.monotonic() + 3 * TAKEOVER_BOUND_S
    acquired = None
    while acquired is None and time.monotonic() < deadline:
        acquired = first_after(fc.audit.lease_writes(lease), standby_user, frozen_at)
        time.sleep(0.1)
    assert acquired is not None, "the standby never took the lease of the frozen leader"
    # Room for the big pods: the new leader binds them; the frozen one learns of the nodes
    # only when thawed, together with a stream of new pods.
    fc.api.create_nodes([f"fz-big-{i:02d}" for i in range(40)], cpu="4")
    fc.wait_bindings(len(waiting) // 2, keys_of(waiting), timeout=60)
    thawed_at = time.time()
    leader.thaw()
    second = burst("fz", "frozen", 250, "100m", start=100)
    for i in range(0, len(second), 50):
        fc.api.create_pods(second[i : i + 50])
        time.sleep(0.5)
    verdict = fc.check(keys_of(first + waiting + second), [leader, standby])
    # Observe past the point where a renew deadline restarted at the thaw would run out.
    time.sleep(max(0.0, thawed_at + RENEW_S + 2 * RETRY_S + 1 - time.time()))
    late = [r for r in fc.audit.bindings() if r.user == leader_user and r.time > acquired]
    stored = sum(r.ok for r in late)
    last_late = max((r.time for r in late), default=None)
    report_figure(
        f"[leader SIGSTOP] standby took the lease {acquired - frozen_at:.2f}s after the "
        f"freeze; thawed {thawed_at - frozen_at:.1f}s after it; bindings sent by the old "
        f"leader after the takeover: {len(late)} ({stored} stored, {len(late) - stored} refused)"
        + ("" if last_late is None else f", the last {last_late - thawed_at:.2f}s after the thaw")
    )
    problems = list(verdict.problems)
    if late:
        problems.append(
            f"the resumed leader sent {len(late)} bindings after the standby took over: "
            + ", ".join(f"{r.name}:{r.code}" for r in late[:8])
        )
    doubles = double_bindings(fc)
    if doubles:
        problems.append(f"pods bound by both replicas or twice: {doubles[:5]}")
    no_problems(problems)
