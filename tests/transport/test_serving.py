"""The operator's HTTP(S) server facade: routes, the request view, replies, the guard, TLS."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from multisched.operator.secure import serving_context
from multisched.transport.serving import Handler, HttpServer, Reply, Request

Seen = list[dict[str, Any]]


def recording(seen: Seen) -> Handler:
    async def handler(request: Request) -> Reply:
        body = await request.read()
        seen.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "agent": request.headers.get("x-agent"),
                "peer": request.peer,
                "body": body,
            }
        )
        return Reply(body="seen")

    return handler


async def json_reply(request: Request) -> Reply:
    return Reply(429, '{"wait": true}', "application/json", {"Retry-After": "5"})


async def metrics_reply(request: Request) -> Reply:
    return Reply(body=b"m 1\n", headers={"Content-Type": "text/plain; version=0.0.4"})


async def answer(method: str, url: str, **kwargs: Any) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url, ssl=False, **kwargs) as resp,
    ):
        return resp.status, dict(resp.headers), await resp.read()


@pytest.fixture
async def plain() -> AsyncIterator[tuple[str, Seen]]:
    seen: Seen = []
    server = HttpServer(
        "127.0.0.1",
        0,
        {
            ("GET", "/seen"): recording(seen),
            ("POST", "/seen"): recording(seen),
            ("GET", "/json"): json_reply,
            ("GET", "/metrics"): metrics_reply,
        },
        max_body=16,
    )
    await server.start()
    assert server.port != 0  # the port bound
    try:
        yield f"http://127.0.0.1:{server.port}", seen
    finally:
        await server.stop()


async def test_a_handler_reads_the_request_through_the_view(plain: tuple[str, Seen]) -> None:
    url, seen = plain
    status, headers, body = await answer(
        "POST", f"{url}/seen?limit=3&limit=4&pod=a%2Fb", headers={"X-Agent": "probe"}, data=b"hi"
    )
    assert (status, body) == (200, b"seen")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert seen == [
        {
            "method": "POST",
            "path": "/seen",
            "query": {"limit": "3", "pod": "a/b"},  # the first of a repeated parameter
            "agent": "probe",  # header names are case-insensitive
            "peer": "127.0.0.1",
            "body": b"hi",
        }
    ]


async def test_a_body_beyond_the_limit_is_413(plain: tuple[str, Seen]) -> None:
    url, seen = plain
    status, _, _ = await answer("POST", f"{url}/seen", data=b"x" * 17)
    assert status == 413 and seen == []


async def test_replies_keep_their_status_headers_and_content_type(
    plain: tuple[str, Seen],
) -> None:
    url, _ = plain
    status, headers, body = await answer("GET", f"{url}/json")
    assert (status, headers["Retry-After"], body) == (429, "5", b'{"wait": true}')
    assert headers["Content-Type"] == "application/json; charset=utf-8"
    status, headers, body = await answer("GET", f"{url}/metrics")
    assert (status, headers["Content-Type"], body) == (200, "text/plain; version=0.0.4", b"m 1\n")


async def test_a_get_route_answers_head_and_others_are_404_or_405(
    plain: tuple[str, Seen],
) -> None:
    url, seen = plain
    status, headers, body = await answer("HEAD", f"{url}/metrics")
    assert (status, headers["Content-Length"], body) == (200, "4", b"")
    assert (await answer("GET", f"{url}/nowhere"))[0] == 404
    status, headers, _ = await answer("DELETE", f"{url}/json")
    assert (status, headers["Allow"]) == (405, "GET,HEAD")
    assert seen == []


async def test_the_guard_sees_every_request_first() -> None:
    calls: list[tuple[str, str, tuple[int, str] | None, bool]] = []

    async def secret(request: Request) -> Reply:
        return Reply(body="secret")

    async def guard(request: Request, handler: Handler | None) -> Reply:
        calls.append((request.method, request.path, request.unrouted, handler is secret))
        if handler is None or request.headers.get("Authorization") != "yes":
            return Reply(418, "no")
        return await handler(request)

    server = HttpServer("127.0.0.1", 0, {("GET", "/secret"): secret}, guard=guard)
    await server.start()
    url = f"http://127.0.0.1:{server.port}"
    try:
        assert (await answer("GET", f"{url}/secret", headers={"Authorization": "yes"}))[2] == (
            b"secret"
        )
        assert (await answer("GET", f"{url}/secret"))[0] == 418
        assert (await answer("GET", f"{url}/nowhere"))[0] == 418
        assert (await answer("POST", f"{url}/secret"))[0] == 418
    finally:
        await server.stop()
    assert calls == [
        ("GET", "/secret", None, True),
        ("GET", "/secret", None, True),
        ("GET", "/nowhere", (404, "Not Found"), False),
        ("POST", "/secret", (405, "Method Not Allowed"), False),
    ]


async def test_with_a_tls_context_only_https_is_served() -> None:
    async def hello(request: Request) -> Reply:
        return Reply(body="hello")

    server = HttpServer(
        "127.0.0.1", 0, {("GET", "/"): hello}, ssl_context=serving_context(None, None)
    )
    await server.start()
    try:
        assert (await answer("GET", f"https://127.0.0.1:{server.port}/"))[2] == b"hello"
        with pytest.raises(aiohttp.ClientError):
            await answer("GET", f"http://127.0.0.1:{server.port}/")
    finally:
        await server.stop()
    with pytest.raises(aiohttp.ClientError):  # stopped: nobody answers
        await answer("GET", f"https://127.0.0.1:{server.port}/")
