"""The operator end to end against kmock: watches in, bindings/events/status out."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from builders import node_dict, pod_dict
from conftest import Cluster, OperatorFactory, OperatorsFactory, kubeconfig
from kmock_support import answer_reviews
from ports import free_port

ROOT = Path(__file__).resolve().parents[2]

SCHED = "my-scheduler"


def profile(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": name},
        "spec": spec,
    }


def one_profile(scheduler: str = SCHED, **fields: Any) -> dict[str, Any]:
    return {"profiles": [{"schedulerName": scheduler, **fields}]}


def ready(cluster: Cluster, name: str) -> dict[str, Any] | None:
    status = cluster.get("schedulerprofiles", name).get("status") or {}
    for cond in status.get("conditions") or ():
        if cond["type"] == "Ready":
            return dict(cond)
    return None


def node_of(cluster: Cluster, pod: str) -> str:
    return str(cluster.get("pods", pod, "default")["spec"].get("nodeName") or "")


async def test_profile_appears_then_pending_pod_is_bound(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    await cluster.create("nodes", node_dict("node-a"))
    pod = await cluster.create("pods", pod_dict("waiting", scheduler_name=SCHED))
    async with start_operator() as runtime:
        assert not cluster.bindings  # nobody serves my-scheduler yet
        await cluster.create("schedulerprofiles", profile("mine", one_profile()))
        await cluster.wait_for("the binding", lambda: node_of(cluster, "waiting"))

        (binding,) = cluster.bindings
        assert binding["metadata"] == {
            "name": "waiting",
            "namespace": "default",
            "uid": pod["metadata"]["uid"],
        }
        assert binding["target"] == {"apiVersion": "v1", "kind": "Node", "name": "node-a"}
        scheduled = await cluster.wait_for(
            "the Scheduled event",
            lambda: [e for e in cluster.events("waiting") if e["reason"] == "Scheduled"],
        )
        assert scheduled[0]["type"] == "Normal"
        assert scheduled[0]["message"] == "Successfully assigned default/waiting to node-a"
        assert scheduled[0]["source"] == {"component": SCHED}
        assert scheduled[0]["reportingComponent"] == SCHED
        assert scheduled[0]["involvedObject"]["uid"] == pod["metadata"]["uid"]
        cond = await cluster.wait_for("Ready=True", lambda: ready(cluster, "mine"))
        assert (cond["status"], cond["reason"]) == ("True", "Applied")
        status = cluster.get("schedulerprofiles", "mine")["status"]
        assert status["observedGeneration"] == 1
        assert status["profiles"][0]["schedulerName"] == SCHED
        assert "NodeResourcesFit" in status["profiles"][0]["plugins"]["filter"]
        # The watch confirmed the binding: the assumption is settled.
        await cluster.wait_for(
            "the bound pod in the cache",
            lambda: (
                not runtime.scheduler.cache.is_assumed(pod["metadata"]["uid"])
                and runtime.scheduler.cache.get_pod(pod["metadata"]["uid"]) is not None
            ),
        )


def pinned_to(tier: str) -> dict[str, Any]:
    """A profile whose NodeAffinity plugin adds a required ``tier`` (upstream addedAffinity)."""
    added = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "tier", "operator": "In", "values": [tier]}]}
            ]
        }
    }
    return one_profile(pluginConfig=[{"name": "NodeAffinity", "args": {"addedAffinity": added}}])


async def tiers(cluster: Cluster) -> None:
    await cluster.create("nodes", node_dict("gold-1", labels={"tier": "gold"}))
    await cluster.create("nodes", node_dict("silver-1", labels={"tier": "silver"}))


def observed(cluster: Cluster, name: str, generation: int) -> bool:
    status = cluster.get("schedulerprofiles", name).get("status") or {}
    return bool(status.get("observedGeneration") == generation)


async def test_live_edit_changes_the_next_decision(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    await tiers(cluster)
    await cluster.create("schedulerprofiles", profile("mine", pinned_to("gold")))
    async with start_operator():
        await cluster.create("pods", pod_dict("a", scheduler_name=SCHED))
        assert await cluster.wait_for("pod a bound", lambda: node_of(cluster, "a")) == "gold-1"

        await cluster.edit_spec("schedulerprofiles", "mine", pinned_to("silver"))
        await cluster.wait_for("generation 2 applied", lambda: observed(cluster, "mine", 2))
        await cluster.create("pods", pod_dict("b", scheduler_name=SCHED))
        assert await cluster.wait_for("pod b bound", lambda: node_of(cluster, "b")) == "silver-1"


async def test_bad_edit_keeps_the_last_good_profile(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    await tiers(cluster)
    await cluster.create("schedulerprofiles", profile("mine", pinned_to("silver")))
    async with start_operator():
        await cluster.wait_for("generation 1 applied", lambda: observed(cluster, "mine", 1))
        bad = one_profile(plugins={"score": {"enabled": [{"name": "NoSuchPlugin"}]}})
        await cluster.edit_spec("schedulerprofiles", "mine", bad)

        cond = await cluster.wait_for(
            "Ready=False",
            lambda: (c := ready(cluster, "mine")) and c["status"] == "False" and c,
        )
        assert cond["reason"] == "InvalidConfiguration"
        assert "NoSuchPlugin" in cond["message"]
        assert cond["observedGeneration"] == 2
        status = cluster.get("schedulerprofiles", "mine")["status"]
        assert status["observedGeneration"] == 2
        # The last good profiles are still the ones in effect.
        assert [p["schedulerName"] for p in status["profiles"]] == [SCHED]
        warnings = [e for e in cluster.events("mine") if e["type"] == "Warning"]
        assert len(warnings) == 1
        assert warnings[0]["reason"] == "InvalidConfiguration"
        assert "NoSuchPlugin" in warnings[0]["message"]
        assert warnings[0]["involvedObject"]["kind"] == "SchedulerProfile"

        await cluster.create("pods", pod_dict("c", scheduler_name=SCHED))
        assert await cluster.wait_for("pod c bound", lambda: node_of(cluster, "c")) == "silver-1"


async def test_newer_profile_claiming_a_taken_name_reports_the_conflict(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    await tiers(cluster)
    await cluster.create("schedulerprofiles", profile("older", pinned_to("gold")))
    await cluster.create("schedulerprofiles", profile("newer", pinned_to("silver")))
    async with start_operator():
        cond = await cluster.wait_for(
            "the conflict", lambda: (c := ready(cluster, "newer")) and c["status"] == "False" and c
        )
        assert cond["reason"] == "SchedulerNameConflict"
        assert '"older"' in cond["message"] and SCHED in cond["message"]
        assert cluster.get("schedulerprofiles", "newer")["status"]["profiles"] == []
        assert (await cluster.wait_for("older ready", lambda: ready(cluster, "older")))[
            "status"
        ] == "True"
        await cluster.create("pods", pod_dict("d", scheduler_name=SCHED))
        assert await cluster.wait_for("pod d bound", lambda: node_of(cluster, "d")) == "gold-1"

        # The older one goes: the newer takes the name over.
        await cluster.delete("schedulerprofiles", "older")
        await cluster.wait_for(
            "newer ready", lambda: (c := ready(cluster, "newer")) and c["status"] == "True"
        )
        await cluster.create("pods", pod_dict("e", scheduler_name=SCHED))
        assert await cluster.wait_for("pod e bound", lambda: node_of(cluster, "e")) == "silver-1"


async def test_pod_of_an_unknown_scheduler_is_left_alone(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    await cluster.create("nodes", node_dict("node-a"))
    await cluster.create("schedulerprofiles", profile("mine", one_profile()))
    async with start_operator() as runtime:
        other = await cluster.create("pods", pod_dict("other", scheduler_name="someone-else"))
        default = await cluster.create("pods", pod_dict("plain"))
        await cluster.create("pods", pod_dict("ours", scheduler_name=SCHED))
        await cluster.wait_for("our pod bound", lambda: node_of(cluster, "ours"))
        uids = [other["metadata"]["uid"], default["metadata"]["uid"]]
        # Seen by the operator (so any reaction would have happened by now), never queued.
        await cluster.wait_for("both seen", lambda: all(u in runtime.cluster.others for u in uids))
        assert not any(u in runtime.cluster.unbound for u in uids)  # kept raw: never parsed
        assert all(runtime.scheduler.queue.where(u) is None for u in uids)
        await runtime.scheduler.wait_for_bindings()
        for name in ("other", "plain"):
            assert [r.method for r in cluster.requests_for(name)] == ["POST"]  # our own create
            assert node_of(cluster, name) == ""
            assert cluster.events(name) == []
            assert "status" not in cluster.get("pods", name, "default")


async def test_binding_conflict_forgets_the_assumption_and_retries(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    await cluster.create("nodes", node_dict("node-a"))
    await cluster.create("schedulerprofiles", profile("mine", one_profile()))
    cluster.binding_failures = [409]
    async with start_operator() as runtime:
        outcomes: list[Any] = []
        runtime.scheduler.on_outcome = outcomes.append
        pod = await cluster.create("pods", pod_dict("racy", scheduler_name=SCHED))
        uid = pod["metadata"]["uid"]
        failed = await cluster.wait_for(
            "the refused binding", lambda: [o for o in outcomes if o.result == "error"]
        )
        assert "409" in failed[0].message
        assert not runtime.scheduler.cache.is_assumed(uid)
        assert runtime.scheduler.cache.get_pod(uid) is None
        assert runtime.scheduler.queue.where(uid) == "backoff"
        # Retried after its backoff (1 s) and bound the second time.
        assert await cluster.wait_for("the retry", lambda: node_of(cluster, "racy")) == "node-a"
        assert len(cluster.bindings) == 2
        warning = [e for e in cluster.events("racy") if e["reason"] == "FailedScheduling"]
        assert warning and warning[0]["type"] == "Warning"


async def test_binding_conflict_with_a_pod_bound_elsewhere_drops_it(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    await cluster.create("nodes", node_dict("node-a"))
    await cluster.create("schedulerprofiles", profile("mine", one_profile()))
    cluster.binding_failures = [409]
    async with start_operator() as runtime:
        # Another scheduler wins the race: the pod is bound elsewhere when ours is refused.
        async def bound_elsewhere(request: Any) -> None:
            await cluster.patch(
                "pods", str(request.name), {"spec": {"nodeName": "node-b"}}, "default"
            )

        cluster.before_bind = bound_elsewhere
        pod = await cluster.create("pods", pod_dict("taken", scheduler_name=SCHED))
        uid = pod["metadata"]["uid"]
        await cluster.wait_for(
            "the bound pod in the cache",
            lambda: (
                (p := runtime.scheduler.cache.get_pod(uid)) is not None
                and p.node_name == "node-b"
                and not runtime.scheduler.cache.is_assumed(uid)
            ),
        )
        await runtime.scheduler.wait_for_bindings()
        assert runtime.scheduler.queue.where(uid) is None
        assert uid not in runtime.cluster.unbound
        assert len(cluster.bindings) == 1


class Unreachable:
    """A replica cut off from the API server (for its Lease calls)."""

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        raise ConnectionError("unreachable")

    async def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        raise ConnectionError("unreachable")

    async def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        raise ConnectionError("unreachable")


async def test_only_the_lease_holder_schedules_and_a_standby_takes_over(
    cluster: Cluster, start_operators: OperatorsFactory
) -> None:
    await cluster.create("nodes", node_dict("node-a"))
    await cluster.create("schedulerprofiles", profile("mine", one_profile()))
    election = {
        "leader_elect": True,
        "lease_namespace": "default",
        "lease_name": "multisched",
        "lease_duration": 1.0,
        "renew_deadline": 0.5,
        "retry_period": 0.1,
    }
    async with start_operators(2, **election) as (a, b):
        await cluster.wait_for("a leader", lambda: a.scheduling or b.scheduling)
        first, second = (a, b) if a.scheduling else (b, a)
        standby = second.elector
        assert first.elector is not None and standby is not None
        await cluster.wait_for(
            "the standby to see the holder", lambda: standby.holder == first.identity
        )
        assert not second.scheduling
        lease = cluster.lease_server.leases["default", "multisched"]["spec"]
        assert lease["holderIdentity"] == first.identity
        outcomes: dict[str, list[str]] = {"first": [], "second": []}
        first.scheduler.on_outcome = lambda o: outcomes["first"].append(o.pod.name)
        second.scheduler.on_outcome = lambda o: outcomes["second"].append(o.pod.name)

        await cluster.create("pods", pod_dict("p1", scheduler_name=SCHED))
        await cluster.wait_for("p1 bound", lambda: node_of(cluster, "p1"))
        # The standby saw the pod (its queue is warm) but did not touch it.
        assert "p1" not in outcomes["second"]

        # The leader loses the API server: it steps down, the standby takes over.
        first.elector.api = Unreachable()
        await cluster.wait_for("the leader to step down", lambda: not first.scheduling)
        await cluster.wait_for("the standby to lead", lambda: second.scheduling)
        await cluster.create("pods", pod_dict("p2", scheduler_name=SCHED))
        await cluster.wait_for("p2 bound", lambda: node_of(cluster, "p2"))
        assert await cluster.wait_for(
            "the new leader's outcome", lambda: "p2" in outcomes["second"]
        )
        assert "p2" not in outcomes["first"]
        lease = cluster.lease_server.leases["default", "multisched"]["spec"]
        assert (lease["holderIdentity"], lease["leaseTransitions"]) == (second.identity, 1)
    # Stopping releases the lease for the next replica at once.
    lease = cluster.lease_server.leases["default", "multisched"]["spec"]
    assert lease["holderIdentity"] == ""


@pytest.mark.parametrize(
    "command",
    [
        ["-m", "multisched", "run", "--all-namespaces"],
        ["-m", "kopf", "run", "-A", "--standalone", "-m", "multisched.operator"],
    ],
    ids=["multisched-run", "kopf-run"],
)
async def test_the_operator_runs_as_a_process(
    cluster: Cluster, tmp_path: Path, command: list[str]
) -> None:
    await cluster.create("nodes", node_dict("node-a"))
    await cluster.create("pods", pod_dict("waiting", scheduler_name=SCHED))
    await cluster.create("schedulerprofiles", profile("mine", one_profile()))
    port, secure_port = free_port(), free_port()
    answer_reviews(cluster.kmock, {"scrape-token": "prometheus"}, {("prometheus", "/metrics")})
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig(tmp_path, str(cluster.kmock.url).rstrip("/"))),
        "MULTISCHED_METRICS_PORT": str(port),
        "MULTISCHED_SECURE_PORT": str(secure_port),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "operator"), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("KUBERNETES_SERVICE_HOST", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *command,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        await cluster.wait_for("the binding", lambda: node_of(cluster, "waiting"), timeout=30)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/readyz") as resp:
                assert resp.status == 200
            async with http.get(f"http://127.0.0.1:{port}/metrics") as resp:
                assert resp.status == 404  # not on the open port
            url = f"https://127.0.0.1:{secure_port}"
            statuses = {}
            for who, headers in (
                ("anonymous", {}),
                ("bad token", {"Authorization": "Bearer nope"}),
                ("scraper", {"Authorization": "Bearer scrape-token"}),
            ):
                async with http.get(f"{url}/metrics", headers=headers, ssl=False) as resp:
                    statuses[who] = resp.status
                    text = await resp.text()
            async with http.get(
                f"{url}/debug/queue", headers={"Authorization": "Bearer scrape-token"}, ssl=False
            ) as resp:
                statuses["scraper on /debug/queue"] = resp.status
        assert statuses == {
            "anonymous": 403,
            "bad token": 401,
            "scraper": 200,
            "scraper on /debug/queue": 403,
        }
        assert (
            'scheduler_schedule_attempts_total{profile="my-scheduler",result="scheduled"}' in text
        )
    finally:
        if proc.returncode is None:
            proc.terminate()
        output, _ = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0, output.decode()[-3000:]


async def test_a_pods_kopf_worker_ends_soon_and_a_later_event_is_still_handled(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    """kopf's worker for a pod ends soon after the pod's last event (a backlog's workers
    would otherwise fill every young collection); the pod's next event starts another."""
    async with start_operator() as runtime:
        other = await cluster.create("pods", pod_dict("other", scheduler_name="someone-else"))
        uid = other["metadata"]["uid"]
        await cluster.wait_for("the pod seen", lambda: uid in runtime.cluster.others)

        def workers() -> list[str]:
            return [t.get_name() for t in asyncio.all_tasks() if uid in t.get_name()]

        # kopf's default would keep the worker 5 s.
        await cluster.wait_for("its worker gone", lambda: not workers(), timeout=2.0)
        await cluster.delete("pods", "other", "default")
        await cluster.wait_for("the deletion seen", lambda: uid not in runtime.cluster.others)
