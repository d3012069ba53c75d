"""The health/metrics endpoints and the command line of ``multisched run``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from multisched.config.resolved import LeaderElection
from multisched.operator.health import HealthServer
from multisched.operator.main import build_parser, options_from_args
from multisched.operator.metrics import Metrics
from multisched.operator.options import Options

Client = TestClient[web.Request, web.Application]


@pytest.fixture
async def http() -> AsyncIterator[tuple[Client, Metrics, list[bool]]]:
    metrics = Metrics()
    metrics.track_pending(lambda: {"active": 2, "backoff": 1, "unschedulable": 0, "gated": 3})
    synced = [False]
    server = HealthServer("127.0.0.1", 0, ready=lambda: synced[0], metrics=metrics.render)
    async with TestClient(TestServer(server.app())) as client:
        yield client, metrics, synced


async def test_healthz_answers_while_readyz_waits_for_the_caches(
    http: tuple[Client, Metrics, list[bool]],
) -> None:
    client, _, synced = http
    assert (await client.get("/healthz")).status == 200
    assert (await client.get("/readyz")).status == 503
    synced[0] = True
    assert (await client.get("/readyz")).status == 200


async def test_metrics_are_exposed(
    http: tuple[Client, Metrics, list[bool]],
) -> None:
    client, metrics, _ = http
    metrics.attempt("my-scheduler", "scheduled", 0.002)
    metrics.attempt("my-scheduler", "unschedulable", 0.001)
    metrics.bound("my-scheduler", 0.01, 0.5)
    metrics.plugin("NodeResourcesFit", "Filter", "Unschedulable", 0.00002)
    resp = await client.get("/metrics")
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/plain")
    text = await resp.text()
    lines = set(text.splitlines())
    assert 'multisched_schedule_attempts_total{profile="my-scheduler",result="scheduled"} 1.0' in (
        lines
    )
    assert 'multisched_pending_pods{queue="active"} 2.0' in lines
    assert 'multisched_pending_pods{queue="gated"} 3.0' in lines
    for name in (
        "multisched_scheduling_attempt_duration_seconds_bucket",
        "multisched_pod_scheduling_duration_seconds_count",
        "multisched_binding_duration_seconds_sum",
        "multisched_leader",
    ):
        assert name in text
    assert (
        'multisched_plugin_execution_duration_seconds_count{extension_point="Filter",'
        'plugin="NodeResourcesFit",status="Unschedulable"} 1.0'
    ) in lines


def test_the_chart_command_line() -> None:
    args = build_parser().parse_args(
        [
            "--all-namespaces",
            "--liveness",
            "http://0.0.0.0:8080/healthz",
            "--leader-elect=true",
            "--lease-namespace",
            "ops",
            "--lease-name",
            "multisched",
        ]
    )
    options = options_from_args(args, Options())
    assert (options.http_host, options.http_port) == ("0.0.0.0", 8080)
    election = options.leader_election(LeaderElection())
    assert (election.leader_elect, election.resource_namespace, election.resource_name) == (
        True,
        "ops",
        "multisched",
    )


def test_flags_override_the_profiles_leader_election_field_by_field() -> None:
    args = build_parser().parse_args(
        ["--metrics-port", "9100", "--leader-elect-renew-deadline", "4s", "--lease-name", "x"]
    )
    options = options_from_args(args, Options())
    assert options.http_port == 9100
    configured = LeaderElection(leader_elect=True, resource_namespace="cfg", resource_name="cfg")
    election = options.leader_election(configured)
    assert (election.leader_elect, election.resource_namespace, election.resource_name) == (
        True,
        "cfg",
        "x",
    )
    assert election.renew_deadline_seconds == 4
    assert not Options(leader_elect=False).leader_election(configured).leader_elect


def test_leader_elect_flag_forms() -> None:
    parse = build_parser().parse_args
    assert parse(["--leader-elect"]).leader_elect is True
    assert parse(["--leader-elect=false"]).leader_elect is False
    assert parse([]).leader_elect is None


def test_inconsistent_timings_are_refused() -> None:
    with pytest.raises(ValueError, match="less than lease duration"):
        Options(renew_deadline=20).check()
    with pytest.raises(ValueError, match=r"1\.2 x"):
        Options(retry_period=9).check()


def test_environment_options() -> None:
    options = Options.from_env(
        {
            "MULTISCHED_LEADER_ELECT": "true",
            "MULTISCHED_LEASE_NAMESPACE": "ns",
            "MULTISCHED_METRICS_PORT": "0",
        }
    )
    assert (options.leader_elect, options.lease_namespace, options.http_port) == (True, "ns", 0)
    with pytest.raises(ValueError, match="not a boolean"):
        Options.from_env({"MULTISCHED_LEADER_ELECT": "maybe"})
