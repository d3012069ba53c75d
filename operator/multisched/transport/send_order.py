"""``SendOrder``: requests of one kind reach the wire in the order they were made.

The scheduler makes its bindings in queue order, each on its own HTTP/1.1 connection from
aiohttp's pool. A binding that has to open a connection (a TLS handshake: 10-50 ms on a
busy API server) is overtaken by the ones behind it that found an idle connection, so the
API server received a backlog's bindings out of priority order where kube-scheduler's, on
one HTTP/2 connection, arrive in order. Here a request that has its connection waits, on
the wire, for the earlier ones still connecting.

A request may also carry a rank (a binding: its pod's priority). It is not sent while an
earlier request of a higher rank is unanswered: separate HTTP/1.1 connections written a
millisecond apart reach the API server's handlers up to a few ms apart in either order, so
only an answer proves the earlier one arrived first. A backlog's bindings then arrive in
priority order, as the queue hands the pods out; those of one rank go side by side, and a
request never waits for a later one or for one of its own rank or lower.

Nothing waits otherwise (no loop iteration is added to a request whose predecessors are
connected, or answered where they outrank it), and no request waits long: after
``patience`` the ones it waited for are overtaken for good, and hold back no later request.
"""

from __future__ import annotations

import asyncio

#: How long a request with its connection waits for earlier ones still connecting.
PATIENCE = 0.5


def _overtake(parked: asyncio.Future[bool]) -> None:
    if not parked.done():
        parked.set_result(True)


def _wake(parked: asyncio.Future[bool]) -> None:
    if not parked.done():
        parked.set_result(False)


class SendOrder:
    """Tickets in the order requests are made; a ticket is dropped once its request has a
    connection, or ends without one."""

    __slots__ = ("_connecting", "_next", "_outranked", "_parked", "_ranked", "patience")

    def __init__(self, patience: float = PATIENCE) -> None:
        self.patience = patience
        self._next = 0
        #: Tickets whose request has no connection yet, oldest first (insertion order).
        self._connecting: dict[int, None] = {}
        #: Requests with their connection, waiting for earlier tickets: done with True
        #: when they gave up waiting.
        self._parked: dict[int, asyncio.Future[bool]] = {}
        #: Unanswered tickets that carry a rank, and the rank.
        self._ranked: dict[int, int] = {}
        #: Ranked requests waiting for the answers to earlier ones of a higher rank.
        self._outranked: dict[int, asyncio.Future[bool]] = {}

    def take(self, rank: int | None = None) -> int:
        ticket = self._next
        self._next += 1
        self._connecting[ticket] = None
        if rank is not None:
            self._ranked[ticket] = rank
        return ticket

    def done(self, ticket: int) -> None:
        """The ticket's request is answered, or ended without an answer (idempotent)."""
        self.drop(ticket)
        if self._ranked.pop(ticket, None) is not None:
            self._release_ranks()

    async def after_higher_ranks(self, ticket: int) -> None:
        """Before the request looks for its connection: return once no earlier request of
        a higher rank is unanswered."""
        if not self._waits_for_rank(ticket):
            return
        overtaken = await self._park(self._outranked, ticket)
        rank = self._ranked.get(ticket)
        if overtaken and rank is not None:
            # Those it waited for are overtaken for good: they hold back no later request.
            for earlier in [t for t, r in self._ranked.items() if t < ticket and r > rank]:
                del self._ranked[earlier]
            self._release_ranks()

    def drop(self, ticket: int) -> None:
        """The ticket's request has its connection, or ended without one (idempotent)."""
        if self._connecting.pop(ticket, 0) is None and self._parked:
            self._release()

    async def turn(self, ticket: int) -> None:
        """With the connection in hand: return once no earlier request is connecting."""
        self.drop(ticket)
        if not self._holds_back(ticket):
            return
        if await self._park(self._parked, ticket):
            # The earlier ones are overtaken for good: they hold back no later request.
            for earlier in [t for t in self._connecting if t < ticket]:
                del self._connecting[earlier]
            self._release()

    async def _park(self, waiters: dict[int, asyncio.Future[bool]], ticket: int) -> bool:
        """Wait among ``waiters`` until woken (False) or out of patience (True)."""
        loop = asyncio.get_running_loop()
        parked: asyncio.Future[bool] = loop.create_future()
        waiters[ticket] = parked
        timer = loop.call_later(self.patience, _overtake, parked)
        try:
            return await parked
        finally:
            timer.cancel()
            waiters.pop(ticket, None)

    def _waits_for_rank(self, ticket: int) -> bool:
        rank = self._ranked.get(ticket)
        if rank is None:
            return False
        for earlier, other in self._ranked.items():
            if earlier >= ticket:
                return False  # insertion order is ticket order
            if other > rank:
                return True
        return False

    def _release_ranks(self) -> None:
        """Wake the ranked requests that no unanswered earlier one outranks any more."""
        for waiting in [t for t in self._outranked if not self._waits_for_rank(t)]:
            _wake(self._outranked.pop(waiting))

    def _holds_back(self, ticket: int) -> bool:
        oldest = next(iter(self._connecting), None)
        return oldest is not None and oldest < ticket

    def _release(self) -> None:
        """Wake, oldest first, the parked requests that nothing earlier holds back."""
        for ticket in sorted(self._parked):
            if self._holds_back(ticket):
                break
            _wake(self._parked.pop(ticket))
