"""Start etcd and kube-apiserver on loopback for the e2e suite, or use E2E_KUBECONFIG.

Nothing here builds or downloads them: they are used when their binaries are on PATH.

``ControlPlane`` keeps etcd's data, the serving certificates and the token file in one
directory, so kube-apiserver can be stopped and started again on the same port while the
cluster's state survives, or a second kube-apiserver can serve the same etcd on another port
while the first is down. Every replica gets its own user (token), and an audit log records
the binding and Lease writes by user, so tests can tell which process sent which binding.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ports import free_port

TOKEN = "e2e-admin-token"
#: Users besides ``admin``: one per operator replica, all cluster admins.
REPLICA_USERS = ("replica-a", "replica-b", "replica-c")

#: Bindings, Lease writes and the secure port's reviews, at Metadata level (who, what, when,
#: answer); nothing else.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: ""
    resources: ["pods/binding"]
- level: Metadata
  verbs: ["create", "update", "patch"]
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
- level: Metadata
  resources:
  - group: authentication.k8s.io
    resources: ["tokenreviews"]
  - group: authorization.k8s.io
    resources: ["subjectaccessreviews"]
- level: None
"""


def apiserver_args(d: Path, etcd_port: int, port: int) -> list[str]:
    """kube-apiserver on loopback over the etcd at ``etcd_port``: token auth, RBAC, and the
    service-account keys and certificates kept in ``d`` (so a restart keeps them)."""
    return [
        "kube-apiserver",
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        # Since v1.3x a loopback advertise address is refused while the endpoint reconciler
        # runs; nothing here reaches the API through the kubernetes Service's endpoints.
        "--endpoint-reconciler-type=none",
        f"--cert-dir={d / 'certs'}",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={d / 'sa.pub'}",
        f"--service-account-signing-key-file={d / 'sa.key'}",
        "--authorization-mode=RBAC",
        f"--token-auth-file={d / 'tokens.csv'}",
        "--service-cluster-ip-range=10.0.0.0/24",
    ]


def _missing() -> list[str]:
    return [b for b in ("etcd", "kube-apiserver", "openssl") if shutil.which(b) is None]


def why_unavailable() -> str | None:
    if os.environ.get("E2E_KUBECONFIG"):
        return None
    missing = _missing()
    if missing:
        return (
            f"e2e skipped: {', '.join(missing)} not on PATH and E2E_KUBECONFIG is not set "
            "(`make k8s` builds the v1.37.2 control plane and `make e2e` puts it on PATH; "
            "or point E2E_KUBECONFIG at a cluster)"
        )
    return None


def why_no_local_control_plane() -> str | None:
    """The fault suite stops and restarts its own API server: a remote cluster won't do."""
    missing = _missing()
    if missing:
        return (
            f"fault suite skipped: {', '.join(missing)} not on PATH (it runs and restarts its "
            "own etcd + kube-apiserver; E2E_KUBECONFIG cannot stand in)"
        )
    return None


def _token(user: str) -> str:
    return TOKEN if user == "admin" else f"e2e-{user}-token"


def _ready(url: str) -> bool:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"{url}/readyz", headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=2) as resp:
            return bool(resp.status == 200)
    except Exception:
        return False


def _wait_ready(url: str, timeout: float, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{p.args!r} exited with {p.returncode}")
        if _ready(url):
            return
        time.sleep(0.2)
    raise RuntimeError(f"kube-apiserver at {url} not ready after {timeout}s")


def _stop(proc: subprocess.Popen[bytes], kill: bool, grace: float = 15) -> None:
    if proc.poll() is None:
        (proc.kill if kill else proc.terminate)()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One audited request: ``time`` is when the API server received it (epoch seconds)."""

    time: float
    user: str
    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int

    @property
    def ok(self) -> bool:
        return 200 <= self.code < 300


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class AuditLog:
    """Reads the API server's audit log incrementally (it is written synchronously)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""
        self.records: list[AuditRecord] = []

    def read(self) -> list[AuditRecord]:
        """Every record so far (new lines are parsed on each call)."""
        if not self.path.exists():
            return self.records
        with self.path.open("rb") as f:
            f.seek(self._offset)
            chunk = f.read()
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if not line.strip():
                continue
            ev = json.loads(line)
            if ev.get("stage") not in ("ResponseComplete", "Panic"):
                continue
            ref = ev.get("objectRef") or {}
            self.records.append(
                AuditRecord(
                    time=_epoch(ev["requestReceivedTimestamp"]),
                    user=(ev.get("user") or {}).get("username", ""),
                    verb=ev.get("verb", ""),
                    resource=ref.get("resource", ""),
                    subresource=ref.get("subresource", ""),
                    namespace=ref.get("namespace", ""),
                    name=ref.get("name", ""),
                    code=int((ev.get("responseStatus") or {}).get("code") or 0),
                )
            )
        return self.records

    def bindings(self) -> list[AuditRecord]:
        return [r for r in self.read() if r.subresource == "binding"]

    def lease_writes(self, name: str) -> list[AuditRecord]:
        return [r for r in self.read() if r.resource == "leases" and r.name in (name, "")]


class ControlPlane:
    """etcd + kube-apiserver on loopback whose API server can go down and come back."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.etcd_port, self.peer_port = free_port(), free_port()
        self.api_port = free_port()
        self.url = f"https://127.0.0.1:{self.api_port}"
        self.etcd: subprocess.Popen[bytes] | None = None
        self.api: subprocess.Popen[bytes] | None = None
        self.audit = AuditLog(self.dir / "audit.log")
        self._logs: list[Any] = []

    # -- setup ----------------------------------------------------------------------------

    def start(self) -> None:
        d = self.dir
        subprocess.run(
            ["openssl", "genrsa", "-out", d / "sa.key", "2048"], check=True, capture_output=True
        )
        subprocess.run(
            ["openssl", "rsa", "-in", d / "sa.key", "-pubout", "-out", d / "sa.pub"],
            check=True,
            capture_output=True,
        )
        users = ["admin", *REPLICA_USERS]
        (d / "tokens.csv").write_text(
            "".join(f"{_token(u)},{u},{u},system:masters\n" for u in users)
        )
        (d / "audit-policy.yaml").write_text(AUDIT_POLICY)
        log = (d / "etcd.log").open("ab")
        self._logs.append(log)
        self.etcd = subprocess.Popen(
            [
                "etcd",
                "--data-dir",
                str(d / "etcd"),
                "--name",
                "e2e",
                "--listen-client-urls",
                f"http://127.0.0.1:{self.etcd_port}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{self.etcd_port}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{self.peer_port}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{self.peer_port}",
                "--initial-cluster",
                f"e2e=http://127.0.0.1:{self.peer_port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.start_apiserver()
        for user in users:
            self.kubeconfig(user)

    def _spawn_apiserver(self, port: int) -> subprocess.Popen[bytes]:
        d = self.dir
        log = (d / f"apiserver-{port}.log").open("ab")
        self._logs.append(log)
        return subprocess.Popen(
            [
                *apiserver_args(d, self.etcd_port, port),
                f"--audit-policy-file={d / 'audit-policy.yaml'}",
                f"--audit-log-path={d / 'audit.log'}",
                "--audit-log-mode=blocking",
                "--shutdown-watch-termination-grace-period=2s",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def _ready_or_raise(self, proc: subprocess.Popen[bytes], port: int) -> None:
        assert self.etcd is not None
        try:
            _wait_ready(f"https://127.0.0.1:{port}", 90, [self.etcd, proc])
        except RuntimeError as exc:
            tail = (self.dir / f"apiserver-{port}.log").read_text(errors="replace")[-3000:]
            _stop(proc, kill=True)
            raise RuntimeError(f"{exc}\n--- kube-apiserver log tail ---\n{tail}") from exc

    def kubeconfig(self, user: str = "admin", port: int | None = None) -> Path:
        """A kubeconfig for ``user`` (admin, or one of ``REPLICA_USERS``)."""
        port = port or self.api_port
        path = self.dir / f"kubeconfig-{user}-{port}"
        if not path.exists():
            path.write_text(
                "apiVersion: v1\nkind: Config\n"
                f"clusters: [{{name: e2e, cluster: {{server: 'https://127.0.0.1:{port}', "
                "insecure-skip-tls-verify: true}}]\n"
                f"users: [{{name: {user}, user: {{token: {_token(user)}}}}}]\n"
                f"contexts: [{{name: e2e, context: {{cluster: e2e, user: {user}}}}}]\n"
                "current-context: e2e\n"
            )
        return path

    # -- faults ---------------------------------------------------------------------------

    @property
    def apiserver_up(self) -> bool:
        return self.api is not None and self.api.poll() is None

    def start_apiserver(self) -> float:
        """Start kube-apiserver on its port; returns the time (epoch s) it answered ready."""
        assert self.api is None or self.api.poll() is not None, "kube-apiserver already runs"
        self.api = self._spawn_apiserver(self.api_port)
        self._ready_or_raise(self.api, self.api_port)
        return time.time()

    def stop_apiserver(self, kill: bool = False) -> float:
        """SIGTERM (graceful) or SIGKILL (a crash); etcd keeps the data. Returns epoch s."""
        assert self.api is not None
        stopped = time.time()
        _stop(self.api, kill)
        return stopped

    @contextlib.contextmanager
    def side_apiserver(self) -> Iterator[Path]:
        """A second kube-apiserver on the same etcd and another port, for as long as the
        block runs: the cluster changes while clients of the usual port see it down."""
        port = free_port()
        proc = self._spawn_apiserver(port)
        try:
            self._ready_or_raise(proc, port)
            yield self.kubeconfig("admin", port)
        finally:
            _stop(proc, kill=False)

    def stop(self) -> None:
        for proc in (self.api, self.etcd):
            if proc is not None:
                _stop(proc, kill=False)
        for f in self._logs:
            f.close()


def signal_process(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, sig)


@contextlib.contextmanager
def control_plane() -> Iterator[ControlPlane]:
    with tempfile.TemporaryDirectory(prefix="multisched-e2e-") as tmp:
        plane = ControlPlane(Path(tmp))
        try:
            plane.start()
            yield plane
        finally:
            plane.stop()


@contextlib.contextmanager
def local_apiserver() -> Iterator[Path]:
    """Yields a kubeconfig path for a fresh etcd + kube-apiserver pair."""
    with control_plane() as plane:
        yield plane.kubeconfig()
