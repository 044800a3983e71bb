"""Crash safety: SIGKILL a child mid-run, then check the store and recover the run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from trackway import Executor, SqliteStore

from . import crash_chart

HERE = Path(__file__).parent
KILL_AT = 30
QUEUE = 4  # crash_chart runs "batch" with queue_size=4


def run_and_kill(db: Path, durability: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(HERE.parent.parent)}
    with subprocess.Popen(
        [sys.executable, "-m", "tests.engine.crash_chart", str(db), durability],
        stdout=subprocess.PIPE, text=True, env=env, cwd=HERE.parent.parent,
    ) as child:  # fmt: skip
        assert child.stdout is not None
        for line in child.stdout:
            if line.strip() == f"started {KILL_AT}":
                child.send_signal(signal.SIGKILL)
                break
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL


def stored_seqs(db: Path) -> list[int]:
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = conn.execute("SELECT id & 4294967295 FROM trackway_commits ORDER BY id")
        return [r[0] for r in rows]


@pytest.mark.slow
def test_sync_keeps_every_acknowledged_commit_and_recover_finishes_the_run(tmp_path):
    db = tmp_path / "crash.db"
    run_and_kill(db, "sync")
    seqs = stored_seqs(db)
    # "started 30" means stage 29 had committed; under "sync" that commit was durable.
    assert seqs[: KILL_AT - 1] == list(range(1, KILL_AT))
    assert len(seqs) in (KILL_AT - 1, KILL_AT)  # at most the in-flight stage is missing

    store = SqliteStore(db)
    (info,) = store.list_runs()
    assert info.status == "running"
    result = Executor(crash_chart.chart(), store=store).recover_sync(info.run_id)
    assert result.status == "broken" and result.state["i"] == crash_chart.N
    assert list(result.state["seen"]) == list(range(1, crash_chart.N + 1))
    paths = [c.stage_path for c in result.snapshot.history()]
    assert len(paths) == len(set(paths)) == crash_chart.N
    assert store.load(info.run_id) == result.snapshot
    assert store.list_runs()[0].status == "broken"
    store.close()


@pytest.mark.slow
def test_batch_loses_at_most_the_unflushed_window_and_never_leaves_a_gap(tmp_path):
    db = tmp_path / "crash.db"
    run_and_kill(db, "batch")
    seqs = stored_seqs(db)
    acknowledged = KILL_AT - 1
    # The window: a batch being written (at most QUEUE + 1 commits) plus a full queue (QUEUE).
    window = 2 * QUEUE + 1
    assert seqs == list(range(1, len(seqs) + 1))  # a prefix: nothing after a gap
    assert len(seqs) >= acknowledged - window
    store = SqliteStore(db)
    result = Executor(crash_chart.chart(), store=store).recover_sync(store.list_runs()[0].run_id)
    assert result.state["i"] == crash_chart.N
    assert list(result.state["seen"]) == list(range(1, crash_chart.N + 1))
    store.close()
