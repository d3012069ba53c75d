"""The one error of an answer that is not 2xx, whoever asked: informers, live commands,
bindings, leader election."""

from __future__ import annotations


class ApiError(Exception):
    """A non-2xx answer. ``status`` is the HTTP status (0: no answer at all), ``reason``
    and ``message`` the API's Status fields when it sent one."""

    def __init__(self, status: int, message: str = "", reason: str = "") -> None:
        text = message or reason
        super().__init__(f"{text} ({status})" if text else f"HTTP {status}")
        self.status = status
        self.message = message
        self.reason = reason
