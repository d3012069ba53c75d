"""The reaches past kubernetes_asyncio's public API, checked against the installed
libraries: an upgrade that moves one fails here, by name, not in a binding at run time."""

from __future__ import annotations

import importlib
import inspect

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s

from multisched.transport.internals import (
    PINNED,
    request_options,
    session_of,
    skip_env_lookups,
    wrap_connect,
)


@pytest.mark.parametrize(("owner", "attribute"), PINNED, ids=[f"{o}.{a}" for o, a in PINNED])
async def test_every_pinned_internal_is_still_there(owner: str, attribute: str) -> None:
    module, _, name = owner.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    if hasattr(cls, attribute):
        return
    # Instance attributes: set in __init__, so look at a live object.
    api_client = k8s.ApiClient(k8s.Configuration(host="http://127.0.0.1:1"))
    try:
        live = {
            "kubernetes_asyncio.client.rest.RESTClientObject": api_client.rest_client,
            "aiohttp.ClientSession": api_client.rest_client.pool_manager,
        }.get(owner)
        assert live is not None and hasattr(live, attribute), (
            f"{owner}.{attribute} is gone: multisched/transport/internals.py relies on it"
        )
    finally:
        await api_client.close()


async def test_the_session_options_and_connect_hook_work_on_a_real_client() -> None:
    cfg = k8s.Configuration(host="http://127.0.0.1:1")
    cfg.proxy = "http://proxy.example:3128"
    api_client = k8s.ApiClient(cfg)
    try:
        session = session_of(api_client)
        assert isinstance(session, aiohttp.ClientSession)
        assert request_options(api_client) == {"proxy": "http://proxy.example:3128"}
        calls: list[str] = []

        def wrap(connect: object) -> object:
            async def wrapped(*args: object, **kwargs: object) -> object:
                calls.append("connect")
                return await connect(*args, **kwargs)  # type: ignore[operator]

            return wrapped

        wrap_connect(session, wrap)  # type: ignore[arg-type]
        first = session.connector.connect  # type: ignore[union-attr]
        wrap_connect(session, wrap)  # type: ignore[arg-type]
        assert session.connector.connect is first  # type: ignore[union-attr] # once only
        assert inspect.iscoroutinefunction(first)
        with pytest.raises(aiohttp.ClientError):
            await session.get("http://127.0.0.1:1/")  # nothing listens: the hook still ran
        assert calls == ["connect"]
    finally:
        await api_client.close()


async def test_env_lookups_are_skipped_without_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    api_client = k8s.ApiClient(k8s.Configuration(host="http://127.0.0.1:1"))
    try:
        assert session_of(api_client)._trust_env is True
        skip_env_lookups(api_client)
        assert session_of(api_client)._trust_env is False
    finally:
        await api_client.close()
