"""Start etcd and kube-apiserver on loopback for the e2e suite, or use E2E_KUBECONFIG.

Nothing here builds or downloads them: they are used when their binaries are on PATH.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

TOKEN = "e2e-admin-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def why_unavailable() -> str | None:
    if os.environ.get("E2E_KUBECONFIG"):
        return None
    missing = [b for b in ("etcd", "kube-apiserver", "openssl") if shutil.which(b) is None]
    if missing:
        return (
            f"e2e skipped: {', '.join(missing)} not on PATH and E2E_KUBECONFIG is not set "
            "(put etcd and kube-apiserver on PATH, or point E2E_KUBECONFIG at a cluster)"
        )
    return None


def _wait_ready(url: str, timeout: float, procs: list[subprocess.Popen[bytes]]) -> None:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{p.args[0]} exited with {p.returncode}")
        req = urllib.request.Request(f"{url}/readyz", headers={"Authorization": f"Bearer {TOKEN}"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=2) as resp:
                if resp.status == 200:
                    return
        except Exception as exc:
            last = str(exc)
        time.sleep(0.5)
    raise RuntimeError(f"kube-apiserver not ready after {timeout}s: {last}")


@contextlib.contextmanager
def local_apiserver() -> Iterator[Path]:
    """Yields a kubeconfig path for a fresh etcd + kube-apiserver pair."""
    with tempfile.TemporaryDirectory(prefix="multisched-e2e-") as tmp:
        d = Path(tmp)
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        subprocess.run(
            ["openssl", "genrsa", "-out", d / "sa.key", "2048"], check=True, capture_output=True
        )
        subprocess.run(
            ["openssl", "rsa", "-in", d / "sa.key", "-pubout", "-out", d / "sa.pub"],
            check=True,
            capture_output=True,
        )
        (d / "tokens.csv").write_text(f"{TOKEN},admin,admin,system:masters\n")
        logs = (d / "etcd.log").open("wb"), (d / "apiserver.log").open("wb")
        etcd = subprocess.Popen(
            [
                "etcd",
                "--data-dir",
                str(d / "etcd"),
                "--name",
                "e2e",
                "--listen-client-urls",
                f"http://127.0.0.1:{etcd_port}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{etcd_port}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-cluster",
                f"e2e=http://127.0.0.1:{peer_port}",
            ],
            stdout=logs[0],
            stderr=subprocess.STDOUT,
        )
        api = subprocess.Popen(
            [
                "kube-apiserver",
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                f"--secure-port={api_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--cert-dir={d / 'certs'}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={d / 'sa.pub'}",
                f"--service-account-signing-key-file={d / 'sa.key'}",
                "--authorization-mode=RBAC",
                f"--token-auth-file={d / 'tokens.csv'}",
                "--service-cluster-ip-range=10.0.0.0/24",
            ],
            stdout=logs[1],
            stderr=subprocess.STDOUT,
        )
        procs = [etcd, api]
        try:
            url = f"https://127.0.0.1:{api_port}"
            try:
                _wait_ready(url, 90, procs)
            except RuntimeError as exc:
                tail = (d / "apiserver.log").read_text()[-3000:]
                raise RuntimeError(f"{exc}\n--- kube-apiserver log tail ---\n{tail}") from exc
            kubeconfig = d / "kubeconfig"
            kubeconfig.write_text(
                "apiVersion: v1\nkind: Config\n"
                f"clusters: [{{name: e2e, cluster: {{server: '{url}', "
                "insecure-skip-tls-verify: true}}]\n"
                f"users: [{{name: admin, user: {{token: {TOKEN}}}}}]\n"
                "contexts: [{name: e2e, context: {cluster: e2e, user: admin}}]\n"
                "current-context: e2e\n"
            )
            yield kubeconfig
        finally:
            for p in reversed(procs):
                p.terminate()
            for p in reversed(procs):
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
            for f in logs:
                f.close()
