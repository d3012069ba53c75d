"""The errors of a request, whoever asked (informers, live commands, bindings, leader
election), so that no caller above transport names aiohttp's or kubernetes_asyncio's.

- ``ApiError``: the API server answered, and not 2xx.
- ``Unreachable``: an ``Api`` request got no answer (an ``ApiError`` of status 0).
- ``NotSent``: an ``Api`` request's guard did not hold; nothing went out.
- ``TransportError`` (``ConnectionFailed``, ``CertificateRejected``): aiohttp's failure of
  any other request, translated with its text.
"""

from __future__ import annotations

import aiohttp


class ApiError(Exception):
    """A non-2xx answer. ``status`` is the HTTP status (0: no answer at all), ``reason``
    and ``message`` the API's Status fields when it sent one."""

    def __init__(self, status: int, message: str = "", reason: str = "") -> None:
        text = message or reason
        super().__init__(f"{text} ({status})" if text else f"HTTP {status}")
        self.status = status
        self.message = message
        self.reason = reason


class Unreachable(ApiError):
    """No answer from the API server (status 0). ``maybe_sent``: the request may have
    reached it (the connection broke after the send), so its outcome is unknown."""

    def __init__(self, message: str, maybe_sent: bool) -> None:
        Exception.__init__(self, message)
        self.status = 0
        self.message = message
        self.reason = ""
        self.maybe_sent = maybe_sent


class NotSent(Exception):
    """The request's guard did not hold (checked before the request and again with the
    connection in hand): nothing was sent."""


class TransportError(Exception):
    """A request failed below HTTP (an answer cut short, say): aiohttp's ``ClientError``,
    translated. Its text is the failure's, or the failure's class name when it has none."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause) or type(cause).__name__)


class ConnectionFailed(TransportError):
    """No connection, or one that broke or went silent (aiohttp's
    ``ClientConnectionError``)."""


class CertificateRejected(ConnectionFailed):
    """The server's certificate did not verify. ``certificate_error`` is ssl's verdict
    (``verify_code``, ``verify_message``)."""

    def __init__(self, cause: BaseException, certificate_error: BaseException) -> None:
        super().__init__(cause)
        self.certificate_error = certificate_error


def translated(exc: aiohttp.ClientError) -> TransportError:
    """aiohttp's failure as transport's own: what callers catch and print."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return CertificateRejected(exc, exc.certificate_error)
    if isinstance(exc, aiohttp.ClientConnectionError):
        return ConnectionFailed(exc)
    return TransportError(exc)
