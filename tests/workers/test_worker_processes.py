"""Worker processes on the real PostgreSQL: three ``trackway worker`` processes drive 300
runs (some pause and are answered, some fail) and every run ends exactly once; then workers
are SIGKILLed mid-run twenty times and every run still completes, its log exactly the log of
an uninterrupted run."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from trackway import PostgresStore
from trackway.engine import UnknownRunError

from .charts import STAGES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
EXPECTED_PATHS = [f"s{n}#{n - 1}" for n in range(1, STAGES + 1)]
TOTAL = sum(range(1, STAGES + 1))


class Pool:
    """Worker processes started with the command line, their logs in files."""

    def __init__(
        self, dsn: str, logs: Path, *extra: str, charts: str = "tests.workers.charts:CHARTS"
    ) -> None:
        self.charts = charts
        self.dsn = dsn
        self.logs = logs
        self.extra = extra
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        n = len(self.procs)
        with (self.logs / f"worker-{n}.jsonl").open("wb") as err:  # the child keeps its own
            proc = self._popen(err)
        self.procs.append(proc)
        return proc

    def wait_started(self, timeout: float = 60) -> None:
        """Wait for each live worker's ``started`` line: from then on it handles SIGTERM (a
        signal during its imports would end it with -15, before it claimed anything)."""
        deadline = time.monotonic() + timeout
        for n, proc in enumerate(self.procs):
            log = self.logs / f"worker-{n}.jsonl"
            while proc.poll() is None and b'"event": "started"' not in log.read_bytes():
                assert time.monotonic() < deadline, f"worker {n} did not start: {log.read_text()}"
                time.sleep(0.01)

    def _popen(self, err: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "trackway.cli", "worker", "--store", self.dsn,
             "--charts", self.charts, "--log-format", "json", *self.extra],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip

    def live(self) -> list[subprocess.Popen[bytes]]:
        return [p for p in self.procs if p.poll() is None]

    def stop_all(self, timeout: float = 30) -> list[int]:
        self.wait_started()
        for p in self.live():
            p.send_signal(signal.SIGTERM)
        return [p.wait(timeout) for p in self.procs]

    def kill_all(self) -> None:
        for p in self.live():
            p.kill()
            p.wait()

    def events(self) -> list[dict[str, Any]]:
        out = []
        for f in sorted(self.logs.glob("worker-*.jsonl")):
            for line in f.read_text().splitlines():
                if line.startswith("{"):
                    out.append(json.loads(line))
        return out


def _wait_until(
    done: Any, timeout: float, what: str, every: Any = None, store_state: Any = str
) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if every is not None:
            every()
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {store_state()}")
        time.sleep(0.05)


def _log_is_whole(store: PostgresStore, run_id: str) -> list[str]:
    """The run's stage paths, after checking its commits are numbered 1..n with no gap."""
    history = store.history(run_id)
    assert [m.seq for m in history] == list(range(1, len(history) + 1)), run_id
    return [m.stage_path for m in history]


def test_three_workers_drive_300_runs_each_ending_exactly_once(
    store: PostgresStore, pg_dsn: str, tmp_path: Path
) -> None:
    kinds: dict[str, tuple[str, int]] = {}
    for i in range(300):
        if i % 10 == 3:
            rid = store.submit("steps", {"seed": i, "fail_at": i % STAGES + 1})
            kinds[rid] = ("fails", i % STAGES + 1)
        elif i % 10 == 7:
            rid = store.submit("approval", {"seed": i})
            kinds[rid] = ("asks", i)
        else:
            rid = store.submit("steps", {"seed": i})
            kinds[rid] = ("steps", i)
    pool = Pool(pg_dsn, tmp_path, "--lease", "5", "--max-runs", "8", "--poll", "0.02")
    for _ in range(3):
        pool.start()
    answered: set[str] = set()
    terminated = False

    def answer_pauses() -> None:
        nonlocal terminated
        for entry in store.queue(["paused"]):
            if entry.run_id not in answered:
                store.answer(entry.checkpoint_id or "", f"ok-{kinds[entry.run_id][1]}")
                answered.add(entry.run_id)
        counts = store.queue_counts()
        if not terminated and counts.get("done", 0) >= 100:
            first = pool.procs[0]  # SIGTERM one mid-way: it lets its runs go, exits 0
            pool.wait_started()
            first.send_signal(signal.SIGTERM)
            assert first.wait(30) == 0
            pool.start()
            terminated = True

    try:
        _wait_until(
            lambda: sum(store.queue_counts().get(s, 0) for s in ("done", "failed")) == 300,
            180, "300 runs to end", answer_pauses,
        )  # fmt: skip
        assert pool.stop_all() == [0, 0, 0, 0]
    finally:
        pool.kill_all()
    assert terminated and store.queue_counts() == {"done": 270, "failed": 30}
    ended = Counter(
        e["run_id"] for e in pool.events()
        if e["event"] == "settled" and e["state"] in ("done", "failed")
    )  # fmt: skip
    assert set(ended) == set(kinds) and set(ended.values()) == {1}  # each ends exactly once
    for rid, (kind, n) in kinds.items():
        entry = store.queued(rid)
        snap = store.load(rid)
        paths = _log_is_whole(store, rid)
        if kind == "steps":
            assert (entry.state, snap.status) == ("done", "done")
            assert paths == EXPECTED_PATHS and snap.state["total"] == TOTAL
        elif kind == "fails":
            assert (entry.state, snap.status) == ("failed", "failed")
            assert f"stage {n} fails on purpose" in (entry.error or "")
            assert paths[: n - 1] == EXPECTED_PATHS[: n - 1] and len(paths) == n
        else:
            assert (entry.state, snap.status) == ("done", "done")
            assert snap.state["done"] == f"answer=ok-{n}"
    by_worker = Counter(e["worker"] for e in pool.events() if e["event"] == "claimed")
    # the three first workers each took a share (the replacement may find nothing left)
    assert len(by_worker) >= 3 and min(by_worker.values()) > 0


def test_twenty_sigkills_mid_run_and_every_run_completes_whole(
    store: PostgresStore, pg_dsn: str, tmp_path: Path
) -> None:
    runs = [store.submit("steps", {"seed": i, "delay": 0.01}) for i in range(60)]
    pool = Pool(
        pg_dsn, tmp_path, "--lease", "1", "--max-runs", "4", "--poll", "0.02",
        "--max-attempts", "30",
    )  # fmt: skip
    for _ in range(3):
        pool.start()
    rng = random.Random(18)
    killed = 0
    try:
        _wait_until(lambda: store.queue_counts().get("running", 0) > 0, 60, "a first claim")
        while killed < 20:
            time.sleep(rng.uniform(0.1, 0.4))
            held = [w for w in store.workers() if w.held]
            victims = [p for p in pool.live() if any(w.pid == p.pid for w in held)]
            if not victims:
                if store.queue_counts().get("done", 0) == len(runs):
                    break
                continue
            rng.choice(victims).kill()  # mid-run: it holds a lease
            killed += 1
            pool.start()
        _wait_until(
            lambda: sum(store.queue_counts().get(s, 0) for s in ("done", "failed")) == len(runs),
            120, "every run", store_state=lambda: (store.queue_counts(), store.workers()),
        )  # fmt: skip
        survivors = pool.live()
        pool.stop_all()
        assert [p.returncode for p in survivors] == [0, 0, 0]
    finally:
        pool.kill_all()
    assert killed == 20
    recovered = 0
    for rid in runs:
        entry = store.queued(rid)
        snap = store.load(rid)
        assert (entry.state, snap.status) == ("done", "done"), (
            f"{rid}: {entry.error!r} after {entry.claims} claims ({entry.attempts} attempts); "
            f"{snap.error!r}"
        )
        assert _log_is_whole(store, rid) == EXPECTED_PATHS  # nothing twice, nothing skipped
        assert snap.state["total"] == TOTAL and snap.state["seed"] == runs.index(rid)
        recovered += entry.claims > 1
    assert recovered >= 10  # the kills landed mid-run, and their runs were continued


def _wait_event(pool: Pool, event: str, timeout: float, **fields: Any) -> dict[str, Any]:
    """The first structured log line of ``event`` (with ``fields``) any worker wrote."""
    deadline = time.monotonic() + timeout
    while True:
        for e in pool.events():
            if e["event"] == event and all(e.get(k) == v for k, v in fields.items()):
                return e
        assert time.monotonic() < deadline, f"no {event} {fields}: {pool.events()[-5:]}"
        time.sleep(0.05)


def test_a_frozen_worker_that_wakes_past_its_lease_changes_nothing(
    store: PostgresStore, pg_dsn: str, tmp_path: Path
) -> None:
    """SIGSTOP a worker mid-stage past its lease; another worker finishes the run; SIGCONT
    the first: its late commit, its run ending and its queue outcome are all refused, so the
    store and the queue both say done, over a whole log (issue 30)."""
    rid = store.submit("steps", {"seed": 5, "delay": 0.4})
    pool = Pool(pg_dsn, tmp_path, "--lease", "1", "--max-runs", "1", "--poll", "0.02")
    frozen = pool.start()
    try:
        _wait_until(lambda: _began_with(store, rid, 2), 60, "the first worker's second commit")
        frozen.send_signal(signal.SIGSTOP)  # mid-stage: the third stage sleeps 0.4 s
        time.sleep(1.5)  # past its lease
        pool.start()
        _wait_until(lambda: store.queued(rid).state == "done", 60, "the second worker")
        assert store.load(rid).status == "done"
        frozen.send_signal(signal.SIGCONT)
        # it wakes, ends its stage, and every write it tries is refused
        _wait_event(pool, "lease_lost", 30, run_id=rid)
        time.sleep(0.5)
        assert pool.stop_all() == [0, 0]
    finally:
        with contextlib.suppress(ProcessLookupError):
            frozen.send_signal(signal.SIGCONT)
        pool.kill_all()
    entry = store.queued(rid)
    snap = store.load(rid)
    assert (entry.state, snap.status) == ("done", "done"), (entry, snap.error)
    assert _log_is_whole(store, rid) == EXPECTED_PATHS
    assert snap.state["total"] == TOTAL


def _began_with(store: PostgresStore, run_id: str, commits: int) -> bool:
    try:
        return len(store.history(run_id)) >= commits
    except UnknownRunError:
        return False


def test_a_poison_run_is_charged_alone_and_its_neighbours_finish(
    store: PostgresStore, pg_dsn: str, tmp_path: Path
) -> None:
    """A run that kills its worker every time is failed after max_attempts; the runs claimed
    in the same batch are not charged for its deaths: they finish, and their run rows say
    done (issue 30)."""
    poison = store.submit("poison", {"delay": 0.3})
    neighbours = [store.submit("steps", {"seed": i, "delay": 0.05}) for i in range(3)]
    pool = Pool(
        pg_dsn, tmp_path, "--lease", "1", "--max-runs", "4", "--poll", "0.02",
        "--max-attempts", "3",
    )  # fmt: skip
    pool.start()
    try:
        _wait_until(
            lambda: all(store.queued(r).ended for r in (poison, *neighbours)),
            120,
            "every run to end",
            every=lambda: pool.live() or pool.start(),
            store_state=lambda: store.queue(),
        )
        pool.stop_all()
    finally:
        pool.kill_all()
    deaths = sum(p.returncode == 17 for p in pool.procs)
    assert deaths >= 4  # one in the first batch, then each claim of the poison alone
    entry = store.queued(poison)
    assert entry.state == "failed" and "gave up after 3 attempts" in (entry.error or "")
    snap = store.load(poison)
    assert snap.status == "failed" and snap.error is not None
    assert "gave up after 3 attempts" in snap.error.message
    for rid in neighbours:
        entry = store.queued(rid)
        assert (entry.state, entry.attempts) == ("done", 0), entry
        assert store.load(rid).status == "done"
        assert _log_is_whole(store, rid) == EXPECTED_PATHS
