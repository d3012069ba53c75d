"""For the volume e2e tests: kube-controller-manager running only the PV controller
(``persistentvolume-binder``), and a provisioner played by the test.

There is no kubelet and no storage here. The PV controller is the real one (same build as
the API server): it binds claims to PVs, and for a WaitForFirstConsumer claim whose class
names an external provisioner, it waits for ``volume.kubernetes.io/selected-node`` and
then for that provisioner. ``TestProvisioner`` is that provisioner: it creates a local PV on
the selected node for each such claim, after ``delay`` seconds, as an external provisioner
(a CSI driver's sidecar) does. Both stop with their context manager.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PROVISIONER = "e2e.multisched.io/test-provisioner"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
HOSTNAME = "kubernetes.io/hostname"


def csi_pv(name: str, klass: str, driver: str, handle: str, claim: str) -> dict[str, Any]:
    """A CSI PV of ``driver``, written bound to the claim ``default/<claim>``."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": klass,
            "csi": {"driver": driver, "volumeHandle": handle},
            "claimRef": {"namespace": "default", "name": claim},
        },
    }


def local_pv(
    name: str, klass: str, node: str, capacity: str = "1Gi", **extra: Any
) -> dict[str, Any]:
    """A local PV pinned to ``node`` by hostname (``extra``: more spec fields, or labels)."""
    labels = extra.pop("labels", None)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, **({"labels": labels} if labels else {})},
        "spec": {
            "capacity": {"storage": capacity},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": klass,
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": HOSTNAME, "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                }
            },
            **extra,
        },
    }


def controller_manager_missing() -> str:
    if shutil.which("kube-controller-manager") is None:
        return "volume e2e skipped: kube-controller-manager is not on PATH"
    return ""


@contextlib.contextmanager
def pv_controller(kubeconfig: Path, log_dir: Path) -> Iterator[subprocess.Popen[bytes]]:
    """kube-controller-manager with the PV controller and the resourceclaim controller (it
    creates claims from templates, for pods that ask), against ``kubeconfig``."""
    log = (log_dir / "kube-controller-manager.log").open("ab")
    proc = subprocess.Popen(
        [
            "kube-controller-manager",
            f"--kubeconfig={kubeconfig}",
            "--controllers=persistentvolume-binder,resourceclaim-controller",
            "--leader-elect=false",
            "--secure-port=0",
            # Claims and PVs are resynced often, so a binding shows up in seconds.
            "--pvclaimbinder-sync-period=2s",
            # The bench releases thousands of claims between contenders: not at 20 writes/s.
            "--kube-api-qps=500",
            "--kube-api-burst=1000",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        time.sleep(0.5)
        if proc.poll() is not None:
            tail = (log_dir / "kube-controller-manager.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"kube-controller-manager exited: {tail}")
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def kubectl_json(kubeconfig: Path, *args: str) -> Any:
    out = subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", *args, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if out.returncode:
        return None
    return json.loads(out.stdout)


class TestProvisioner:
    """Provisions local PVs for claims of classes whose provisioner is ``PROVISIONER``."""

    __test__ = False  # not a pytest class

    def __init__(self, kubeconfig: Path, delay: float = 0.0) -> None:
        self.kubeconfig = kubeconfig
        self.delay = delay
        self.provisioned: dict[str, str] = {}
        self._seen: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TestProvisioner:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)

    def _run(self) -> None:
        deadline = time.monotonic() + 600  # bounded: a test never runs this long
        while not self._stop.is_set() and time.monotonic() < deadline:
            with contextlib.suppress(Exception):  # the API server may be restarting
                self._once()
            self._stop.wait(0.3)

    def _ours(self) -> set[str]:
        classes = kubectl_json(self.kubeconfig, "get", "storageclasses") or {"items": []}
        return {
            c["metadata"]["name"] for c in classes["items"] if c.get("provisioner") == PROVISIONER
        }

    def _once(self) -> None:
        ours = self._ours()
        claims = kubectl_json(self.kubeconfig, "get", "pvc", "-A") or {"items": []}
        for claim in claims["items"]:
            meta, spec = claim["metadata"], claim["spec"]
            node = (meta.get("annotations") or {}).get(SELECTED_NODE)
            key = f"{meta['namespace']}/{meta['name']}"
            if spec.get("storageClassName") not in ours or not node or spec.get("volumeName"):
                continue
            if key in self.provisioned:
                continue
            first = self._seen.setdefault(key, time.monotonic())
            if time.monotonic() - first < self.delay:
                continue
            name = f"pvc-{meta['uid']}"
            pv = local_pv(
                name,
                spec["storageClassName"],
                node,
                spec["resources"]["requests"]["storage"],
                accessModes=spec["accessModes"],
                persistentVolumeReclaimPolicy="Delete",
                claimRef={
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
            )
            pv["metadata"]["annotations"] = {"pv.kubernetes.io/provisioned-by": PROVISIONER}
            out = subprocess.run(
                ["kubectl", f"--kubeconfig={self.kubeconfig}", "create", "-f", "-"],
                input=json.dumps(pv),
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if out.returncode == 0 or "AlreadyExists" in out.stderr:
                self.provisioned[key] = name
