"""Operating multisched on a real API server: the secure port lets in only callers the API
server vouches for and whose RBAC allows the path, and ``kubectl multisched queue`` shows a
pod gated, then unschedulable with the plugin that rejected it, then gone once bound."""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_e2e_operator import pod, profile

from conftest import Kube, Operator
from multisched.live.reading import context_namespace
from multisched.operator.secure import self_signed

METRICS_PATHS = ["/metrics"]
DEBUG_PATHS = ["/configz", "/debug/queue", "/debug/cache"]


def reader(kube: Kube, name: str, paths: list[str]) -> str:
    """A ServiceAccount allowed to ``get`` ``paths`` (none: no grant), and a token for it."""
    kube.run("create", "serviceaccount", name, "-n", "default", check=False)
    if paths:
        kube.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": [{"nonResourceURLs": paths, "verbs": ["get"]}],
            }
        )
        kube.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}],
            }
        )
    return kube.run("create", "token", name, "-n", "default").stdout.strip()


def https_get(url: str, token: str | None = None) -> tuple[int, str]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the operator's self-signed certificate
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as resp:
            return int(resp.status), resp.read().decode()
    except urllib.error.HTTPError as err:
        return int(err.code), err.read().decode()


def up(kube: Kube, op: Operator) -> str:
    url = f"https://127.0.0.1:{op.secure_port}"

    def answering() -> bool:
        try:
            https_get(f"{url}/metrics")
        except OSError:
            return False
        return True

    kube.wait_for("the secure port", answering, 30)
    return url


def test_the_secure_port_answers_only_callers_rbac_allows(kube: Kube, start_operator: Any) -> None:
    op = start_operator()
    url = up(kube, op)
    suffix = uuid.uuid4().hex[:6]
    scraper = reader(kube, f"e2e-scraper-{suffix}", METRICS_PATHS)
    nobody = reader(kube, f"e2e-nobody-{suffix}", [])

    status, body = https_get(f"{url}/metrics")
    assert status == 403
    assert json.loads(body)["message"] == (
        'forbidden: User "system:anonymous" cannot get path "/metrics"'
    )
    status, body = https_get(f"{url}/metrics", nobody)
    assert status == 403
    assert (
        f'User "system:serviceaccount:default:e2e-nobody-{suffix}"' in json.loads(body)["message"]
    )
    assert https_get(f"{url}/metrics", "not-a-token")[0] == 401
    status, body = https_get(f"{url}/metrics", scraper)
    assert status == 200 and "multisched_leader 1.0" in body
    # Each path on its own: the metrics grant does not open the debug handlers.
    assert https_get(f"{url}/debug/queue", scraper)[0] == 403
    # The probes stay open on the plain port.
    with urllib.request.urlopen(f"http://127.0.0.1:{op.port}/healthz", timeout=10) as resp:
        assert resp.status == 200
    # /metrics is no longer on the plain port.
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{op.port}/metrics", timeout=10)
    except urllib.error.HTTPError as err:
        assert err.code == 404
    else:
        raise AssertionError("/metrics answered on the plain port")


def queue_cli(kube: Kube, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "multisched", "queue", *args],
        capture_output=True,
        text=True,
        # The token is the one each test names, not one from the caller's environment.
        env={
            **{k: v for k, v in kube.env.items() if k != "MULTISCHED_TOKEN"},
            "PYTHONPATH": os.pathsep.join(sys.path),
        },
        timeout=60,
        check=False,
    )


def stand_in_pod(
    kube: Kube, name: str, selector: str, port: int, namespace: str = "default"
) -> None:
    """A Pod object where the chart's operator pod would be: labelled as the chart labels
    it, its ``https`` port the operator's, its IP loopback (no kubelet here sets one)."""
    key, value = selector.split("=")
    body = pod(name, "e2e-nobody-schedules-this")
    body["metadata"]["namespace"] = namespace
    body["metadata"]["labels"] = {key: value}
    body["spec"]["containers"][0]["ports"] = [{"name": "https", "containerPort": port}]
    kube.apply(body)
    status = {"status": {"podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}}
    kube.run(
        "patch", "pod", name, "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps(status),
    )  # fmt: skip


class Listener(http.server.ThreadingHTTPServer):
    """An HTTPS listener on loopback with a self-signed certificate of its own, answering as
    a leading scheduler would: counts the connections it accepts, and records each request's
    Authorization header (None: anonymous)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Recorded)
        self.connections = 0
        self.authorizations: list[str | None] = []
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.pem = self_signed()
        self.port = int(self.server_address[1])

    def load(self, directory: Path) -> None:
        cert, key = directory / "decoy.pem", directory / "decoy.key"
        cert.write_bytes(self.pem[0])
        key.write_bytes(self.pem[1])
        self.context.load_cert_chain(cert, key)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = self.socket.accept()
        self.connections += 1
        return self.context.wrap_socket(conn, server_side=True), address


class _Recorded(http.server.BaseHTTPRequestHandler):
    server: Listener

    def do_GET(self) -> None:
        self.server.authorizations.append(self.headers.get("Authorization"))
        body = json.dumps({"leading": True, "profiles": {}, "pods": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads what was recorded."""


@pytest.fixture
def decoy(tmp_path: Path) -> Iterator[Listener]:
    listener = Listener()
    listener.load(tmp_path)
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        listener.shutdown()
        listener.server_close()


def test_queue_shows_a_pod_gated_then_unschedulable_then_gone(
    kube: Kube, start_operator: Any, decoy: Listener, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:6]
    sched, name = f"e2e-queue-{suffix}", f"queued-{suffix}"
    selector = f"app.kubernetes.io/name=multisched-e2e-{suffix}"
    op = start_operator()
    url = up(kube, op)
    token = reader(kube, f"e2e-debug-{suffix}", DEBUG_PATHS)
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    # The operator's self-signed certificate (it names 127.0.0.1; CA:FALSE, its own trust
    # anchor) is what the command verifies it with.
    ca = tmp_path / "secure-port.pem"
    ca.write_text(ssl.get_server_certificate(("127.0.0.1", op.secure_port)))
    # Found in the context's namespace (kubectl's default: "default") ...
    home = context_namespace(str(kube.kubeconfig)) or "default"
    stand_in_pod(kube, f"multisched-{suffix}", selector, op.secure_port, home)
    # ... and only there: the same label on a pod elsewhere is anyone's, and never asked
    # (listed before "default", a search of every namespace would ask it first).
    elsewhere = f"decoy-{suffix}"
    kube.run("create", "namespace", elsewhere)
    # No controller manager here makes the account the ServiceAccount admission wants.
    kube.run("create", "serviceaccount", "default", "-n", elsewhere, check=False)
    stand_in_pod(kube, f"multisched-{suffix}", selector, decoy.port, elsewhere)
    kube.add_node(f"small-{suffix}", cpu="1")
    kube.apply(profile(f"queue-{suffix}", {"profiles": [{"schedulerName": sched}]}))
    gated = pod(name, sched, schedulingGates=[{"name": "example.com/wait"}])
    gated["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
    kube.apply(gated)
    # As a user runs it: found by label, the leader asked, its certificate verified, the
    # user's token (from a file, out of ps) presented.
    where = (f"--selector={selector}", f"--certificate-authority={ca}")
    as_reader = (*where, f"--token-file={token_file}")

    def shows(*expected: str) -> str | None:
        out = queue_cli(kube, name, "-n", "default", *as_reader)
        assert out.returncode == 0, out.stderr
        return out.stdout if all(e in out.stdout for e in expected) else None

    text = kube.wait_for("the gated pod", lambda: shows("queue:          gated"), 30)
    assert "rejected by:    SchedulingGates" in text
    assert "waiting for:    PodUpdatePodSchedulingGatesEliminated" in text

    kube.run(
        "patch", "pod", name, "--type=json", "-p",
        '[{"op": "remove", "path": "/spec/schedulingGates"}]',
    )  # fmt: skip
    text = kube.wait_for(
        "the failed attempt", lambda: shows("rejected by:    NodeResourcesFit"), 30
    )
    assert "Insufficient cpu" in text
    assert "attempts:       1" in text or "attempts:       2" in text
    assert "waiting for:" in text or "backoff left:" in text
    listing = queue_cli(kube, *as_reader).stdout
    assert any(line.split()[:2] == [f"default/{name}", sched] for line in listing.splitlines())

    kube.add_node(f"big-{suffix}", cpu="4")
    kube.wait_for("the binding", lambda: kube.node_of(name), 30)
    text = kube.wait_for("the pod gone from the queue", lambda: shows(f"bound to big-{suffix}"), 30)
    assert text.strip() == f"pod default/{name} is not in the queue: it is bound to big-{suffix}"

    # The config in force and the cache against the API, from the same endpoint.
    status, body = https_get(f"{url}/configz", token)
    assert status == 200
    applied = {p["name"]: p for p in json.loads(body)["schedulerProfiles"]}
    assert applied[f"queue-{suffix}"]["appliedGeneration"] == 1
    assert applied[f"queue-{suffix}"]["schedulerNames"] == [sched]

    def consistent() -> dict[str, Any] | None:
        code, text = https_get(f"{url}/debug/cache", token)
        report: dict[str, Any] = json.loads(text)
        return report if code == 200 and report["consistent"] else None

    kube.wait_for("the cache to agree with the API", consistent, 30)
    # SIGUSR2: the same comparison, and the queue, to the log.
    mark = op.mark()
    op.proc.send_signal(signal.SIGUSR2)
    kube.wait_for(
        "the SIGUSR2 dump",
        lambda: (
            "cache comparison: cache and API agree" in op.output_since(mark)
            and "scheduling queue:" in op.output_since(mark)
        ),
        30,
    )
    assert op.alive

    # A token the API server does not know: one line, exit 1, no traceback.
    refused = queue_cli(kube, name, *where, "--token=forged")
    assert refused.returncode == 1
    assert "401 Unauthorized" in refused.stderr and "Traceback" not in refused.stderr
    # Unverified, it asks as anonymous, whatever token the kubeconfig holds.
    anonymous = queue_cli(kube, name, where[0], "--insecure-skip-tls-verify")
    assert anonymous.returncode == 1
    assert 'User "system:anonymous"' in anonymous.stderr and "Traceback" not in anonymous.stderr
    # Without the CA, the self-signed certificate is not trusted.
    untrusted = queue_cli(kube, name, where[0], f"--token-file={token_file}")
    assert untrusted.returncode == 1
    assert "the scheduler's certificate is not trusted" in untrusted.stderr
    assert (decoy.connections, decoy.authorizations) == (0, [])
    for namespace in (home, elsewhere):
        kube.run(
            "delete", "pod", f"multisched-{suffix}", "-n", namespace, "--force",
            "--grace-period=0", check=False,
        )  # fmt: skip
    kube.run("delete", "namespace", elsewhere, "--wait=false", check=False)
