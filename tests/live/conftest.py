"""Fixtures: a kmock API server with the kinds the live commands read."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from kmock import KubernetesEmulator, ResourceInfo
from kmock._internal import parsing as kmock_parsing

from live_support import PROFILES, LiveCluster, write_kubeconfig


@pytest.fixture(autouse=True)
def _namespaces_listable(monkeypatch: pytest.MonkeyPatch) -> None:
    """kmock 0.8 reads ``/api/v1/namespaces`` as a namespace; it is the cluster-scoped list."""
    original = kmock_parsing.parse_path

    def parse_path(path: str) -> kmock_parsing.ParsedPath:
        if path.strip("/").split("/") == ["api", "v1", "namespaces"]:
            return kmock_parsing.ParsedPath("", "v1", "namespaces")
        return original(path)

    monkeypatch.setattr(kmock_parsing, "parse_path", parse_path)


@pytest.fixture
async def live(kmock: KubernetesEmulator, tmp_path: Path) -> LiveCluster:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        kmock.resources.load_bundled()
    kmock.resources[PROFILES] = ResourceInfo(
        kind="SchedulerProfile",
        singular="schedulerprofile",
        namespaced=False,
        verbs={"get", "list", "watch", "patch", "update", "create", "delete"},
        subresources={"status"},
    )
    url = str(kmock.url).rstrip("/")
    cluster = LiveCluster(kmock, write_kubeconfig(tmp_path / "kubeconfig", url))
    await cluster.create("namespaces", {"metadata": {"name": "default"}})
    return cluster
