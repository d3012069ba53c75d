"""KubeClient's requests as kmock receives them: bindings, preemption, events, conditions."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from kmock import KubernetesEmulator, Request
from kmock._internal.rendering import Response
from kubernetes_asyncio import client as k8s

from builders import make_pod, pod_dict
from connects import slow_first_connect
from multisched.cache import PodInfo
from multisched.framework import ApiUnavailable, BindingConflict
from multisched.operator.client import ApiUnreachable, KubeClient, NotLeader
from multisched.operator.depth import allow_api_depth
from multisched.transport import MERGE_PATCH, Api, ApiError
from ports import closed_port


@pytest.fixture
async def client(kmock: KubernetesEmulator) -> AsyncIterator[KubeClient]:
    cfg = k8s.Configuration(host=str(kmock.url).rstrip("/"))
    api_client = k8s.ApiClient(cfg)
    kube = KubeClient(Api(api_client), instance="test")
    try:
        yield kube
    finally:
        await kube.close()
        await api_client.close()


def stored(kmock: KubernetesEmulator, name: str, **kw: Any) -> PodInfo:
    """A pod kmock knows, so that patches and deletions of it succeed."""
    raw = pod_dict(name, **kw)
    kmock.objects["v1/pods", raw["metadata"]["namespace"], name] = raw
    return PodInfo.parse(raw)


#: A pod's PodScheduled=False as the API server may already hold it.
UNSCHEDULABLE_NO = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "no",
    "lastTransitionTime": "2024-01-01T00:00:00Z",
}


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


async def test_bindings_reach_the_server_in_the_order_they_were_made(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    """The first binding must open a connection, slowly; the second, made while it does,
    waits for it rather than overtaking it."""
    kmock[lambda r: r.subresource == "binding"] << answer(201)
    slow_first_connect(client.api.api_client)
    first = asyncio.create_task(client.bind(make_pod("first"), "node-1"))
    await asyncio.sleep(0.01)
    await asyncio.gather(first, client.bind(make_pod("second"), "node-1"))
    assert [r.url.path.split("/")[-2] for r in writes(kmock)] == ["first", "second"]


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
    client.may_write = lambda: False
    with pytest.raises(NotLeader, match="not the leader"):
        await client.bind(make_pod("web"), "node-1")
    assert writes(kmock) == []


async def test_failed_posts_an_event_and_the_pod_condition(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    pod = stored(kmock, "web")
    await client.failed(
        "sched", pod, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu."
    )
    assert writes(kmock) == []  # queued: the scheduling cycle never waits for the API
    await client.recorder.flush()
    # Several senders drain the queue, so the two writes may arrive in either order.
    (event,) = [w for w in writes(kmock) if w.method == "POST"]
    (patch,) = [w for w in writes(kmock) if w.method == "PATCH"]
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


async def test_the_condition_names_the_generation_it_observed(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    raw = pod_dict("web")
    raw["metadata"]["generation"] = 3
    kmock.objects["v1/pods", "default", "web"] = raw
    await client.failed("sched", PodInfo.parse(raw), "Unschedulable", "no")
    await client.recorder.flush()
    (patch,) = [w for w in writes(kmock) if w.method == "PATCH"]
    (cond,) = patch.data["status"]["conditions"]
    assert cond["observedGeneration"] == 3
    # A new generation with the same answer writes nothing (upstream compares status,
    # reason, message and times only).
    before = len(writes(kmock))
    raw = {
        **raw,
        "metadata": {**raw["metadata"], "generation": 4},
        "status": {"conditions": [cond]},
    }
    await client.failed("sched", PodInfo.parse(raw), "Unschedulable", "no")
    await client.recorder.flush()
    assert [w.subresource for w in writes(kmock)[before:]] == [None]  # the event only


async def test_an_unchanged_condition_is_not_patched_again(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    condition = UNSCHEDULABLE_NO
    pod = make_pod("web", status={"conditions": [condition]})
    await client.failed("sched", pod, "Unschedulable", "no")
    await client.recorder.flush()
    assert [r.subresource for r in writes(kmock)] == [None]  # the event only


async def test_a_pod_gone_meanwhile_is_no_error(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    await client.failed("sched", make_pod("gone"), "Unschedulable", "no")
    await client.recorder.flush()
    await client.set_nominated_node(make_pod("gone"), "n1")
    await client.delete_pod(make_pod("gone"), "Preempted", "sched")


async def test_failures_of_pods_no_longer_pending_are_not_reported(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    client.is_pending = lambda uid: False
    await client.failed("sched", make_pod("web"), "Unschedulable", "no")
    assert writes(kmock) == []


async def test_delete_pod_marks_deletes_and_records_the_preemption(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    # As the cache holds a bound pod: its identity and generation, no more.
    victim = stored(kmock, "low", metadata={"generation": 3}).compact()
    await client.delete_pod(victim, "Preempted by pod uid-high on node n1", "my-scheduler")
    await client.recorder.flush()
    mark, delete, event = writes(kmock)
    (condition,) = mark.data["status"]["conditions"]
    assert condition["observedGeneration"] == 3  # PodObservedGenerationTracking, GA
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
    )
    # Named by the preemptor's scheduler, as upstream's PreemptPod writes it.
    assert condition["message"] == "my-scheduler: preempting to accommodate a higher priority pod"
    assert delete.method == "DELETE"
    assert delete.data["preconditions"] == {"uid": victim.uid}
    assert kmock.objects["v1/pods", "default", "low"].deleted
    assert (event.data["reason"], event.data["message"]) == (
        "Preempted",
        "Preempted by pod uid-high on node n1",
    )


async def test_a_victim_marked_already_is_only_deleted(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    """Upstream's ``UpdatePodCondition`` finds the same condition: no patch goes out."""
    marked = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "sched: preempting to accommodate a higher priority pod",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    victim = stored(kmock, "low", status={"conditions": [marked]})
    await client.delete_pod(victim, "Preempted by pod uid-high on node n1", "sched")
    await client.recorder.flush()
    assert [(r.method, r.subresource) for r in writes(kmock)] == [
        ("DELETE", None),
        ("POST", None),  # the Preempted event
    ]


async def test_a_victim_that_cannot_be_marked_is_not_deleted(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    """Upstream's PreemptPod returns the patch's error: the preemption fails rather than
    delete a pod whose DisruptionTarget was never written."""
    victim = stored(kmock, "low")
    kmock[lambda r: r.subresource == "status"] << answer(500)
    with pytest.raises(ApiError) as err:
        await client.delete_pod(victim, "Preempted by pod uid-high on node n1", "sched")
    assert err.value.status == 500
    await client.recorder.flush()
    assert [r.method for r in writes(kmock)] == ["PATCH"]
    assert not kmock.objects["v1/pods", "default", "low"].deleted


async def test_set_nominated_node_patches_the_status(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    pod = stored(kmock, "web")
    await client.set_nominated_node(pod, "n2")
    await client.recorder.flush()
    assert kmock.objects["v1/pods", "default", "web"]["status"] == {"nominatedNodeName": "n2"}
    await client.set_nominated_node(pod, "")  # written, though ``pod`` predates the first
    await client.recorder.flush()
    set_, clear = writes(kmock)
    assert set_.data == {"status": {"nominatedNodeName": "n2"}}
    assert clear.data == {"status": {"nominatedNodeName": None}}


async def test_a_nomination_goes_out_with_the_condition_and_survives_a_newer_one(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    """One status patch for both (upstream ``updatePod``); a later failure of the same pod,
    queued before that patch went out, replaces the condition but keeps the nomination."""
    pod = stored(kmock, "web")
    await client.set_nominated_node(pod, "n2")  # preemption nominates, then reports
    await client.failed("sched", pod, "Unschedulable", "first")
    await client.failed("sched", pod, "Unschedulable", "second")
    await client.recorder.flush()
    (patch,) = [w for w in writes(kmock) if w.method == "PATCH"]
    assert patch.data["status"]["nominatedNodeName"] == "n2"
    assert patch.data["status"]["conditions"][0]["message"] == "second"
    status = kmock.objects["v1/pods", "default", "web"]["status"]
    assert status["nominatedNodeName"] == "n2"


async def test_a_nomination_alone_is_patched_and_a_direct_one_wins(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    condition = UNSCHEDULABLE_NO
    pod = stored(kmock, "web", status={"conditions": [condition], "nominatedNodeName": "n1"})
    await client.set_nominated_node(pod, "")  # preemption nominates, then reports
    await client.failed("sched", pod, "Unschedulable", "no")
    await client.recorder.flush()
    (clear,) = [w for w in writes(kmock) if w.method == "PATCH"]
    assert clear.data == {"status": {"nominatedNodeName": None}}  # the condition is unchanged
    # Same condition, no nomination: nothing to write.
    again = stored(kmock, "again", status={"conditions": [condition], "nominatedNodeName": "n1"})
    await client.failed("sched", again, "Unschedulable", "no")
    await client.recorder.flush()
    assert not [w for w in writes(kmock) if w.method == "PATCH" and "again" in w.url.path]
    # A nomination set directly after a queued one is the newer: the queued one is not sent.
    late = stored(kmock, "late")
    await client.set_nominated_node(late, "n3")  # preemption nominates, then reports
    await client.failed("sched", late, "Unschedulable", "x")
    await client.set_nominated_node(late, "")
    await client.recorder.flush()
    assert kmock.objects["v1/pods", "default", "late"]["status"].get("nominatedNodeName") is None


async def test_a_nomination_dropped_at_step_down_is_not_written_later(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    """Queued writes are dropped when the replica steps down (the new leader reports for
    itself); a nomination among them must not ride on the pod's next report once this
    replica leads again: the other leader may have nominated it elsewhere since."""
    pod = stored(kmock, "web")
    leading = [True]
    client.may_write = lambda: leading[0]
    await client.set_nominated_node(pod, "n1")  # preemption nominates, then reports
    await client.failed("sched", pod, "Unschedulable", "first")
    leading[0] = False
    await client.recorder.flush()
    leading[0] = True
    await client.failed("sched", pod, "Unschedulable", "second")
    await client.recorder.flush()
    (patch,) = [w for w in writes(kmock) if w.method == "PATCH"]
    assert "nominatedNodeName" not in patch.data["status"]
    assert patch.data["status"]["conditions"][0]["message"] == "second"


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
    client.may_write = lambda: False
    pod = stored(kmock, "web")
    await client.failed("sched", pod, "SchedulerError", "not the leader any more")
    await client.scheduled("sched", pod, "n1")
    await client.recorder.flush()
    with pytest.raises(Exception, match="not the leader"):
        await client.delete_pod(pod, "Preempted", "sched")
    with pytest.raises(Exception, match="not the leader"):
        await client.set_nominated_node(pod, "n1")
    assert writes(kmock) == []


def conflict(message: str) -> Any:
    def respond(request: Request) -> Response:
        return Response(status=409, payload={"kind": "Status", "code": 409, "message": message})

    return respond


def already_assigned(node: str) -> str:
    # The API server's text (registry/core/pod/storage, setPodHostAndAnnotations).
    return (
        'Operation cannot be fulfilled on pods/binding "web": '
        f'pod web is already assigned to node "{node}"'
    )


async def test_a_409_for_the_same_node_is_success(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    kmock[lambda r: r.subresource == "binding"] << conflict(already_assigned("node-1"))
    await client.bind(make_pod("web"), "node-1")  # an earlier attempt's answer was lost


async def test_a_409_for_another_node_says_where_the_pod_is(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    kmock[lambda r: r.subresource == "binding"] << conflict(already_assigned("node-2"))
    with pytest.raises(BindingConflict) as err:
        await client.bind(make_pod("web"), "node-1")
    assert (err.value.status, err.value.bound_to) == (409, "node-2")


async def test_leadership_lost_before_the_request_reaches_the_wire_sends_nothing(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    kmock[lambda r: r.subresource == "binding"] << answer(201)
    # Leading when bind() starts, no longer once the connection is in hand (a replica
    # frozen in between, say): the second look refuses.
    answers = iter([True, False])
    client.may_write = lambda: next(answers)
    with pytest.raises(NotLeader):
        await client.bind(make_pod("web"), "node-1")
    assert writes(kmock) == []
    client.may_write = lambda: True
    await client.bind(make_pod("web"), "node-1")  # the pooled connection still works
    assert len(writes(kmock)) == 1


async def hang_up_server() -> asyncio.Server:
    """Reads a request, then drops the connection without answering (a dying server)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def kube_at(url: str) -> KubeClient:
    api = Api(k8s.ApiClient(k8s.Configuration(host=url)), timeout=5)
    return KubeClient(api, instance="test")


async def test_a_refused_connection_sent_nothing_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kube = kube_at(f"http://127.0.0.1:{await closed_port()}")
    caplog.set_level(logging.WARNING, logger="multisched")
    try:
        for _ in range(5):
            with pytest.raises(ApiUnreachable) as err:
                await kube.bind(make_pod("web"), "node-1")
            assert not err.value.maybe_sent
            assert isinstance(err.value, ApiUnavailable)
        assert kube.api.reachability.failed["bindings"] == 5
    finally:
        await kube.close()
        await kube.api.api_client.close()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert lines[0].startswith("API server unreachable (bindings failed: ")
    assert "Traceback" not in caplog.text


async def test_a_connection_lost_after_sending_may_have_bound_the_pod() -> None:
    server = await hang_up_server()
    port = int(server.sockets[0].getsockname()[1])
    kube = kube_at(f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(ApiUnreachable) as err:
            await kube.bind(make_pod("web"), "node-1")
        assert err.value.maybe_sent
    finally:
        server.close()
        await server.wait_closed()
        await kube.close()
        await kube.api.api_client.close()


async def test_recovery_is_one_line_with_the_counts(
    kmock: KubernetesEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    kube = kube_at(str(kmock.url).rstrip("/"))
    caplog.set_level(logging.INFO, logger="multisched")
    reach = kube.api.reachability
    try:
        for kind in ("bindings", "bindings", "events", "status patches"):
            reach.unreachable(kind, ConnectionRefusedError("refused"))
        kmock[lambda r: r.subresource == "binding"] << answer(201)
        await kube.bind(make_pod("web"), "node-1")
        await kube.bind(make_pod("web2"), "node-1")
    finally:
        await kube.close()
        await kube.api.api_client.close()
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("multisched")]
    assert len(lines) == 2
    assert lines[1].startswith("API server reachable again after ")
    assert lines[1].endswith("failed or dropped meanwhile: 2 bindings, 1 events, 1 status patches")
    assert reach.reachable


async def test_a_body_orjson_refuses_still_goes_out_as_json(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    # An integer beyond 64 bits (a user's value echoed back, say): orjson refuses it, the
    # standard library writes it.
    stored(kmock, "web")
    patch = {"metadata": {"annotations": {"note": "x"}}, "spec": {"huge": 2**70}}
    await client.api.request(
        "PATCH", "/api/v1/namespaces/default/pods/web", patch, content_type=MERGE_PATCH
    )
    (req,) = writes(kmock)
    assert req.data == patch


async def test_a_token_refresh_that_fails_is_an_outage_and_nothing_is_sent(
    kmock: KubernetesEmulator,
) -> None:
    cfg = k8s.Configuration(host=str(kmock.url).rstrip("/"))
    cfg.api_key = {"BearerToken": "old"}

    async def refresh(_: k8s.Configuration) -> None:  # an exec plugin or OIDC issuer down
        raise aiohttp.ClientConnectionError("issuer unreachable")

    cfg.refresh_api_key_hook = refresh
    api_client = k8s.ApiClient(cfg)
    kube = KubeClient(Api(api_client), instance="test")
    try:
        with pytest.raises(ApiUnreachable) as err:
            await kube.bind(make_pod("web"), "node-1")
        assert err.value.maybe_sent is False
        assert "cannot authenticate" in str(err.value)
        assert writes(kmock) == []
    finally:
        await kube.close()
        await api_client.close()


async def test_an_answer_too_deep_for_orjson_is_read_whole(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    # A SchedulerProfile may nest deeper than orjson's 1,024 levels (depth.py); the
    # operator's recursion limit lets the standard library read it.
    allow_api_depth()
    deep: dict[str, Any] = {}
    for _ in range(1500):
        deep = {"a": deep}

    def respond(request: Request) -> Response:
        return Response(status=200, payload={"kind": "Thing", "spec": deep})

    kmock[lambda r: r.subresource == "binding"] << respond
    path = "/api/v1/namespaces/default/pods/web/binding"
    answer_ = await client.api.request("POST", path, {"target": {"name": "n"}})
    assert answer_["kind"] == "Thing" and answer_["spec"] == deep


async def test_an_event_already_stored_under_its_name_is_no_error(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    """A retried POST whose first answer was lost meets AlreadyExists: it was stored."""
    kmock[lambda r: r.method == "POST" and "/events" in str(r.url)] << answer(409)
    body = {
        "metadata": {"namespace": "default", "name": "web.17f"},
        "involvedObject": {"kind": "Pod", "name": "web"},
    }
    assert await client.writes.create_event(body) == "web.17f"
    (req,) = writes(kmock)
    assert req.data["metadata"]["name"] == "web.17f"


async def test_other_event_refusals_stay_errors(
    kmock: KubernetesEmulator, client: KubeClient
) -> None:
    kmock[lambda r: r.method == "POST" and "/events" in str(r.url)] << answer(403)
    body = {"metadata": {"namespace": "default"}, "involvedObject": {"kind": "Pod", "name": "w"}}
    with pytest.raises(ApiError):
        await client.writes.create_event(body)


@pytest.mark.parametrize("status", [429, 503])
async def test_a_request_the_server_did_not_process_is_unavailable_not_refused(
    kmock: KubernetesEmulator, client: KubeClient, status: int
) -> None:
    """503 "apiserver is shutting down" and 429 store nothing: the caller retries (the
    recorder keeps the event, the binding cycle requeues quietly) instead of dropping it."""
    kmock[lambda r: r.subresource == "binding"] << answer(status)
    with pytest.raises(ApiUnavailable) as info:
        await client.bind(make_pod("web"), "n1")
    assert info.value.maybe_sent is False
