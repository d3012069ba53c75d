"""Upstream defaultbinder/default_binder_test.go: a successful binding and a failing one."""

from __future__ import annotations

from typing import Any

from builders import RecordingClient, make_pod
from multisched.framework import BindingConflict, Code, CycleState
from multisched.plugins.default_binder import DefaultBinder


class _Handle:
    def __init__(self, client: Any) -> None:
        self.client = client


async def test_binds_through_the_client() -> None:
    client = RecordingClient()
    binder = DefaultBinder(None, _Handle(client))  # type: ignore[arg-type]
    status = await binder.bind(
        CycleState(), make_pod("foo", namespace="ns"), "foohost.kubernetes.mydomain.com"
    )
    assert status is None
    assert client.bound == [("ns/foo", "foohost.kubernetes.mydomain.com")]


async def test_binding_conflict_is_an_error_status() -> None:
    conflict = BindingConflict(409, 'pods "foo" is already assigned to node "other"', "other")
    client = RecordingClient(conflict)
    binder = DefaultBinder(None, _Handle(client))  # type: ignore[arg-type]
    status = await binder.bind(CycleState(), make_pod("foo"), "n1")
    assert status is not None
    assert status.code == Code.ERROR
    assert status.reasons == ('pods "foo" is already assigned to node "other" (409)',)
    # The status carries the refusal itself: the binding cycle reads where the pod went.
    assert status.cause is conflict
    assert client.bound == [("default/foo", "n1")]


async def test_any_client_failure_is_an_error_status() -> None:
    binder = DefaultBinder(None, _Handle(RecordingClient(RuntimeError("binding rejected"))))  # type: ignore[arg-type]
    status = await binder.bind(CycleState(), make_pod(), "n1")
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message() == "binding rejected"
    assert isinstance(status.cause, RuntimeError)


async def test_no_client() -> None:
    status = await DefaultBinder(None, _Handle(None)).bind(CycleState(), make_pod(), "n1")  # type: ignore[arg-type]
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message() == "no API client to bind with"


async def test_client_is_read_at_bind_time() -> None:
    handle = _Handle(None)
    binder = DefaultBinder(None, handle)  # type: ignore[arg-type]
    handle.client = client = RecordingClient()
    assert await binder.bind(CycleState(), make_pod("late"), "n1") is None
    assert client.bound == [("default/late", "n1")]
