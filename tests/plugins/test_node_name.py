"""Cases from upstream nodename/node_name_test.go."""

from __future__ import annotations

import pytest

from builders import make_node, make_pod
from multisched.framework import Code, CycleState
from multisched.framework.events import ADD, NODE, ClusterEvent
from multisched.plugins.node_name import NodeName


@pytest.mark.parametrize(
    ("pod_node_name", "fits"),
    [
        ("", True),  # no host specified
        ("foo", True),  # host matches
        ("bar", False),  # host doesn't match
    ],
)
def test_filter(pod_node_name: str, fits: bool) -> None:
    status = NodeName(None, None).filter(
        CycleState(), make_pod(node_name=pod_node_name), make_node("foo")
    )
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ("node(s) didn't match the requested node name",)


def test_events_to_register_node_add_without_a_hint() -> None:
    """Upstream registers Node/Add with no QueueingHintFn: every added node requeues."""
    (registration,) = NodeName(None, None).events_to_register()
    assert registration == ClusterEvent(NODE, ADD)
