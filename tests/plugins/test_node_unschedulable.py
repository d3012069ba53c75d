"""Cases from upstream nodeunschedulable/node_unschedulable_test.go."""

import pytest

from builders import make_node, make_pod
from multisched.framework import Code, CycleState
from multisched.plugins.node_unschedulable import NodeUnschedulable


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "fits"),
    [
        (False, [], True),
        (True, [], False),
        (
            True,
            [
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                }
            ],
            True,
        ),
        (
            True,
            [
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                }
            ],
            False,
        ),
        (True, [{"operator": "Exists"}], True),
    ],
)
def test_filter(unschedulable: bool, tolerations: list[dict[str, str]], fits: bool) -> None:
    plugin = NodeUnschedulable(None, None)
    status = plugin.filter(
        CycleState(), make_pod(tolerations=tolerations), make_node(unschedulable=unschedulable)
    )
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ("node(s) were unschedulable",)
