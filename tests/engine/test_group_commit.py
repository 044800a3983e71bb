"""Group commit under ``durability="sync"``: concurrent runs on one store share each fsync.

Real SQLite files and the real PostgreSQL (``TRACKWAY_TEST_PG_DSN``, each test in a schema of
its own), on asyncio and trio. The guarantee is ``"sync"``'s: a stage starts only once the
commit before it is durable, and a run reports its end only once all its commits are. The
kill test SIGKILLs a child running 100 runs at random moments and checks every commit it
acknowledged against the store.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.backends import current_backend, run_async
from tests.pg import pg_schema
from trackway import (
    Commit,
    Executor,
    FlowChart,
    MemoryStore,
    PostgresStore,
    RunResult,
    RunStore,
    SqliteStore,
    StoreWriteError,
    flow_chart,
)
from trackway.engine import _group_commit

ROOT = Path(__file__).resolve().parent.parent.parent
PG_DSN = os.environ.get("TRACKWAY_TEST_PG_DSN")
MARKER = "BOOM-MARKER"  # a commit holding this value trips the injected store fault


# -- stores ---------------------------------------------------------------------------------


class Spy:
    """Mixed into a real store: keeps the runs of every group transaction and its outcome
    (the runs it reported failed, or the exception that rolled it back)."""

    groups: list[tuple[list[str], Any]]

    def append_group(self, items: Sequence[tuple[str, Sequence[Commit]]]) -> dict[str, Exception]:
        ids = [run_id for run_id, _ in items]
        try:
            failed: dict[str, Exception] = super().append_group(items)  # type: ignore[misc]
        except Exception as exc:
            self.groups.append((ids, exc))
            raise
        self.groups.append((ids, failed))
        return failed


class SpySqlite(Spy, SqliteStore):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.groups = []


class SpyPostgres(Spy, PostgresStore):
    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.groups = []


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def spy(kind: str, tmp_path: Path) -> Iterator[Any]:
    """A spied SQLite file or PostgreSQL schema."""
    if kind == "sqlite":
        store: Any = SpySqlite(tmp_path / "runs.db")
        yield store
        store.close()
        return
    with pg_schema("gc") as dsn:
        store = SpyPostgres(dsn)
        store.dsn = dsn
        yield store
        store.close()


def inject_fault(store: Any) -> None:
    """A real store fault: inserting a commit that holds MARKER aborts the statement (and so
    the whole group transaction), in SQLite and PostgreSQL alike."""
    if isinstance(store, SqliteStore):
        with closing(sqlite3.connect(store.path)) as db:
            db.execute(
                "CREATE TRIGGER boom BEFORE INSERT ON trackway_commits "
                f"WHEN instr(NEW.doc, '{MARKER}') > 0 "
                "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"
            )
            db.commit()
        return
    import psycopg

    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN "
            f"IF position('{MARKER}'::bytea in NEW.doc) > 0 THEN "
            "RAISE EXCEPTION 'injected fault'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql"
        )
        conn.execute(
            "CREATE TRIGGER boom BEFORE INSERT ON trackway_commits "
            "FOR EACH ROW EXECUTE FUNCTION boom()"
        )


def seqs(store: RunStore, run_id: str) -> list[int]:
    return [m.seq for m in store.history(run_id)]


def shape(commits: Sequence[Commit]) -> list[tuple[Any, ...]]:
    """A log without its run id and clock times: what must not depend on concurrency."""
    fields = ("seq", "stage_path", "stage_id", "kind", "frame", "writes", "reads", "outcome")
    fields += ("error", "detail", "events", "attempts")
    return [tuple(getattr(c, f) for f in fields) for c in commits]


# -- charts ---------------------------------------------------------------------------------


def rich_chart() -> FlowChart:
    """Every kind of commit: stages, a fork's merge, a decision, a for-each merge, an
    isolated subflow's input and output, then a pause, a failure or a counting loop."""

    async def start(s: Any) -> None:
        await anyio.lowlevel.checkpoint()
        s["n"] = s["k"] * 10
        s["items"] = [s["k"], s["k"] + 1, s["k"] + 2]

    def branch(key: str) -> Any:
        async def run(s: Any) -> None:
            await anyio.lowlevel.checkpoint()
            s[key] = s["n"] + 1

        return run

    def route(s: Any) -> str:
        return "even" if s["k"] % 2 == 0 else "odd"

    def double(s: Any) -> None:
        s["result"] = s["item"] * 2

    def inner(s: Any) -> None:
        s["total"] = s["base"] + 1

    def ask(s: Any) -> None:
        mode = s["k"] % 4
        if mode == 1:
            s.pause({"question": s["k"]})
        if mode == 2:
            raise ValueError(f"run {s['k']} refuses")
        s["asked"] = True

    def answer(s: Any, value: Any) -> None:
        s["answer"] = value

    def count(s: Any) -> None:
        s["c"] = s.get("c", 0) + 1
        if s["c"] == 4:
            s.break_("counted")

    sub = flow_chart("Inner", inner, id="inner").build()
    body = flow_chart("Double", double, id="double").build()
    return (
        flow_chart("Start", start, id="start")
        .fork("Fan", {"x": branch("x"), "y": branch("y")}, id="fan")
        .decider("Route", route, id="route")
        .branch("even", "Even", lambda s: s.__setitem__("parity", 0), id="even")
        .branch("odd", "Odd", lambda s: s.__setitem__("parity", 1), id="odd")
        .end()
        .parallel_for_each(
            "Each", items="items", branch=body, into="out", max_branches=3, id="each"
        )
        .subflow("Sub", sub, id="sub", input={"base": "n"}, output={"total": "total"})
        .then("Ask", ask, id="ask", on_resume=answer)
        .then("Count", count, id="count")
        .loop_to("count")
        .build()
    )


def counting_chart(
    stages: int,
    acked: dict[int, int],
    victim: int = -1,
    at: int = -1,
    late: int = 1 << 30,
    until: Any = None,
) -> FlowChart:
    """A loop of ``stages`` stages; each records, as it starts, that the commit before it
    was acknowledged. Run ``victim``'s stage ``at`` writes MARKER; runs from ``late`` on
    hold their first stage until ``until()`` is true (polled; at most 30 s)."""

    async def hold() -> None:
        deadline = time.monotonic() + 30
        while not until() and time.monotonic() < deadline:  # noqa: ASYNC110 (set by the writer thread)
            await anyio.sleep(0.002)

    async def step(s: Any) -> None:
        i = s["i"]
        if i:
            acked[s["k"]] = i
        if i == 0 and s["k"] >= late:
            await hold()
        else:
            await anyio.lowlevel.checkpoint()
        if s["k"] == victim and i + 1 == at:
            s["mark"] = MARKER
        s["i"] = i + 1
        if i + 1 == stages:
            s.break_("counted")

    return flow_chart("Step", step, id="step").loop_to("step").build()


async def run_all(executor: Executor, inputs: Sequence[dict[str, Any]]) -> list[RunResult]:
    results: list[RunResult | None] = [None] * len(inputs)

    async def one(i: int) -> None:
        results[i] = await executor.run(inputs[i], raise_on_error=False)

    async with anyio.create_task_group() as tasks:
        for i in range(len(inputs)):
            tasks.start_soon(one, i)
    return [r for r in results if r is not None]


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
        old = run_async(run_all, Executor(counting_chart(6, acked), store=store), _inputs(8))
    finally:
        _group_commit.ENABLED = True
    mem = run_async(run_all, Executor(counting_chart(6, acked), store=memory), _inputs(8))
    new = run_async(run_all, Executor(counting_chart(6, acked), store=store), _inputs(8))
    assert len(store.groups) > 0
    assert sum(len(ids) for ids, _ in store.groups) >= 8  # the old path made none of these
    for a, b, c in zip(old, mem, new, strict=True):
        assert shape(a.snapshot.commits) == shape(b.snapshot.commits) == shape(c.snapshot.commits)
        assert store.load(a.run_id) == a.snapshot and store.load(c.run_id) == c.snapshot
        assert memory.load(b.run_id) == b.snapshot
    store.close()


class Delegating:
    """A store of the user's own, without ``append_group``: group commit falls back to one
    ``append`` per run in each flush (here over a real SQLite file)."""

    def __init__(self, inner: SqliteStore) -> None:
        self._inner = inner
        self.appends: list[int] = []

    def append(self, run_id: str, commits: Sequence[Commit]) -> None:
        self.appends.append(threading.get_ident())
        self._inner.append(run_id, commits)

    def __getattr__(self, name: str) -> Any:
        if name == "append_group":
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_a_store_without_append_group_gets_one_append_per_run_in_each_flush(
    tmp_path: Path,
) -> None:
    inner = SqliteStore(tmp_path / "runs.db")
    store = Delegating(inner)
    acked: dict[int, int] = {}
    flushes = _group_commit.STATS.flushes
    results = run_async(run_all, Executor(counting_chart(10, acked), store=store), _inputs(12))
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
        return await run_all(Executor(chart, store=store), _inputs(12))

    results = run_async(main)
    assert {r.status for r in results} == {"broken"}
    for r in results:
        assert store.load(r.run_id) == r.snapshot
    on_loop = [everyone for thread, everyone in store.where if thread == loop_thread]
    off_loop = [everyone for thread, everyone in store.where if thread != loop_thread]
    assert on_loop and all(on_loop)  # the lockstep flushes: written by the loop
    assert off_loop  # while run 0 slept: by a worker thread
    store.close()


def _inputs(n: int) -> list[dict[str, Any]]:
    return [{"k": k, "i": 0} for k in range(n)]


# -- failures -------------------------------------------------------------------------------


def test_a_store_fault_mid_flush_fails_only_the_runs_in_that_flush(spy: Any) -> None:
    inject_fault(spy)
    acked: dict[int, int] = {}
    stages, victim = 30, 7

    def faulted() -> bool:  # the late runs start once the faulty flush has been written
        return any(isinstance(out, Exception) for _, out in spy.groups)

    chart = counting_chart(stages, acked, victim, at=5, late=10, until=faulted)
    results = run_async(run_all, Executor(chart, store=spy), _inputs(20))

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
        return await run_all(Executor(chart, store=spy), _inputs(runs))

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
    rng = random.Random(7)

    async def step(s: Any) -> None:
        i = s["i"]
        if i:
            acked[s["k"]] = i
        await anyio.sleep(rng.random() / 2000)
        s["i"] = i + 1

    chart = flow_chart("Step", step, id="step").loop_to("step").build()
    executor = Executor(chart, store=spy, max_iterations=100_000)

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            for inp in _inputs(24):
                tasks.start_soon(executor.run, inp)
            await anyio.sleep(0.25)
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
            for inp in _inputs(16):
                tasks.start_soon(one, inp)
        return out

    results = run_async(main)
    assert len(results) == 16
    for r in results:
        assert r.status == "failed" and type(r.error).__name__ == "RunTimeoutError"
        assert r.snapshot.commits[-1].outcome in ("ok", "cancelled")  # in a stage, or after
        assert spy.load(r.run_id) == r.snapshot


# -- the kill test --------------------------------------------------------------------------

KILL_RUNS, KILL_STAGES = 100, 400


def kill_child(where: str, seed: int) -> dict[int, int]:
    """Start the child, SIGKILL it at a random moment, return what it acknowledged."""
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [where, current_backend(), str(KILL_RUNS), str(KILL_STAGES)]
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-m", "tests.engine.group_commit_child", *args],
        stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    ) as child:  # fmt: skip
        assert child.stdout is not None
        out = child.stdout
        reader = threading.Thread(target=lambda: lines.extend(out), daemon=True)
        reader.start()
        # a random moment, measured in progress (the machine's speed varies): after the
        # child acknowledged between 50 and 8,000 of its ~40,000 commits
        at = rng.randint(50, 8_000)
        deadline = time.monotonic() + 60
        while len(lines) < at and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.001)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        reader.join(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert len(lines) >= at, "the child acknowledged too little before the deadline"
    assert "all done\n" not in lines, "raise KILL_STAGES: the child finished before the kill"
    acked: dict[int, int] = {}
    for line in lines:
        _, k, i = line.split()
        acked[int(k)] = max(acked.get(int(k), 0), int(i))
    return acked


def check_after_kill(store: RunStore, acked: dict[int, int]) -> None:
    infos = store.list_runs()
    assert infos and len(infos) <= KILL_RUNS
    seen = 0
    for info in infos:
        k = store.load(info.run_id).initial_state["k"]
        stored = seqs(store, info.run_id)
        assert stored == list(range(1, len(stored) + 1)), f"run {k}: a gap in its log"
        assert len(stored) >= acked.get(k, 0), f"run {k} lost an acknowledged commit"
        seen += k in acked
    assert seen == len(acked)  # every run that acknowledged a commit is in the store
    assert sum(acked.values()) >= 50


@pytest.mark.parametrize("seed", [1, 2])
def test_sigkill_loses_no_acknowledged_commit_sqlite(tmp_path: Path, seed: int) -> None:
    db = tmp_path / "kill.db"
    acked = kill_child(str(db), seed * 10 + len(current_backend()))
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    store = SqliteStore(db)
    check_after_kill(store, acked)
    store.close()


def test_sigkill_loses_no_acknowledged_commit_postgres() -> None:
    with pg_schema("gc") as dsn:
        PostgresStore(dsn).close()  # the tables, before the child and its runs start
        acked = kill_child(f"pg:{dsn}", 3 + len(current_backend()))
        store = PostgresStore(dsn)
        check_after_kill(store, acked)
        store.close()
