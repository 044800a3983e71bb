"""Group commit's kill test: a child process runs 100 ``"sync"`` runs at once on one store
(a real SQLite file, or the real PostgreSQL in a schema of its own), printing each commit
it acknowledged; it is SIGKILLed at a random moment, and every acknowledged commit must be
in the store, every log a prefix with no gap. On asyncio and trio (the child's backend).
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
from contextlib import closing
from pathlib import Path

import pytest

from tests.backends import current_backend
from tests.pg import pg_schema
from trackway import PostgresStore, SqliteStore
from trackway.engine import RunStore

ROOT = Path(__file__).resolve().parent.parent.parent


def seqs(store: RunStore, run_id: str) -> list[int]:
    return [m.seq for m in store.history(run_id)]


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
