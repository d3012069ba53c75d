"""The health/metrics endpoints (the command line is in test_options)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import aiohttp
import pytest
from prometheus_client import CONTENT_TYPE_LATEST

from builders import pod_dict
from multisched.cache import Cache, PodInfo
from multisched.operator.health import HealthServer
from multisched.operator.metrics import Metrics
from multisched.operator.secure import SecureServer, UserInfo, serving_context
from multisched.queue import SchedulingQueue
from multisched.scheduler.introspect import EngineView
from multisched.transport.serving import Reply, Request


class Client:
    """GETs to the probes' server, and to the secure port's under ``/secure``."""

    def __init__(self, http: aiohttp.ClientSession, health: str, secure: str) -> None:
        self.http, self.health, self.secure = http, health, secure

    async def get(self, path: str) -> aiohttp.ClientResponse:
        secure = path.startswith("/secure/")
        url = self.secure + path.removeprefix("/secure") if secure else self.health + path
        resp = await self.http.get(url, ssl=False)
        await resp.read()
        return resp


class AllowAll:
    """Every caller may read everything (the secure port's checks are in test_secure)."""

    async def authenticate(self, token: str) -> UserInfo | None:
        return UserInfo("scraper")

    async def authorize(self, user: UserInfo, path: str, verb: str) -> tuple[bool, str]:
        return True, ""


@pytest.fixture
async def http() -> AsyncIterator[tuple[Client, Metrics, list[bool]]]:
    """The probes' server, and beside it /metrics as the secure port serves it."""
    metrics = Metrics()
    queue = SchedulingQueue(
        lambda a, b: a.timestamp < b.timestamp,
        lambda pod: "SchedulingGates" if pod.name.startswith("gated") else None,
    )
    for name in ("a", "b", "gated-1", "gated-2", "gated-3"):
        queue.add(PodInfo.parse(pod_dict(name, scheduler_name="s")))
    metrics.track_scheduler(EngineView(queue, Cache()))
    synced = [False]
    health = HealthServer("127.0.0.1", 0, ready=lambda: synced[0])

    async def serve_metrics(request: Request) -> Reply:
        return Reply(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    secure = SecureServer(
        "127.0.0.1", 0, serving_context(None, None), AllowAll(), {"/metrics": serve_metrics}
    )
    await health.start()
    await secure.start()
    try:
        async with aiohttp.ClientSession() as http:
            yield (
                Client(http, f"http://127.0.0.1:{health.port}", f"https://127.0.0.1:{secure.port}"),
                metrics,
                synced,
            )
    finally:
        await secure.stop()
        await health.stop()


async def test_healthz_answers_while_readyz_waits_for_the_caches(
    http: tuple[Client, Metrics, list[bool]],
) -> None:
    client, _, synced = http
    assert (await client.get("/healthz")).status == 200
    assert (await client.get("/readyz")).status == 503
    synced[0] = True
    assert (await client.get("/readyz")).status == 200
    assert (await client.get("/livez")).status == 200
    assert (await client.get("/metrics")).status == 404  # only on the secure port


async def test_metrics_are_exposed(
    http: tuple[Client, Metrics, list[bool]],
) -> None:
    client, metrics, _ = http
    metrics.bound("my-scheduler", 0.012, 0.01, 0.5, 1, after_flush=False)
    metrics.attempt("my-scheduler", "unschedulable", 0.001)
    metrics.plugin("NodeResourcesFit", "Filter", "Unschedulable", 0.00002)
    resp = await client.get("/secure/metrics")
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/plain")
    text = await resp.text()
    lines = set(text.splitlines())
    assert 'scheduler_schedule_attempts_total{profile="my-scheduler",result="scheduled"} 1.0' in (
        lines
    )
    assert 'scheduler_pending_pods{queue="active"} 2.0' in lines
    assert 'scheduler_pending_pods{queue="gated"} 3.0' in lines
    for name in (
        "scheduler_scheduling_attempt_duration_seconds_bucket",
        "scheduler_pod_scheduling_sli_duration_seconds_count",
        "multisched_binding_duration_seconds_sum",
        "multisched_leader",
    ):
        assert name in text
    assert (
        'scheduler_plugin_execution_duration_seconds_count{extension_point="Filter",'
        'plugin="NodeResourcesFit",status="Unschedulable"} 1.0'
    ) in lines


def test_kopf_retry_lines_are_demoted_and_its_final_failure_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from multisched.operator.handlers import QuietRetries

    QuietRetries.install()
    QuietRetries.install()  # idempotent
    kopf_logger = logging.getLogger("kopf._cogs.clients.watching")
    assert sum(isinstance(f, QuietRetries) for f in kopf_logger.filters) == 1
    caplog.set_level(logging.INFO)
    kopf_logger.error("Request attempt #1/9 failed; will retry: GET https://x/api/v1/pods")
    kopf_logger.error("Request attempt #9/9 failed; escalating: GET https://x/api/v1/pods")
    kopf_logger.error("something else")
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [
        "Request attempt #9/9 failed",
        "something else",
    ]


async def test_failed_bindings_and_profile_readiness_are_exposed(
    http: tuple[Client, Metrics, list[bool]],
) -> None:
    client, metrics, _ = http
    metrics.track_profiles(lambda: {"team-a": True, "team-b": False})
    metrics.binding_failed("my-scheduler")
    lines = set((await (await client.get("/secure/metrics")).text()).splitlines())
    assert 'multisched_binding_errors_total{profile="my-scheduler"} 1.0' in lines
    assert 'multisched_profile_ready{schedulerprofile="team-a"} 1.0' in lines
    assert 'multisched_profile_ready{schedulerprofile="team-b"} 0.0' in lines
