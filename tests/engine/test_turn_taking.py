"""How the walker shares the event loop between runs: it yields at least every 5 ms of work
(so a busy run lets the others and a timeout in), and a run woken from an await that other
runs walked through takes its next stages at once, instead of queueing behind them again."""

from __future__ import annotations

import time
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.backends import run_async
from trackway import Executor, flow_chart
from trackway.engine import RunTimeoutError

RUNS = 8


def _woken_together(order: list[tuple[int, str]], entered: list[int]) -> Any:
    """A chart whose first stage waits for one shared event (every run wakes in the same
    instant, as model calls that return together do), held for longer than the walker's
    5 ms yield budget, then two plain stages that note the run's order."""
    release = anyio.Event()

    async def wait(scope: Any) -> None:
        entered.append(scope["i"])
        await release.wait()
        order.append((scope["i"], "woke"))

    def first(scope: Any) -> None:
        order.append((scope["i"], "first"))

    def second(scope: Any) -> None:
        order.append((scope["i"], "second"))

    chart = flow_chart("Wait", wait).then("First", first).then("Second", second).build()
    return chart, release


def test_a_run_woken_with_others_takes_its_next_stages_without_queueing_again() -> None:
    run_async(_woken)


async def _woken() -> None:
    order: list[tuple[int, str]] = []
    entered: list[int] = []
    chart, release = _woken_together(order, entered)
    executor = Executor(chart)
    results: list[Any] = []

    async def one(i: int) -> None:
        results.append(await executor.run({"i": i}))

    async with anyio.create_task_group() as tg:
        for i in range(RUNS):
            tg.start_soon(one, i)
        await anyio.sleep(0.02)  # every run waits, and longer than the 5 ms budget
        release.set()
    assert all(r.status == "done" for r in results)
    # each run went on from its wake-up to its end in one go, not back in the loop's queue
    # behind the other woken runs: its three notes are adjacent. The run that began waiting
    # last saw no other run walk while it waited (they all waited too), so it may yield
    # once: it is left out (trio wakes the runs in an order of its own choosing).
    last = entered[-1]
    assert [n for i, n in order if i == last] == ["woke", "first", "second"]
    rest = [(i, n) for i, n in order if i != last]
    runs = [rest[k : k + 3] for k in range(0, len(rest), 3)]
    assert len(runs) == RUNS - 1
    assert all(
        a[0] == b[0] == c[0] and (a[1], b[1], c[1]) == ("woke", "first", "second")
        for a, b, c in runs
    ), order


def test_an_async_stage_that_never_suspends_still_lets_other_tasks_run() -> None:
    """No other run walked while it ran, so an ``async def`` stage that computes without
    awaiting counts as work: the walker still yields every 5 ms."""
    run_async(_never_suspends)


async def _never_suspends() -> None:
    ticks = 0
    seen: list[int] = []

    async def busy(scope: Any) -> None:
        end = time.perf_counter() + 0.001
        while time.perf_counter() < end:
            pass
        seen.append(ticks)
        n = scope.get("n", 0) + 1
        scope["n"] = n
        if n == 40:
            scope.break_("done")

    chart = flow_chart("Busy", busy).loop_to("busy").build()

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await anyio.lowlevel.checkpoint()  # the ticker has run once
        result = await Executor(chart).run()
        tg.cancel_scope.cancel()
    assert result.status == "broken"  # scope.break_ ended the loop
    # 40 ms of work: the ticker ran between stages several times, not only before and after
    assert len(set(seen)) >= 4, seen


def test_a_timeout_reaches_a_loop_of_async_stages_that_never_suspend() -> None:
    async def spin(scope: Any) -> None:
        return None

    chart = flow_chart("Spin", spin).loop_to("spin").build()
    with pytest.raises(RunTimeoutError):
        Executor(chart, max_iterations=10**9).run_sync(timeout=0.2)
