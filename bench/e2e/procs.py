"""The two schedulers as processes: started as their users start them, watched through /proc."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from multisched.cache.quantity import parse_quantity

from .cgroups import KUBEADM_MILLICPU, PodCgroups
from .controlplane import ROOT, ControlPlane, free_port
from .report import KUBE_SCHEDULER, KUBE_SCHEDULER_JSON, MULTISCHED

CLK_TCK = os.sysconf("SC_CLK_TCK")
SAMPLE_SECONDS = 0.1


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of one process, or None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def peak_rss_mb(pid: int) -> float | None:
    """VmHWM: the resident set's high-water mark."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


@dataclass(frozen=True, slots=True)
class Contender:
    """A scheduler under test and the schedulerName its pods carry."""

    name: str
    scheduler_name: str
    argv: list[str]
    #: The flag that moves its health/metrics server to a free loopback port.
    port_flag: str
    #: Its CPU request in millicores: its group's weight under ``--pod-cgroups``.
    millicpu: int = KUBEADM_MILLICPU["kube-scheduler"]


def kube_scheduler(cp: ControlPlane, *, json: bool = False) -> Contender | None:
    """kube-scheduler with the default profile. ``json``: its client speaks JSON to the API
    server, as multisched's must (kubernetes_asyncio and kopf have no protobuf), instead of
    its default protobuf; the same binary otherwise, to tell the wire format's share apart."""
    binary = shutil.which("kube-scheduler")
    if binary is None:
        return None
    content_type = "contentType: application/json, " if json else ""
    # The default profile; only the client's rate limit is raised (50 qps would cap binding).
    config = (
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"clientConnection: {{{content_type}kubeconfig: '{cp.kubeconfig}', qps: 5000, "
        "burst: 10000}\n"
        "leaderElection: {leaderElect: false}\n"
        "profiles: [{schedulerName: default-scheduler}]\n"
    )
    name = KUBE_SCHEDULER_JSON if json else KUBE_SCHEDULER
    path = cp.workdir / f"{name}.yaml"
    path.write_text(config)
    argv = [binary, f"--config={path}", "--bind-address=127.0.0.1"]
    return Contender(
        name, "default-scheduler", argv, "--secure-port", KUBEADM_MILLICPU["kube-scheduler"]
    )


def multisched(
    cp: ControlPlane, scheduler_name: str, script: Path | None = None, name: str = MULTISCHED
) -> Contender:
    """``multisched run`` as the chart runs it: this interpreter's script, or ``script`` (a
    candidate: another venv's, for the A/B of a change or of an interpreter)."""
    if script is None:
        own = Path(sys.executable).with_name("multisched")
        binary = str(own) if own.exists() else (shutil.which("multisched") or "multisched")
    else:
        binary = str(script)
    argv = [
        binary,
        "run",
        "--all-namespaces",
        "--leader-elect=false",
        f"--kubeconfig={cp.kubeconfig}",
        "--metrics-address=127.0.0.1",
        # The secure port as the chart runs it (TLS, reviews on each uncached scrape).
        f"--secure-port={free_port()}",
        "--bind-address=127.0.0.1",
    ]
    return Contender(name, scheduler_name, argv, "--metrics-port", chart_millicpu())


def chart_millicpu(values: Path = ROOT / "charts" / "multisched" / "values.yaml") -> int:
    """The CPU the chart's pod requests (``resources.requests.cpu``), in millicores."""
    cpu = yaml.safe_load(values.read_text())["resources"]["requests"]["cpu"]
    return int(parse_quantity(cpu) * 1000)


@dataclass(slots=True)
class Running:
    """One started scheduler, its CPU sampled so that any instant's figure can be read back."""

    contender: Contender
    log_path: Path
    proc: subprocess.Popen[bytes]
    started: float
    #: The control plane's processes, sampled beside the scheduler.
    control_plane: tuple[int, ...] = ()
    #: (instant, CPU seconds) every SAMPLE_SECONDS while the process lives.
    samples: list[tuple[float, float]] = field(default_factory=list)
    #: (instant, CPU seconds of the control plane), sampled at the same instants.
    control_plane_samples: list[tuple[float, float]] = field(default_factory=list)
    #: The last VmHWM read: what remains known once the process is gone.
    last_rss_mb: float | None = None

    def cpu_at(self, instant: float) -> float | None:
        """CPU seconds used by ``instant`` (linear between the two nearest samples)."""
        return _interpolate(self.samples, instant)

    def control_plane_cpu_at(self, instant: float) -> float | None:
        """etcd + kube-apiserver CPU seconds by ``instant``."""
        return _interpolate(self.control_plane_samples, instant)

    def cpu_now(self) -> float | None:
        now = cpu_seconds(self.proc.pid)
        if now is None and self.samples:
            return self.samples[-1][1]
        return now

    def peak_rss_mb(self) -> float | None:
        now = peak_rss_mb(self.proc.pid)
        if now is not None:
            self.last_rss_mb = now
        return self.last_rss_mb

    def exited(self) -> int | None:
        return self.proc.poll()

    def log_tail(self, chars: int = 2000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


def _interpolate(samples: list[tuple[float, float]], instant: float) -> float | None:
    before = [s for s in samples if s[0] <= instant]
    after = [s for s in samples if s[0] >= instant]
    if not before or not after:
        return samples[-1][1] if samples else None
    (t0, c0), (t1, c1) = before[-1], after[0]
    return c0 if t1 == t0 else c0 + (c1 - c0) * (instant - t0) / (t1 - t0)


async def _sample(run: Running) -> None:
    while run.proc.poll() is None:
        cpu = cpu_seconds(run.proc.pid)
        now = time.monotonic()
        if cpu is not None:
            run.samples.append((now, cpu))
        if run.control_plane:
            others = [cpu_seconds(pid) for pid in run.control_plane]
            run.control_plane_samples.append((now, sum(c for c in others if c is not None)))
        run.peak_rss_mb()
        await asyncio.sleep(SAMPLE_SECONDS)


@contextlib.asynccontextmanager
async def started(
    contender: Contender,
    workdir: Path,
    tag: str,
    control_plane: tuple[int, ...] = (),
    cgroups: PodCgroups | None = None,
) -> AsyncIterator[Running]:
    """Runs the scheduler for the block (in a group of its own under ``cgroups``); stops
    it (and its sampler) afterwards."""
    log_path = workdir / f"{contender.name}-{tag}.log"
    port = free_port()
    while any(arg.endswith(f"={port}") for arg in contender.argv):  # the secure port's
        port = free_port()
    argv = [*contender.argv, f"{contender.port_flag}={port}"]
    with log_path.open("wb") as log:
        begin = time.monotonic()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    if cgroups is not None:
        try:
            cgroups.place(contender.name, contender.millicpu, proc.pid)
        except OSError:
            proc.kill()
            proc.wait()
            raise
    run = Running(contender, log_path, proc, begin, control_plane)
    sampler = asyncio.create_task(_sample(run))
    try:
        yield run
    finally:
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
        if proc.poll() is None:
            proc.terminate()
            try:
                await asyncio.to_thread(proc.wait, 15)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait)
