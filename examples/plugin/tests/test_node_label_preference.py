"""The example plugin, unit-tested and run through the registry as a user would."""

from importlib.metadata import entry_points

import pytest
from multisched_example_plugin.node_label_preference import (
    NodeLabelPreference,
    NodeLabelPreferenceArgs,
)

from multisched.cache import NodeInfo, PodInfo
from multisched.framework import Code, CycleState
from multisched.scheduler import default_registry


def _node(name: str, **labels: str) -> NodeInfo:
    return NodeInfo.from_node(
        {
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}},
        }
    )


POD = PodInfo.parse({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})


def test_filter_and_score() -> None:
    plugin = NodeLabelPreference(
        NodeLabelPreferenceArgs(preferLabel="disktype=ssd", avoidLabel="maintenance=true"),
        handle=None,  # type: ignore[arg-type]
    )
    state = CycleState()
    status = plugin.filter(state, POD, _node("a", maintenance="true"))
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert plugin.filter(state, POD, _node("b")) is None
    assert plugin.score(state, POD, _node("c", disktype="ssd")) == 100
    assert plugin.score(state, POD, _node("d", disktype="hdd")) == 0


def test_args_are_validated() -> None:
    with pytest.raises(ValueError, match="key=value"):
        NodeLabelPreferenceArgs(preferLabel="no-equals-sign")


def test_registered_through_entry_point() -> None:
    names = [ep.name for ep in entry_points(group="multisched.plugins")]
    assert "NodeLabelPreference" in names
    registry = default_registry()
    entry = registry["NodeLabelPreference"]
    assert entry.extension_points == {"filter", "score"}
    assert entry.args_model is NodeLabelPreferenceArgs
