"""Every place multisched reaches past kubernetes_asyncio's public API, in one module.

The binding client writes through the ApiClient's own aiohttp session (``call_api``'s
per-request sanitising costs a fifth of a request's CPU, and a pod costs two requests), so
it needs the session, the request options ``RESTClientObject.request`` adds, and a hook at
the moment a connection is in hand. An upgrade of kubernetes_asyncio or aiohttp that moves
any of these fails ``tests/transport/test_internals.py`` by name, not a binding at run time.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s

#: (object, attribute) pairs this module reads or replaces, for the upgrade test.
PINNED = (
    ("kubernetes_asyncio.client.rest.RESTClientObject", "pool_manager"),
    ("kubernetes_asyncio.client.rest.RESTClientObject", "proxy"),
    ("kubernetes_asyncio.client.rest.RESTClientObject", "proxy_headers"),
    ("kubernetes_asyncio.client.rest.RESTClientObject", "server_hostname"),
    ("kubernetes_asyncio.client.ApiClient", "update_params_for_auth"),
    ("aiohttp.ClientSession", "_trust_env"),
    ("aiohttp.BaseConnector", "connect"),
)


def session_of(api_client: k8s.ApiClient) -> aiohttp.ClientSession:
    """The ApiClient's pooled aiohttp session (TLS, proxy and keep-alive already set)."""
    session: aiohttp.ClientSession = api_client.rest_client.pool_manager
    return session


def request_options(api_client: k8s.ApiClient) -> dict[str, Any]:
    """What ``RESTClientObject.request`` adds to every request, when configured."""
    rest = api_client.rest_client
    return {
        key: value
        for key, value in (
            ("proxy", rest.proxy),
            ("proxy_headers", rest.proxy_headers),
            ("server_hostname", rest.server_hostname),
        )
        if value
    }


def skip_env_lookups(api_client: k8s.ApiClient) -> None:
    """kubernetes_asyncio opens its session with ``trust_env=True``: aiohttp then reads
    ~/.netrc and the proxy variables in a worker thread before *every* request, two thread
    hops per binding. With no proxy in the environment there is nothing to find."""
    session: Any = getattr(api_client.rest_client, "pool_manager", None)
    if not urllib.request.getproxies() and hasattr(session, "_trust_env"):
        session._trust_env = False


Connect = Callable[..., Awaitable[Any]]


def wrap_connect(session: aiohttp.ClientSession, wrap: Callable[[Connect], Connect]) -> None:
    """Replace the session's connector's ``connect`` with ``wrap(connect)``, once: the
    wrapper runs when a connection is in hand, after every await before the send."""
    connector: Any = session.connector
    if connector is not None and not getattr(connector.connect, "wrapped_by_multisched", False):
        wrapped = wrap(connector.connect)
        wrapped.wrapped_by_multisched = True  # type: ignore[attr-defined]
        connector.connect = wrapped
