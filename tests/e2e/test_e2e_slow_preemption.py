"""Asynchronous preemption on a slow API server (issue 43): a preemptor whose victims take
long to delete does not hold up the pods behind it. Victims are deleted off the scheduling
cycle (upstream ``prepareCandidateAsync``), and DefaultPreemption's PreEnqueue keeps the
preemptor out of the queue until they are gone.

The slowness is real: a validating admission webhook on pod DELETE, served from this
process, holds every victim's deletion until the test lets it go."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_e2e_operator import pod, profile
from test_e2e_preemption import asking, priority_class

from conftest import Kube
from ports import free_port

#: Pods with this label go through the webhook when deleted.
SLOW = {"e2e-slow-delete": "yes"}
#: The webhook holds deletions of pods named so; others (the probe) it allows at once.
HELD_PREFIX = "slow-victim-"
#: How long a held deletion waits for the test at most: under the webhook's timeout (30 s,
#: the most the API allows) and the scheduler's 30 s per request, so a test that fails
#: leaves no call hanging. A deletion answered before the release fails the test.
HOLD_CAP = 25.0
VICTIMS = 5
OTHERS = 100


class HeldDeletes:
    """A validating admission webhook (HTTPS on loopback, self-signed) for pod DELETEs. It
    records each review's pod name as it arrives and as it is answered, and answers a held
    one (allowed) only once ``release`` is called, or after ``HOLD_CAP``."""

    def __init__(self, tmp: Path) -> None:
        self.cert, key = tmp / "webhook.crt", tmp / "webhook.key"
        subprocess.run(
            [
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                "-keyout", str(key), "-out", str(self.cert),
            ],
            check=True,
            capture_output=True,
        )  # fmt: skip
        self.received: list[str] = []
        self.answered: list[str] = []
        self._released = threading.Event()
        self._lock = threading.Lock()
        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        webhook = self

        class Review(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                webhook.review(request["name"])
                body = json.dumps(
                    {
                        "apiVersion": "admission.k8s.io/v1",
                        "kind": "AdmissionReview",
                        "response": {"uid": request["uid"], "allowed": True},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the API server's calls are the test's business, not pytest's output

        return Review

    def review(self, name: str) -> None:
        with self._lock:
            self.received.append(name)
        if name.startswith(HELD_PREFIX):
            self._released.wait(HOLD_CAP)
        with self._lock:
            self.answered.append(name)

    def held(self) -> tuple[list[str], list[str]]:
        """The victims' deletions received so far, and those answered."""
        with self._lock:
            return (
                [n for n in self.received if n.startswith(HELD_PREFIX)],
                [n for n in self.answered if n.startswith(HELD_PREFIX)],
            )

    def release(self) -> None:
        self._released.set()

    def configuration(self) -> dict[str, Any]:
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "e2e-slow-deletes"},
            "webhooks": [
                {
                    "name": "slow-deletes.e2e.multisched.dev",
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{self.port}/validate",
                        "caBundle": base64.b64encode(self.cert.read_bytes()).decode(),
                    },
                    "rules": [
                        {
                            "operations": ["DELETE"],
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "resources": ["pods"],
                            "scope": "Namespaced",
                        }
                    ],
                    "objectSelector": {"matchLabels": SLOW},
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "timeoutSeconds": 30,
                }
            ],
        }

    def __enter__(self) -> HeldDeletes:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()


def _probe_until_called(kube: Kube, webhook: HeldDeletes) -> None:
    """The API server calls the webhook once its configuration is in the API server's cache:
    a labelled pod is deleted until the webhook has seen such a deletion."""

    def called() -> bool:
        probe = _labelled(pod("slow-probe", "e2e-slow-nobody"), "probe")  # never scheduled
        probe["metadata"]["labels"].update(SLOW)
        kube.apply(probe)
        kube.run("delete", "pod", "slow-probe", "--wait=false")
        return "slow-probe" in webhook.received

    kube.wait_for("the webhook to be called", called, 30)


@pytest.fixture
def held_deletes(kube: Kube, tmp_path: Path) -> Iterator[HeldDeletes]:
    with HeldDeletes(tmp_path) as webhook:
        kube.apply(webhook.configuration())
        try:
            _probe_until_called(kube, webhook)
            yield webhook
        finally:
            webhook.release()  # what is still held is let go, then the test's pods
            kube.run(
                "delete", "pods", "-n", "default", "-l", "e2e=slow-preemption",
                "--force", "--grace-period=0", "--wait=false", check=False,
            )  # fmt: skip
            kube.run("delete", "validatingwebhookconfiguration", "e2e-slow-deletes")


def _bound(kube: Kube, role: str) -> dict[str, str]:
    pods = kube.get("pods", "-n", "default", "-l", f"e2e=slow-preemption,role={role}")["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in pods}


def _labelled(body: dict[str, Any], role: str) -> dict[str, Any]:
    body["metadata"]["labels"].update({"e2e": "slow-preemption", "role": role})
    return body


def test_a_preemptor_waiting_on_slow_deletes_holds_up_no_pod_behind_it(
    kube: Kube, start_operator: Any, held_deletes: HeldDeletes
) -> None:
    """One node full of low-priority victims, a preemptor that needs all ``VICTIMS`` of them
    gone, and ``OTHERS`` small pods that fit elsewhere, created once the first victim's
    deletion is held at the API server: all of them are bound while it is still held (none
    answered yet). Then the deletions go through and the preemptor takes the victims' node."""
    name = "e2e-slow-preemption"
    kube.apply(priority_class("e2e-slow-low", 10))
    kube.apply(priority_class("e2e-slow-high", 1000))
    kube.add_node("slow-full", cpu=str(VICTIMS))
    for i in range(3):  # 4 cpu each: too small for the preemptor, room for the others
        kube.add_node(f"slow-free-{i}", cpu="4")
    victims = []
    for i in range(VICTIMS):
        body = _labelled(asking(pod(f"{HELD_PREFIX}{i}"), "1", "e2e-slow-low"), "victim")
        body["spec"]["nodeName"] = "slow-full"
        body["metadata"]["labels"].update(SLOW)
        victims.append(body)
    kube.apply(yaml.safe_dump_all(victims))
    op = start_operator()
    kube.apply(profile(name, {"profiles": [{"schedulerName": name}]}))
    kube.wait_for("the operator to be ready", op.ready, 60)

    preemptor = asking(pod("slow-preemptor", name), str(VICTIMS), "e2e-slow-high")
    kube.apply(_labelled(preemptor, "preemptor"))
    kube.wait_for("a victim's deletion held at the API server", lambda: held_deletes.held()[0], 60)
    others = [_labelled(pod(f"slow-other-{i:03d}", name), "other") for i in range(OTHERS)]
    for body in others:
        body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    kube.apply(yaml.safe_dump_all(others))

    placed = kube.wait_for(
        f"all {OTHERS} other pods bound",
        lambda: (b := _bound(kube, "other")) and all(b.values()) and len(b) == OTHERS and b,
        120,
    )
    # Seen after every binding: the victims' deletions were received before the others
    # were even created, and none has been answered yet.
    received, answered = held_deletes.held()
    assert received, "no victim's deletion reached the webhook"
    assert answered == [], (
        f"a victim's deletion was answered before the others were bound: {op.output()[-3000:]}"
    )
    assert set(placed.values()) <= {f"slow-free-{i}" for i in range(3)}
    assert _bound(kube, "preemptor") == {"slow-preemptor": ""}  # it waits for its victims

    held_deletes.release()
    node = kube.wait_for(
        "the preemptor bound", lambda: _bound(kube, "preemptor")["slow-preemptor"], 90
    )
    assert node == "slow-full"
    assert _bound(kube, "victim") == {}, "the victims are gone"
    received, answered = held_deletes.held()
    assert sorted(set(received)) == [f"{HELD_PREFIX}{i}" for i in range(VICTIMS)]
    preempted = [e for e in kube.events_for("Pod", f"{HELD_PREFIX}0") if e["reason"] == "Preempted"]
    assert preempted, op.output()[-3000:]
