"""Transport's requests, lists and watches on loopback: every failure arrives as transport's
own error, with aiohttp's text, so that no caller above transport names aiohttp."""

from __future__ import annotations

import asyncio
import ssl

import aiohttp
import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s

from connects import Serve
from multisched.transport import (
    Api,
    ApiError,
    CertificateRejected,
    ConnectionFailed,
    NotSent,
    Resource,
    TransportError,
    request_json,
    watch,
)
from multisched.transport.endpoints import EndpointClient
from multisched.transport.errors import translated
from ports import closed_port

NODES = Resource("", "v1", "nodes")


async def test_a_refused_connection_is_connection_failed_with_aiohttps_text() -> None:
    api_client = k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{await closed_port()}"))
    try:
        with pytest.raises(ConnectionFailed) as err:
            await request_json(api_client, "GET", "/api/v1/nodes")
        cause = err.value.__cause__
        assert isinstance(cause, aiohttp.ClientConnectorError)
        assert str(err.value) == str(cause) and str(err.value).startswith("Cannot connect")
        assert not isinstance(err.value, ApiError)
    finally:
        await api_client.close()


def test_translation_keeps_the_kind_of_failure_and_its_text() -> None:
    cut_short = translated(aiohttp.ClientPayloadError("Response payload is not completed"))
    assert type(cut_short) is TransportError
    assert str(cut_short) == "Response payload is not completed"
    dropped = translated(aiohttp.ServerDisconnectedError())
    assert isinstance(dropped, ConnectionFailed) and str(dropped) == "Server disconnected"
    # No text: the failure's class name, as the callers' messages fall back to it.
    assert str(translated(aiohttp.ClientConnectionError())) == "ClientConnectionError"
    verdict = ssl.SSLCertVerificationError(1, "certificate verify failed")
    untrusted = translated(
        aiohttp.ClientConnectorCertificateError(
            aiohttp.client_reqrep.ConnectionKey("h", 443, True, True, None, None, None),
            verdict,
        )
    )
    assert isinstance(untrusted, CertificateRejected)
    assert untrusted.certificate_error is verdict


async def test_a_watch_hands_over_each_line_across_chunks(serve: Serve) -> None:
    async def stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        # One event split across two writes, a blank keep-alive line, then a second event.
        await resp.write(b'{"type":"ADDED","object":{"a"')
        await asyncio.sleep(0.01)
        await resp.write(b":1}}\n\n")
        await resp.write(b'{"type":"DELETED","object":{}}\n')
        return resp

    app = web.Application()
    app.router.add_get("/api/v1/nodes", stream)
    api_client = await serve(app)
    lines: list[bytes] = []
    async with watch(
        api_client, NODES, [("watch", "true")], connect_timeout=5, read_timeout=5
    ) as opened:
        count = await opened.lines(lines.append)
    assert count == 2
    assert lines == [
        b'{"type":"ADDED","object":{"a":1}}',
        b'{"type":"DELETED","object":{}}',
    ]


async def test_a_refused_watch_is_an_api_error_before_the_block(
    serve: Serve,
) -> None:
    async def gone(request: web.Request) -> web.Response:
        return web.json_response(
            {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}, status=410
        )

    app = web.Application()
    app.router.add_get("/api/v1/nodes", gone)
    api_client = await serve(app)
    entered = False
    with pytest.raises(ApiError) as err:
        async with watch(api_client, NODES, [], connect_timeout=5, read_timeout=5):
            entered = True
    assert (err.value.status, err.value.reason, err.value.message) == (410, "Expired", "too old")
    assert not entered


async def test_a_watch_cut_short_is_connection_failed(serve: Serve) -> None:
    async def hang_up(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(b'{"type":"ADDED","object":{}}\n')
        assert request.transport is not None
        request.transport.close()  # the connection drops mid-stream
        return resp

    app = web.Application()
    app.router.add_get("/api/v1/nodes", hang_up)
    api_client = await serve(app)
    lines: list[bytes] = []
    with pytest.raises(TransportError):
        async with watch(api_client, NODES, [], connect_timeout=5, read_timeout=5) as opened:
            await opened.lines(lines.append)
    assert lines == [b'{"type":"ADDED","object":{}}']


async def test_an_endpoint_get_answers_status_reason_and_text(
    serve: Serve,
) -> None:
    seen: list[tuple[str, str]] = []

    async def queue(request: web.Request) -> web.Response:
        seen.append((request.headers.get("Authorization", ""), request.query.get("pod", "")))
        return web.Response(status=403, reason="Forbidden", text="no")

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound("/debug/queue")

    app = web.Application()
    app.router.add_get("/debug/queue", queue)
    app.router.add_get("/elsewhere", moved)
    api_client = await serve(app)
    base = api_client.configuration.host
    async with EndpointClient(5) as client:
        got = await client.get(
            f"{base}/debug/queue",
            headers={"Authorization": "Bearer t"},
            params={"pod": "ns/p"},
            tls=False,
        )
        assert got == (403, "Forbidden", "no")
        assert seen == [("Bearer t", "ns/p")]
        # A redirect is answered as it is, not followed: a token is for this endpoint alone.
        status, _, _ = await client.get(f"{base}/elsewhere", headers={}, params={}, tls=False)
        assert status == 302 and len(seen) == 1
    async with EndpointClient(5) as client:
        with pytest.raises(ConnectionFailed):
            await client.get(
                f"http://127.0.0.1:{await closed_port()}/debug/queue",
                headers={},
                params={},
                tls=False,
            )


async def test_an_api_request_whose_guard_fails_on_the_wire_is_not_sent(serve: Serve) -> None:
    """The guard is asked before the request and again with the connection in hand: a
    "no" at either point sends nothing, and says so as ``NotSent``."""
    posted: list[str] = []

    async def binding(request: web.Request) -> web.Response:
        posted.append(request.path)
        return web.json_response({}, status=201)

    app = web.Application()
    app.router.add_post("/api/v1/namespaces/default/pods/web/binding", binding)
    api = Api(await serve(app))
    path = "/api/v1/namespaces/default/pods/web/binding"
    for answers in ([False], [True, False]):
        looks = iter(answers)
        with pytest.raises(NotSent, match="not the leader any more; request not sent"):
            await api.request("POST", path, {}, guard=lambda looks=looks: next(looks))
    assert posted == []
    assert await api.request("POST", path, {}, guard=lambda: True) == {}
    assert posted == [path]
