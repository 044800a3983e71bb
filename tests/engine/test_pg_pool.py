"""``PostgresStore`` on a session pool: transactions on separate sessions, the size checked,
and a run opened and closed off the event loop (``offload``), each shown against a real
server with a table lock the server holds, not a mock."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import psycopg
import pytest

from tests.backends import run_async
from tests.pg import pg_schema
from trackway.engine import (
    Commit,
    ConfigurationError,
    Executor,
    PostgresStore,
    StoreError,
    flow_chart,
)


@contextmanager
def _inserts_held(dsn: str) -> Iterator[None]:
    """Hold a lock on ``trackway_runs`` that lets reads through and makes every insert
    (a run being opened) wait, until the block ends."""
    with psycopg.connect(dsn) as admin:
        admin.execute("LOCK TABLE trackway_runs IN SHARE ROW EXCLUSIVE MODE")
        try:
            yield
        finally:
            admin.rollback()


def _waiting_on_lock(dsn: str) -> bool:
    with psycopg.connect(dsn, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE 'INSERT INTO trackway_runs%%'"
        ).fetchone()
    return bool(row and row[0])


@pytest.mark.parametrize("size", [0, -1, True, 2.0, "4"])
def test_pool_size_takes_an_int_of_one_or_more(size: Any) -> None:
    with pg_schema("tw") as dsn, pytest.raises(ConfigurationError, match="pool_size"):
        PostgresStore(dsn, pool_size=size)


def test_offload_takes_a_bool() -> None:
    with pg_schema("tw") as dsn, pytest.raises(ConfigurationError, match="offload"):
        PostgresStore(dsn, offload=1)  # type: ignore[arg-type]


def test_a_transaction_waiting_on_the_server_leaves_the_other_sessions_free() -> None:
    """One store, one thread opening a run behind a lock: another call of the same store
    reads on another session meanwhile (one connection and a lock made it wait)."""
    with pg_schema("tw") as dsn:
        store = PostgresStore(dsn, pool_size=2)
        try:
            opened = threading.Event()
            with _inserts_held(dsn):
                opener = threading.Thread(
                    target=lambda: (store.begin_run("r1", "c", {}), opened.set()), daemon=True
                )
                opener.start()
                deadline = time.monotonic() + 10
                while not _waiting_on_lock(dsn):
                    assert time.monotonic() < deadline, "the insert never reached the lock"
                    time.sleep(0.01)
                assert store.list_runs() == []  # on the other session, while r1 waits
                assert not opened.is_set()
            opener.join(10)
            assert opened.is_set() and [r.run_id for r in store.list_runs()] == ["r1"]
        finally:
            store.close()


def _hold_inserts(dsn: str, seconds: float, window: list[float]) -> None:
    """In a thread: hold the lock until a run's insert has waited on it for ``seconds``;
    ``window`` gets when the insert was first seen waiting and when the lock went."""
    with _inserts_held(dsn):
        deadline = time.monotonic() + 10
        while not _waiting_on_lock(dsn):
            assert time.monotonic() < deadline, "the insert never reached the lock"
            time.sleep(0.005)
        window.append(time.monotonic())
        time.sleep(seconds)
        window.append(time.monotonic())


@pytest.mark.usefixtures("async_backend")
@pytest.mark.parametrize("offload", [True, False])
def test_a_run_opening_behind_a_lock_blocks_the_loop_only_without_offload(offload: bool) -> None:
    """While the server holds a run's insert, a task on the same loop keeps ticking with
    ``offload`` (the default), and stands still without it, until the lock goes."""
    chart = flow_chart("A", lambda s: s.__setitem__("a", 1), id="a").build()
    with pg_schema("tw") as dsn:
        store = PostgresStore(dsn, offload=offload)
        executor = Executor(chart, store=store)
        window: list[float] = []
        try:

            async def main() -> tuple[list[float], Any]:
                ticks: list[float] = []
                result: list[Any] = []

                async def tick() -> None:
                    while not result:
                        ticks.append(time.monotonic())
                        await anyio.sleep(0.005)

                holder = threading.Thread(target=_hold_inserts, args=(dsn, 0.3, window))
                holder.start()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(tick)
                    await anyio.sleep(0.02)
                    result.append(await executor.run())
                await anyio.to_thread.run_sync(holder.join)
                return ticks, result[0]

            ticks, result = run_async(main)
            assert result.status == "done" and store.load(result.run_id) == result.snapshot
            waited, released = window
            during = [t for t in ticks if waited + 0.05 < t < released - 0.05]
            if offload:
                assert len(during) >= 10  # the loop went on while the server held the run
            else:
                assert during == []  # the loop stood still until the insert went on
        finally:
            store.close()


_WATCHED = (
    "load",
    "_load",
    "history",
    "load_checkpoint",
    "claim_checkpoint",
    "checkpoint_claim",
    "begin_run",
    "save_checkpoint",
    "finish_run",
)
"""What a resume or a recovery asks the store, besides its commits (a lone run writes those
on the loop: nothing else of its own could run meanwhile)."""


class _Threads(PostgresStore):
    """Notes the thread of every call in ``_WATCHED``."""

    def __init__(self, dsn: str, *, offload: bool) -> None:
        super().__init__(dsn, offload=offload)
        self.threads: list[tuple[str, int]] = []


def _watch(name: str) -> Any:
    def call(self: _Threads, *args: Any, **kwargs: Any) -> Any:
        self.threads.append((name, threading.get_ident()))
        return getattr(PostgresStore, name)(self, *args, **kwargs)

    return call


for _name in _WATCHED:
    setattr(_Threads, _name, _watch(_name))


@pytest.mark.usefixtures("async_backend")
@pytest.mark.parametrize("offload", [True, False])
def test_resume_and_recover_keep_their_store_calls_off_the_loop_with_offload(
    offload: bool,
) -> None:
    """A resume looks up its checkpoint and log and claims it, a recovery reads the run's
    log and claims, and both reopen the run: with ``offload`` none of it waits on the loop."""

    def ask(s: Any) -> None:
        s.pause({"q": 1})

    chart = (
        flow_chart("Ask", ask, id="ask", on_resume=lambda s, v: s.__setitem__("a", v))
        .then("B", lambda s: s.__setitem__("b", 1), id="b")
        .build()
    )
    with pg_schema("tw") as dsn:
        store = _Threads(dsn, offload=offload)
        executor = Executor(chart, store=store)
        try:
            paused = executor.run_sync()
            store.begin_run("stopped", chart.id, {})  # a run whose process died at once

            async def main() -> tuple[int, list[Any]]:
                loop = threading.get_ident()
                assert paused.checkpoint is not None
                resumed = await executor.resume(paused.checkpoint.checkpoint_id, "yes")
                recovered = await executor.recover("stopped")
                return loop, [resumed, recovered]

            store.threads.clear()
            loop, results = run_async(main)
            assert [r.status for r in results] == ["done", "paused"]  # it paused again
            assert results[0].state["a"] == "yes"
            called = {name for name, _ in store.threads}
            assert {"load_checkpoint", "claim_checkpoint", "begin_run", "_load"} <= called
            on_loop = [name for name, thread in store.threads if thread == loop]
            assert on_loop == ([] if offload else [name for name, _ in store.threads])
        finally:
            store.close()


@pytest.mark.parametrize("where", ["statement", "commit"])
def test_a_session_lost_inside_a_transaction_fails_the_call_as_a_store_error(where: str) -> None:
    """Ended after ``BEGIN`` (before a statement, or before ``COMMIT``): the call fails with
    ``StoreError`` saying it was not retried, and the next call runs on a new session."""
    with pg_schema("tw") as dsn:
        store = PostgresStore(dsn)
        try:
            lost = pytest.raises(StoreError, match="not retried, since it may have committed")
            with lost, store._tx() as db:
                with psycopg.connect(dsn, autocommit=True) as admin:
                    pid = db.info.backend_pid
                    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                    while admin.execute(
                        "SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)
                    ).fetchone():
                        time.sleep(0.01)
                if where == "statement":
                    db.execute("SELECT 1")
            assert store.list_runs() == [] and store.reconnects == 1
        finally:
            store.close()


def _commits() -> list[Commit]:
    """The four commits of a four-stage run."""
    builder = flow_chart("S0", lambda s: s.__setitem__("k", 0), id="s0")
    for n in range(1, 4):
        builder = builder.then(f"S{n}", lambda s, n=n: s.__setitem__("k", n), id=f"s{n}")
    return list(Executor(builder.build()).run_sync().snapshot.commits)


def _as_kept(commits: Any) -> list[tuple[Any, ...]]:
    return [(c.seq, c.stage_path, c.writes) for c in commits]


def _kept(store: PostgresStore, run_id: str) -> list[tuple[Any, ...]]:
    return _as_kept(store.load(run_id).commits)


def test_a_group_in_one_statement_writes_the_live_runs_and_names_the_deleted() -> None:
    """The one-statement group (runs known, no lease): a run another store object deleted
    in between is returned as deleted and nothing of it lands; its flush mates are written
    whole and in order. Then the same with a run not yet numbered (the transaction path)."""
    with pg_schema("tw") as dsn:
        store, other = PostgresStore(dsn), PostgresStore(dsn)
        try:
            commits = _commits()
            for rid in ("a", "b", "c"):
                store.begin_run(rid, "chart", {})
                store.append(rid, commits[:1])  # numbered: the next group is one statement
            other.delete("b")
            failed = store.append_group([(r, commits[1:3]) for r in ("a", "b", "c")])
            assert set(failed) == {"b"} and "deleted" in str(failed["b"])
            for rid in ("a", "c"):
                assert _kept(store, rid) == _as_kept(commits[:3])
            with psycopg.connect(dsn) as admin:
                rows = admin.execute("SELECT count(*) FROM trackway_commits").fetchone()
            assert rows == (6,)  # a and c, three each; nothing of b
            store.begin_run("d", "chart", {})  # not numbered yet: the transaction path
            assert store.append_group([("a", commits[3:]), ("d", commits[:1])]) == {}
            assert _kept(store, "d") == _as_kept(commits[:1])
        finally:
            store.close()
            other.close()
