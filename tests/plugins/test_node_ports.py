"""Cases from upstream nodeports/node_ports_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_node, make_pod
from multisched.cache import NodeInfo, PodInfo
from multisched.framework import Code, CycleState
from multisched.framework.events import ADD, DELETE, NODE, POD, ClusterEvent, QueueingHint
from multisched.plugins.node_ports import (
    PRE_FILTER_STATE_KEY,
    NodePorts,
    fits,
    is_schedulable_after_pod_deleted,
)

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def ports(*infos: str) -> list[dict[str, Any]]:
    """Container ports from upstream's "PROTOCOL/hostIP/hostPort" strings."""
    out = []
    for info in infos:
        protocol, ip, port = info.split("/")
        out.append(
            {"containerPort": int(port), "hostPort": int(port), "hostIP": ip, "protocol": protocol}
        )
    return out


def pod_with(*infos: str, name: str = "p", node_name: str = "") -> PodInfo:
    return make_pod(
        name,
        node_name=node_name,
        containers=[{"name": "c", "image": "pause", "ports": ports(*infos)}],
    )


def node_with(*infos: str) -> NodeInfo:
    return make_node("m1", pods_on=[pod_with(*infos, name="existing", node_name="m1")])


def init_pod(sidecar: bool) -> PodInfo:
    init: dict[str, Any] = {
        "name": "init",
        "image": "pause",
        "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}],
    }
    if sidecar:
        init["restartPolicy"] = "Always"
    return make_pod(initContainers=[init])


CASES: list[tuple[str, PodInfo, NodeInfo, bool, bool]] = [
    # name, pod, node, pre_filter skips, fit
    ("skip filter", make_pod(), make_node("m1"), True, True),
    ("other port", pod_with("UDP/127.0.0.1/8080"), node_with("UDP/127.0.0.1/9090"), False, True),
    (
        "same udp port",
        pod_with("UDP/127.0.0.1/8080"),
        node_with("UDP/127.0.0.1/8080"),
        False,
        False,
    ),
    (
        "same tcp port",
        pod_with("TCP/127.0.0.1/8080"),
        node_with("TCP/127.0.0.1/8080"),
        False,
        False,
    ),
    (
        "different host ip",
        pod_with("TCP/127.0.0.1/8080"),
        node_with("TCP/127.0.0.2/8080"),
        False,
        True,
    ),
    (
        "different protocol",
        pod_with("UDP/127.0.0.1/8080"),
        node_with("TCP/127.0.0.1/8080"),
        False,
        True,
    ),
    (
        "second udp port conflict",
        pod_with("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        node_with("UDP/127.0.0.1/8080"),
        False,
        False,
    ),
    (
        "first tcp port conflict",
        pod_with("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        node_with("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
        False,
        False,
    ),
    (
        "first tcp port conflict due to 0.0.0.0 hostIP",
        pod_with("TCP/0.0.0.0/8001"),
        node_with("TCP/127.0.0.1/8001"),
        False,
        False,
    ),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        pod_with("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        node_with("TCP/127.0.0.1/8001"),
        False,
        False,
    ),
    (
        "second tcp port conflict to 0.0.0.0 hostIP",
        pod_with("TCP/127.0.0.1/8001"),
        node_with("TCP/0.0.0.0/8001"),
        False,
        False,
    ),
    (
        "second different protocol",
        pod_with("UDP/127.0.0.1/8001"),
        node_with("TCP/0.0.0.0/8001"),
        False,
        True,
    ),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        pod_with("UDP/127.0.0.1/8001"),
        node_with("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
        False,
        False,
    ),
    (
        "non-sidecar initContainer using hostPort",
        init_pod(False),
        node_with("TCP/0.0.0.0/8001"),
        True,
        True,
    ),
    (
        "TCP hostPort conflict from sidecar initContainer",
        init_pod(True),
        node_with("TCP/0.0.0.0/8001"),
        False,
        False,
    ),
]


@pytest.mark.parametrize(
    ("pod", "node", "skips", "fit"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_node_ports(pod: PodInfo, node: NodeInfo, skips: bool, fit: bool) -> None:
    plugin = NodePorts(None, None)
    assert plugin.pre_filter_extensions() is None
    state = CycleState()
    result, status = plugin.pre_filter(state, pod, [node])
    assert result is None
    if skips:
        assert status is not None
        assert status.code == Code.SKIP
        return
    assert status is None
    got = plugin.filter(state, pod, node)
    if fit:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE
        assert got.reasons == (ERR_REASON,)


def test_filter_without_pre_filter_is_an_error() -> None:
    """Upstream TestPreFilterDisabled."""
    status = NodePorts(None, None).filter(CycleState(), make_pod(), make_node("n"))
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message() == f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'


@pytest.mark.parametrize(
    ("pod", "existing", "expect"),
    [
        (pod_with("TCP/127.0.0.1/80"), ("TCP/127.0.0.1/9090",), True),
        (
            pod_with(
                "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"
            ),
            ("TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"),
            True,
        ),
        (pod_with("TCP/127.0.0.1/80"), ("UDP/127.0.0.1/80",), True),
        (pod_with("TCP/127.0.0.1/80"), ("TCP/127.0.0.1/80",), False),
        (
            pod_with(
                "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"
            ),
            ("TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"),
            False,
        ),
    ],
    ids=[
        "non-conflicting ports",
        "multiple non-conflicting ports",
        "same ports on different protocols",
        "conflicting ports",
        "multiple ports, some conflicting",
    ],
)
def test_fits(pod: PodInfo, existing: tuple[str, ...], expect: bool) -> None:
    """Upstream TestFits."""
    assert fits(pod, node_with(*existing)) is expect


def test_removing_the_holder_frees_the_port() -> None:
    holder = pod_with("TCP/0.0.0.0/8080", name="holder", node_name="m1")
    node = make_node("m1", pods_on=[holder])
    pod = pod_with("TCP/0.0.0.0/8080")
    assert not fits(pod, node)
    node.remove_pod(holder)
    assert fits(pod, node)


# -- Queueing hints (Test_isSchedulableAfterAssignedPodDeleted) ----------------------------


@pytest.mark.parametrize(
    ("deleted", "hint"),
    [
        pytest.param(make_pod("gone"), QueueingHint.QUEUE_SKIP, id="skip-queue-on-unscheduled"),
        pytest.param(
            make_pod("gone", node_name="fake-node"),
            QueueingHint.QUEUE_SKIP,
            id="skip-queue-on-non-hostport",
        ),
        pytest.param(
            make_pod("gone", node_name="fake-node", host_ports=[8081]),
            QueueingHint.QUEUE_SKIP,
            id="skip-queue-on-unrelated-hostport",
        ),
        pytest.param(
            make_pod("gone", node_name="fake-node", host_ports=[8080]),
            QueueingHint.QUEUE,
            id="queue-on-released-hostport",
        ),
        # Ours: a nominated pod's ports count too (upstream's unscheduled check).
        pytest.param(
            make_pod("gone", host_ports=[8080], status={"nominatedNodeName": "fake-node"}),
            QueueingHint.QUEUE,
            id="queue-on-nominated-pods-hostport",
        ),
        pytest.param(
            pod_with("UDP/127.0.0.1/8080", name="gone", node_name="fake-node"),
            QueueingHint.QUEUE_SKIP,
            id="skip-queue-on-other-protocol",
        ),
    ],
)
def test_is_schedulable_after_assigned_pod_deleted(deleted: PodInfo, hint: QueueingHint) -> None:
    pod = make_pod(host_ports=[8080])
    assert is_schedulable_after_pod_deleted(pod, deleted, None) is hint


def test_a_pod_without_host_ports_waits_for_no_deletion() -> None:
    deleted = make_pod("gone", node_name="fake-node", host_ports=[8080])
    assert is_schedulable_after_pod_deleted(make_pod(), deleted, None) is QueueingHint.QUEUE_SKIP


def test_events_to_register() -> None:
    deleted, node_added = NodePorts(None, None).events_to_register()
    assert deleted.event == ClusterEvent(POD, DELETE)
    assert deleted.hint is is_schedulable_after_pod_deleted
    assert node_added.event == ClusterEvent(NODE, ADD)
    assert node_added.hint is None  # upstream: always requeue


def test_a_deletion_sent_without_the_pod_may_have_freed_the_port() -> None:
    """Ours: a delete event whose pod the queue did not pass could have held anything."""
    assert is_schedulable_after_pod_deleted(make_pod(host_ports=[8080]), None, None) is (
        QueueingHint.QUEUE
    )
