"""TokenReview and SubjectAccessReview: who a bearer token belongs to, and whether that user
may ``get`` a non-resource path, asked of the API server for the secure port (upstream's
delegated authentication and authorization).

The reviews go through a client of their own, built from the operator's configuration
(same credentials, a refreshed token included) with ``REVIEW_CONNECTIONS`` connections,
so that a flood of them cannot take the connections the bindings use. Each is one POST of
the review's JSON (what the generated ``create_token_review`` and
``create_subject_access_review`` send), its answer read as plain JSON.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client as k8s

from .requests import decode_json

#: Connections of the reviews' own client.
REVIEW_CONNECTIONS = 2
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """A TokenReview's ``status.user``."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


class ReviewUnavailable(Exception):
    """The API server could not be asked (the request is not answered either way)."""


class KubeReviewer:
    """The reviews through their own client (``api_client``), closed with ``close``."""

    def __init__(self, configuration: Any) -> None:
        config = copy.copy(configuration)
        config.connection_pool_maxsize = REVIEW_CONNECTIONS
        self.api_client = k8s.ApiClient(config)

    async def close(self) -> None:
        await self.api_client.close()

    async def authenticate(self, token: str) -> UserInfo | None:
        """The token's user, or None when the API server does not accept the token."""
        status = await self._create("TokenReview", TOKEN_REVIEWS, {"spec": {"token": token}})
        user = status.get("user")
        if not status.get("authenticated") or not isinstance(user, dict):
            return None
        extra = user.get("extra")
        if not isinstance(extra, dict):
            extra = {}
        return UserInfo(
            name=str(user.get("username") or ""),
            uid=str(user.get("uid") or ""),
            groups=tuple(user.get("groups") or ()),
            extra={k: tuple(v or ()) for k, v in extra.items()},
        )

    async def authorize(self, user: UserInfo, path: str, verb: str) -> tuple[bool, str]:
        """Whether ``user`` may ``verb`` the non-resource ``path``, and the reason given."""
        # The fields the generated model sends, in its order; empty ones are left out.
        spec: dict[str, Any] = {}
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        if user.groups:
            spec["groups"] = list(user.groups)
        spec["nonResourceAttributes"] = {"path": path, "verb": verb}
        if user.uid:
            spec["uid"] = user.uid
        spec["user"] = user.name
        status = await self._create("SubjectAccessReview", ACCESS_REVIEWS, {"spec": spec})
        return bool(status.get("allowed")), str(status.get("reason") or "")

    async def _create(self, kind: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The created review's ``status`` ({} when it has none)."""
        try:
            resp = await self.api_client.call_api(
                path,
                "POST",
                header_params={"Accept": "application/json", "Content-Type": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
            )
            try:
                raw: bytes = await resp.read()
            finally:
                resp.release()
            if not 200 <= resp.status <= 299:  # worded as the generated client's ApiException
                raise ReviewUnavailable(f"{kind} failed: {resp.status} {resp.reason}")
            review = decode_json(raw) if raw else {}
        except ReviewUnavailable:
            raise
        except Exception as exc:
            raise ReviewUnavailable(f"{kind} failed: {_describe(exc)}") from None
        status = review.get("status") if isinstance(review, dict) else None
        return status if isinstance(status, dict) else {}


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None)
    return f"{status} {reason}" if status else (str(exc) or type(exc).__name__)
