"""What every kmock-backed test needs: a kubeconfig for it, the SchedulerProfile kind, and
kmock 0.8's namespace-list path read as the cluster-scoped list it is."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from kmock import KubernetesEmulator, ResourceInfo
from kmock._internal import parsing as kmock_parsing

PROFILES = "multisched.dev/v1alpha1/schedulerprofiles"


def write_kubeconfig(path: Path, url: str) -> Path:
    path.write_text(
        f"""
apiVersion: v1
kind: Config
current-context: kmock
clusters:
  - name: kmock
    cluster: {{server: "{url}"}}
users:
  - name: kmock
    user: {{token: test-token}}
contexts:
  - name: kmock
    context: {{cluster: kmock, user: kmock}}
"""
    )
    return path


def declare_kinds(kmock: KubernetesEmulator) -> None:
    """The built-in kinds, and SchedulerProfiles with their status subresource."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # kmock's importlib use
        kmock.resources.load_bundled()
    kmock.resources[PROFILES] = ResourceInfo(
        kind="SchedulerProfile",
        singular="schedulerprofile",
        namespaced=False,
        verbs={"get", "list", "watch", "patch", "update", "create", "delete"},
        subresources={"status"},
    )


def namespaces_listable(monkeypatch: pytest.MonkeyPatch) -> None:
    """kmock 0.8 reads ``/api/v1/namespaces`` as "namespace <missing>" and answers 500;
    parse it as the cluster-scoped ``namespaces`` resource it is."""
    original = kmock_parsing.parse_path

    def parse_path(path: str) -> kmock_parsing.ParsedPath:
        if path.strip("/").split("/") == ["api", "v1", "namespaces"]:
            return kmock_parsing.ParsedPath("", "v1", "namespaces")
        return original(path)

    monkeypatch.setattr(kmock_parsing, "parse_path", parse_path)
