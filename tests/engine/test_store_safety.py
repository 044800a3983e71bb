"""Stores under another writer, a dropped connection, a read-only look, a slow disk."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest

from trackway import Commit, Executor, MemoryStore, PostgresStore, SqliteStore, flow_chart
from trackway.cli import main as cli
from trackway.engine import RunTimeoutError, StoreError, StoreWriteError
from trackway.engine.stores._sqlite import SCHEMA_VERSION

from ..backends import run_async
from ..pg import end_idle_sessions

PG_DSN = os.environ.get("TRACKWAY_TEST_PG_DSN")


def _sqlite(tmp_path: Path) -> Iterator[Any]:
    path = tmp_path / "runs.db"
    yield lambda: SqliteStore(path)


def _postgres() -> Iterator[Any]:
    if not PG_DSN:
        pytest.skip("TRACKWAY_TEST_PG_DSN is not set (.ci/run starts PostgreSQL)")
    import psycopg

    schema = f"safety_{os.getpid()}_{time.monotonic_ns()}"
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    dsn = f"{PG_DSN}?options=-csearch_path%3D{schema}"
    try:
        yield lambda: PostgresStore(dsn)
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request, tmp_path):
    yield from (_sqlite(tmp_path) if request.param == "sqlite" else _postgres())


def test_pruning_a_running_run_from_another_store_object_stops_its_writes(open_store):
    store, other = open_store(), open_store()
    pruned: list[int] = []

    def prune_me(scope):
        pruned.append(other.prune(run_ids=[scope.run_id]))

    chart = (
        flow_chart("A", lambda s: s.__setitem__("a", 1), id="a")
        .then("Prune", prune_me, id="prune")
        .then("B", lambda s: s.__setitem__("b", 1), id="b")
        .build()
    )
    result = Executor(chart, store=store).run_sync(raise_on_error=False)
    assert pruned == [1]
    assert result.status == "failed" and isinstance(result.error, StoreWriteError)
    assert "deleted (pruned) while it ran" in str(result.error)
    # a later run gets a number of its own: nothing of the pruned run lands in it
    later = Executor(flow_chart("C", lambda s: None, id="c").build(), store=store).run_sync()
    assert [c.stage_path for c in store.load(later.run_id).commits] == ["c#0"]
    assert [r.run_id for r in other.list_runs()] == [later.run_id]
    store.close()
    other.close()


def test_sqlite_never_gives_a_run_number_out_twice(tmp_path):
    store = SqliteStore(tmp_path / "runs.db")
    chart = flow_chart("A", lambda s: None, id="a").build()
    first = Executor(chart, store=store).run_sync().run_id
    store.delete(first)
    second = Executor(chart, store=store).run_sync().run_id
    store.close()
    with closing(sqlite3.connect(tmp_path / "runs.db")) as db:
        (number,) = db.execute("SELECT run_no FROM trackway_runs").fetchone()
    assert number == 2 and second != first


def test_a_version_2_sqlite_store_is_migrated_keeping_its_runs(tmp_path):
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as db:
        db.executescript(
            """
            CREATE TABLE trackway_runs (run_no INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE,
                chart_id TEXT NOT NULL, status TEXT NOT NULL, started_at REAL NOT NULL,
                ended_at REAL, initial BLOB NOT NULL, outcome BLOB);
            CREATE TABLE trackway_commits (id INTEGER PRIMARY KEY, stage_path TEXT NOT NULL,
                kind TEXT NOT NULL, frame TEXT NOT NULL, outcome TEXT NOT NULL,
                started_at REAL NOT NULL, ended_at REAL NOT NULL, doc BLOB NOT NULL);
            CREATE TABLE trackway_checkpoints (checkpoint_id TEXT PRIMARY KEY, doc BLOB,
                claimed_at REAL) WITHOUT ROWID;
            INSERT INTO trackway_runs VALUES (7, 'run-old', 'a', 'done', 1.0, 2.0, '{}', NULL);
            PRAGMA user_version = 2;
            """
        )
    store = SqliteStore(path)
    assert [r.run_id for r in store.list_runs()] == ["run-old"]
    chart = flow_chart("A", lambda s: None, id="a").build()
    new = Executor(chart, store=store).run_sync().run_id
    store.close()
    with closing(sqlite3.connect(path)) as db:
        numbers = dict(db.execute("SELECT run_id, run_no FROM trackway_runs").fetchall())
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert numbers == {"run-old": 7, new: 8}


def _commit_table_keyed_by_id(db: sqlite3.Connection) -> bool:
    """Schema 3: ``id`` is the table's key (rows clustered per run); 4: a unique index."""
    columns = db.execute("PRAGMA table_info(trackway_commits)").fetchall()
    return any(row[1] == "id" and row[5] for row in columns)


def test_a_version_3_sqlite_store_is_migrated_keeping_every_commit(tmp_path):
    path = tmp_path / "v3.db"

    def a(s: Any) -> None:
        s["n"] = s.get("n", 0) + 1

    def b(s: Any) -> None:
        s["m"] = [s["n"], "x" * 50]

    chart = flow_chart("A", a, id="a").then("B", b, id="b").build()
    store = SqliteStore(path)
    ids = [Executor(chart, store=store).run_sync({"n": n}).run_id for n in range(5)]
    before = {rid: store.load(rid) for rid in ids}
    store.close()
    with closing(sqlite3.connect(path)) as db:  # the same rows in schema 3's layout
        assert not _commit_table_keyed_by_id(db)
        db.executescript(
            """
            BEGIN;
            ALTER TABLE trackway_commits RENAME TO c4;
            CREATE TABLE trackway_commits (id INTEGER PRIMARY KEY, stage_path TEXT NOT NULL,
                kind TEXT NOT NULL, frame TEXT NOT NULL, outcome TEXT NOT NULL,
                started_at REAL NOT NULL, ended_at REAL NOT NULL, doc BLOB NOT NULL);
            INSERT INTO trackway_commits SELECT * FROM c4;
            DROP TABLE c4;
            ALTER TABLE trackway_runs DROP COLUMN sealed;
            ALTER TABLE trackway_checkpoints DROP COLUMN sealed;
            ALTER TABLE trackway_checkpoints DROP COLUMN sealed_answer;
            PRAGMA user_version = 3;
            COMMIT;
            """
        )
        assert _commit_table_keyed_by_id(db)
    old = SqliteStore(path, read_only=True)  # a look changes nothing and reads schema 3
    assert {rid: old.load(rid) for rid in ids} == before
    old.close()
    store = SqliteStore(path)
    assert {rid: store.load(rid) for rid in ids} == before
    more = Executor(chart, store=store).run_sync({"n": 9})
    assert store.load(more.run_id) == more.snapshot
    store.close()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert not _commit_table_keyed_by_id(db)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@pytest.mark.skipif(not PG_DSN, reason="TRACKWAY_TEST_PG_DSN is not set")
def test_postgres_replaces_a_session_ended_while_idle_before_the_next_call_sees_it():
    gen = _postgres()
    store = next(gen)()
    try:
        chart = flow_chart("A", lambda s: s.__setitem__("a", 1), id="a").build()
        first = Executor(chart, store=store).run_sync().run_id
        ended = end_idle_sessions(store, PG_DSN)
        # the ended session is found at BEGIN and replaced: the call never sees it
        assert [r.run_id for r in store.list_runs()] == [first]
        assert store.reconnects == 1 and ended
        second = Executor(chart, store=store).run_sync()
        assert second.status == "done" and len(store.list_runs()) == 2
    finally:
        store.close()
        next(gen, None)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_read_only_commands_never_change_the_file_they_look_at(tmp_path, capsys):
    foreign = tmp_path / "app.db"
    with closing(sqlite3.connect(foreign)) as db:
        db.execute("CREATE TABLE users (name TEXT)")
        db.commit()
    before = _digest(foreign)
    assert cli(["runs", "--db", str(foreign)]) == 1
    err = capsys.readouterr().err
    assert "app.db" in err and "not a trackway store" in err
    assert _digest(foreign) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal, no -shm

    store_path = tmp_path / "runs.db"
    store = SqliteStore(store_path)
    Executor(flow_chart("A", lambda s: None, id="a").build(), store=store).run_sync()
    store.close()
    before = _digest(store_path)
    assert cli(["runs", "--db", str(store_path)]) == 0
    assert _digest(store_path) == before
    with pytest.raises(StoreError, match="read-only"):
        SqliteStore(store_path, read_only=True).begin_run("r", "a", {})


class SlowStore(MemoryStore):
    """A store whose writes take a while, as a slow disk or a far database does."""

    def append(self, run_id: str, commits: Sequence[Commit]) -> None:
        time.sleep(0.3)
        super().append(run_id, commits)


def test_batch_backpressure_waits_without_blocking_the_event_loop():
    chart = flow_chart("Step", lambda s: s.__setitem__("n", s.get("n", 0) + 1), id="step")
    chart = chart.loop_to("step").build()
    executor = Executor(chart, store=SlowStore(), durability="batch", queue_size=1,
                        max_iterations=1_000_000)  # fmt: skip
    gaps: list[float] = []

    async def main() -> None:
        async def tick() -> None:
            last = time.perf_counter()
            while True:
                await anyio.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            with pytest.raises(RunTimeoutError):
                await executor.run(timeout=0.5)
            tg.cancel_scope.cancel()

    run_async(main)
    # each write holds the store 0.3 s; the loop must keep turning meanwhile
    assert gaps and max(gaps) < 0.25, max(gaps)
