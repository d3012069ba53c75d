"""Fixtures for the chart/CRD tests: a pinned helm binary, rendering, a CRD validator."""

from __future__ import annotations

import copy
import os
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import yaml

from chart_support import (
    CHART,
    CRD_PATH,
    NAMESPACE,
    RELEASE,
    ROOT,
    CRDValidator,
    HelmError,
    Manifest,
    to_json_schema,
)


@pytest.fixture(scope="session")
def helm() -> str:
    path = Path(os.environ.get("HELM") or ROOT / ".cache" / "bin" / "helm")
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    message = f"helm not found at {path}: run `make helm` or set HELM=/path/to/helm"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def render(helm: str) -> Callable[..., list[Manifest]]:
    """``render("replicas=2", kube_version="1.35.0")`` -> the rendered documents."""

    @cache
    def _render(*sets: str, kube_version: str | None = None) -> list[Manifest]:
        cmd = [helm, "template", RELEASE, str(CHART), "--namespace", NAMESPACE]
        for item in sets:
            cmd += ["--set", item]
        if kube_version:
            cmd += ["--kube-version", kube_version]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode:
            raise HelmError(out.stderr.strip())
        return [doc for doc in yaml.safe_load_all(out.stdout) if doc]

    def render_copy(*sets: str, kube_version: str | None = None) -> list[Manifest]:
        return copy.deepcopy(_render(*sets, kube_version=kube_version))

    return render_copy


@pytest.fixture(scope="session")
def crd() -> Manifest:
    return yaml.safe_load(CRD_PATH.read_text())


@pytest.fixture(scope="session")
def profile_errors(crd: Manifest) -> Callable[[Manifest], list[str]]:
    """Schema errors of a SchedulerProfile object (empty when the API server would take it)."""
    (version,) = crd["spec"]["versions"]
    validator = CRDValidator(to_json_schema(version["schema"]["openAPIV3Schema"]))

    def errors(obj: Manifest) -> list[str]:
        assert obj["apiVersion"] == f"{crd['spec']['group']}/{version['name']}"
        assert obj["kind"] == crd["spec"]["names"]["kind"]
        return [
            f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in validator.iter_errors(obj)
        ]

    return errors
