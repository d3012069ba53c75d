"""WaitForHandlersSync for pending pods: the first cycle waits until kopf has handed over each
pod pending at start-up, as kube-scheduler's waits for its handlers' initial lists."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from kmock import KubernetesEmulator, Request
from kmock._internal.rendering import Response
from kubernetes_asyncio import client as k8s

from builders import pod_dict
from kmock_support import declare_kinds, namespaces_listable
from multisched.operator import handlers_sync
from multisched.operator.handlers_sync import HandlersSync, pending_lister
from multisched.operator.options import Options
from multisched.operator.runtime import Runtime
from multisched.scheduler import default_registry
from multisched.transport import METADATA_ONLY, Api, ApiError


class Lister:
    """The API's pending pods, as each list reads them; ``fail`` lists fail first."""

    def __init__(self, *keys: str, fail: int = 0) -> None:
        self.pending = set(keys)
        self.fail = fail
        self.calls = 0

    async def __call__(self) -> set[str]:
        self.calls += 1
        if self.fail:
            self.fail -= 1
            raise ApiError(503, "the server is currently unable to handle the request")
        return set(self.pending)


def body(key: str) -> dict[str, Any]:
    namespace, name = key.split("/")
    return {"metadata": {"namespace": namespace, "name": name}}


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handlers_sync, "QUIET_SECONDS", 0.05)


async def test_it_waits_until_the_handler_has_seen_every_pod_pending_at_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, handlers_sync.__name__)
    sync = HandlersSync(Lister("ns/a", "ns/b", "ns/c"))
    task = asyncio.create_task(sync.run())
    sync.seen(body("ns/a"))  # handed over before the list is in: counted all the same
    await asyncio.sleep(0.01)
    sync.seen(body("ns/b"))
    sync.seen(body("ns/other"))  # created after the list: not waited for
    await asyncio.sleep(0.01)
    assert not sync.synced and sync.waiting
    sync.seen(body("ns/c"))
    await asyncio.wait_for(sync.wait_synced(), 1)
    await task
    assert not sync.waiting  # the handler stops reporting
    # What the queue orders as an informer's listing would: not the pod created after it.
    assert sync.listed == {"ns/a", "ns/b", "ns/c"}
    (message,) = [r.getMessage() for r in caplog.records]
    assert message.startswith("kopf handed over all 3 pending pods of its first listing (")


async def test_no_pending_pod_at_start_means_no_wait() -> None:
    sync = HandlersSync(Lister())
    await asyncio.wait_for(sync.run(), 1)
    assert sync.synced


async def test_a_pod_that_stops_pending_before_kopf_lists_it_is_not_waited_for() -> None:
    """Bound by another scheduler or deleted between the two lists: kopf never hands it
    over, and the next list (after a quiet spell) no longer has it."""
    lister = Lister("ns/a", "ns/gone")
    sync = HandlersSync(lister)
    task = asyncio.create_task(sync.run())
    await asyncio.sleep(0)
    lister.pending.discard("ns/gone")
    sync.seen(body("ns/a"))
    await asyncio.wait_for(sync.wait_synced(), 1)
    await task
    assert lister.calls >= 2


async def test_a_pod_still_pending_is_waited_for_through_quiet_spells() -> None:
    lister = Lister("ns/slow")
    sync = HandlersSync(lister)
    task = asyncio.create_task(sync.run())
    await asyncio.sleep(0.2)  # several quiet spells, each listing again
    assert lister.calls >= 3 and not sync.synced
    sync.seen(body("ns/slow"))
    await asyncio.wait_for(sync.wait_synced(), 1)
    await task


async def test_a_failed_list_is_retried(caplog: pytest.LogCaptureFixture) -> None:
    lister = Lister("ns/a", fail=2)
    sync = HandlersSync(lister)
    task = asyncio.create_task(sync.run())
    await asyncio.sleep(0.2)
    assert lister.calls >= 3 and not sync.synced  # two failures, then lists that have it
    sync.seen(body("ns/a"))
    await asyncio.wait_for(task, 1)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_the_wait_is_bounded_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(handlers_sync, "MAX_WAIT_SECONDS", 0.2)
    sync = HandlersSync(Lister("ns/a", "ns/never"))
    sync.seen(body("ns/a"))
    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(sync.run(), 2)
    assert sync.synced
    assert [r.getMessage() for r in caplog.records] == [
        "scheduling starts without 1 of the 2 pending pods, which kopf has not handed over "
        "in 0 s; a pod of lower priority may go before them"
    ]


async def test_an_api_that_never_answers_does_not_hold_scheduling_off(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(handlers_sync, "MAX_WAIT_SECONDS", 0.2)
    sync = HandlersSync(Lister(fail=1000))
    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(sync.run(), 2)
    assert sync.synced
    assert "cannot list the pending pods" in caplog.text


async def test_a_cancelled_wait_lets_the_loop_go() -> None:
    sync = HandlersSync(Lister("ns/a"))
    task = asyncio.create_task(sync.run())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sync.synced and not sync.waiting


async def test_the_lister_reads_pod_keys_from_a_metadata_only_list(
    kmock: KubernetesEmulator,
) -> None:
    kmock.objects["v1/pods", "ns", "a"] = pod_dict("a", namespace="ns")
    kmock.objects["v1/pods", "other", "b"] = pod_dict("b", namespace="other")
    client = k8s.ApiClient(k8s.Configuration(host=str(kmock.url).rstrip("/")))
    try:
        assert await pending_lister(client)() == {"ns/a", "other/b"}
    finally:
        await client.close()
    (request,) = [r for r in kmock if r.method == "GET" and "pods" in str(r.url)]
    assert "PartialObjectMetadataList" in request.headers["Accept"]
    assert request.params["fieldSelector"] == (
        "spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed"
    )
    assert request.params["resourceVersion"] == "0"  # from the watch cache, not etcd


async def test_a_server_without_metadata_only_lists_is_listed_whole(
    kmock: KubernetesEmulator,
) -> None:
    kmock.objects["v1/pods", "ns", "a"] = pod_dict("a", namespace="ns")

    def not_acceptable(request: Request) -> Response:
        return Response(status=406, payload={"kind": "Status", "code": 406})

    kmock[lambda r: "PartialObjectMetadataList" in r.headers.get("Accept", "")] << not_acceptable
    client = k8s.ApiClient(k8s.Configuration(host=str(kmock.url).rstrip("/")))
    lister = pending_lister(client)
    try:
        assert await lister() == {"ns/a"}
        assert await lister() == {"ns/a"}
    finally:
        await client.close()
    accepts = [r.headers["Accept"] for r in kmock if r.method == "GET"]
    assert accepts == [METADATA_ONLY, "application/json", "application/json"]


def test_the_handler_and_the_list_key_a_pod_alike() -> None:
    """By namespace/name (the informers' key): the list's metadata has no spec, kopf's body
    has all of it."""
    sync = HandlersSync(Lister())
    sync.seen(pod_dict("web", namespace="shop"))
    assert sync._seen == {"shop/web"}


async def test_the_scheduling_loop_starts_once_the_pending_pods_are_handed_over(
    kmock: KubernetesEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    declare_kinds(kmock)
    namespaces_listable(monkeypatch)
    pending = pod_dict("web", scheduler_name="my-scheduler")
    kmock.objects["v1/pods", "default", "web"] = pending
    rt = Runtime(
        Options(http_port=0, secure_port=0),
        Api(k8s.ApiClient(k8s.Configuration(host=str(kmock.url).rstrip("/")))),
        default_registry(load_entry_points=False),
    )
    runs: list[bool] = []

    async def run(stop: asyncio.Event, gate: Any = None) -> None:
        runs.append(True)
        await stop.wait()

    monkeypatch.setattr(rt.scheduler, "run", run)
    await rt.start()
    try:
        assert rt.intake is not None
        await asyncio.wait_for(rt.intake.wait_synced(), 5)  # WaitForCacheSync passed
        await asyncio.sleep(0.2)
        assert runs == [] and rt.handlers_sync.waiting
        rt.handlers_sync.seen(pending)  # kopf hands the listed pod to the handler
        for _ in range(100):
            if runs:
                break
            await asyncio.sleep(0.01)
        assert runs == [True]
    finally:
        await rt.stop()
