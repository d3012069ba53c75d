"""``SendOrder``: requests made in order reach the wire in order, even when an earlier one
must open its connection and a later one finds an idle one (issue 43: a backlog's bindings
reached the API server out of priority order)."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from connects import Serve, slow_first_connect
from multisched.transport import Api
from multisched.transport.send_order import SendOrder


async def _turns(order: SendOrder, tickets: list[int], done: list[int]) -> list[asyncio.Task[None]]:
    async def turn(ticket: int) -> None:
        await order.turn(ticket)
        done.append(ticket)

    tasks = [asyncio.create_task(turn(t)) for t in tickets]
    await asyncio.sleep(0)
    return tasks


async def test_a_request_with_its_connection_waits_for_earlier_ones_still_connecting() -> None:
    order = SendOrder()
    first, second, third = order.take(), order.take(), order.take()
    done: list[int] = []
    # The later two have their connections first: both wait.
    tasks = await _turns(order, [third, second], done)
    assert done == []
    # The first is connected: all three go, oldest first.
    await order.turn(first)
    done.append(first)
    await asyncio.gather(*tasks)
    assert done == [first, second, third]


async def test_nothing_waits_when_the_earlier_requests_are_connected() -> None:
    order = SendOrder()
    first, second = order.take(), order.take()
    await order.turn(first)
    done: list[int] = []
    tasks = await _turns(order, [second], done)
    assert done == [second] and all(t.done() for t in tasks)


async def test_a_request_that_ends_without_a_connection_holds_back_nothing() -> None:
    order = SendOrder()
    failed, later = order.take(), order.take()
    done: list[int] = []
    tasks = await _turns(order, [later], done)
    assert done == []
    order.drop(failed)  # its connect raised, or it was cancelled
    await asyncio.gather(*tasks)
    assert done == [later]


async def test_after_its_patience_a_request_overtakes_and_later_ones_do_not_wait_again() -> None:
    order = SendOrder(patience=0.05)
    stuck, patient, later = order.take(), order.take(), order.take()
    done: list[int] = []
    waited = await _turns(order, [patient], done)
    assert done == []
    await asyncio.gather(*waited)  # the patience ran out
    assert done == [patient]
    # ``stuck`` is still connecting, but overtaken for good: ``later`` goes at once.
    tasks = await _turns(order, [later], done)
    assert done == [patient, later] and all(t.done() for t in tasks)
    order.drop(stuck)  # connects at last: nothing to release, nothing raised


async def test_a_cancelled_waiter_is_forgotten() -> None:
    order = SendOrder()
    first, second, third = order.take(), order.take(), order.take()
    done: list[int] = []
    cancelled, waiting = await _turns(order, [second, third], done)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    order.drop(second)  # its request's ``finally``
    await order.turn(first)
    await waiting
    assert done == [third]


@pytest.mark.parametrize(("in_order", "expected"), [(True, ["a", "b"]), (False, ["b", "a"])])
async def test_bindings_reach_the_server_in_the_order_they_were_made(
    serve: Serve, in_order: bool, expected: list[str]
) -> None:
    """Without the send order (the control), the later binding overtakes the earlier one
    that is still opening its connection."""
    seen: list[str] = []

    async def binding(request: web.Request) -> web.Response:
        seen.append(request.match_info["pod"])
        return web.json_response({}, status=201)

    app = web.Application()
    app.router.add_post("/api/v1/namespaces/default/pods/{pod}/binding", binding)
    client = await serve(app)
    slow_first_connect(client)
    api = Api(client)

    async def bind(pod: str) -> None:
        path = f"/api/v1/namespaces/default/pods/{pod}/binding"
        await api.request("POST", path, {}, kind="bindings", in_order=in_order)

    first = asyncio.create_task(bind("a"))
    await asyncio.sleep(0.01)  # "a" is connecting
    await asyncio.gather(first, bind("b"))
    assert seen == expected


async def _after_ranks(
    order: SendOrder, tickets: list[int], done: list[int]
) -> list[asyncio.Task[None]]:
    async def wait(ticket: int) -> None:
        await order.after_higher_ranks(ticket)
        done.append(ticket)

    tasks = [asyncio.create_task(wait(t)) for t in tickets]
    await asyncio.sleep(0)
    return tasks


async def test_a_request_waits_for_the_answers_to_earlier_ones_of_a_higher_rank_only() -> None:
    order = SendOrder()
    high, same, low, later_high = order.take(500), order.take(500), order.take(10), order.take(500)
    unranked = order.take()
    done: list[int] = []
    tasks = await _after_ranks(order, [high, same, low, later_high, unranked], done)
    # Its own rank, a higher one, or none: nothing to wait for; ``low`` waits for both 500s.
    assert done == [high, same, later_high, unranked]
    order.done(high)
    await asyncio.sleep(0)
    assert low not in done  # ``same`` (500, made before it) is still unanswered
    order.done(same)
    await asyncio.gather(*tasks)
    assert done[-1] == low


async def test_after_its_patience_a_ranked_request_goes_and_later_ones_do_not_wait_again() -> None:
    order = SendOrder(patience=0.05)
    stuck, patient, later = order.take(1000), order.take(0), order.take(0)
    done: list[int] = []
    await asyncio.gather(*await _after_ranks(order, [patient], done))
    assert done == [patient]
    tasks = await _after_ranks(order, [later], done)
    assert done == [patient, later] and all(t.done() for t in tasks)
    order.done(stuck)  # answered at last: nothing to wake, nothing raised


async def test_a_ranked_request_that_ends_wakes_those_it_held_and_a_cancelled_one_is_gone() -> None:
    order = SendOrder()
    failed, cancelled, waiting = order.take(9), order.take(1), order.take(1)
    done: list[int] = []
    gone, held = await _after_ranks(order, [cancelled, waiting], done)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    order.done(cancelled)  # its request's ``finally``
    assert done == []
    order.done(failed)  # no answer (unreachable): it holds nothing back any more
    await held
    assert done == [waiting]


@pytest.mark.parametrize(("rank", "expected"), [(True, ["hi", "lo"]), (False, ["lo", "hi"])])
async def test_a_lower_priority_binding_reaches_the_server_after_a_higher_one_is_answered(
    serve: Serve, rank: bool, expected: list[str]
) -> None:
    """The earlier binding of a higher priority is slow to reach its handler (the API
    server took up the later connection first); without ranks (the control) the lower one,
    made a moment later, arrives first."""
    arrived: list[str] = []

    async def binding(request: web.Request) -> web.Response:
        pod = request.match_info["pod"]
        if pod == "hi":
            await asyncio.sleep(0.1)
        arrived.append(pod)
        return web.json_response({}, status=201)

    app = web.Application()
    app.router.add_post("/api/v1/namespaces/default/pods/{pod}/binding", binding)
    api = Api(await serve(app))

    async def bind(pod: str, priority: int) -> None:
        path = f"/api/v1/namespaces/default/pods/{pod}/binding"
        await api.request(
            "POST", path, {}, kind="bindings", in_order=True, rank=priority if rank else None
        )

    await bind("warm", 0)  # a connection in the pool: neither waits to connect
    first = asyncio.create_task(bind("hi", 500))
    await asyncio.sleep(0.01)  # "hi" is on the wire
    await asyncio.gather(first, bind("lo", 10))
    assert arrived[1:] == expected
