"""Fixtures: a kmock API server with the kinds the live commands read."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmock import KubernetesEmulator

from kmock_support import declare_kinds, namespaces_listable, write_kubeconfig
from live_support import LiveCluster


@pytest.fixture(autouse=True)
def _namespaces_listable(monkeypatch: pytest.MonkeyPatch) -> None:
    namespaces_listable(monkeypatch)


@pytest.fixture
async def live(kmock: KubernetesEmulator, tmp_path: Path) -> LiveCluster:
    declare_kinds(kmock)
    url = str(kmock.url).rstrip("/")
    cluster = LiveCluster(kmock, write_kubeconfig(tmp_path / "kubeconfig", url))
    await cluster.create("namespaces", {"metadata": {"name": "default"}})
    return cluster
