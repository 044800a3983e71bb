"""Sessions the server ends while they sit idle (a restart, a failover, a pooler recycling
them, ``pg_terminate_backend``) are replaced at ``BEGIN``, before anything of the caller's is
sent: no run fails because of one, and nothing committed is lost."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest

from tests.backends import run_async
from tests.pg import end_idle_sessions, pg_schema
from trackway.engine import Executor, PostgresStore, flow_chart

RUNS = 100
STAGES = 5


def _chart(reached: list[int] | None = None) -> Any:
    """Five stages; each run passing stage 3 is counted in ``reached``."""

    def step(n: int) -> Any:
        async def stage(scope: Any) -> None:
            await anyio.sleep(0.01)
            if n == 3 and reached is not None:
                reached.append(1)
            scope[f"s{n}"] = n
            scope["total"] = scope.get("total", 0) + n

        return stage

    builder = flow_chart("S1", step(1), id="s1")
    for n in range(2, STAGES + 1):
        builder = builder.then(f"S{n}", step(n), id=f"s{n}")
    return builder.build()


def test_sessions_ended_between_runs_fail_no_run() -> None:
    with pg_schema("tw") as dsn:
        store = PostgresStore(dsn)
        chart = _chart()
        try:
            for k in range(3):
                result = Executor(chart, store=store).run_sync()
                assert result.status == "done"
                assert store.load(result.run_id) == result.snapshot
                end_idle_sessions(store, dsn)
                assert store.reconnects == k  # replaced on the next call, not yet
            assert len(store.list_runs()) == 3 and store.reconnects == 3
        finally:
            store.close()


@pytest.mark.usefixtures("async_backend")
def test_a_session_ended_in_the_middle_of_a_hundred_runs_fails_none() -> None:
    with pg_schema("tw") as dsn:
        store = PostgresStore(dsn)
        reached: list[int] = []
        executor = Executor(_chart(reached), store=store)
        ended: list[int] = []
        try:

            async def main() -> list[Any]:
                results: list[Any] = [None] * RUNS

                async def one(i: int) -> None:
                    results[i] = await executor.run({"seed": i})

                def end_when_half_committed() -> None:
                    while len(reached) < RUNS // 2:
                        time.sleep(0.001)
                    ended.extend(end_idle_sessions(store, dsn))

                killer = threading.Thread(target=end_when_half_committed, daemon=True)
                killer.start()
                async with anyio.create_task_group() as tg:
                    for i in range(RUNS):
                        tg.start_soon(one, i)
                await anyio.to_thread.run_sync(killer.join)
                return results

            results = run_async(main)
            assert ended and store.reconnects >= 1
            assert [r.status for r in results] == ["done"] * RUNS
            for r in results:  # every acknowledged commit is in the store, in order
                assert store.load(r.run_id) == r.snapshot
                assert r.snapshot.state["total"] == sum(range(1, STAGES + 1))
        finally:
            store.close()
