"""Diagnosis: rejected nodes recorded in batches, read as upstream's NodeToStatusMap."""

from __future__ import annotations

from builders import make_node
from multisched.cache import NodeInfo
from multisched.framework import Diagnosis, FitError, Status


def _nodes(*names: str) -> list[NodeInfo]:
    return [make_node(name) for name in names]


def test_batches_of_rejected_nodes_read_as_one_map_by_name() -> None:
    d = Diagnosis()
    cpu, label = Status.unschedulable("Insufficient cpu"), Status.unresolvable("no label")
    d.node_to_status["n0"] = label  # written directly, as the PreFilter result is
    d.add_rejected(_nodes("n1", "n2"), [cpu, label])
    d.add_rejected(_nodes("n3"), [cpu])
    assert d.rejected_count() == 4
    assert d.node_to_status == {"n0": label, "n1": cpu, "n2": label, "n3": cpu}
    assert d.rejected_count() == 4
    # Recorded again after a read: added to the same map.
    d.add_rejected(_nodes("n4"), [cpu])
    assert d.rejected_count() == 5
    assert list(d.node_to_status) == ["n0", "n1", "n2", "n3", "n4"]
    message = "0/6 nodes are available: 2 no label, 3 Insufficient cpu."
    assert FitError("ns/p", 6, d).message() == message


def test_a_map_set_whole_replaces_what_was_recorded() -> None:
    # Preemption sets the map whole (every node's verdict on the pod's last cycle).
    d = Diagnosis()
    d.add_rejected(_nodes("n1"), [Status.unschedulable("Insufficient cpu")])
    helpful = Status.unschedulable("preemption may help")
    d.node_to_status = {"n2": helpful}
    assert d.rejected_count() == 1
    assert d.node_to_status == {"n2": helpful}
