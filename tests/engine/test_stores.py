"""One conformance suite for every store: memory, SQLite and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest

from tests.backends import run_async
from tests.pg import pg_schema
from trackway import CheckpointClaimedError, Executor, MemoryStore, flow_chart
from trackway.engine import (
    CommitMeta,
    PostgresStore,
    RunStore,
    SqliteStore,
    StoreError,
    UnknownRunError,
)
from trackway.engine.core._commit import ROW_FIELDS, row_of

from . import pause_charts as pc


def _postgres() -> Iterator[RunStore]:
    """A PostgresStore in a schema of the test's own (tests run in parallel), closed and
    dropped after."""
    with pg_schema("st") as dsn:
        store = PostgresStore(dsn)
        try:
            yield store
        finally:
            store.close()


def growing_chart(n: int = 20):
    def step(s):
        i = s.get("i", 0) + 1
        s["i"] = i
        s.append("log", "x" * 100)
        if i == n:
            s.break_("done")

    return flow_chart("Step", step).loop_to("step").build()


@pytest.mark.parametrize("durability", ["sync", "batch", "exit"])
def test_every_commit_lands_and_loads_back_equal(store, durability):
    result = Executor(growing_chart(), store=store, durability=durability).run_sync({"i": 0})
    loaded = store.load(result.run_id)
    assert loaded == result.snapshot
    assert loaded.state_at(7) == result.snapshot.state_at(7)
    (info,) = [r for r in store.list_runs() if r.run_id == result.run_id]
    assert (info.status, info.commit_count, info.chart_id) == ("broken", 20, "step")
    assert info.ended_at is not None and info.ended_at >= info.started_at


def test_failed_runs_are_stored_with_their_error(store):
    def bad(s):
        s["partial"] = 1
        raise ValueError("nope")

    result = Executor(flow_chart("Bad", bad).build(), store=store).run_sync(raise_on_error=False)
    loaded = store.load(result.run_id)
    assert loaded.status == "failed" and loaded.error.type == "StageError"
    assert loaded.history()[0].outcome == "error" and loaded.state["partial"] == 1


def test_paused_runs_keep_their_log_in_the_store_and_resume_from_it(store):
    ex = Executor(pc.approval_chart(), store=store)
    first = ex.run_sync({"amount": 3})
    cp = first.checkpoint
    assert cp.snapshot is None  # the log is referenced, not embedded
    assert store.load_checkpoint(cp.checkpoint_id) == cp
    assert [r.status for r in store.list_runs()] == ["paused"]
    second = Executor(pc.approval_chart(), store=store).resume_sync(cp.to_json(), "yes")
    assert second.status == "done"
    loaded = store.load(first.run_id)
    assert loaded == second.snapshot
    assert [c.seq for c in loaded.history()] == [1, 2, 3, 4]
    with pytest.raises(CheckpointClaimedError):
        Executor(pc.approval_chart(), store=store).resume_sync(cp, "again")


def test_two_concurrent_resumes_exactly_one_wins(store):
    cp = Executor(pc.approval_chart(), store=store).run_sync().checkpoint
    outcomes: list[str] = []

    async def resume_one():
        try:
            await Executor(pc.approval_chart(), store=store).resume(cp, "x")
            outcomes.append("won")
        except CheckpointClaimedError:
            outcomes.append("refused")

    async def main():
        async with anyio.create_task_group() as tg:
            for _ in range(2):
                tg.start_soon(resume_one)

    run_async(main)
    assert sorted(outcomes) == ["refused", "won"]


def test_list_prune_and_delete(store):
    ids = [Executor(growing_chart(3), store=store).run_sync().run_id for _ in range(4)]
    assert [r.run_id for r in store.list_runs()] == ids
    assert store.prune(keep_latest=2) == 2
    assert [r.run_id for r in store.list_runs()] == ids[2:]
    store.delete(ids[2])
    assert [r.run_id for r in store.list_runs()] == ids[3:]
    assert store.prune(run_ids=[ids[3]]) == 1 and store.list_runs() == []
    with pytest.raises(UnknownRunError, match="list_runs"):
        store.load(ids[0])
    with pytest.raises(UnknownRunError):
        store.delete(ids[0])


def test_prune_by_age(store):
    old = Executor(growing_chart(2), store=store).run_sync().run_id
    time.sleep(0.05)
    assert store.prune(older_than=10) == 0
    assert store.prune(older_than=0.01) == 1
    assert old not in {r.run_id for r in store.list_runs()}


def test_storage_grows_linearly_with_the_bytes_written(tmp_path):
    SqliteStore(tmp_path / "empty.db").close()  # the tables and indexes of a new file
    empty = sum(p.stat().st_size for p in tmp_path.glob("empty.db*"))
    sizes = {}
    for n in (200, 400):
        path = tmp_path / f"{n}.db"
        store = SqliteStore(path)

        def step(s, n=n):
            i = s.get("i", 0) + 1
            s["i"] = i
            s.append("log", "y" * 1000)
            if i == n:
                s.break_()

        Executor(flow_chart("Step", step).loop_to("step").build(), store=store).run_sync()
        store.close()
        sizes[n] = sum(p.stat().st_size for p in tmp_path.glob(f"{n}.db*")) - empty
    for n, size in sizes.items():
        assert size <= 1.5 * n * 1000, sizes  # values stored once, appends as items
    assert sizes[400] / sizes[200] < 2.1  # linear, not quadratic (which would be ~4x)


def test_unknown_runs_and_bad_paths_get_specific_errors(tmp_path):
    with pytest.raises(StoreError, match="cannot open the SQLite store at .*directory exists"):
        SqliteStore(tmp_path / "missing-dir" / "runs.db")
    not_db = tmp_path / "not.db"
    not_db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="SQLite database"):
        SqliteStore(not_db)
    ex = Executor(pc.approval_chart(), store=MemoryStore())
    with pytest.raises(UnknownRunError, match="no run 'nope'"):
        ex.recover_sync("nope")


def test_unreachable_postgres_names_host_and_port_never_the_password():
    with pytest.raises(StoreError) as info:
        PostgresStore("postgresql://alice:s3cret-pw@127.0.0.1:1/db", connect_timeout=2)
    message = str(info.value)
    assert "127.0.0.1:1/db" in message and "s3cret-pw" not in message
    assert "server is running" in message


def test_a_failing_store_fails_the_run_and_keeps_the_commits_in_memory():
    class Broken(MemoryStore):
        def append(self, run_id, commits):
            raise OSError("disk full")

    with pytest.raises(StoreError, match="disk full") as info:
        Executor(growing_chart(5), store=Broken()).run_sync()
    assert len(info.value.snapshot) == 1  # the commit the store refused is still on record


def test_batch_durability_applies_backpressure():
    class Slow(MemoryStore):
        def __init__(self):
            super().__init__()
            self.batches = []

        def append(self, run_id, commits):
            time.sleep(0.002)
            self.batches.append(len(commits))
            super().append(run_id, commits)

    store = Slow()
    result = Executor(growing_chart(200), store=store, durability="batch",
                      queue_size=8).run_sync()  # fmt: skip
    # one transaction takes everything queued: the queue's 8 and the one its writer freed
    # room for meanwhile (make_sink's batch_size), never more
    assert sum(store.batches) == 200 and max(store.batches) <= 8 + 1
    assert store.load(result.run_id) == result.snapshot


def test_history_lists_commit_metadata_without_loading_values(store):
    result = Executor(growing_chart(5), store=store).run_sync()
    metas = store.history(result.run_id)
    assert [(m.seq, m.stage_path, m.kind, m.outcome) for m in metas] == [
        (c.seq, c.stage_path, c.kind, c.outcome) for c in result.snapshot.history()
    ]
    with pytest.raises(UnknownRunError):
        store.history("run-that-does-not-exist")


def test_resuming_an_embedded_checkpoint_with_a_new_store_stores_the_whole_log(store):
    first = Executor(pc.approval_chart()).run_sync()  # no store: the log is embedded
    assert first.checkpoint.snapshot is not None
    second = Executor(pc.approval_chart(), store=store).resume_sync(first.checkpoint, "ok")
    assert store.load(first.run_id) == second.snapshot
    assert [m.seq for m in store.history(first.run_id)] == [1, 2, 3, 4]


def test_begin_run_learns_the_run_number_so_its_first_commits_need_no_lookup(tmp_path):
    # INSERT ... RETURNING gives the number with the run's row: the first append goes in
    # without a SELECT of it (a group of a thousand runs' first commits once did a thousand)
    store = SqliteStore(tmp_path / "runs.db")
    try:
        seen: list[str] = []
        store._db.set_trace_callback(seen.append)
        result = Executor(growing_chart(3), store=store).run_sync({"i": 0})
        store._db.set_trace_callback(None)
        assert any("RETURNING run_no" in s for s in seen)
        assert not [s for s in seen if "SELECT run_no FROM trackway_runs WHERE run_id" in s]
        assert store.load(result.run_id) == result.snapshot
        store.delete(result.run_id)  # begun again after a delete: a new number, learned anew
        store.begin_run(result.run_id, "step", {})
        store.append(result.run_id, result.snapshot.commits)
        assert store.load(result.run_id).commits == result.snapshot.commits
    finally:
        store.close()


def test_a_finished_run_in_a_memory_store_leaves_the_collector_nothing_per_commit():
    import gc

    store = MemoryStore()
    result = Executor(growing_chart(5), store=store).run_sync({"i": 0})
    gc.collect()
    gc.collect()  # a pair is untracked after its row tuple is
    kept = store._runs[result.run_id]["commits"]
    assert len(kept) == 5 and not any(gc.is_tracked(pair) for pair in kept)
    assert store.load(result.run_id) == result.snapshot
    assert [m.seq for m in store.history(result.run_id)] == [1, 2, 3, 4, 5]
    assert CommitMeta._fields == ROW_FIELDS  # a row is read back as its metadata


def test_commit_meta_of_a_commit_is_its_row() -> None:
    result = Executor(growing_chart(2)).run_sync({"i": 0})
    for commit in result.snapshot.commits:
        meta = CommitMeta.of(commit)
        assert tuple(meta) == row_of(commit)
        assert (meta.seq, meta.stage_path, meta.ended_at) == (
            commit.seq,
            commit.stage_path,
            commit.ended_at,
        )
