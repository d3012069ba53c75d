"""``SendOrder``: requests of one kind reach the wire in the order they were made.

The scheduler makes its bindings in queue order, each on its own HTTP/1.1 connection from
aiohttp's pool. A binding that has to open a connection (a TLS handshake: 10-50 ms on a
busy API server) is overtaken by the ones behind it that found an idle connection, so the
API server received a backlog's bindings out of priority order where kube-scheduler's, on
one HTTP/2 connection, arrive in order. Here a request that has its connection waits, on
the wire, for the earlier ones still connecting.

Nothing waits otherwise (no loop iteration is added to a request whose predecessors are
connected), and no request waits long: after ``patience`` the ones still connecting are
overtaken for good, and hold back no later request.
"""

from __future__ import annotations

import asyncio

#: How long a request with its connection waits for earlier ones still connecting.
PATIENCE = 0.5


def _overtake(parked: asyncio.Future[bool]) -> None:
    if not parked.done():
        parked.set_result(True)


class SendOrder:
    """Tickets in the order requests are made; a ticket is dropped once its request has a
    connection, or ends without one."""

    __slots__ = ("_connecting", "_next", "_parked", "patience")

    def __init__(self, patience: float = PATIENCE) -> None:
        self.patience = patience
        self._next = 0
        #: Tickets whose request has no connection yet, oldest first (insertion order).
        self._connecting: dict[int, None] = {}
        #: Requests with their connection, waiting for earlier tickets: done with True
        #: when they gave up waiting.
        self._parked: dict[int, asyncio.Future[bool]] = {}

    def take(self) -> int:
        ticket = self._next
        self._next += 1
        self._connecting[ticket] = None
        return ticket

    def drop(self, ticket: int) -> None:
        """The ticket's request has its connection, or ended without one (idempotent)."""
        if self._connecting.pop(ticket, 0) is None and self._parked:
            self._release()

    async def turn(self, ticket: int) -> None:
        """With the connection in hand: return once no earlier request is connecting."""
        self.drop(ticket)
        if not self._holds_back(ticket):
            return
        loop = asyncio.get_running_loop()
        parked: asyncio.Future[bool] = loop.create_future()
        self._parked[ticket] = parked
        timer = loop.call_later(self.patience, _overtake, parked)
        try:
            overtaken = await parked
        finally:
            timer.cancel()
            self._parked.pop(ticket, None)
        if overtaken:
            # The earlier ones are overtaken for good: they hold back no later request.
            for earlier in [t for t in self._connecting if t < ticket]:
                del self._connecting[earlier]
            self._release()

    def _holds_back(self, ticket: int) -> bool:
        oldest = next(iter(self._connecting), None)
        return oldest is not None and oldest < ticket

    def _release(self) -> None:
        """Wake, oldest first, the parked requests that nothing earlier holds back."""
        for ticket in sorted(self._parked):
            if self._holds_back(ticket):
                break
            parked = self._parked.pop(ticket)
            if not parked.done():
                parked.set_result(False)
