"""Group commit when things go wrong: a store fault mid-flush, a run deleted while it runs,
cancelled runs and a timeout. Real SQLite files and the real PostgreSQL, asyncio and trio;
nothing acknowledged is lost and every stored log is a prefix with no gap."""

from __future__ import annotations

import random
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.backends import run_async
from trackway import Executor, PostgresStore, RunResult, SqliteStore, flow_chart
from trackway.engine import StoreWriteError

from .group_commit_support import (  # noqa: F401 (fixtures)
    counting_chart,
    inject_fault,
    inputs_of,
    kind_fixture,
    run_all,
    seqs,
    spy_fixture,
)

# -- failures -------------------------------------------------------------------------------


def test_a_store_fault_mid_flush_fails_only_the_runs_in_that_flush(spy: Any) -> None:
    inject_fault(spy)
    acked: dict[int, int] = {}
    stages, victim = 30, 7

    def faulted() -> bool:  # the late runs start once the faulty flush has been written
        return any(isinstance(out, Exception) for _, out in spy.groups)

    chart = counting_chart(stages, acked, victim, at=5, late=10, until=faulted)
    results = run_async(run_all, Executor(chart, store=spy), inputs_of(20))

    failing = [(ids, out) for ids, out in spy.groups if isinstance(out, Exception)]
    assert len(failing) == 1, "exactly one transaction held the faulty commit"
    ids, error = failing[0]
    failed = {r.run_id for r in results if r.status == "failed"}
    assert failed == set(ids)  # every run of that flush, and no other
    assert results[victim].run_id in failed
    assert len(failed) <= 10  # the late runs were held until that flush: they all went on
    for k, r in enumerate(results):
        if r.run_id in failed:
            assert isinstance(r.error, StoreWriteError)
            assert "injected fault" in str(r.error) and r.error.__cause__ is error
            # nothing acknowledged before the fault was lost, nothing after it was written
            assert seqs(spy, r.run_id) == list(range(1, acked.get(k, 0) + 1))
            assert spy.list_runs()[0].status  # the store still answers
            assert {i.status for i in spy.list_runs() if i.run_id == r.run_id} == {"failed"}
        else:
            assert r.status == "broken" and spy.load(r.run_id) == r.snapshot
            assert acked[k] == stages - 1


@pytest.mark.parametrize("by", ["another store", "the same store"])
def test_a_run_deleted_while_it_runs_fails_alone_and_its_flush_mates_go_on(
    spy: Any, by: str
) -> None:
    """Every run meets at stage 3, so their commits share one transaction; the victim has
    deleted itself just before, as a prune by another store object (another connection)
    or by the store the runs write to would."""
    runs, victim = 12, 4
    arrived = [0]
    met: list[anyio.Event] = []
    other: Any = SqliteStore(spy.path) if isinstance(spy, SqliteStore) else PostgresStore(spy.dsn)
    if by == "the same store":
        other.close()
        other = spy

    async def step(s: Any) -> None:
        i = s["i"] + 1
        s["i"] = i
        if i == 3:
            if s["k"] == victim:
                other.delete(s.run_id)
            arrived[0] += 1
            if arrived[0] == runs:
                met[0].set()
            await met[0].wait()
        if i == 6:
            s.break_("counted")

    chart = flow_chart("Step", step, id="step").loop_to("step").build()

    async def main() -> list[RunResult]:
        met.append(anyio.Event())
        return await run_all(Executor(chart, store=spy), inputs_of(runs))

    results = run_async(main)
    if other is not spy:
        other.close()

    gone = results[victim]
    assert gone.status == "failed" and isinstance(gone.error, StoreWriteError)
    assert "deleted (pruned)" in str(gone.error)
    (ids,) = [ids for ids, out in spy.groups if isinstance(out, dict) and gone.run_id in out]
    assert len(ids) > 1, "the deleted run shared its transaction with others"
    assert not any(isinstance(out, Exception) for _, out in spy.groups)
    for k, r in enumerate(results):
        if k != victim:
            assert r.status == "broken" and spy.load(r.run_id) == r.snapshot


def test_cancelled_runs_keep_every_acknowledged_commit(spy: Any) -> None:
    acked: dict[int, int] = {}
    under_way = anyio.Event()
    rng = random.Random(7)

    async def step(s: Any) -> None:
        i = s["i"]
        if i:
            acked[s["k"]] = i
            if sum(acked.values()) >= 48:
                under_way.set()
        await anyio.sleep(rng.random() / 2000)
        s["i"] = i + 1

    chart = flow_chart("Step", step, id="step").loop_to("step").build()
    executor = Executor(chart, store=spy, max_iterations=100_000)

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            for inp in inputs_of(24):
                tasks.start_soon(executor.run, inp)
            # cancel once the runs are under way (not after a fixed time: a loaded machine,
            # or a PostgreSQL fsync, can leave a fixed window with hardly a commit in it)
            with anyio.move_on_after(30):
                await under_way.wait()
            tasks.cancel_scope.cancel()

    run_async(main)
    infos = spy.list_runs()
    assert len(infos) == 24
    by_k = {spy.load(i.run_id).initial_state["k"]: i for i in infos}
    for k, info in by_k.items():
        stored = seqs(spy, info.run_id)
        assert stored == list(range(1, len(stored) + 1)), f"run {k}: a gap in its log"
        assert len(stored) >= acked.get(k, 0), f"run {k} lost an acknowledged commit"
        assert info.status == "failed"
    assert sum(acked.values()) >= 24, "the runs hardly ran before the cancellation"


def test_a_timeout_reports_the_run_failed_only_once_its_commits_are_stored(spy: Any) -> None:
    async def step(s: Any) -> None:
        s["i"] = s["i"] + 1
        await anyio.sleep(0.001)

    chart = flow_chart("Step", step, id="step").loop_to("step").build()
    executor = Executor(chart, store=spy, max_iterations=100_000)

    async def main() -> list[RunResult]:
        out: list[RunResult] = []

        async def one(inp: dict[str, Any]) -> None:
            out.append(await executor.run(inp, timeout=0.2, raise_on_error=False))

        async with anyio.create_task_group() as tasks:
            for inp in inputs_of(16):
                tasks.start_soon(one, inp)
        return out

    results = run_async(main)
    assert len(results) == 16
    for r in results:
        assert r.status == "failed" and type(r.error).__name__ == "RunTimeoutError"
        assert r.snapshot.commits[-1].outcome in ("ok", "cancelled")  # in a stage, or after
        assert spy.load(r.run_id) == r.snapshot
