"""The worker pool on one PostgreSQL: runs per second for 1, 2 and 4 worker processes,
claim latency, and how long a killed worker's run waits before another continues it.

Each measurement runs in a schema of its own. Workers are ``trackway worker`` processes
(started and registered before the clock starts); the runs are the test chart
``tests.workers.charts:STEPS`` (10 stages of ~1 KB each). Needs ``TRACKWAY_TEST_PG_DSN``.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import pg_schema

ROOT = Path(__file__).resolve().parents[1]
PG_ENV = "TRACKWAY_TEST_PG_DSN"


def _workers(dsn: str, n: int, *extra: str) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trackway.cli",
                "worker",
                "--store",
                dsn,
                "--charts",
                "tests.workers.charts:CHARTS",
                *extra,
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(n)
    ]


def _until(done: Any, timeout: float = 300.0, every: float = 0.005) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError("the workers did not finish in time")
        time.sleep(every)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


def _throughput(base: str, n: int, runs: int) -> dict[str, Any]:
    from trackway import PostgresStore

    with pg_schema(base) as dsn:
        store = PostgresStore(dsn)
        procs = _workers(dsn, n, "--max-runs", "4", "--poll", "0.01")
        try:
            _until(lambda: len(store.workers()) == n, 60)
            started = time.perf_counter()
            for i in range(runs):
                store.submit("steps", {"seed": i})
            _until(lambda: store.queue_counts().get("done", 0) == runs)
            seconds = time.perf_counter() - started
        finally:
            _stop(procs)
        entries = store.queue(["done"], limit=runs)
        waits = []
        for e in entries[: min(50, runs)]:
            first = store.history(e.run_id)[0]
            waits.append(first.started_at - e.submitted_at)
        store.close()
    return {
        "workers": n,
        "runs": runs,
        "seconds": seconds,
        "runs_per_s": runs / seconds,
        "commits_per_s": runs * 10 / seconds,
    }


def _claim_latency(base: str, poll: float, samples: int, listen: bool) -> list[float]:
    """Seconds from submit to the run's first stage, one run at a time, one idle worker."""
    from trackway import PostgresStore

    with pg_schema(base) as dsn:
        store = PostgresStore(dsn)
        procs = _workers(dsn, 1, "--poll", str(poll), "--listen" if listen else "--no-listen")
        out = []
        try:
            _until(lambda: len(store.workers()) == 1, 60)
            for i in range(samples):
                rid = store.submit("steps", {"seed": i})
                _until(lambda rid=rid: store.queued(rid).state == "done", 60, 0.002)
                entry = store.queued(rid)
                out.append(store.history(rid)[0].started_at - entry.submitted_at)
        finally:
            _stop(procs)
        store.close()
    return out


def _recovery(base: str, lease: float, samples: int) -> list[float]:
    """Seconds from SIGKILLing the worker that drives a run to the run's next commit, made
    by another worker (the lease must run out first)."""
    from trackway import PostgresStore

    out = []
    with pg_schema(base) as dsn:
        store = PostgresStore(dsn)
        procs = _workers(
            dsn, 2, "--lease", str(lease), "--poll", "0.01", "--max-attempts", str(samples + 2)
        )
        try:
            _until(lambda: len(store.workers()) == 2, 60)
            for i in range(samples):
                rid = store.submit("steps", {"seed": i, "delay": 0.05})
                _until(lambda rid=rid: store.queued(rid).worker is not None, 60, 0.002)
                _until(lambda rid=rid: _commits(store, rid) >= 3, 60, 0.002)
                holder = store.queued(rid).worker
                (victim,) = [w for w in store.workers() if w.worker_id == holder]
                killed_at = time.time()
                os.kill(victim.pid, signal.SIGKILL)
                seen = _commits(store, rid)
                _until(lambda rid=rid, seen=seen: _commits(store, rid) > seen + 1, 60, 0.002)
                nxt = store.history(rid)[seen + 1]  # (seen may include one in flight)
                out.append(nxt.started_at - killed_at)
                procs = [p for p in procs if p.poll() is None]
                procs += _workers(dsn, 1, "--lease", str(lease), "--poll", "0.01")
                _until(lambda: len(store.workers()) == 2, 60)
                _until(lambda rid=rid: store.queued(rid).state == "done", 60)
        finally:
            _stop(procs)
        store.close()
    return out


def _commits(store: Any, run_id: str) -> int:
    from trackway.engine import UnknownRunError

    try:
        return len(store.history(run_id))
    except UnknownRunError:
        return 0


def workers_section(quick: bool) -> dict[str, Any]:
    """Runs/s for 1, 2, 4 workers; claim latency; recovery after a kill."""
    base = os.environ.get(PG_ENV)
    title = "Workers on one PostgreSQL (10 stages of ~1 KB per run)"
    if base is None:
        return {"title": title, "rows": [], "targets": [], "skipped": f"set {PG_ENV}"}
    runs = 60 if quick else 200
    rows: list[dict[str, Any]] = []
    single = None
    for n in (1, 2, 4):
        row = _throughput(base, n, runs)
        single = single or row["runs_per_s"]
        row["speedup"] = row["runs_per_s"] / single
        rows.append(
            {
                "measure": f"{n} worker(s): runs/s",
                "value": row["runs_per_s"],
                "detail": f"{row['commits_per_s']:.0f} commits/s, {row['speedup']:.2f}x "
                f"of one, {runs} runs in {row['seconds']:.2f} s",
            }
        )
    latency: dict[tuple[float, bool], float] = {}
    for poll, listen in ((0.25, True), (0.25, False), (0.01, False)):
        lat = _claim_latency(base, poll, 8 if quick else 20, listen)
        latency[poll, listen] = statistics.median(lat) * 1000
        how = "LISTEN/NOTIFY" if listen else "polling only"
        rows.append(
            {
                "measure": f"claim latency, {how}, poll {poll} s: p50 ms",
                "value": latency[poll, listen],
                "detail": f"max {max(lat) * 1000:.1f} ms over {len(lat)} runs",
            }
        )
    lease = 2.0
    rec = _recovery(base, lease, 2 if quick else 4)
    rows.append(
        {
            "measure": f"recovery after SIGKILL, lease {lease:g} s: median s",
            "value": statistics.median(rec),
            "detail": "kill to the next commit by another worker: "
            + ", ".join(f"{r:.2f}" for r in rec),
        }
    )
    throughput = {r["measure"]: r["value"] for r in rows}
    four = throughput["4 worker(s): runs/s"] / throughput["1 worker(s): runs/s"]
    targets = [
        {
            "target": "claim latency while listening (poll 0.25 s) p50 < 20 ms",
            "measured": latency[0.25, True],
            "threshold": "< 20",
            "pass": latency[0.25, True] < 20,
        },
        {
            "target": "recovery after a kill <= lease + 1 s",
            "measured": statistics.median(rec),
            "threshold": f"<= {lease + 1:g}",
            "pass": statistics.median(rec) <= lease + 1,
        },
        {
            "target": "4 workers >= 1.3x the runs/s of one (2 cores, PostgreSQL on them too)",
            "measured": four,
            "threshold": ">= 1.3",
            "pass": four >= 1.3,
        },
    ]
    return {"title": title, "rows": rows, "targets": targets}


if __name__ == "__main__":
    import json

    print(json.dumps(workers_section("--quick" in sys.argv), indent=2))
