"""bench-e2e collects kube-apiserver's and etcd's garbage before each measured span, so that
no span pays for a Go collection of garbage made before it (by the other scheduler's run, its
deletes, or the populating)."""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench.e2e.controlplane import ControlPlane, control_plane, missing_binaries
from bench.e2e.kube import Kube
from bench.e2e.scenarios import GC_PATH, Bench, Sizes

TOKEN = "t0ken"


def _bench(kube: Kube, cp: ControlPlane) -> Bench:
    return Bench(kube, cp, [], Sizes.scaled(0.1), timeout=10, concurrency=4)


@contextlib.asynccontextmanager
async def _heap_server(status: int, seen: list[dict[str, str]]) -> AsyncIterator[str]:
    """A Go process's ``/debug/pprof/heap`` on loopback, answering ``status``; its URL."""

    async def heap(request: web.Request) -> web.Response:
        seen.append({"query": request.query_string, **request.headers})
        return web.Response(status=status, body=b"profile")

    app = web.Application()
    app.router.add_get("/debug/pprof/heap", heap)
    async with TestServer(app, host="127.0.0.1") as server:
        yield str(server.make_url("")).rstrip("/")


@pytest.mark.parametrize("etcd_status", [200, 404])
async def test_both_go_processes_are_asked_to_collect_and_etcd_never_sees_the_token(
    etcd_status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    api_seen: list[dict[str, str]] = []
    etcd_seen: list[dict[str, str]] = []
    async with (
        _heap_server(200, api_seen) as api_url,
        _heap_server(etcd_status, etcd_seen) as etcd_url,
        Kube(api_url, TOKEN) as kube,
    ):
        cp = ControlPlane(api_url, TOKEN, Path("kubeconfig"), Path("."), etcd_url=etcd_url)
        bench = _bench(kube, cp)
        await bench.collect_garbage()
        await bench.collect_garbage()
    assert GC_PATH.endswith("?gc=1")
    assert [s["query"] for s in api_seen] == ["gc=1", "gc=1"]
    assert [s["query"] for s in etcd_seen] == ["gc=1", "gc=1"]
    assert all(s.get("Authorization") == f"Bearer {TOKEN}" for s in api_seen)
    assert not any("Authorization" in s for s in etcd_seen)
    warnings = [line for line in capsys.readouterr().out.splitlines() if "garbage" in line]
    if etcd_status == 200:
        assert warnings == []
    else:  # said once, naming who refused; the bench goes on
        assert len(warnings) == 1 and "etcd (404)" in warnings[0], warnings


def _gc_cycles(metrics: str, name: str) -> float:
    match = re.search(rf"^{name}(?:{{[^}}]*}})? (\S+)$", metrics, re.MULTILINE)
    assert match, f"{name} not in the metrics"
    return float(match.group(1))


@pytest.mark.skipif(
    bool(missing_binaries()), reason=f"needs {', '.join(missing_binaries())} on PATH"
)
async def test_the_bench_control_plane_collects_when_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On the bench's own etcd and kube-apiserver: both serve the collection (no warning),
    and each counts one more Go collection."""
    assert shutil.which("kube-apiserver")
    with control_plane() as cp:
        async with Kube(cp.url, cp.token) as kube, aiohttp.ClientSession() as plain:

            async def cycles() -> tuple[float, float]:
                async with kube.session.get("/metrics") as resp:
                    api = _gc_cycles(await resp.text(), "go_gc_duration_seconds_count")
                async with plain.get(f"{cp.etcd_url}/metrics") as resp:
                    etcd = _gc_cycles(await resp.text(), "go_gc_duration_seconds_count")
                return api, etcd

            before = await cycles()
            await _bench(kube, cp).collect_garbage()
            after = await cycles()
    assert "garbage" not in capsys.readouterr().out
    assert after[0] > before[0] and after[1] > before[1], (before, after)
