"""Many concurrent ``"sync"`` runs on one store, for the group-commit kill test.

Run as ``python -m tests.engine.group_commit_child STORE BACKEND RUNS STAGES``: ``STORE`` is
a SQLite file or ``pg:<libpq conninfo>``, ``BACKEND`` ``asyncio`` or ``trio``. ``RUNS`` runs
of a ``STAGES``-stage loop start together on one executor. When a stage starts it prints
``ack <k> <i>`` (flushed): run ``k``'s commit ``i`` was acknowledged, since under ``"sync"``
a stage starts only once the commit before it is durable. The parent SIGKILLs this process
at a random moment and checks the store against every line it read.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

from trackway import Executor, FlowChart, PostgresStore, SqliteStore, flow_chart
from trackway.engine import RunStore


def chart(stages: int) -> FlowChart:
    def step(scope: Any) -> None:
        i = scope["i"]
        if i:
            print(f"ack {scope['k']} {i}", flush=True)
        scope["i"] = i + 1
        if i + 1 == stages:
            scope.break_("counted")

    return flow_chart("Step", step, id="step").loop_to("step").build()


async def main(store: RunStore, runs: int, stages: int) -> None:
    executor = Executor(chart(stages), store=store, max_iterations=stages + 1)
    async with anyio.create_task_group() as tasks:
        for k in range(runs):
            tasks.start_soon(executor.run, {"k": k, "i": 0})
    print("all done", flush=True)


if __name__ == "__main__":
    where, backend, n_runs, n_stages = sys.argv[1:5]
    opened: RunStore = PostgresStore(where[3:]) if where.startswith("pg:") else SqliteStore(where)
    anyio.run(main, opened, int(n_runs), int(n_stages), backend=backend)
