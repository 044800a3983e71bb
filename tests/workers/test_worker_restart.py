"""PostgreSQL restarted under four worker processes: every run ends exactly once, its log
whole. The server is a throwaway of this test's own (restarting the session's shared one
would end every other test's sessions)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import PgServer, pg_server
from trackway.engine import PostgresStore

from .charts import STAGES
from .test_worker_processes import EXPECTED_PATHS, TOTAL, Pool, _log_is_whole, _wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

RUNS = 120


@pytest.fixture
def own_server() -> Iterator[PgServer]:
    server = pg_server()
    if isinstance(server, str):
        if os.environ.get("CI"):
            pytest.fail(f"CI must be able to start PostgreSQL from its binaries: {server}")
        pytest.skip(server)
    try:
        yield server
    finally:
        server.stop()


def test_a_restart_under_four_workers_ends_every_run_exactly_once(
    own_server: PgServer, tmp_path: Path
) -> None:
    store = PostgresStore(own_server.dsn)
    rids = [store.submit("steps", {"seed": i, "delay": 0.002}) for i in range(RUNS)]
    pool = Pool(own_server.dsn, tmp_path, "--lease", "2", "--max-runs", "4", "--poll", "0.05")
    for _ in range(4):
        pool.start()
    restarted = False

    def restart_midway() -> None:
        nonlocal restarted
        if not restarted and store.queue_counts().get("done", 0) >= RUNS // 4:
            pool.wait_started()  # (a worker still starting would fail to open its store)
            own_server.restart()  # every session ends, transactions in flight with them
            restarted = True

    try:
        _wait_until(
            lambda: store.queue_counts().get("done", 0) == RUNS,
            240, f"{RUNS} runs to end", restart_midway, store.queue_counts,
        )  # fmt: skip
        assert pool.stop_all() == [0, 0, 0, 0]
    finally:
        pool.kill_all()
    assert restarted and store.reconnects >= 1
    assert store.queue_counts() == {"done": RUNS}
    ended = Counter(
        e["run_id"] for e in pool.events() if e["event"] == "settled" and e["state"] == "done"
    )
    assert set(ended) == set(rids) and set(ended.values()) == {1}  # each ended exactly once
    for rid in rids:
        snap = store.load(rid)
        assert snap.status == "done" and snap.state["total"] == TOTAL
        assert _log_is_whole(store, rid) == EXPECTED_PATHS
    assert len(EXPECTED_PATHS) == STAGES
    store.close()
