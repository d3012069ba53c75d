"""TokenReview and SubjectAccessReview as sent to, and read from, an API server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s

from multisched.transport.reviews import KubeReviewer, ReviewUnavailable, UserInfo

Seen = list[dict[str, Any]]


class ApiServer:
    """Answers reviews as the API server does: the posted object back, with a status."""

    def __init__(self) -> None:
        self.seen: Seen = []
        self.users: dict[str, dict[str, Any]] = {}
        self.allowed: set[tuple[str, str]] = set()
        self.down = False

    async def review(self, request: web.Request) -> web.Response:
        raw = await request.read()
        data = json.loads(raw)
        self.seen.append(
            {
                "path": request.path,
                "accept": request.headers.get("Accept"),
                "content-type": request.headers.get("Content-Type"),
                "authorization": request.headers.get("Authorization"),
                "body": json.loads(raw),
            }
        )
        if self.down:
            status = {"kind": "Status", "reason": "ServiceUnavailable", "code": 503}
            return web.json_response(status, status=503)
        spec = data["spec"]
        if "token" in spec:
            user = self.users.get(spec["token"])
            data["status"] = {"authenticated": True, "user": user} if user else {}
        else:
            attrs = spec["nonResourceAttributes"]
            allowed = (spec["user"], attrs["path"]) in self.allowed
            data["status"] = {"allowed": allowed, "reason": "" if allowed else "no RBAC rule"}
        return web.json_response(data, status=201)


@pytest.fixture
async def api() -> AsyncIterator[tuple[ApiServer, KubeReviewer]]:
    server = ApiServer()
    app = web.Application()
    app.router.add_post("/{path:.*}", server.review)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    config = k8s.Configuration(host=f"http://127.0.0.1:{runner.addresses[0][1]}")
    config.api_key = {"BearerToken": "Bearer operator-token"}
    reviewer = KubeReviewer(config)
    try:
        yield server, reviewer
    finally:
        await reviewer.close()
        await runner.cleanup()


async def test_a_token_review_names_the_user(api: tuple[ApiServer, KubeReviewer]) -> None:
    server, reviewer = api
    server.users["good"] = {
        "username": "system:serviceaccount:monitoring:prometheus",
        "uid": "u1",
        "groups": ["system:authenticated"],
        "extra": {"authentication.kubernetes.io/pod-name": ["prom-0"]},
    }
    assert await reviewer.authenticate("good") == UserInfo(
        "system:serviceaccount:monitoring:prometheus",
        "u1",
        ("system:authenticated",),
        {"authentication.kubernetes.io/pod-name": ("prom-0",)},
    )
    assert await reviewer.authenticate("stolen") is None
    assert server.seen[0] == {
        "path": "/apis/authentication.k8s.io/v1/tokenreviews",
        "accept": "application/json",
        "content-type": "application/json",
        "authorization": "Bearer operator-token",  # the operator asks, as itself
        "body": {"spec": {"token": "good"}},
    }


async def test_an_access_review_asks_for_the_non_resource_path(
    api: tuple[ApiServer, KubeReviewer],
) -> None:
    server, reviewer = api
    server.allowed.add(("admin", "/metrics"))
    admin = UserInfo("admin", "u2", ("system:masters",), {"scopes": ("a", "b")})
    assert await reviewer.authorize(admin, "/metrics", "get") == (True, "")
    anonymous = UserInfo("system:anonymous", groups=("system:unauthenticated",))
    assert await reviewer.authorize(anonymous, "/debug/queue", "get") == (False, "no RBAC rule")
    assert [seen["path"] for seen in server.seen] == [
        "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    ] * 2
    assert server.seen[0]["body"] == {
        "spec": {
            "extra": {"scopes": ["a", "b"]},
            "groups": ["system:masters"],
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
            "uid": "u2",
            "user": "admin",
        }
    }
    # Empty fields are left out, as the generated model leaves them out.
    assert server.seen[1]["body"] == {
        "spec": {
            "groups": ["system:unauthenticated"],
            "nonResourceAttributes": {"path": "/debug/queue", "verb": "get"},
            "user": "system:anonymous",
        }
    }


async def test_a_failed_review_is_unavailable_not_a_verdict(
    api: tuple[ApiServer, KubeReviewer],
) -> None:
    server, reviewer = api
    server.down = True
    with pytest.raises(ReviewUnavailable, match=r"^TokenReview failed: 503 Service Unavailable$"):
        await reviewer.authenticate("good")
    with pytest.raises(ReviewUnavailable, match=r"^SubjectAccessReview failed: 503 Service"):
        await reviewer.authorize(UserInfo("admin"), "/metrics", "get")


async def test_an_unreachable_api_server_is_unavailable() -> None:
    reviewer = KubeReviewer(k8s.Configuration(host="http://127.0.0.1:1"))
    try:
        with pytest.raises(ReviewUnavailable, match=r"^TokenReview failed: Cannot connect"):
            await reviewer.authenticate("good")
    finally:
        await reviewer.close()
