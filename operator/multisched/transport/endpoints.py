"""GETs of a scheduler's own HTTPS endpoints (``/debug/queue`` on its secure port), for the
live commands: one pooled session, a total timeout per request, and no redirects (a bearer
token is for the endpoint asked alone). aiohttp's failures are transport's errors."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from types import TracebackType

import aiohttp

from .errors import translated


class EndpointClient:
    """``async with EndpointClient(timeout) as client: await client.get(...)``."""

    def __init__(self, timeout: float) -> None:
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> EndpointClient:
        self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def get(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        params: Mapping[str, str],
        tls: ssl.SSLContext | bool,
        server_name: str | None = None,
    ) -> tuple[int, str | None, str]:
        """The answer's status, reason and text. ``tls``: False checks nothing; a context
        verifies the certificate (``server_name``: the name it must hold, when not the
        URL's host). A certificate that does not verify is ``CertificateRejected``."""
        assert self._session is not None, "use EndpointClient in async with"
        try:
            async with self._session.get(
                url,
                headers=headers,
                params=params,
                ssl=tls,
                server_hostname=server_name,
                allow_redirects=False,
            ) as resp:
                return resp.status, resp.reason, await resp.text()
        except aiohttp.ClientError as exc:
            raise translated(exc) from exc
