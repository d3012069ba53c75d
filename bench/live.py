"""Live-command figures: ``snapshot`` and ``explain`` end to end (fresh process each, as a user
runs them) against ``bench.fake_api``, and ``simulate`` pods/s with parsing included."""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .cluster import node, simple_pod
from .e2e import objects


@contextlib.contextmanager
def fake_api(nodes: int, pods: int, pending: int) -> Iterator[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.fake_api",
            "--nodes",
            str(nodes),
            "--pods",
            str(pods),
            "--pending",
            str(pending),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(10)


def kubeconfig(directory: Path, url: str) -> Path:
    path = directory / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "bench",
                "clusters": [{"name": "bench", "cluster": {"server": url}}],
                "users": [{"name": "bench", "user": {"token": "t"}}],
                "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
            }
        )
    )
    return path


def timed(*argv: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of ``multisched ARGV`` in a fresh process (startup included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "multisched", *argv],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"multisched {' '.join(argv)}: {proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def live_figures(nodes: int, pods: int, pending: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, fake_api(nodes, pods, pending) as url:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig(Path(tmp), url))}
        snap = Path(tmp) / "snap.yaml"
        snapshot_s, snapshot_cpu = timed("snapshot", "-o", str(snap), env=env)
        # The first pending pod (pending pods come last) and a bound one.
        explain_s, explain_cpu = timed("explain", f"pod-{pods - pending}", env=env)
        bound_s, bound_cpu = timed("explain", "pod-0", "-o", "json", env=env)
        file_s, file_cpu = timed("simulate", str(snap), "-o", "json", "--seed", "1", env=env)
        return {
            "nodes": nodes,
            "pods": pods,
            "snapshot_s": round(snapshot_s, 2),
            "snapshot_cpu_s": round(snapshot_cpu, 2),
            "snapshot_mb": round(snap.stat().st_size / 1e6, 1),
            "explain_pending_s": round(explain_s, 2),
            "explain_pending_cpu_s": round(explain_cpu, 2),
            "explain_bound_s": round(bound_s, 2),
            "explain_bound_cpu_s": round(bound_cpu, 2),
            "pending": pending,
            "simulate_snapshot_s": round(file_s, 2),
            "simulate_snapshot_cpu_s": round(file_cpu, 2),
        }


def simulate_file(path: Path, nodes: int, pending: int, kind: str = "simple") -> None:
    """``simple``: requests only, on nodes of varied sizes. ``mixed``: scenario (s)'s mixed
    shape (plain, spread, anti-affinity, affinity in turn) on the e2e bench's nodes (3 zones)."""
    import random

    rng = random.Random(1)
    docs: list[dict[str, Any]]
    if kind == "mixed":
        docs = [{**objects.node(i), "status": objects.node_status()} for i in range(nodes)]
        for i in range(pending):
            pod = objects.shaped_pod("sim", "bench", i, "mixed", nodes)
            pod["metadata"]["namespace"] = "default"
            docs.append(pod)
        # Copies: a dict used twice in one object (capacity and allocatable, a selector in two
        # constraints) would dump as an anchor and an alias, which no user file has.
        docs = json.loads(json.dumps(docs))
    else:
        docs = [node(i, rng) for i in range(nodes)]
        docs += [simple_pod(i) for i in range(pending)]
    docs.append(
        {
            "apiVersion": "multisched.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": "bench"},
            "spec": {"profiles": [{"schedulerName": "bench"}]},
        }
    )
    dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    path.write_text(yaml.dump_all(docs, Dumper=dumper, explicit_start=True))


def simulate_figures(nodes: int, pending: int, kind: str = "simple") -> dict[str, Any]:
    """``multisched simulate FILE -o json`` in-process: read, parse, schedule, render.

    A first run on a one-pod file loads the modules, so the figure is the command's
    throughput (interpreter start and imports, ~0.3 s once, are not per pod).
    """
    from multisched.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.yaml"
        simulate_file(path, 1, 1)
        with contextlib.redirect_stdout(io.StringIO()):
            main(["simulate", str(path), "-o", "json"])
        simulate_file(path, nodes, pending, kind)
        out = io.StringIO()
        start, cpu_start = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(out):
            code = main(["simulate", str(path), "-o", "json", "--seed", "1"])
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        # The same command as a user starts it: a fresh process, imports and all.
        cold_s, _ = timed("simulate", str(path), "-o", "json", "--seed", "1", env=dict(os.environ))
    assert code == 0
    placed = sum(p["status"] == "Scheduled" for p in json.loads(out.getvalue())["pods"])
    return {
        "nodes": nodes,
        "pending": pending,
        "kind": kind,
        "scheduled": placed,
        "seconds": round(elapsed, 2),
        "cpu_seconds": round(cpu, 2),
        "pods_per_s": round(pending / elapsed, 1),
        "pods_per_cpu_s": round(pending / cpu, 1),
        "cold_process_s": round(cold_s, 2),
        "cold_pods_per_s": round(pending / cold_s, 1),
    }


def main() -> None:
    which = sys.argv[1]
    if which == "simulate":
        kind = sys.argv[4] if len(sys.argv) > 4 else "simple"
        print(json.dumps(simulate_figures(int(sys.argv[2]), int(sys.argv[3]), kind)))
    else:
        print(json.dumps(live_figures(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))))


if __name__ == "__main__":
    main()
