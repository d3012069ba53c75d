"""The e2e suite: a real kube-apiserver (local or E2E_KUBECONFIG) and the operator as a user
runs it (``multisched run``), driven with kubectl."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver import free_port, local_apiserver, why_unavailable

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "crds" / "schedulerprofiles.multisched.dev.yaml"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


class Kube:
    """kubectl against the e2e cluster."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig)}

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(  # noqa: PLW1510 - the caller decides via ``check``
            ["kubectl", *args],
            input=stdin,
            text=True,
            capture_output=True,
            env=self.env,
            timeout=60,
        )
        if check and proc.returncode:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    def apply(self, obj: dict[str, Any] | str) -> None:
        text = obj if isinstance(obj, str) else yaml.safe_dump(obj)
        self.run("apply", "-f", "-", stdin=text)

    def get(self, *args: str) -> Any:
        return json.loads(self.run("get", *args, "-o", "json").stdout)

    def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = check()
            if last:
                return last
            time.sleep(0.3)
        raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")

    def add_node(self, name: str, labels: dict[str, str] | None = None, cpu: str = "4") -> None:
        """A fake Node: created, the not-ready taint removed, status Ready with capacity."""
        self.apply(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/hostname": name, **(labels or {})},
                },
            }
        )
        self.run(
            "patch",
            "node",
            name,
            "--type=json",
            "-p",
            '[{"op": "replace", "path": "/spec/taints", "value": []}]',
            check=False,
        )
        status = {
            "status": {
                "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "fake node",
                        "lastHeartbeatTime": None,
                        "lastTransitionTime": None,
                    }
                ],
            }
        }
        self.run(
            "patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(status)
        )

    def node_of(self, pod: str, namespace: str = "default") -> str:
        return str(self.get("pod", pod, "-n", namespace)["spec"].get("nodeName") or "")

    def events_for(self, kind: str, name: str, namespace: str = "default") -> list[dict[str, Any]]:
        items = self.get("events", "-n", namespace)["items"]
        return [
            e
            for e in items
            if e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"] == name
        ]


@pytest.fixture(scope="session")
def kubeconfig() -> Iterator[Path]:
    reason = why_unavailable()
    if reason:
        pytest.skip(reason)
    if shutil.which("kubectl") is None:
        pytest.skip("e2e skipped: kubectl is not on PATH")
    if os.environ.get("E2E_KUBECONFIG"):
        yield Path(os.environ["E2E_KUBECONFIG"])
        return
    with local_apiserver() as path:
        yield path


@pytest.fixture(scope="session")
def kube(kubeconfig: Path) -> Kube:
    k = Kube(kubeconfig)
    k.run("apply", "-f", str(CRD))
    k.run(
        "wait",
        "--for=condition=Established",
        "crd/schedulerprofiles.multisched.dev",
        "--timeout=30s",
    )
    # No controller manager: the default ServiceAccount that pod admission wants.
    k.run("create", "serviceaccount", "default", "-n", "default", check=False)
    return k


class Operator:
    """``multisched run`` in a subprocess, as a user starts it."""

    def __init__(self, kube: Kube, tmp: Path, *extra: str) -> None:
        self.port = free_port()
        self.log_path = tmp / f"operator-{self.port}.log"
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "multisched",
                "run",
                "--all-namespaces",
                "--metrics-port",
                str(self.port),
                *extra,
            ],
            env={**kube.env, "PYTHONUNBUFFERED": "1"},
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self, kill: bool = False) -> None:
        if self.proc.poll() is None:
            (self.proc.kill if kill else self.proc.terminate)()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


@pytest.fixture
def start_operator(
    kube: Kube, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Operator]]:
    started: list[Operator] = []

    def start(*extra: str) -> Operator:
        op = Operator(kube, tmp_path, *extra)
        started.append(op)
        return op

    yield start
    failed = getattr(request.node, "rep_call", None)
    for op in started:
        if failed is not None and failed.failed:
            print(f"--- operator log ({op.log_path}) ---\n{op.output()[-6000:]}")
        op.stop()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{rep.when}", rep)
