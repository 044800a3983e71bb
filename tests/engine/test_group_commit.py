"""Group commit under ``durability="sync"``: concurrent runs on one store share each fsync.

Real SQLite files and the real PostgreSQL (``TRACKWAY_TEST_PG_DSN``, each test in a schema of
its own), on asyncio and trio. The guarantee is ``"sync"``'s: a stage starts only once the
commit before it is durable, and a run reports its end only once all its commits are. The
kill test is in ``test_group_commit_kill.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from tests.backends import run_async
from trackway import (
    Commit,
    Executor,
    MemoryStore,
    RunResult,
    SqliteStore,
    flow_chart,
)
from trackway.engine.stores import _group_commit

from .group_commit_support import (  # noqa: F401 (fixtures)
    SpySqlite,
    counting_chart,
    inputs_of,
    kind_fixture,
    rich_chart,
    run_all,
    shape,
    spy_fixture,
)

# -- the same logs --------------------------------------------------------------------------


def test_concurrent_runs_store_the_logs_runs_one_at_a_time_store(spy: Any) -> None:
    executor = Executor(rich_chart(), store=spy)
    inputs = [{"k": k} for k in range(32)]

    async def alone() -> list[RunResult]:
        return [await executor.run(i, raise_on_error=False) for i in inputs]

    solo = run_async(alone)
    assert spy.groups == []  # one run at a time writes directly, as before group commit
    flushes, grouped = _group_commit.STATS.flushes, _group_commit.STATS.commits
    together = run_async(run_all, executor, inputs)
    assert len(spy.groups) > 1
    per_flush = (_group_commit.STATS.commits - grouped) / (_group_commit.STATS.flushes - flushes)
    assert per_flush > 1.5, "concurrent runs should share flushes"

    statuses = {r.status for r in together}
    assert statuses == {"broken", "paused", "failed"}
    for a, b in zip(solo, together, strict=True):
        assert (a.status, a.break_reason, shape(a.snapshot.commits)) == (
            b.status,
            b.break_reason,
            shape(b.snapshot.commits),
        )
        # the run reported its end only once every commit was stored, byte for byte
        assert spy.load(b.run_id) == b.snapshot
        assert shape(spy.load(a.run_id).commits) == shape(spy.load(b.run_id).commits)
        if b.status == "failed":
            assert b.error is not None and "refuses" in str(b.error)

    # resumed together, the paused runs continue their logs exactly as resumed alone
    paused = [(a, b) for a, b in zip(solo, together, strict=True) if a.status == "paused"]

    async def resume_alone() -> list[RunResult]:
        return [await executor.resume(a.checkpoint, "yes") for a, _ in paused]

    async def resume_together() -> list[RunResult]:
        out: dict[int, RunResult] = {}

        async def one(i: int, cp: Any) -> None:
            out[i] = await executor.resume(cp, "yes")

        async with anyio.create_task_group() as tasks:
            for i, (_, b) in enumerate(paused):
                tasks.start_soon(one, i, b.checkpoint)
        return [out[i] for i in range(len(paused))]

    for a, b in zip(run_async(resume_alone), run_async(resume_together), strict=True):
        assert a.status == b.status == "broken"
        assert shape(a.snapshot.commits) == shape(b.snapshot.commits)
        assert spy.load(b.run_id) == b.snapshot


def test_the_old_path_switch_and_a_memory_store_write_directly(tmp_path: Path) -> None:
    """The private switch measures the old one-write-per-commit path; a MemoryStore has no
    fsync to share. Both store the same logs as group commit."""
    acked: dict[int, int] = {}
    store = SpySqlite(tmp_path / "old.db")
    memory = MemoryStore()
    _group_commit.ENABLED = False
    try:
        old = run_async(run_all, Executor(counting_chart(6, acked), store=store), inputs_of(8))
    finally:
        _group_commit.ENABLED = True
    mem = run_async(run_all, Executor(counting_chart(6, acked), store=memory), inputs_of(8))
    new = run_async(run_all, Executor(counting_chart(6, acked), store=store), inputs_of(8))
    assert len(store.groups) > 0
    assert sum(len(ids) for ids, _ in store.groups) >= 8  # the old path made none of these
    for a, b, c in zip(old, mem, new, strict=True):
        assert shape(a.snapshot.commits) == shape(b.snapshot.commits) == shape(c.snapshot.commits)
        assert store.load(a.run_id) == a.snapshot and store.load(c.run_id) == c.snapshot
        assert memory.load(b.run_id) == b.snapshot
    store.close()


class Delegating:
    """A store of the user's own, without ``append_group`` or ``write_group``: group commit
    falls back to one ``append`` per run in each flush, and its runs open and end with
    calls of their own (here over a real SQLite file)."""

    def __init__(self, inner: SqliteStore) -> None:
        self._inner = inner
        self.appends: list[int] = []

    def append(self, run_id: str, commits: Sequence[Commit]) -> None:
        self.appends.append(threading.get_ident())
        self._inner.append(run_id, commits)

    def __getattr__(self, name: str) -> Any:
        if name in ("append_group", "write_group"):
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_a_store_without_append_group_gets_one_append_per_run_in_each_flush(
    tmp_path: Path,
) -> None:
    inner = SqliteStore(tmp_path / "runs.db")
    store = Delegating(inner)
    acked: dict[int, int] = {}
    flushes = _group_commit.STATS.flushes
    results = run_async(run_all, Executor(counting_chart(10, acked), store=store), inputs_of(12))
    assert {r.status for r in results} == {"broken"}
    assert _group_commit.STATS.flushes - flushes < len(store.appends) / 2  # runs shared them
    for r in results:
        assert inner.load(r.run_id) == r.snapshot
    inner.close()


class WhereSpy(SpySqlite):
    """Notes, for every group transaction, the thread that wrote it and whether every run
    sharing the committer had queued commits in it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.where: list[tuple[int, bool]] = []

    def append_group(self, items: Sequence[tuple[str, Sequence[Commit]]]) -> dict[str, Exception]:
        try:  # the committers are known on the loop only
            committer = _group_commit._COMMITTERS.get({}).get(id(self))
        except Exception:
            committer = None
        everyone = committer is not None and len(items) == committer.users
        self.where.append((threading.get_ident(), everyone))
        return super().append_group(items)


def test_a_flush_is_written_on_the_loop_only_when_every_run_waits_for_it(
    tmp_path: Path,
) -> None:
    """When every run sharing the store waits for the flush, the loop writes it itself (as a
    lone run does: nothing could run meanwhile); while one run is still busy (here asleep in
    a stage), a worker thread writes it and the loop goes on with that run."""
    store = WhereSpy(tmp_path / "runs.db")
    loop_thread = threading.get_ident()  # run_async runs the loop on this thread

    arrived = [0]
    met: list[anyio.Event] = []

    async def step(s: Any) -> None:
        i = s["i"]
        if i == 0:  # every run has begun before the first commit: lockstep from there on
            arrived[0] += 1
            if arrived[0] == 12:
                met[0].set()
            await met[0].wait()
        if s["k"] == 11 and i == 5:  # run 11 sleeps while the others flush their last stages
            await anyio.sleep(0.3)
        s["i"] = i + 1
        if i + 1 == 10:
            s.break_("counted")

    chart = flow_chart("Step", step, id="step").loop_to("step").build()

    async def main() -> list[RunResult]:
        met.append(anyio.Event())
        return await run_all(Executor(chart, store=store), inputs_of(12))

    results = run_async(main)
    assert {r.status for r in results} == {"broken"}
    for r in results:
        assert store.load(r.run_id) == r.snapshot
    on_loop = [everyone for thread, everyone in store.where if thread == loop_thread]
    off_loop = [everyone for thread, everyone in store.where if thread != loop_thread]
    assert on_loop and all(on_loop)  # the lockstep flushes: written by the loop
    assert off_loop  # while run 0 slept: by a worker thread
    store.close()
