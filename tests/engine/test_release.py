"""Letting a run go between stages (what a worker does on SIGTERM or a lost lease): the
stage in flight finishes and commits, the run stays ``running`` in its store, and
``recover()`` continues it to the log an uninterrupted run has."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from tests.backends import run_async
from trackway import Executor, MemoryStore, SqliteStore, flow_chart
from trackway.engine import ExecutorUsageError
from trackway.engine.run._release import Released, StopSignal, driving_with


def _chart(n: int = 8, delay: float = 0.006) -> Any:
    def step(i: int) -> Any:
        def stage(scope: Any) -> None:
            time.sleep(delay)  # longer than the walker's yield window: checked every stage
            scope[f"s{i}"] = i

        return stage

    builder = flow_chart("S0", step(0), id="s0")
    for i in range(1, n):
        builder = builder.then(f"S{i}", step(i), id=f"s{i}")
    return builder.build()


class StopAt:
    def __init__(self, signal: StopSignal, seq: int) -> None:
        self.signal, self.seq = signal, seq

    def on_commit(self, event: Any) -> None:
        if event.seq == self.seq:
            self.signal.request("stopping for the test")


def test_a_released_run_stays_running_and_recovers_whole(tmp_path: Any) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    chart = _chart()
    sig = StopSignal()
    ex = Executor(chart, store=store, recorders=[StopAt(sig, 3)])

    async def main() -> None:
        with driving_with(sig):
            await ex.run({}, run_id="run-released")

    with pytest.raises(Released) as caught:
        run_async(main)
    assert caught.value.commits == 3 and caught.value.reason == "stopping for the test"
    kept = store.load("run-released")
    assert kept.status == "running" and len(kept.commits) == 3  # nothing lost, nothing half
    result = Executor(chart, store=store).recover_sync("run-released")
    whole = Executor(chart).run_sync({})
    assert result.status == "done" and result.state == whole.state
    assert [c.stage_path for c in store.load("run-released").commits] == [
        c.stage_path for c in whole.snapshot.commits
    ]
    store.close()


def test_a_fork_in_flight_finishes_before_the_run_is_let_go() -> None:
    def slow(scope: Any) -> None:
        time.sleep(0.01)
        scope["done"] = True

    async def branch(scope: Any) -> None:
        await anyio.sleep(0.01)
        scope["b"] = 1

    chart = (
        flow_chart("Start", slow, id="start")
        .fork("Both", {"a": branch, "b": branch}, id="both")
        .then("End", slow, id="end")
        .build()
    )
    sig = StopSignal()
    ex = Executor(chart, store=MemoryStore(), recorders=[StopAt(sig, 1)])

    async def main() -> None:
        with driving_with(sig):
            await ex.run({})

    with pytest.raises(Released) as caught:
        run_async(main)
    # the signal came after "start": the walker let the run go at the next boundary on its
    # main line, before the fork began (commit 1), never inside the branches
    assert caught.value.commits == 1


def test_without_a_signal_nothing_changes() -> None:
    result = Executor(_chart(3, 0.0)).run_sync({}, run_id="given-id")
    assert result.status == "done" and result.run_id == "given-id"
    with pytest.raises(ExecutorUsageError, match="run_id= takes a non-empty str"):
        Executor(_chart(1, 0.0)).run_sync({}, run_id="")
