"""The e2e suite: a real kube-apiserver (local or E2E_KUBECONFIG) and the operator as a user
runs it (``multisched run``), driven with kubectl."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import ClusterApi, NodeNameRecorder, Verdict, check_invariants
from parity_support import PROFILE, UPSTREAM, apply_profile

from apiserver import (
    AuditLog,
    ControlPlane,
    control_plane,
    free_port,
    local_apiserver,
    signal_process,
    why_no_local_control_plane,
    why_unavailable,
)

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "crds" / "schedulerprofiles.multisched.dev.yaml"


def control_plane_versions() -> list[str]:
    """Which control plane this run stands on (``make e2e``: v1.37.2; ``make e2e-smoke``:
    kube-apiserver v1.35), for the summary: -q hides pytest's header."""
    lines = []
    for binary in ("kube-apiserver", "kube-scheduler", "kube-controller-manager", "etcd"):
        path = shutil.which(binary)
        if path is None:
            lines.append(f"{binary}: not on PATH")
            continue
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
        lines.append(f"{binary}: {(out.stdout or out.stderr).splitlines()[0]} ({path})")
    return lines


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


class Kube:
    """kubectl against the e2e cluster."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        #: Nodes the running test added.
        self.added_nodes: list[str] = []
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

    def wait_established(self, *crds: str, timeout: float = 30.0) -> None:
        """``kubectl wait --for=condition=Established``, again while the CRD has no status
        yet: kubectl then fails at once ("<nil> is of the type <nil>") instead of waiting."""
        deadline = time.monotonic() + timeout
        for crd in crds:
            while True:
                args = ("wait", "--for=condition=Established", f"crd/{crd}", "--timeout=30s")
                proc = self.run(*args, check=False)
                if not proc.returncode:
                    break
                if "accessor error" not in proc.stderr or time.monotonic() > deadline:
                    raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
                time.sleep(0.2)

    def apply(self, obj: dict[str, Any] | str) -> None:
        text = obj if isinstance(obj, str) else yaml.safe_dump(obj)
        self.run("apply", "-f", "-", stdin=text)

    def get(self, *args: str) -> Any:
        return json.loads(self.run("get", *args, "-o", "json").stdout)

    @contextlib.contextmanager
    def watching(self, *args: str) -> Iterator[list[dict[str, Any]]]:
        """Every version of what ``kubectl get ARGS -w`` shows while the block runs (a
        field an API server clears later, as nominatedNodeName at binding, is still seen)."""
        seen: list[dict[str, Any]] = []
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.Popen(
                ["kubectl", "get", *args, "-w", "-o", "json"], stdout=out, text=True, env=self.env
            )
            try:
                time.sleep(1)  # the watch is open before the block creates what it watches
                yield seen
                time.sleep(1)  # the last versions come through
            finally:
                proc.terminate()
                proc.wait(10)
                out.seek(0)
                text, decoder, at = out.read(), json.JSONDecoder(), 0
                while (at := _skip_space(text, at)) < len(text):
                    obj, at = decoder.raw_decode(text, at)
                    seen.append(obj)

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
        """A fake Node: created, the not-ready taint removed, status Ready with capacity.
        It is deleted after the test (``_nodes_of_one_test``): tests share the API server."""
        self.added_nodes.append(name)
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

    def remove_nodes(self, *names: str) -> None:
        """Delete nodes ``add_node`` made, now rather than after the test: a test that plays
        a scenario twice counts only its own nodes in its messages ("0/3 nodes")."""
        self.run("delete", "node", *names, "--wait=true", check=False)
        for name in names:
            self.added_nodes.remove(name)

    def node_of(self, pod: str, namespace: str = "default") -> str:
        return str(self.get("pod", pod, "-n", namespace)["spec"].get("nodeName") or "")

    def events_for(self, kind: str, name: str, namespace: str = "default") -> list[dict[str, Any]]:
        items = self.get("events", "-n", namespace)["items"]
        return [
            e
            for e in items
            if e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"] == name
        ]


@pytest.fixture(autouse=True)
def _nodes_of_one_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test on the shared API server sees only the nodes it added: earlier tests' nodes
    are deleted when they end (their pods stay; they hold no room on nodes that are gone)."""
    yield
    if "kube" not in request.fixturenames:
        return
    kube: Kube = request.getfixturevalue("kube")
    if kube.added_nodes:
        kube.run("delete", "node", "--wait=false", *kube.added_nodes, check=False)
        kube.added_nodes.clear()


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


@pytest.fixture(scope="module")
def controllers(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """kube-controller-manager (the PV and resourceclaim controllers) beside the module's
    tests; they skip with a message without the binary."""
    from volumes_support import controller_manager_missing, pv_controller

    missing = controller_manager_missing()
    if missing:
        pytest.skip(missing)
    with pv_controller(kubeconfig, tmp_path_factory.mktemp("kcm")):
        yield kubeconfig


@pytest.fixture(scope="session")
def kube(kubeconfig: Path) -> Kube:
    k = Kube(kubeconfig)
    k.run("apply", "-f", str(CRD))
    k.wait_established("schedulerprofiles.multisched.dev")
    # No controller manager: the default ServiceAccount that pod admission wants.
    k.run("create", "serviceaccount", "default", "-n", "default", check=False)
    return k


#: A log record's first line (kopf's format) and its level; other lines continue a record.
_RECORD = re.compile(r"^\[\d{4}-\d\d-\d\d [^]]*\] \S+\s+\[(\w+)\s*\]")
_PROBLEM_LEVELS = frozenset({"WARNING", "ERROR", "CRITICAL"})


def problem_lines(text: str) -> tuple[list[str], int]:
    """Lines of WARNING-or-worse records (continuation lines such as a traceback's
    included) and the number of tracebacks among them."""
    lines: list[str] = []
    tracebacks = 0
    in_problem = False
    for line in text.splitlines():
        m = _RECORD.match(line)
        if m:
            in_problem = m.group(1) in _PROBLEM_LEVELS
        elif line.startswith("Traceback (most recent call last)"):
            in_problem = True  # printed outside logging
        if in_problem:
            lines.append(line)
            if line.startswith("Traceback (most recent call last)"):
                tracebacks += 1
    return lines, tracebacks


def summarize(lines: list[str], top: int = 5) -> str:
    """The most frequent kinds of log record among ``lines`` (numbers masked), with counts."""
    kinds: dict[str, int] = {}
    for line in lines:
        m = _RECORD.match(line)
        if m:
            what = line[m.start(1) - 1 :]
        elif line.strip() and not line.startswith((" ", "Traceback")):
            what = f"(traceback ends) {line}"
        else:
            continue
        kind = re.sub(r"\d+", "N", what)[:110]
        kinds[kind] = kinds.get(kind, 0) + 1
    ranked = sorted(kinds.items(), key=lambda kv: -kv[1])[:top]
    return "; ".join(f"{n}x {kind}" for kind, n in ranked)


class Operator:
    """``multisched run`` in a subprocess, as a user starts it."""

    def __init__(
        self, kube: Kube, tmp: Path, *extra: str, kubeconfig: Path | None = None, name: str = ""
    ) -> None:
        self.port = free_port()
        #: The secure port (/metrics, /configz, /debug/*), HTTPS; ``free_port`` never hands
        #: out ``port`` again.
        self.secure_port = free_port()
        self.name = name or f"operator-{self.port}"
        self.log_path = tmp / f"{self.name}-{self.port}.log"
        self.log = self.log_path.open("wb")
        env = {**kube.env, "PYTHONUNBUFFERED": "1"}
        if kubeconfig is not None:
            env["KUBECONFIG"] = str(kubeconfig)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "multisched",
                "run",
                "--all-namespaces",
                "--metrics-port",
                str(self.port),
                f"--secure-port={self.secure_port}",
                "--bind-address=127.0.0.1",
                *extra,
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")

    def mark(self) -> int:
        """Where the log ends now, to read what is logged from here on."""
        if not self.log.closed:
            self.log.flush()
        return self.log_path.stat().st_size

    def output_since(self, mark: int, until: int | None = None) -> str:
        with self.log_path.open("rb") as f:
            f.seek(mark)
            data = f.read() if until is None else f.read(max(0, until - mark))
        return data.decode(errors="replace")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def ready(self) -> bool:
        """``/readyz`` answers 200: the caches are synced and the loop schedules."""
        assert self.alive, f"{self.name} exited with {self.proc.returncode}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=5):
                return True
        except OSError:  # not listening yet, or 503 (HTTPError is an OSError)
            return False

    def freeze(self) -> None:
        signal_process(self.proc, signal.SIGSTOP)

    def thaw(self) -> None:
        signal_process(self.proc, signal.SIGCONT)

    def kill9(self) -> None:
        signal_process(self.proc, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, kill: bool = False) -> None:
        if self.proc.poll() is None:
            self.thaw()
            (self.proc.kill if kill else self.proc.terminate)()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
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


@pytest.fixture
def multisched_profile(kube: Kube, start_operator: Any) -> str:
    """The operator, serving the parity tests' SchedulerProfile: its schedulerName."""
    start_operator()
    apply_profile(kube, {})
    return PROFILE


#: Figures the fault scenarios measured, repeated in the terminal summary (``make e2e`` does
#: not pass ``-s``).
FIGURES: list[str] = []


def report_figure(line: str) -> None:
    print(f"\n{line}")
    FIGURES.append(line)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.section("control plane")
    for line in control_plane_versions():
        terminalreporter.write_line(line)
    if FIGURES:
        terminalreporter.section("fault suite figures")
        for line in FIGURES:
            terminalreporter.write_line(line)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{rep.when}", rep)


# -- the fault suite: a fresh control plane per scenario ------------------------------------


class FaultCluster:
    """One scenario's world: its own etcd + kube-apiserver, the operators it started, a
    client for bulk writes, and the nodeName recorder running from the start."""

    def __init__(self, plane: ControlPlane, tmp: Path) -> None:
        self.plane = plane
        self.tmp = tmp
        self.kube = Kube(plane.kubeconfig())
        self.kube.run("apply", "-f", str(CRD))
        self.kube.wait_established("schedulerprofiles.multisched.dev")
        # No controller manager: the default ServiceAccount that pod admission wants.
        self.kube.run("create", "serviceaccount", "default", "-n", "default", check=False)
        self.api = ClusterApi(plane.kubeconfig())
        self.recorder = NodeNameRecorder(self.api)
        self.recorder.start()
        self.operators: list[Operator] = []

    @property
    def audit(self) -> AuditLog:
        return self.plane.audit

    def start_operator(self, *extra: str, user: str = "admin") -> Operator:
        """A replica that authenticates as ``user``, so the audit log tells replicas apart."""
        op = Operator(
            self.kube,
            self.tmp,
            *extra,
            kubeconfig=self.plane.kubeconfig(user),
            name=f"{user}-{len(self.operators)}",
        )
        self.operators.append(op)
        return op

    def bound_count(self, keys: set[str] | None = None, user: str | None = None) -> int:
        """Successful bindings so far (from the audit log), optionally of some pods/user."""
        return sum(
            1
            for r in self.audit.bindings()
            if r.ok
            and (keys is None or f"{r.namespace}/{r.name}" in keys)
            and (user is None or r.user == user)
        )

    def wait_bindings(self, count: int, keys: set[str] | None = None, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while True:
            n = self.bound_count(keys)
            if n >= count:
                return n
            if time.monotonic() > deadline:
                raise AssertionError(f"only {n} of {count} bindings after {timeout}s")
            time.sleep(0.05)

    def check(
        self, meant_bound: set[str], survivors: list[Operator], timeout: float = 90
    ) -> Verdict:
        return check_invariants(
            self.api,
            self.recorder,
            meant_bound,
            {op.name: op.proc for op in survivors},
            timeout,
        )

    def close(self, failed: bool) -> None:
        self.recorder.stop()
        for op in self.operators:
            if failed:
                text = op.output()
                print(f"--- {op.name} log ({op.log_path}), last 4000 chars ---\n{text[-4000:]}")
            op.stop()
        self.api.close()


@pytest.fixture
def plane() -> Iterator[ControlPlane]:
    """A fresh etcd + kube-apiserver the scenario may stop and restart."""
    reason = why_no_local_control_plane()
    if reason:
        pytest.skip(reason)
    if shutil.which("kubectl") is None:
        pytest.skip("fault suite skipped: kubectl is not on PATH")
    with control_plane() as cp:
        yield cp


@pytest.fixture
def faults(
    plane: ControlPlane, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[FaultCluster]:
    fc = FaultCluster(plane, tmp_path)
    try:
        yield fc
    finally:
        rep = getattr(request.node, "rep_call", None)
        fc.close(failed=rep is not None and rep.failed)


# -- kube-scheduler beside multisched (test_e2e_parity*.py) -------------------------------


@pytest.fixture
def profile_fields() -> dict[str, Any]:
    """What both schedulers' profile holds besides its schedulerName: the defaults here; a
    test parametrizes it to compare another configuration."""
    return {}


@pytest.fixture
def kube_scheduler(
    kubeconfig: Path, tmp_path: Path, request: pytest.FixtureRequest, profile_fields: dict[str, Any]
) -> Iterator[Path]:
    """kube-scheduler serving ``UPSTREAM`` with ``profile_fields``, logging at -v=10 (its
    per-plugin scores); yields the log's path."""
    binary = shutil.which("kube-scheduler")
    if binary is None:
        pytest.skip("parity skipped: no kube-scheduler on PATH to compare with")
    config = tmp_path / "kube-scheduler.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"clientConnection: {{kubeconfig: '{kubeconfig}'}}\n"
        "leaderElection: {leaderElect: false}\n"
        f"profiles: [{json.dumps({'schedulerName': UPSTREAM, **profile_fields})}]\n"
    )
    log = tmp_path / "kube-scheduler.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                binary,
                f"--config={config}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                "-v=10",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield log
    finally:
        signal_process(proc, signal.SIGTERM)
        proc.wait(15)
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            print(f"--- kube-scheduler log ---\n{log.read_text(errors='replace')[-4000:]}")
