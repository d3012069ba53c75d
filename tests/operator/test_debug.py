"""What the running scheduler shows of itself: the queue, the config in force, the cache
against the API (``/debug/queue``, ``/configz``, ``/debug/cache``, SIGUSR2), and the
``queue`` command that reads them."""

from __future__ import annotations

import argparse
import asyncio
import logging
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from builders import make_pod, node_dict, pod_dict
from conftest import Cluster, OperatorFactory, kubeconfig
from kmock_support import answer_reviews
from multisched.cache import Cache
from multisched.cache.comparer import compare
from multisched.cli import build_parser
from multisched.framework.events import ADD as ACTION_ADD
from multisched.framework.events import NODE, NODE_ADD, UPDATE_NODE_LABEL, ClusterEvent
from multisched.live import queue as queue_cli
from multisched.operator import debug
from multisched.queue import SchedulingQueue
from multisched.scheduler.introspect import EngineView
from ports import free_port

SCHED = "my-scheduler"
ADMIN_TOKEN = "test-token"  # the kmock kubeconfig's


def _queue(now: list[float]) -> SchedulingQueue:
    def gates(pod: Any) -> str | None:
        return "SchedulingGates" if pod.name.startswith("gated") else None

    q = SchedulingQueue(
        lambda a, b: a.timestamp < b.timestamp, gates, clock=lambda: now[0], max_backoff=10
    )
    q.plugin_events = {
        "NodeResourcesFit": (ClusterEvent(NODE, ACTION_ADD | UPDATE_NODE_LABEL),),
        "SchedulingGates": (ClusterEvent("Pod", 2**10 - 1 & ~3),),
    }
    return q


def test_queue_view_follows_a_pod_from_failure_to_wakeup() -> None:
    now = [100.0]
    q = _queue(now)
    q.add(make_pod("gated-a", scheduler_name=SCHED))
    q.add(make_pod("web", scheduler_name=SCHED))
    qpi = q.pop_nowait()
    assert qpi is not None and qpi.pod.name == "web"
    message = "0/3 nodes are available: 3 Insufficient cpu."
    q.add_unschedulable(qpi, {"NodeResourcesFit"}, message=message)
    view = debug.queue_view(EngineView(q, Cache()), leading=True)
    assert view["profiles"] == {
        SCHED: {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 1, "in-flight": 0}
    }
    by_pod = {p["pod"]: p for p in view["pods"]}
    web = by_pod["default/web"]
    assert (web["queue"], web["attempts"], web["message"]) == ("unschedulable", 1, message)
    assert web["unschedulablePlugins"] == ["NodeResourcesFit"]
    assert web["waitingFor"] == ["NodeAdd,UpdateNodeLabel"]
    assert web["wokenBy"] is None
    gated = by_pod["default/gated-a"]
    assert (gated["queue"], gated["unschedulablePlugins"]) == ("gated", ["SchedulingGates"])

    # A node arrives: the pod moves, and says what moved it. Its backoff (1 s, from 100.0)
    # is not over: it ends with its 1 s ordering window, at 102.0.
    now[0] = 100.5
    q.move_all_to_active_or_backoff(NODE_ADD)
    (web,) = debug.queue_view(EngineView(q, Cache()), leading=True, pod="default/web")["pods"]
    assert (web["queue"], web["wokenBy"]) == ("backoff", "NodeAdd")
    assert web["backoffRemainingSeconds"] == pytest.approx(1.5)
    assert web["wokenAt"] is not None and web["firstSeen"] is not None


def test_an_event_no_rejecting_plugin_registered_moves_nothing_and_says_so() -> None:
    now = [0.0]
    q = _queue(now)
    q.add(make_pod("web", scheduler_name=SCHED))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.add_unschedulable(qpi, {"NodeResourcesFit"}, message="no room")
    q.move_all_to_active_or_backoff("AssignedPodDelete")  # Fit did not register it
    (web,) = debug.queue_view(EngineView(q, Cache()), leading=True)["pods"]
    assert (web["queue"], web["wokenBy"]) == ("unschedulable", None)
    # A plugin the queue knows nothing of may be helped by anything, as upstream.
    q.plugin_events = {}
    (web,) = debug.queue_view(EngineView(q, Cache()), leading=True)["pods"]
    assert web["waitingFor"] == ["*"]


def test_a_pod_outside_the_queue_says_where_it_is() -> None:
    q = _queue([0.0])
    cache = Cache()
    cache.assume_pod(make_pod("web"), "n1")
    view = debug.queue_view(EngineView(q, cache), leading=False, pod="default/web")
    assert view["pods"] == []
    assert view["notQueued"] == "pod default/web is not in the queue: it is assumed on n1"
    view = debug.queue_view(EngineView(q, cache), leading=False, pod="default/other")
    assert "unknown to this scheduler" in view["notQueued"]


def test_queue_view_is_bounded_but_counts_everything() -> None:
    q = _queue([0.0])
    for i in range(5):
        q.add(make_pod(f"p{i}", scheduler_name=SCHED))
    view = debug.queue_view(EngineView(q, Cache()), leading=True, limit=2)
    assert len(view["pods"]) == 2 and view["truncated"] == 3
    assert view["profiles"][SCHED]["active"] == 5


def test_the_cache_comparer_names_every_difference() -> None:
    cache = Cache()
    for name in ("n1", "n2"):
        cache.add_node(node_dict(name))
    on_n1 = make_pod("on-n1", node_name="n1")
    gone = make_pod("gone", node_name="n2")
    moved = make_pod("moved", node_name="n1")
    for pod in (on_n1, gone, moved):
        cache.add_pod(pod)
    cache.assume_pod(make_pod("assumed"), "n2")
    missed = make_pod("missed", node_name="n3")
    listed = {
        on_n1.uid: (on_n1.key, "n1"),
        moved.uid: (moved.key, "n2"),
        missed.uid: (missed.key, "n3"),
    }
    diff = compare(cache, {"n1", "n3"}, listed)
    assert (diff.missed_nodes, diff.redundant_nodes) == (["n3"], ["n2"])
    assert diff.missed_pods == ["default/missed"]
    assert diff.redundant_pods == ["default/gone"]
    assert diff.moved_pods == {"default/moved": ("n1", "n2")}
    assert diff.assumed_pods == ["default/assumed"]
    assert not diff.consistent
    assert "pod default/moved is on n1 in the cache but on n2 in the API" in diff.lines()
    agreeing = compare(cache, {"n1", "n2"}, {**listed, moved.uid: (moved.key, "n1")})
    assert agreeing.missed_nodes == agreeing.redundant_nodes == []


# -- the running operator ----------------------------------------------------------------


def profile(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "multisched.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": name},
        "spec": {"profiles": [{"schedulerName": SCHED}]},
    }


async def fetch(url: str, token: str | None = ADMIN_TOKEN) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers, ssl=False) as resp:
        return resp.status, await resp.json()


DEBUG_PATHS = ("/configz", "/debug/queue", "/debug/cache", "/metrics")


async def test_the_running_scheduler_shows_its_queue_config_and_cache(
    cluster: Cluster,
    start_operator: OperatorFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv(queue_cli.TOKEN_ENV, raising=False)  # the kubeconfig's token is used
    answer_reviews(cluster.kmock, {ADMIN_TOKEN: "admin"}, {("admin", p) for p in DEBUG_PATHS})
    await cluster.create("nodes", node_dict("small", cpu="1"))
    await cluster.create("pods", pod_dict("big", scheduler_name=SCHED, requests={"cpu": "2"}))
    await cluster.create("schedulerprofiles", profile("mine"))
    port = free_port()
    async with start_operator(secure_port=port, bind_address="127.0.0.1") as runtime:
        url = f"https://127.0.0.1:{port}"

        for _ in range(100):
            _, view = await fetch(f"{url}/debug/queue?pod=default/big")
            if view["pods"] and view["pods"][0]["message"]:
                break
            await asyncio.sleep(0.05)
        (big,) = view["pods"]
        assert view["leading"] is True
        assert big["queue"] in ("unschedulable", "backoff")
        assert big["unschedulablePlugins"] == ["NodeResourcesFit"]
        failure = (
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are "
            # more than the node's whole allocatable: unresolvable there (v1.34+)
            "available: 1 Preemption is not helpful for scheduling."
        )
        assert big["message"] == failure
        assert big["attempts"] >= 1

        status, config = await fetch(f"{url}/configz")
        assert status == 200
        (applied,) = config["schedulerProfiles"]
        assert (applied["name"], applied["generation"], applied["appliedGeneration"]) == (
            "mine",
            1,
            1,
        )
        assert applied["schedulerNames"] == [SCHED]
        (prof,) = config["componentconfig"]["profiles"]
        assert prof["schedulerName"] == SCHED
        assert {"name": "NodeResourcesFit"} in prof["plugins"]["filter"]["enabled"]
        fit_args = next(c for c in prof["pluginConfig"] if c["name"] == "NodeResourcesFit")
        assert fit_args["args"]["scoringStrategy"]["type"] == "LeastAllocated"

        status, report = await fetch(f"{url}/debug/cache")
        assert (status, report["consistent"]) == (200, True)
        # A node the cache missed (as after a lost watch event) is named.
        runtime.scheduler.cache.remove_node("small")
        status, report = await fetch(f"{url}/debug/cache")
        assert (report["consistent"], report["missedNodes"]) == (False, ["small"])

        # The command line, as a user runs it, against the same endpoint: the served
        # (self-signed, CA:FALSE) certificate is the trust anchor that verifies it.
        ca = tmp_path / "served.pem"
        ca.write_text(await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", port)))
        args = build_parser().parse_args(
            [
                "queue",
                "big",
                "--namespace=default",
                f"--endpoint={url}",
                f"--certificate-authority={ca}",
                f"--kubeconfig={kubeconfig(tmp_path, str(cluster.kmock.url).rstrip('/'))}",
            ]
        )
        lines = await asyncio.to_thread(_run_cli, args)
        assert "pod:            default/big" in lines
        assert "rejected by:    NodeResourcesFit" in lines
        assert f"last failure:   {failure}" in lines
        assert any(line.startswith("waiting for:") and "NodeAdd" in line for line in lines)
        args.pod = None
        lines = await asyncio.to_thread(_run_cli, args)
        assert lines[0].split() == [
            "PROFILE",
            "ACTIVE",
            "BACKOFF",
            "UNSCHEDULABLE",
            "GATED",
            "IN-FLIGHT",
        ]
        assert any(line.split()[:3] == ["default/big", SCHED, big["queue"]] for line in lines)

        # Someone whose token the API server does not know gets one line, exit 1.
        args.token = "stolen"
        assert await asyncio.to_thread(queue_cli.cmd_queue, args) == 1
        assert "stolen" in reviewed_tokens(cluster)
        # Without the CA its self-signed certificate is not trusted: refused before any
        # request, so the operator never saw (and so never reviewed) the token.
        args.token, args.certificate_authority = "fresh", None
        capsys.readouterr()
        assert await asyncio.to_thread(queue_cli.cmd_queue, args) == 1
        assert "the scheduler's certificate is not trusted" in capsys.readouterr().err
        assert "fresh" not in reviewed_tokens(cluster)


def reviewed_tokens(cluster: Cluster) -> list[str]:
    reviews = cluster.kmock[
        lambda r: r.resource is not None and r.resource.plural == "tokenreviews"
    ]
    return [r.data["spec"]["token"] for r in reviews]


def _run_cli(args: argparse.Namespace) -> list[str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert queue_cli.cmd_queue(args) == 0
    return out.getvalue().splitlines()


async def test_sigusr2_logs_the_cache_comparison_and_the_queue(
    cluster: Cluster, start_operator: OperatorFactory, caplog: pytest.LogCaptureFixture
) -> None:
    await cluster.create("nodes", node_dict("small", cpu="1"))
    await cluster.create("pods", pod_dict("big", scheduler_name=SCHED, requests={"cpu": "2"}))
    await cluster.create("schedulerprofiles", profile("mine"))
    caplog.set_level(logging.INFO, logger="multisched")
    async with start_operator() as runtime:
        await cluster.wait_for(
            "the failed attempt",
            lambda: (
                runtime.scheduler.queue.where(next(iter(runtime.scheduler.queue._infos), ""))
                == "unschedulable"
            ),
        )
        await runtime.log_debug_dump()
    messages = [r.getMessage() for r in caplog.records]
    assert "cache comparison: cache and API agree" in messages
    assert any(m.startswith("queued pod default/big: unschedulable") for m in messages)
