"""Helpers for the live-command tests: a kmock-backed cluster driven as a user runs it.

The commands are synchronous (``asyncio.run`` inside), so tests run them in a thread while
kmock serves from the test's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kmock import KubernetesEmulator

from multisched.cli import main

_uids = itertools.count(1)

BASES = {
    "pods": "/api/v1",
    "nodes": "/api/v1",
    "namespaces": "/api/v1",
    "priorityclasses": "/apis/scheduling.k8s.io/v1",
    "poddisruptionbudgets": "/apis/policy/v1",
    "schedulerprofiles": "/apis/multisched.dev/v1alpha1",
    "podgroups": "/apis/scheduling.x-k8s.io/v1alpha1",
    "elasticquotas": "/apis/scheduling.x-k8s.io/v1alpha1",
    "services": "/api/v1",
    "replicasets": "/apis/apps/v1",
}


class LiveCluster:
    def __init__(self, kmock: KubernetesEmulator, kubeconfig: Path) -> None:
        self.kmock = kmock
        self.kubeconfig = kubeconfig

    async def create(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """As the API server stores it: uid, resourceVersion, creationTimestamp set."""
        meta = obj.setdefault("metadata", {})
        n = next(_uids)
        meta.setdefault("uid", f"uid-{meta['name']}-{n}")
        meta.setdefault("resourceVersion", str(n))
        meta.setdefault("generation", 1)
        meta.setdefault("creationTimestamp", f"2024-01-01T00:{n // 60:02d}:{n % 60:02d}Z")
        ns = meta.get("namespace", "")
        path = BASES[kind] + (f"/namespaces/{ns}" if ns else "") + f"/{kind}"
        async with self.kmock.post(path, json=obj) as resp:
            assert resp.status in (200, 201), await resp.text()
        return obj

    async def run(self, *argv: str) -> tuple[int, str, str]:
        """``multisched ARGV`` against this cluster: exit code, stdout, stderr."""
        return await asyncio.to_thread(run_cli, *argv, "--kubeconfig", str(self.kubeconfig))

    def writes(self) -> list[Any]:
        return list(self.kmock[lambda r: r.method != "GET"])


def run_cli(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    """``multisched ARGV`` as a user runs it: exit code, stdout, stderr."""
    args = list(argv)
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        _stdin(stdin),
    ):
        try:
            code = main(args)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _stdin(text: str) -> Iterator[None]:
    saved = sys.stdin
    sys.stdin = io.StringIO(text)
    try:
        yield
    finally:
        sys.stdin = saved
