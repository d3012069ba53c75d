"""KubeClient's requests as kmock receives them: bindings, preemption, events, conditions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kmock import KubernetesEmulator, Request
from kmock._internal.rendering import Response
from kubernetes_asyncio import client as k8s

from builders import make_pod, pod_dict
from multisched.cache import PodInfo
from multisched.framework import BindingConflict
from multisched.operator.client import Api, ApiError, KubeClient


@pytest.fixture
async def client(kmock: KubernetesEmulator) -> AsyncIterator[KubeClient]:
    cfg = k8s.Configuration(host=str(kmock.url).rstrip("/"))
    api_client = k8s.ApiClient(cfg)
    kube = KubeClient(Api(api_client), instance="test")
    try:
        yield kube
    finally:
        await api_client.close()


def stored(kmock: KubernetesEmulator, name: str, **kw: Any) -> PodInfo:
    """A pod kmock knows, so that patches and deletions of it succeed."""
    raw = pod_dict(name, **kw)
    kmock.objects["v1/pods", raw["metadata"]["namespace"], name] = raw
    return PodInfo.parse(raw)


def writes(kmock: KubernetesEmulator) -> list[Request]:
    return list(kmock[lambda r: r.method != "GET"])


def answer(status: int) -> Any:
    def respond(request: Request) -> Response:
        return Response(
            status=status,
            payload={"kind": "Status", "code": status, "message": f"refused ({status})"},
        )

    return respond


async def test_bind_posts_a_binding_with_the_pod_uid(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    kmock[lambda r: r.subresource == "binding"] << answer(201)
    pod = make_pod("web", namespace="prod")
    await client.bind(pod, "node-1")
    (req,) = writes(kmock)
    assert (req.method, str(req.url.path)) == ("POST", "/api/v1/namespaces/prod/pods/web/binding")
    assert req.data == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web", "namespace": "prod", "uid": pod.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }


@pytest.mark.parametrize("status", [404, 409])
async def test_a_refused_binding_is_a_binding_conflict(
    kmock: KubernetesEmulator, client: KubeClient, status: int
) -> None:
    kmock[lambda r: r.subresource == "binding"] << answer(status)
    with pytest.raises(BindingConflict) as err:
        await client.bind(make_pod("web"), "node-1")
    assert err.value.status == status
    assert str(err.value) == f"refused ({status})"


async def test_other_binding_errors_stay_errors(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    kmock[lambda r: r.subresource == "binding"] << answer(500)
    with pytest.raises(ApiError) as err:
        await client.bind(make_pod("web"), "node-1")
    assert err.value.status == 500


async def test_a_replica_that_is_not_leading_does_not_bind(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    client.active = False
    with pytest.raises(Exception, match="not the leader"):
        await client.bind(make_pod("web"), "node-1")
    assert writes(kmock) == []


async def test_failed_posts_an_event_and_the_pod_condition(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    pod = stored(kmock, "web")
    await client.failed(
        "sched", pod, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu."
    )
    event, patch = writes(kmock)
    assert event.data["type"] == "Warning"
    assert event.data["reason"] == "FailedScheduling"
    assert event.data["action"] == "Scheduling"
    assert event.data["source"] == {"component": "sched"}
    assert event.data["involvedObject"]["uid"] == pod.uid
    assert patch.headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert kmock.objects["v1/pods", "default", "web"]["status"]["conditions"][0]["reason"] == (
        "Unschedulable"
    )
    (cond,) = patch.data["status"]["conditions"]
    assert {k: cond[k] for k in ("type", "status", "reason", "message")} == {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/1 nodes are available: 1 Insufficient cpu.",
    }


async def test_an_unchanged_condition_is_not_patched_again(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "no",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
    }
    pod = make_pod("web", status={"conditions": [condition]})
    await client.failed("sched", pod, "Unschedulable", "no")
    assert [r.subresource for r in writes(kmock)] == [None]  # the event only


async def test_a_pod_gone_meanwhile_is_no_error(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    await client.failed("sched", make_pod("gone"), "Unschedulable", "no")
    await client.set_nominated_node(make_pod("gone"), "n1")
    await client.delete_pod(make_pod("gone"), "Preempted")


async def test_failures_of_pods_no_longer_pending_are_not_reported(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    client.is_pending = lambda uid: False
    await client.failed("sched", make_pod("web"), "Unschedulable", "no")
    assert writes(kmock) == []


async def test_delete_pod_marks_deletes_and_records_the_preemption(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    victim = stored(kmock, "low")
    await client.delete_pod(victim, "Preempted by pod uid-high on node n1")
    mark, delete, event = writes(kmock)
    assert mark.data["status"]["conditions"][0]["type"] == "DisruptionTarget"
    assert mark.data["status"]["conditions"][0]["reason"] == "PreemptionByScheduler"
    assert delete.method == "DELETE"
    assert delete.data["preconditions"] == {"uid": victim.uid}
    assert kmock.objects["v1/pods", "default", "low"].deleted
    assert (event.data["reason"], event.data["message"]) == (
        "Preempted",
        "Preempted by pod uid-high on node n1",
    )


async def test_set_nominated_node_patches_the_status(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    pod = stored(kmock, "web")
    await client.set_nominated_node(pod, "n2")
    assert kmock.objects["v1/pods", "default", "web"]["status"] == {"nominatedNodeName": "n2"}
    await client.set_nominated_node(pod, "")
    set_, clear = writes(kmock)
    assert set_.data == {"status": {"nominatedNodeName": "n2"}}
    assert clear.data == {"status": {"nominatedNodeName": None}}


async def test_long_event_messages_are_truncated(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    involved = {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "default"}
    await client.post_event(involved, "default", "Warning", "X", "y" * 5000, "c")
    (event,) = writes(kmock)
    assert len(event.data["message"]) == 1024


async def test_a_replica_that_stepped_down_writes_nothing(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    client.active = False
    pod = stored(kmock, "web")
    await client.failed("sched", pod, "SchedulerError", "not the leader any more")
    with pytest.raises(Exception, match="not the leader"):
        await client.delete_pod(pod, "Preempted")
    with pytest.raises(Exception, match="not the leader"):
        await client.set_nominated_node(pod, "n1")
    assert writes(kmock) == []
