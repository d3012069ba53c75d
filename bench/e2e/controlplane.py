"""etcd + kube-apiserver on loopback for the benchmark.

The e2e harness (tests/e2e/apiserver.py) gives the port picker, the admin token and the
readiness wait; the flags differ: nodes are plain API objects here, so the admission plugin
that taints new nodes not-ready is off, collection deletes run in parallel, and etcd keeps its
data on tmpfs when there is one, so the disk's fsync is not what gets measured.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The e2e harness, and the tests' shared helpers it imports.
for _path in (ROOT / "tests", ROOT / "tests" / "e2e"):
    sys.path.insert(0, str(_path))

from apiserver import TOKEN, _wait_ready, apiserver_args, free_port  # noqa: E402

from .cgroups import KUBEADM_MILLICPU, PodCgroups  # noqa: E402

__all__ = ["TOKEN", "ControlPlane", "control_plane", "free_port", "missing_binaries"]

REQUIRED = ("etcd", "kube-apiserver", "openssl")
TMPFS = Path("/dev/shm")


@dataclass(frozen=True, slots=True)
class ControlPlane:
    url: str
    token: str
    kubeconfig: Path
    workdir: Path
    #: etcd and kube-apiserver: their CPU is the cost a scheduler's traffic puts on the
    #: API server, on the same cores.
    pids: tuple[int, ...] = ()
    #: ``--pod-cgroups``: where the schedulers go too, each weighted by its CPU request.
    cgroups: PodCgroups | None = None
    #: etcd's client URL; its ``/debug/pprof`` is served (``--enable-pprof``).
    etcd_url: str = ""


def missing_binaries() -> list[str]:
    return [b for b in REQUIRED if shutil.which(b) is None]


def _kubeconfig(url: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: bench, cluster: {{server: '{url}', "
        "insecure-skip-tls-verify: true}}]\n"
        f"users: [{{name: admin, user: {{token: {TOKEN}}}}}]\n"
        "contexts: [{name: bench, context: {cluster: bench, user: admin}}]\n"
        "current-context: bench\n"
    )


def _etcd_args(data: Path, client: int, peer: int) -> list[str]:
    return [
        "etcd",
        f"--data-dir={data}",
        "--name=bench",
        f"--listen-client-urls=http://127.0.0.1:{client}",
        f"--advertise-client-urls=http://127.0.0.1:{client}",
        f"--listen-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-cluster=bench=http://127.0.0.1:{peer}",
        "--quota-backend-bytes=8589934592",
        # /debug/pprof/heap?gc=1: the bench collects etcd's garbage before each measured span.
        "--enable-pprof",
    ]


def _apiserver_args(d: Path, etcd: int, port: int) -> list[str]:
    return [
        *apiserver_args(d, etcd, port),
        # No node controller runs: a taint added at creation would never be lifted; and no
        # pvc/pv-protection controller: a protection finalizer would never be removed.
        "--disable-admission-plugins=TaintNodesByCondition,StorageObjectInUseProtection",
        "--delete-collection-workers=8",
        "--max-requests-inflight=1000",
        "--max-mutating-requests-inflight=500",
    ]


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in reversed(procs):
        p.terminate()
    for p in reversed(procs):
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@contextlib.contextmanager
def control_plane(
    keep: Path | None = None, cgroups: PodCgroups | None = None
) -> Iterator[ControlPlane]:
    """A fresh etcd + kube-apiserver. Logs go to a temporary directory, or to ``keep``,
    which outlives the run. ``cgroups``: each in a group weighted as kubeadm requests."""
    with contextlib.ExitStack() as stack:
        if keep is None:
            d = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="multisched-bench-")))
        else:
            d = keep.resolve()
            d.mkdir(parents=True, exist_ok=True)
        key, pub = d / "sa.key", d / "sa.pub"
        subprocess.run(["openssl", "genrsa", "-out", key, "2048"], check=True, capture_output=True)
        subprocess.run(
            ["openssl", "rsa", "-in", key, "-pubout", "-out", pub], check=True, capture_output=True
        )
        (d / "tokens.csv").write_text(f"{TOKEN},admin,admin,system:masters\n")
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        data = Path(
            tempfile.mkdtemp(prefix="multisched-bench-etcd-", dir=TMPFS if TMPFS.is_dir() else d)
        )
        procs: list[subprocess.Popen[bytes]] = []
        try:
            with (d / "etcd.log").open("wb") as log:
                procs.append(
                    subprocess.Popen(
                        _etcd_args(data, etcd_port, peer_port),
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
            with (d / "apiserver.log").open("wb") as log:
                procs.append(
                    subprocess.Popen(
                        _apiserver_args(d, etcd_port, api_port),
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
            if cgroups is not None:
                for name, proc in zip(("etcd", "kube-apiserver"), procs, strict=True):
                    cgroups.place(name, KUBEADM_MILLICPU[name], proc.pid)
            url = f"https://127.0.0.1:{api_port}"
            try:
                _wait_ready(url, 90, procs)
            except RuntimeError as exc:
                tail = (d / "apiserver.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{exc}\n--- kube-apiserver log tail ---\n{tail}") from exc
            kubeconfig = d / "kubeconfig"
            kubeconfig.write_text(_kubeconfig(url))
            yield ControlPlane(
                url=url,
                token=TOKEN,
                kubeconfig=kubeconfig,
                workdir=d,
                pids=tuple(p.pid for p in procs),
                cgroups=cgroups,
                etcd_url=f"http://127.0.0.1:{etcd_port}",
            )
        finally:
            _stop(procs)
            shutil.rmtree(data, ignore_errors=True)
