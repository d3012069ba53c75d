"""A Python plugin installed by entry point that cannot be built into a profile (it lacks a
method of a point it is enabled at, or its ``__init__`` fails): ``simulate`` says so in one
line naming the profile and the plugin, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import multisched.framework.registry as framework_registry
from builders import node_dict, pod_dict
from multisched.cli import main


class HalfReserve:
    """Reserves, but has no ``unreserve``: ReservePlugin asks for both."""

    name = "HalfReserve"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def reserve(self, state: Any, pod: Any, node_name: str) -> None:
        return None


class NoDisk:
    name = "NoDisk"

    def __init__(self, args: Any, handle: Any) -> None:
        raise OSError("no disk")

    def reserve(self, state: Any, pod: Any, node_name: str) -> None:
        return None

    def unreserve(self, state: Any, pod: Any, node_name: str) -> None:
        return None


class _EntryPoint:
    def __init__(self, plugin: type) -> None:
        self.plugin = plugin
        self.name = plugin.__name__
        self.value = f"my_plugins:{plugin.__name__}"

    def load(self) -> type:
        return self.plugin


@pytest.mark.parametrize(
    ("plugin", "message"),
    [
        (HalfReserve, "plugin HalfReserve does not implement reserve: it has no unreserve"),
        (NoDisk, "plugin NoDisk failed to start: no disk"),
    ],
)
def test_simulate_refuses_the_profile_in_one_line(
    plugin: type,
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def entry_points(group: str) -> list[_EntryPoint]:
        return [_EntryPoint(plugin)] if group == framework_registry.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(framework_registry, "entry_points", entry_points)
    profile = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "my-scheduler",
                "plugins": {"reserve": {"enabled": [{"name": plugin.__name__}]}},
            }
        ],
    }
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        yaml.safe_dump_all(
            [profile, node_dict("n1"), pod_dict("web", scheduler_name="my-scheduler")]
        )
    )
    code = main(["simulate", str(cluster)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == f"error: profile my-scheduler: {message}\n"
