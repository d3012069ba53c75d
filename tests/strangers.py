"""Strangers at the secure port: each (path, bearer token or None) asked once, 50 at a time
over one connection pool, TLS unverified (the caller is nobody in particular)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence

import aiohttp


async def flood(url: str, requests: Sequence[tuple[str, str | None]]) -> Counter[int]:
    """The answers' status codes, counted."""
    answers: Counter[int] = Counter()
    limit = asyncio.Semaphore(50)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http:

        async def one(path: str, token: str | None) -> None:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with limit, http.get(url + path, headers=headers) as resp:
                answers[resp.status] += 1

        await asyncio.gather(*(one(path, token) for path, token in requests))
    return answers
