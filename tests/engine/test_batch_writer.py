"""``durability="batch"`` with many runs at once: one writer thread per store, shared by
every run on it, each run's bounds its own, and a failed write failing only the runs it
held."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.backends import run_async
from tests.examples import examples
from trackway import Executor, MemoryStore, SqliteStore, flow_chart
from trackway.engine import StoreWriteError
from trackway.engine.core._commit import Commit

RUNS = 40
STAGES = 6


def _writers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "trackway-batch-writer"]


def _concurrently(executors: Sequence[Executor]) -> dict[str, Any]:
    """Run each executor once, all at once on one loop, as ``run-<i>``: each run's result,
    or the ``StoreWriteError`` it failed with."""
    outcomes: dict[str, Any] = {}

    async def one(i: int, executor: Executor) -> None:
        run_id = f"run-{i}"
        try:
            outcomes[run_id] = await executor.run({}, run_id=run_id)
        except StoreWriteError as exc:
            outcomes[run_id] = exc

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i, executor in enumerate(executors):
                tg.start_soon(one, i, executor)

    run_async(main)
    return outcomes


def _chart(seen: list[int]) -> Any:
    async def step(scope: Any) -> None:
        scope["n"] = scope.get("n", 0) + 1
        seen.append(len(_writers()))
        await anyio.sleep(0.001)  # the runs interleave, as concurrent requests do

    chart = flow_chart("Step", step, id="step")
    for k in range(1, STAGES):
        chart = chart.then(f"Step {k}", step, id=f"step-{k}")
    return chart.build()


def test_concurrent_batch_runs_share_one_writer_thread_and_every_log_lands(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    seen: list[int] = []
    executor = Executor(_chart(seen), store=store, durability="batch", queue_size=4)
    results = list(_concurrently([executor] * RUNS).values())
    assert len(results) == RUNS and all(r.status == "done" for r in results)
    assert max(seen) == 1  # one writer for all 40 runs, not one each
    for result in results:
        assert store.load(result.run_id) == result.snapshot
    deadline = time.monotonic() + 5
    while _writers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _writers() == []  # it ends with the last run
    store.close()


class _Grouping(MemoryStore):
    """A store that writes several runs in one call, as the SQL stores do, recording each
    call's size per run; ``refuse`` names a run whose writes it fails alone."""

    def __init__(self, refuse: str | None = None) -> None:
        super().__init__()
        self.calls: list[dict[str, int]] = []
        self.refuse = refuse

    def append_group(self, items: Sequence[tuple[str, Sequence[Commit]]]) -> dict[str, Exception]:
        time.sleep(0.002)
        self.calls.append({run_id: len(commits) for run_id, commits in items})
        failed: dict[str, Exception] = {}
        for run_id, commits in items:
            if self.refuse is not None and run_id.endswith(self.refuse):
                failed[run_id] = OSError("disk full")
                continue
            self.append(run_id, commits)
        return failed


def _growing(n: int) -> Any:
    def step(scope: Any) -> None:
        count = scope.get("n", 0) + 1
        scope["n"] = count
        if count == n:
            scope.break_("done")

    return flow_chart("Step", step, id="step").loop_to("step").build()


def test_one_transaction_takes_several_runs_within_each_runs_bound() -> None:
    store = _Grouping()
    executor = Executor(_growing(60), store=store, durability="batch", queue_size=8)
    results = list(_concurrently([executor] * 8).values())
    assert all(r.status == "broken" for r in results)
    assert any(len(call) > 1 for call in store.calls)  # runs shared transactions
    # never more than the queue's 8 and the one the writer freed room for, per run
    assert max(n for call in store.calls for n in call.values()) <= 8 + 1
    for result in results:
        assert store.load(result.run_id) == result.snapshot


def test_a_failed_write_fails_only_its_run_and_leaves_its_log_a_prefix() -> None:
    store = _Grouping(refuse="-3")
    executor = Executor(_growing(40), store=store, durability="batch", queue_size=4)
    outcomes = _concurrently([executor] * 6)
    failed = outcomes.pop("run-3")
    assert isinstance(failed, StoreWriteError) and "disk full" in str(failed)
    assert all(r.status == "broken" for r in outcomes.values())
    for run_id, result in outcomes.items():
        assert store.load(run_id) == result.snapshot
    kept = [c.seq for c in store.load("run-3").history()]
    assert kept == list(range(1, len(kept) + 1))  # nothing after the gap


def test_a_new_store_at_a_freed_address_gets_a_writer_of_its_own() -> None:
    for _ in range(3):
        store = MemoryStore()
        result = Executor(_growing(5), store=store, durability="batch").run_sync()
        assert store.load(result.run_id) == result.snapshot
        del store


class _FailingFrom(_Grouping):
    """Fails ``victim``'s writes from its ``k``-th write call on."""

    def __init__(self, victim: str | None, k: int) -> None:
        super().__init__()
        self.victim, self.k, self.seen = victim, k, 0

    def append_group(self, items: Sequence[tuple[str, Sequence[Commit]]]) -> dict[str, Exception]:
        if self.victim is not None and any(run_id == self.victim for run_id, _ in items):
            self.seen += 1
            if self.seen >= self.k:
                self.refuse = self.victim
        return super().append_group(items)


@settings(max_examples=examples(40), deadline=None)
@given(
    lengths=st.lists(st.integers(1, 25), min_size=1, max_size=6),
    queue_size=st.integers(1, 4),
    victim=st.one_of(st.none(), st.integers(0, 5)),
    k=st.integers(1, 4),
)
def test_every_batch_run_lands_whole_or_as_a_prefix_when_its_write_failed(
    lengths: list[int], queue_size: int, victim: int | None, k: int
) -> None:
    doomed = f"run-{victim}" if victim is not None and victim < len(lengths) else None
    store = _FailingFrom(doomed, k)
    outcomes = _concurrently(
        [
            Executor(_growing(n), store=store, durability="batch", queue_size=queue_size)
            for n in lengths
        ]
    )
    for i, n in enumerate(lengths):
        run_id = f"run-{i}"
        got = outcomes[run_id]
        kept = store.load(run_id)
        if isinstance(got, StoreWriteError):
            assert run_id == doomed and "disk full" in str(got)
            seqs = [c.seq for c in kept.history()]
            assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) < n
        else:
            assert got.status == "broken" and kept == got.snapshot  # every commit, in order
    assert all(n <= queue_size + 1 for call in store.calls for n in call.values())


class _CountingSqlite(SqliteStore):
    """A SQLite store noting each run ending written alone and each one written in a group;
    ``refuse`` names a run whose group writes fail."""

    def __init__(self, path: Path, refuse: str | None = None) -> None:
        super().__init__(path)
        self.alone: list[str] = []
        self.in_group: list[str] = []
        self.refuse = refuse

    def finish_run(self, run_id: str, status: str, outcome: Any = None) -> None:
        self.alone.append(run_id)
        super().finish_run(run_id, status, outcome)

    def write_group(self, items: Sequence[Any]) -> dict[str, Exception]:
        if self.refuse is not None and any(i.run_id == self.refuse for i in items):
            raise OSError("disk full")
        failed = super().write_group(items)
        self.in_group += [i.run_id for i in items if i.closing is not None]
        return failed


def test_a_batch_runs_end_rides_with_its_last_commits(tmp_path: Path) -> None:
    store = _CountingSqlite(tmp_path / "runs.db")
    executor = Executor(_growing(12), store=store, durability="batch", queue_size=2)
    results = list(_concurrently([executor] * 10).values())
    assert store.alone == []  # no ending in a transaction of its own
    assert sorted(store.in_group) == sorted(f"run-{i}" for i in range(10))
    infos = {info.run_id: info for info in store.list_runs()}
    for result in results:
        assert infos[result.run_id].status == "broken"
        assert store.load(result.run_id) == result.snapshot
    store.close()


def test_a_batch_run_whose_last_write_fails_is_recorded_failed(tmp_path: Path) -> None:
    store = _CountingSqlite(tmp_path / "runs.db", refuse="run-x")
    with pytest.raises(StoreWriteError, match="disk full"):
        Executor(_growing(3), store=store, durability="batch").run_sync({}, run_id="run-x")
    (info,) = store.list_runs()
    assert info.status == "failed" and store.alone == ["run-x"]
    store.close()


def test_exit_runs_write_nothing_until_they_end_then_all_at_once_with_their_end(
    tmp_path: Path,
) -> None:
    """As on ``PostgresStore``, whose I/O is off the loop (``offloads_io``); a plain
    ``SqliteStore`` keeps writing an exit run on the loop."""
    store = _CountingSqlite(tmp_path / "runs.db")
    store.offloads_io = True  # type: ignore[attr-defined]
    seen_mid_run: list[int] = []

    def step(scope: Any) -> None:
        count = scope.get("n", 0) + 1
        scope["n"] = count
        if count == 5:
            seen_mid_run.append(len(store.history(scope.run_id)))
        if count == 8:
            scope.break_("done")

    chart = flow_chart("Step", step, id="step").loop_to("step").build()
    executor = Executor(chart, store=store, durability="exit")
    calls: list[dict[str, int]] = []
    write_group = store.write_group

    def spy(items: Sequence[Any]) -> dict[str, Exception]:
        calls.append({i.run_id: len(i.commits) for i in items})
        return write_group(items)

    store.write_group = spy  # type: ignore[method-assign]
    results = list(_concurrently([executor] * 6).values())
    assert seen_mid_run == [0] * 6  # nothing stored while the runs ran
    assert store.alone == [] and sorted(store.in_group) == [f"run-{i}" for i in range(6)]
    # each run's 8 commits went in one transaction (with its end), not spread over several
    assert sorted(n for call in calls for n in call.values()) == [8] * 6
    for result in results:
        assert store.load(result.run_id) == result.snapshot
    assert {info.status for info in store.list_runs()} == {"broken"}
    store.close()


def test_an_exit_run_writes_its_commits_when_it_pauses_and_the_rest_when_resumed(
    tmp_path: Path,
) -> None:
    from . import pause_charts as pc

    store = SqliteStore(tmp_path / "runs.db")
    first = Executor(pc.approval_chart(), store=store, durability="exit").run_sync({"amount": 3})
    assert first.status == "paused"
    assert len(store.history(first.run_id)) == len(first.snapshot)
    second = Executor(pc.approval_chart(), store=store, durability="exit").resume_sync(
        first.checkpoint, "yes"
    )
    assert second.status == "done"
    assert store.load(first.run_id) == second.snapshot
    store.close()


@pytest.mark.parametrize("durability", ["exit", "batch"])
def test_concurrent_runs_on_postgres_share_its_writer_and_land_whole(durability: str) -> None:
    from tests.pg import pg_schema
    from trackway import PostgresStore

    with pg_schema("bw") as dsn:
        store = PostgresStore(dsn)
        seen: list[int] = []
        executor = Executor(_chart(seen), store=store, durability=durability, queue_size=2)
        try:
            results = list(_concurrently([executor] * 12).values())
            assert max(seen) == 1
            statuses = {info.run_id: info.status for info in store.list_runs()}
            for result in results:
                assert statuses[result.run_id] == "done"
                assert store.load(result.run_id) == result.snapshot
        finally:
            store.close()
