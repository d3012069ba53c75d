"""``SendOrder``: requests made in order reach the wire in order, even when an earlier one
must open its connection and a later one finds an idle one (issue 43: a backlog's bindings
reached the API server out of priority order)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s

from connects import Serve, slow_first_connect
from multisched.transport import Api
from multisched.transport.send_order import SendOrder


async def _waiting(
    wait: Callable[[int], Awaitable[None]], tickets: list[int], done: list[int]
) -> list[asyncio.Task[None]]:
    """Each ticket's ``wait`` in a task of its own; ``done`` lists them as they return."""

    async def one(ticket: int) -> None:
        await wait(ticket)
        done.append(ticket)

    tasks = [asyncio.create_task(one(t)) for t in tickets]
    await asyncio.sleep(0)
    return tasks


async def _turns(order: SendOrder, tickets: list[int], done: list[int]) -> list[asyncio.Task[None]]:
    return await _waiting(order.turn, tickets, done)


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


@pytest.mark.parametrize("ranked", [False, True], ids=["connecting", "higher-rank"])
async def test_after_its_patience_a_request_goes_and_later_ones_do_not_wait_again(
    ranked: bool,
) -> None:
    """Held back by an earlier request still connecting, or by an unanswered one of a higher
    rank: after its patience it goes, and the one it waited for is overtaken for good."""
    order = SendOrder(patience=0.05)
    high, low = (1000, 0) if ranked else (None, None)
    stuck, patient, later = order.take(high), order.take(low), order.take(low)
    wait = order.after_higher_ranks if ranked else order.turn
    done: list[int] = []
    waited = await _waiting(wait, [patient], done)
    assert done == []
    await asyncio.gather(*waited)  # the patience ran out
    assert done == [patient]
    # ``stuck`` is still connecting (unanswered), but overtaken: ``later`` goes at once.
    tasks = await _waiting(wait, [later], done)
    assert done == [patient, later] and all(t.done() for t in tasks)
    order.done(stuck)  # connects and is answered at last: nothing to wake, nothing raised


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancelled_waiter_is_forgotten() -> None:
    order = SendOrder()
    first, second, third = order.take(), order.take(), order.take()
    done: list[int] = []
    cancelled, waiting = await _turns(order, [second, third], done)
    await _cancel(cancelled)
    order.drop(second)  # its request's ``finally``
    await order.turn(first)
    await waiting
    assert done == [third]


#: The binding subresource of a pod in ``default``.
BINDING = "/api/v1/namespaces/default/pods/{pod}/binding"


async def _binding_server(serve: Serve, arrived: list[str], slow: str = "") -> k8s.ApiClient:
    """A server of bindings that lists each pod as its handler takes the request up (the
    ``slow`` pod's 0.1 s late: the API server took up a later connection first)."""

    async def binding(request: web.Request) -> web.Response:
        pod = request.match_info["pod"]
        if pod == slow:
            await asyncio.sleep(0.1)
        arrived.append(pod)
        return web.json_response({}, status=201)

    app = web.Application()
    app.router.add_post(BINDING, binding)
    return await serve(app)


async def _bind(api: Api, pod: str, **options: Any) -> None:
    await api.request("POST", BINDING.format(pod=pod), {}, kind="bindings", **options)


@pytest.mark.parametrize(("in_order", "expected"), [(True, ["a", "b"]), (False, ["b", "a"])])
async def test_bindings_reach_the_server_in_the_order_they_were_made(
    serve: Serve, in_order: bool, expected: list[str]
) -> None:
    """Without the send order (the control), the later binding overtakes the earlier one
    that is still opening its connection."""
    seen: list[str] = []
    client = await _binding_server(serve, seen)
    slow_first_connect(client)
    api = Api(client)
    first = asyncio.create_task(_bind(api, "a", in_order=in_order))
    await asyncio.sleep(0.01)  # "a" is connecting
    await asyncio.gather(first, _bind(api, "b", in_order=in_order))
    assert seen == expected


async def _after_ranks(
    order: SendOrder, tickets: list[int], done: list[int]
) -> list[asyncio.Task[None]]:
    return await _waiting(order.after_higher_ranks, tickets, done)


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


async def test_a_ranked_request_that_ends_wakes_those_it_held_and_a_cancelled_one_is_gone() -> None:
    order = SendOrder()
    failed, cancelled, waiting = order.take(9), order.take(1), order.take(1)
    done: list[int] = []
    gone, held = await _after_ranks(order, [cancelled, waiting], done)
    await _cancel(gone)
    order.done(cancelled)  # its request's ``finally``
    assert done == []
    order.done(failed)  # no answer (unreachable): it holds nothing back any more
    await held
    assert done == [waiting]


@pytest.mark.parametrize(("rank", "expected"), [(True, ["hi", "lo"]), (False, ["lo", "hi"])])
async def test_a_lower_priority_binding_reaches_the_server_after_a_higher_one_is_answered(
    serve: Serve, rank: bool, expected: list[str]
) -> None:
    """The earlier binding of a higher priority is slow to reach its handler; without ranks
    (the control) the lower one, made a moment later, arrives first."""
    arrived: list[str] = []
    api = Api(await _binding_server(serve, arrived, slow="hi"))

    async def bind(pod: str, priority: int) -> None:
        await _bind(api, pod, in_order=True, rank=priority if rank else None)

    await bind("warm", 0)  # a connection in the pool: neither waits to connect
    first = asyncio.create_task(bind("hi", 500))
    await asyncio.sleep(0.01)  # "hi" is on the wire
    await asyncio.gather(first, bind("lo", 10))
    assert arrived[1:] == expected


async def test_a_request_overtaking_a_higher_rank_releases_the_later_ones_that_waited_for_it() -> (
    None
):
    """``stuck`` never answers: once ``first`` is out of patience and overtakes it, ``second``
    (which waited for ``stuck`` alone, from a moment later) goes at once, not at the end of
    its own patience."""
    order = SendOrder(patience=0.2)
    stuck, first, second = order.take(1000), order.take(500), order.take(500)
    done: list[int] = []
    (waited,) = await _after_ranks(order, [first], done)
    await asyncio.sleep(0.1)
    (later,) = await _after_ranks(order, [second], done)
    await waited  # out of patience at 0.2 s; ``second``'s would run out at 0.3 s
    await asyncio.sleep(0)
    assert done == [first, second] and later.done()
    order.done(stuck)
