"""Runs open and end in the group commit's flushes: concurrent ``"sync"`` runs share the
transaction (and its fsync, or its round trip) that opens them and the one that records how
they ended, with their last commits.

Real SQLite files and the real PostgreSQL, asyncio and trio. A run still opens before its
first stage starts and returns only once its end is durable; a failure fails the runs of
that flush alone, each with the error its own write would have raised.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.backends import run_async
from trackway import Commit, Executor, RunResult, SqliteStore, flow_chart
from trackway.engine import StoreError, StoreWriteError, UnknownRunError
from trackway.engine.core._errors import LeaseLostError
from trackway.engine.stores._group_commit import GroupWrite, RunClosing, RunOpening

from .group_commit_support import (  # noqa: F401 (fixtures)
    MARKER,
    SpySqlite,
    counting_chart,
    inputs_of,
    kind_fixture,
    rich_chart,
    run_all,
    seqs,
    shape,
    spy_fixture,
)


def _opened_in_groups(spy: Any) -> set[str]:
    return {run_id for opened, _ in spy.parts for run_id in opened}


def _ended_in_groups(spy: Any) -> dict[str, str]:
    return {run_id: status for _, ended in spy.parts for run_id, status in ended}


# -- the shared transactions ----------------------------------------------------------------


def test_concurrent_runs_open_and_end_in_shared_transactions(spy: Any) -> None:
    acked: dict[int, int] = {}
    before = time.time()
    results = run_async(run_all, Executor(counting_chart(5, acked), store=spy), inputs_of(32))
    ids = {r.run_id for r in results}

    opened, ended = _opened_in_groups(spy), _ended_in_groups(spy)
    alone_opened = {run_id for run_id, what in spy.alone if what == "open"}
    alone_ended = {run_id for run_id, what in spy.alone if what != "open"}
    # every run opened once and ended once: in a group, or (a lone run) on its own
    assert opened | alone_opened == ids and not opened & alone_opened
    assert set(ended) | alone_ended == ids and not set(ended) & alone_ended
    assert len(opened) >= 16 and len(ended) >= 16, "concurrent runs should share them"
    assert max(len(o) for o, _ in spy.parts) > 1 and max(len(e) for _, e in spy.parts) > 1
    assert set(ended.values()) == {"broken"}
    for r in results:
        assert r.status == "broken" and spy.load(r.run_id) == r.snapshot
    infos = {i.run_id: i for i in spy.list_runs()}
    for r in results:
        info = infos[r.run_id]
        # when the run started and ended, not when its flush was written
        assert before <= info.started_at <= r.snapshot.commits[0].started_at
        assert info.ended_at is not None and info.ended_at >= r.snapshot.commits[-1].ended_at


def test_a_run_that_pauses_keeps_its_checkpoint_and_ends_on_its_own(spy: Any) -> None:
    """The rich chart pauses, fails and breaks runs; a pause writes its checkpoint on its
    own, so only the others end in a group, and every run is stored as it returned."""
    results = run_async(run_all, Executor(rich_chart(), store=spy), [{"k": k} for k in range(16)])
    ended = _ended_in_groups(spy)
    assert "paused" not in ended.values()
    assert {"broken", "failed"} <= set(ended.values())
    for r in results:
        assert spy.load(r.run_id) == r.snapshot
        if r.status == "paused":
            assert r.run_id not in ended
            assert spy.load_checkpoint(r.checkpoint.checkpoint_id) is not None  # type: ignore[union-attr]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    plan=st.lists(
        st.tuples(st.integers(1, 6), st.sampled_from(["break", "fail", "pause"])),
        min_size=2,
        max_size=10,
    )
)
def test_runs_together_store_what_each_stores_alone(tmp_path_factory: Any, plan: Any) -> None:
    """Whatever mix of lengths and endings: run together (opening and ending in shared
    flushes), each run is stored exactly as it is stored when it runs alone."""

    def step(s: Any) -> None:
        stages, how = plan[s["k"]]
        s["i"] = s["i"] + 1
        if s["i"] == stages:
            if how == "fail":
                raise ValueError("refused")
            if how == "pause":
                s.pause({"at": s["i"]})
            s.break_("counted")

    chart = flow_chart("Step", step, id="step").loop_to("step").build()
    store = SpySqlite(tmp_path_factory.mktemp("mix") / "runs.db")
    executor = Executor(chart, store=store)
    inputs = inputs_of(len(plan))

    async def alone() -> list[RunResult]:
        return [await executor.run(i, raise_on_error=False) for i in inputs]

    try:
        solo = run_async(alone)
        together = run_async(run_all, executor, inputs)
        for a, b in zip(solo, together, strict=True):
            assert a.status == b.status
            stored_a, stored_b = store.load(a.run_id), store.load(b.run_id)
            assert stored_b == b.snapshot
            assert (stored_a.status, shape(stored_a.commits)) == (
                stored_b.status,
                shape(stored_b.commits),
            )
    finally:
        store.close()


# -- failures -------------------------------------------------------------------------------


def _fault_on_runs(store: Any, when: str) -> None:
    """A real fault on the runs table: a row whose input holds MARKER aborts the statement
    that opens it (``when="open"``) or the one that records its end (``"close"``)."""
    if isinstance(store, SqliteStore):
        event, cond = (
            ("INSERT", "instr(NEW.initial, '{m}') > 0")
            if when == "open"
            else ("UPDATE", "NEW.ended_at IS NOT NULL AND instr(NEW.initial, '{m}') > 0")
        )
        with closing(sqlite3.connect(store.path)) as db:
            db.execute(
                f"CREATE TRIGGER boom_runs BEFORE {event} ON trackway_runs "
                f"WHEN {cond.format(m=MARKER)} "
                "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"
            )
            db.commit()
        return
    import psycopg

    event = "INSERT" if when == "open" else "UPDATE"
    extra = "" if when == "open" else "NEW.ended_at IS NOT NULL AND "
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION boom_runs() RETURNS trigger AS $$ BEGIN "
            f"IF {extra}position('{MARKER}'::bytea in NEW.initial) > 0 THEN "
            "RAISE EXCEPTION 'injected fault'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql"
        )
        conn.execute(
            f"CREATE TRIGGER boom_runs BEFORE {event} ON trackway_runs "
            "FOR EACH ROW EXECUTE FUNCTION boom_runs()"
        )


async def _run_each(
    executor: Executor, inputs: list[dict[str, Any]], refused: list[StoreError], last: int
) -> list[Any]:
    """Every run at once, run ``last`` once every other one is stored as opened (trio
    may start tasks in any order, and a run that opens alone does not open in a group); a
    run that could not open comes back as its exception (and is added to ``refused``)."""
    out: list[Any] = [None] * len(inputs)
    store = executor.store
    assert store is not None

    async def one(i: int) -> None:
        try:
            out[i] = await executor.run(inputs[i], raise_on_error=False)
        except StoreError as exc:
            refused.append(exc)
            out[i] = exc

    async with anyio.create_task_group() as tasks:
        for i in range(len(inputs)):
            if i != last:
                tasks.start_soon(one, i)
        deadline = time.monotonic() + 30
        while len(store.list_runs()) < len(inputs) - 1:
            assert time.monotonic() < deadline, "the other runs did not open"
            await anyio.sleep(0.005)
        tasks.start_soon(one, last)
    return out


def _failed_group(spy: Any) -> list[str]:
    failing = [ids for ids, out in spy.groups if isinstance(out, Exception)]
    assert len(failing) == 1, "exactly one transaction held the faulty write"
    return failing[0]


def test_a_fault_opening_a_run_fails_the_runs_of_that_flush_and_stores_none_of_it(
    spy: Any,
) -> None:
    _fault_on_runs(spy, "open")
    acked: dict[int, int] = {}
    inputs = inputs_of(16)
    victim = 15  # opens last, while every other run holds its first stage: it opens in a group
    inputs[victim]["mark"] = MARKER
    seen: list[StoreError] = []
    chart = counting_chart(4, acked, late=0, until=lambda: bool(seen))
    results = run_async(_run_each, Executor(chart, store=spy), inputs, seen, victim)

    ids = _failed_group(spy)
    stored = {i.run_id: i for i in spy.list_runs()}
    refused = [r for r in results if isinstance(r, Exception)]
    assert isinstance(results[victim], StoreError)
    assert not isinstance(results[victim], StoreWriteError)  # the run never started
    for exc in refused:
        assert "could not open the run" in str(exc) and "injected fault" in str(exc)
    ran = [r for r in results if isinstance(r, RunResult)]
    opened_there = [r for r in ids if r not in {x.run_id for x in ran}]
    assert len(opened_there) == len(refused)  # each refused run had its opening in that flush
    for run_id in opened_there:
        assert run_id not in stored  # nothing of a refused opening was written
    for r in ran:
        if r.run_id in ids:  # its commits were in that flush: it failed, as it stands stored
            assert r.status == "failed" and isinstance(r.error, StoreWriteError)
            assert stored[r.run_id].status == "failed"
        else:
            assert r.status == "broken" and spy.load(r.run_id) == r.snapshot


def test_a_fault_ending_a_run_fails_the_runs_of_that_flush_and_keeps_what_was_acked(
    spy: Any,
) -> None:
    _fault_on_runs(spy, "close")
    acked: dict[int, int] = {}
    inputs = inputs_of(16)
    victim = 0  # ends while every other run holds its first stage: it ends in a group
    inputs[victim]["mark"] = MARKER
    chart = counting_chart(4, acked, late=1, until=lambda: acked.get(victim, 0) >= 3)
    results = run_async(run_all, Executor(chart, store=spy), inputs)

    ids = _failed_group(spy)
    gone = results[victim]
    assert gone.run_id in ids and gone.status == "failed"
    assert isinstance(gone.error, StoreWriteError) and "injected fault" in str(gone.error)
    for k, r in enumerate(results):
        if r.run_id in ids:
            assert r.status == "failed" and isinstance(r.error, StoreWriteError)
            # nothing acknowledged was lost, and the stored log is a prefix with no gap (a
            # last commit flushed before the faulty flush stays: it was durable)
            stored = seqs(spy, r.run_id)
            assert stored == [c.seq for c in r.snapshot.commits[: len(stored)]]
            assert len(stored) >= acked.get(k, 0)
        else:
            assert r.status == "broken" and spy.load(r.run_id) == r.snapshot


# -- write_group on its own -----------------------------------------------------------------


_LOG = [
    c._replace(run_id="")
    for c in Executor(
        flow_chart("S0", lambda s: s.__setitem__("k", 0), id="s0")
        .then("S1", lambda s: s.__setitem__("k", 1), id="s1")
        .build()
    )
    .run_sync()
    .snapshot.commits
]
"""Two real commits, given a run id and seq by ``_commit``."""


def _commit(run_id: str, seq: int) -> Commit:
    return _LOG[seq - 1]._replace(run_id=run_id)


def _open(chart: str = "c", at: float = 10.0) -> RunOpening:
    return RunOpening(chart, {"k": b"1"}, None, at)


def test_write_group_opens_writes_and_ends_runs_in_one_transaction(spy: Any) -> None:
    assert spy.write_group([GroupWrite("a", _open(at=11.0)), GroupWrite("b", _open(at=12.0))]) == {}
    assert (
        spy.write_group(
            [
                GroupWrite("a", None, [_commit("a", 1), _commit("a", 2)]),
                GroupWrite("b", None, [_commit("b", 1)], RunClosing("done", {"why": 1}, 20.0)),
                GroupWrite("c", _open()),
            ]
        )
        == {}
    )
    infos = {i.run_id: i for i in spy.list_runs()}
    assert (infos["a"].status, infos["a"].started_at, infos["a"].ended_at) == (
        "running",
        11.0,
        None,
    )
    assert (infos["b"].status, infos["b"].ended_at) == ("done", 20.0)
    assert infos["c"].status == "running"
    assert seqs(spy, "a") == [1, 2] and seqs(spy, "b") == [1]
    # a run opened again is running again, its end cleared
    assert spy.write_group([GroupWrite("b", _open())]) == {}
    assert {i.run_id: i.status for i in spy.list_runs()}["b"] == "running"
    with pytest.raises(ValueError, match="an opening is written alone"):
        spy.write_group([GroupWrite("d", _open(), [_commit("d", 1)])])
    assert "d" not in {i.run_id for i in spy.list_runs()}


def test_write_group_leaves_out_a_deleted_run_and_ends_the_others(spy: Any) -> None:
    spy.write_group([GroupWrite(r, _open()) for r in ("a", "b", "c")])
    spy.delete("b")
    failed = spy.write_group(
        [
            GroupWrite("a", None, (), RunClosing("done", None, 5.0)),
            GroupWrite("b", None, [_commit("b", 1)], RunClosing("done", None, 5.0)),
            GroupWrite("c", None, (), RunClosing("failed", {"error": ["E", "m"]}, 6.0)),
        ]
    )
    assert list(failed) == ["b"] and isinstance(failed["b"], UnknownRunError)
    assert "deleted (pruned)" in str(failed["b"])
    assert {i.run_id: i.status for i in spy.list_runs()} == {"a": "done", "c": "failed"}


def test_write_group_opens_a_run_named_twice_once_per_statement(spy: Any) -> None:
    """One statement may touch a row once: a run named twice in a group (two runs given the
    same id at once) takes the one-statement-per-run path, and both openings land."""
    assert spy.write_group([GroupWrite("a", _open("c1")), GroupWrite("a", _open("c2"))]) == {}
    assert [i.run_id for i in spy.list_runs()] == ["a"]
    assert spy.append_group([("a", [_commit("a", 1)])]) == {}
    assert seqs(spy, "a") == [1]


def test_write_group_refuses_a_worker_run_whose_lease_is_lost(spy: Any) -> None:
    """A worker's run (fenced by its lease) whose lease is gone is left out, with
    :class:`LeaseLostError`, opening or ending; the others are written."""
    if isinstance(spy, SqliteStore):
        pytest.skip("only PostgreSQL has a run queue, and so leases")
    spy.write_group([GroupWrite("a", _open()), GroupWrite("b", _open())])
    spy._fences["b"] = "a lease no queue row holds"
    spy._fences["c"] = "a lease no queue row holds"
    failed = spy.write_group(
        [
            GroupWrite("a", None, (), RunClosing("done", None, 5.0)),
            GroupWrite("b", None, (), RunClosing("done", None, 5.0)),
        ]
    )
    assert list(failed) == ["b"] and isinstance(failed["b"], LeaseLostError)
    failed = spy.write_group([GroupWrite("c", _open()), GroupWrite("d", _open())])
    assert list(failed) == ["c"] and isinstance(failed["c"], LeaseLostError)
    assert {i.run_id: i.status for i in spy.list_runs()} == {
        "a": "done",
        "b": "running",
        "d": "running",
    }


def test_a_lone_run_opens_and_ends_on_its_own(spy: Any) -> None:
    """With no other run sharing the store and loop, nothing waits for a flush: the run's
    opening and end are its own writes, as before group commit."""
    acked: dict[int, int] = {}
    executor = Executor(counting_chart(3, acked), store=spy)

    async def alone() -> list[RunResult]:
        return [await executor.run(i) for i in inputs_of(3)]

    results = run_async(alone)
    assert spy.parts == [] and spy.groups == []
    assert [w for _, w in spy.alone] == ["open", "broken"] * 3
    for r in results:
        assert spy.load(r.run_id) == r.snapshot


def test_cancelled_while_opening_leaves_no_run_half_open(spy: Any) -> None:
    """Cancelled while their openings wait for a flush: each run the store holds was opened
    whole (shielded: an opening once queued is written), then marked failed, and no stage
    ran in a run the store does not hold."""
    started: list[int] = []

    async def step(s: Any) -> None:
        started.append(s["k"])
        await anyio.sleep(10)

    chart = flow_chart("Step", step, id="step").build()
    executor = Executor(chart, store=spy)

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            for inp in inputs_of(12):
                tasks.start_soon(executor.run, inp)
            await anyio.lowlevel.checkpoint()
            tasks.cancel_scope.cancel()

    run_async(main)
    stored = {spy.load(i.run_id).initial_state["k"]: i for i in spy.list_runs()}
    assert set(started) <= set(stored)  # no stage ran before its run was opened
    for info in stored.values():
        assert info.status == "failed"  # opened whole, then marked as the cancellation ended it
        assert seqs(spy, info.run_id) == list(range(1, len(seqs(spy, info.run_id)) + 1))
