"""Group commit under ``durability="sync"``: µs per acknowledged commit when 1, 10 and 100
runs share one store on one event loop, against the old path (one transaction, one fsync,
per commit, on the event loop), with how many commits each group transaction held.

Each cell starts its runs together on one executor (asyncio), each run a loop of trivial
stages, on a new SQLite file (``synchronous="FULL"``, the default) or, when
``TRACKWAY_TEST_PG_DSN`` is set, a new PostgreSQL schema. Two figures per cell:

* ``µs/ack``: while every run is under way (from the last run's first acknowledged commit to
  the first run's last), the window's length over the commits acknowledged in it (a stage
  start acknowledges the commit before it);
* ``µs/commit e2e``: the whole cell's wall time over its commits, which also covers each
  run's ``begin_run`` and ``finish_run`` (one transaction each, on the event loop, in both
  paths) and the runs' start and end.

    .venv/bin/python benches/_scale_group.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from _common import pg_schema

from trackway import Executor, FlowChart, PostgresStore, SqliteStore, flow_chart
from trackway.engine import RunStore
from trackway.engine.stores import _group_commit

PG_ENV = "TRACKWAY_TEST_PG_DSN"
TARGET_US = 50.0  # µs per acknowledged commit at 100 concurrent runs on SQLite (issue 18)
CONCURRENCY = (1, 10, 100)


def _chart(stages: int, stamps: dict[int, list[float]]) -> FlowChart:
    """A loop of ``stages`` trivial stages; each notes when it started (the commit before
    it was acknowledged then) in ``stamps[k]``."""

    def step(s: Any) -> None:
        stamps[s["k"]].append(time.perf_counter())
        i = s["i"] + 1
        s["i"] = i
        if i == stages:
            s.break_("done")

    return flow_chart("Step", step, id="step").loop_to("step").build()


def _steady(stamps: dict[int, list[float]]) -> float:
    """µs per acknowledged commit while every run is under way: from the moment the last
    run started its second stage to the moment the first run started its last one, the
    stage starts in that window (each acknowledges a commit) over its length. Leaves out
    each run's begin and end (one transaction each)."""
    start = max(s[1] for s in stamps.values())
    end = min(s[-1] for s in stamps.values())
    acks = sum(1 for s in stamps.values() for t in s[1:] if start <= t <= end)
    return (end - start) * 1e6 / acks if acks and end > start else float("nan")


@contextmanager
def _sqlite() -> Iterator[RunStore]:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "runs.db")
        try:
            yield store
        finally:
            store.close()


@contextmanager
def _postgres(base: str) -> Iterator[RunStore]:
    with pg_schema(base) as dsn:
        store = PostgresStore(dsn)
        try:
            yield store
        finally:
            store.close()


def _cell(
    opened: Callable[[], Any], runs: int, stages: int, grouped: bool, on_loop: bool = True
) -> dict[str, float]:
    """One measurement: ``runs`` runs of ``stages`` stages at once on a new store
    (``on_loop=False``: every group flush written in a worker thread)."""
    stamps: dict[int, list[float]] = {k: [] for k in range(runs)}
    chart = _chart(stages, stamps)
    _group_commit.ENABLED = grouped
    _group_commit.ON_LOOP = on_loop
    try:
        with opened() as store:
            executor = Executor(chart, store=store, max_iterations=stages + 1)

            async def main() -> None:
                async with anyio.create_task_group() as tasks:
                    for k in range(runs):
                        tasks.start_soon(executor.run, {"k": k, "i": 0})

            anyio.run(main)  # warm-up: imports, connection, the first pages of the file
            for s in stamps.values():
                s.clear()
            _group_commit.STATS.reset()
            started = time.perf_counter()
            anyio.run(main)
            seconds = time.perf_counter() - started
            flushes, flushed = _group_commit.STATS.flushes, _group_commit.STATS.commits
            assert sum(i.commit_count for i in store.list_runs()) == 2 * runs * stages
    finally:
        _group_commit.ENABLED = True
        _group_commit.ON_LOOP = True
    commits = runs * stages
    return {
        "us_per_ack": seconds * 1e6 / commits,
        "steady_us_per_ack": _steady(stamps),
        "per_flush": flushed / flushes if flushes else 0.0,
        "grouped_share": flushed / commits,
    }


def _median(cells: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(c[k] for c in cells) for k in cells[0]}


def group_section(quick: bool) -> dict[str, Any]:
    """µs per acknowledged commit at 1, 10 and 100 concurrent runs, group vs old path."""
    repeats = 1 if quick else 5  # the disk's fsync time varies from cell to cell
    stages = {1: 100, 10: 60, 100: 40} if quick else {1: 300, 10: 150, 100: 100}
    stores: list[tuple[str, Callable[[], Any]]] = [("SQLite FULL", _sqlite)]
    base = os.environ.get(PG_ENV)
    if base:
        stores.append(("PostgreSQL", lambda: _postgres(base)))
    rows: list[dict[str, Any]] = []
    at_100: dict[str, float] = {}
    for label, opened in stores:
        for runs in CONCURRENCY:
            n = stages[runs]
            group = _median([_cell(opened, runs, n, True) for _ in range(repeats)])
            old = _median([_cell(opened, runs, n, False) for _ in range(repeats)])
            thread = _median([_cell(opened, runs, n, True, False) for _ in range(repeats)])
            rows.append(
                {
                    "store": label,
                    "runs": runs,
                    "commits": runs * n,
                    "group µs/ack": group["steady_us_per_ack"],
                    "old µs/ack": old["steady_us_per_ack"],
                    "thread µs/ack": thread["steady_us_per_ack"],
                    "speedup": old["steady_us_per_ack"] / group["steady_us_per_ack"],
                    "group µs/commit e2e": group["us_per_ack"],
                    "old µs/commit e2e": old["us_per_ack"],
                    "commits/flush": group["per_flush"],
                    "grouped %": 100 * group["grouped_share"],
                }
            )
            if runs == 100:
                at_100[label] = group["steady_us_per_ack"]
    targets = [
        {
            "target": "group commit, SQLite FULL, 100 concurrent runs: µs per acknowledged commit",
            "measured": at_100["SQLite FULL"],
            "threshold": f"<= {TARGET_US:g}",
            "pass": at_100["SQLite FULL"] <= TARGET_US,
        }
    ]
    title = (
        'Group commit under durability="sync" (runs of trivial stages at once on one loop; '
        "old = one fsync per commit; thread = group commit with every flush written in a worker "
        "thread)"
    )
    return {"title": title, "rows": rows, "targets": targets}


if __name__ == "__main__":
    from _common import print_table, print_targets

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer stages, one repeat")
    ap.add_argument("--json", action="store_true", help="print the section as JSON too")
    args = ap.parse_args()
    section = group_section(args.quick)
    headers = list(section["rows"][0])
    print_table(section["title"], headers, [[r[h] for h in headers] for r in section["rows"]])
    print_targets(section["targets"])
    if args.json:
        print(json.dumps(section, indent=2))
