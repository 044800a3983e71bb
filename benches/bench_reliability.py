"""Reliability figures: what trackway keeps when processes die, race, are cancelled or are fed
hostile input.

Everything runs with real processes (killed with SIGKILL) and real stores (a SQLite file; a
PostgreSQL schema of its own when ``TRACKWAY_TEST_PG_DSN`` is set, dropped afterwards), no
mocks:

1. Kills. A child process runs a counting loop on a store under each durability ("sync",
   "batch", "exit") and is SIGKILLed at a random moment (a random delay after it reports that
   a random stage started). The parent then checks that the stored log is a prefix (seqs
   1..n with no gap, the stage paths of an uncrashed run; SQLite's integrity_check), that
   under "sync" every commit acknowledged before the kill is there, and that
   ``Executor.recover_sync`` ends the run right (counted to N, nothing missing or doubled).
   Then runs killed while the slow parallel branches of a selector or a fork run: the
   recovered log (stage paths) and state must equal an uncrashed run's.
2. Resume races. P processes race to resume the same stored checkpoint of a paused run:
   exactly one must win, the others get ``CheckpointClaimedError``, and the run takes one
   answer and pays once.
3. Concurrent runs. M async runs on one executor (MemoryStore on asyncio and trio,
   SqliteStore with "sync" and "batch"), half of them cancelled at random moments through
   anyio cancel scopes: every stored log must be a clean prefix, every cancelled run stored
   failed ("Cancelled"), every finished run done.
4. Bad inputs. Hostile values, keys, event names and break reasons written as state, run
   input, emit payload, pause payload and resume value; tampered checkpoints; damaged
   snapshots. Each must be refused with a ``TrackwayError`` within a deadline. The cases run
   in a worker process: a hang is counted (the worker is killed), never fatal.

Prints a summary table (| what | tried | held | failed | details |) and the targets, writes
``benches/results/bench_reliability.json``, and exits 1 when a property failed. Children are
forked from a multiprocessing forkserver that imported trackway once, so a kill costs the run,
not an interpreter start. See ``benches/README.md`` and ``docs/guide/reliability.md``.

    .venv/bin/python benches/bench_reliability.py [--quick] [--kills K] [--rounds R]
        [--racers P] [--runs M] [--seed S] [--only kills,races,concurrent,inputs]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import multiprocessing
import os
import random
import secrets
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from decimal import Decimal
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import anyio
import orjson
from _common import clock, dist_version, print_table, print_targets, write_json

from trackway import (
    CheckpointClaimedError,
    Executor,
    FlowChart,
    MemoryStore,
    PostgresStore,
    Recorder,
    RunError,
    RunResult,
    RunStartEvent,
    Scope,
    Snapshot,
    SqliteStore,
    StageError,
    TrackwayError,
    flow_chart,
)
from trackway.engine import RunStore, StageStartEvent

PG_ENV = "TRACKWAY_TEST_PG_DSN"
DURABILITIES = ("sync", "batch", "exit")
SECTIONS = ("kills", "races", "concurrent", "inputs")
LABELS = {"sqlite": "SqliteStore", "postgres": "PostgresStore"}

LOOP_N = 40  # stages of the counting loop a child runs before it is killed
LOOP_STAGE_S = 0.002  # each loop stage sleeps this long in the child
BRANCH_STAGE_S = 0.005  # each branch stage of the parallel charts sleeps this long
CONC_STEPS = 10  # loop rounds of one concurrent run
CONC_PACE_S = 0.002  # a concurrent run's stage sleeps up to this long
CASE_DEADLINE_S = 5.0  # a bad-input case that takes longer counts as a hang
CHILD_TIMEOUT_S = 60.0  # a child that says nothing for this long is a stall
KEEP_PROBLEMS = 20  # failing items listed per row in the JSON

CTX = multiprocessing.get_context("forkserver")
PRELOAD = ["trackway", "anyio", "orjson", "psycopg", "networkx", "pydantic", "_common"]
"""Imported once by the forkserver (the engine imports networkx and pydantic on first use)."""

# -- what runs in the children ----------------------------------------------------------------

_CHILD: dict[str, Any] = {"conn": None, "delay": 0.0}
"""Set in a child process only: the pipe to report started stages on, and the stage delay.
In the parent (uncrashed runs, recovery) stages neither report nor sleep."""


def count_step(scope: Scope) -> None:
    """One round of the counting loop: i += 1, seen += [i], break at n."""
    i = scope.get("i", 0) + 1
    conn = _CHILD["conn"]
    if conn is not None:
        conn.send(("started", i))  # under "sync", every earlier stage is durable by now
        time.sleep(_CHILD["delay"])
    scope["i"] = i
    scope.append("seen", i)
    if i >= scope["n"]:
        scope.break_("counted")


def loop_chart() -> FlowChart:
    return flow_chart("Step", count_step, id="step").loop_to("step").build()


def _slow(key: str) -> Callable[[Scope], Awaitable[None]]:
    async def stage(scope: Scope) -> None:
        conn = _CHILD["conn"]
        if conn is not None:
            conn.send(("started", scope.stage_path))
            await anyio.sleep(_CHILD["delay"])
        scope[key] = scope["base"] + len(scope.stage_path)

    return stage


def _branch(name: str) -> FlowChart:
    return (
        flow_chart(f"{name}1", _slow(f"{name}1"), id=f"{name}1")
        .then(f"{name}2", _slow(f"{name}2"), id=f"{name}2")
        .then(f"{name}3", _slow(f"{name}3"), id=f"{name}3")
        .build()
    )


def _start(scope: Scope) -> None:
    scope["base"] = 100


def _total(scope: Scope) -> None:
    keys = [f"{b}{k}" for b in "abcxyz" for k in "123"]
    scope["total"] = sum(scope.get(k, 0) for k in keys)


def _pick(scope: Scope) -> list[str]:
    return ["a", "b"]


def selector_chart() -> FlowChart:
    return (
        flow_chart("Start", _start, id="start")
        .selector("Pick", _pick, id="pick")
        .branch("a", "A", _branch("a"))
        .branch("b", "B", _branch("b"))
        .branch("c", "C", _branch("c"))
        .end()
        .then("Total", _total, id="total")
        .build()
    )


def fork_chart() -> FlowChart:
    return (
        flow_chart("Start", _start, id="start")
        .fork("Fan", {"x": _branch("x"), "y": _branch("y"), "z": _branch("z")}, id="fan")
        .then("Total", _total, id="total")
        .build()
    )


def _ask(scope: Scope) -> None:
    scope["asked"] = True
    scope.pause({"question": "approve?", "amount": scope.get("amount", 0)})


def _take(scope: Scope, value: Any) -> None:
    scope["answer"] = value
    scope["answers"] = scope.get("answers", 0) + 1


def _pay(scope: Scope) -> None:
    scope["payments"] = scope.get("payments", 0) + 1


def pause_chart() -> FlowChart:
    return flow_chart("Ask", _ask, id="ask", on_resume=_take).then("Pay", _pay, id="pay").build()


CHARTS: dict[str, Callable[[], FlowChart]] = {
    "loop": loop_chart,
    "selector": selector_chart,
    "fork": fork_chart,
    "pause": pause_chart,
}


def open_store(kind: str, where: str) -> Any:
    return SqliteStore(where) if kind == "sqlite" else PostgresStore(where)


def child_run(
    conn: Connection,
    kind: str,
    where: str,
    durability: str,
    chart: str,
    run_input: dict[str, Any],
    delay: float,
) -> None:
    """A child: open the store, say ready, run the chart on "go", then wait to be killed."""
    _CHILD.update(conn=conn, delay=delay)
    store = open_store(kind, where)
    executor = Executor(
        CHARTS[chart](),
        store=store,
        durability=durability,  # type: ignore[arg-type]
        max_iterations=LOOP_N + 10,
    )
    conn.send(("ready", os.getpid()))
    if conn.recv() != "go":
        return
    try:
        result = executor.run_sync(run_input)
        conn.send(("finished", result.status))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    with contextlib.suppress(EOFError, OSError):
        conn.recv()  # the parent kills this process (or closes the pipe)


def child_racer(conn: Connection, kind: str, where: str, index: int, barrier: Barrier) -> None:
    """A racer: for each checkpoint it is sent, wait at the barrier, then resume it."""
    store = open_store(kind, where)
    executor = Executor(pause_chart(), store=store)
    conn.send(("ready", os.getpid()))
    answer = f"racer-{index}"
    while True:
        try:
            blob = conn.recv()
        except EOFError:
            break
        if blob is None:
            break
        try:
            barrier.wait(timeout=CHILD_TIMEOUT_S)
        except threading.BrokenBarrierError:
            conn.send(("error", "BrokenBarrierError", "the barrier broke"))
            continue
        try:
            result = executor.resume_sync(blob, answer)
            conn.send(("won", answer, result.status))
        except CheckpointClaimedError as exc:
            conn.send(("claimed", type(exc).__name__, str(exc)[:200]))
        except BaseException as exc:
            conn.send(("error", type(exc).__name__, str(exc)[:300]))
    store.close()


def child_cases(conn: Connection, tmp: str, first: int) -> None:
    """A bad-input worker: run the cases from ``first`` on, one reply per case."""
    cases = bad_input_cases(Path(tmp))
    conn.send(("ready", os.getpid()))
    for i in range(first, len(cases)):
        conn.send(run_case(i, cases[i]))
    conn.send(("done", len(cases)))


# -- child processes, seen from the parent ----------------------------------------------------


class Child:
    """A process forked from the forkserver, with a pipe to talk to it."""

    def __init__(self, target: Callable[..., None], *args: Any) -> None:
        self.conn, theirs = CTX.Pipe()
        self.proc: BaseProcess = CTX.Process(target=target, args=(theirs, *args), daemon=True)
        self.proc.start()
        theirs.close()
        self.timed_out = False
        """Whether the last ``recv`` gave up at its deadline (rather than the child dying)."""

    def recv(self, timeout: float = CHILD_TIMEOUT_S) -> Any:
        """The next message, or None when the child said nothing in time or died."""
        deadline = time.monotonic() + timeout
        self.timed_out = False
        try:
            while True:
                if self.conn.poll(max(0.0, min(0.1, deadline - time.monotonic()))):
                    return self.conn.recv()
                if not self.proc.is_alive():  # dead: take what it sent last, if anything
                    return self.conn.recv() if self.conn.poll(0) else None
                if time.monotonic() >= deadline:
                    self.timed_out = True
                    return None
        except (EOFError, OSError):  # the pipe closed: the child is gone
            return None

    def send(self, message: Any) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(message)

    def kill(self) -> int | None:
        """SIGKILL the process and reap it; its exit code (-9 when the kill did it)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid or 0, signal.SIGKILL)
        self.proc.join(timeout=CHILD_TIMEOUT_S)
        self.conn.close()
        return self.proc.exitcode

    def stop(self) -> None:
        self.send(None)
        self.proc.join(timeout=10)
        if self.proc.exitcode is None:
            self.kill()
        self.conn.close()


# -- where the stores live --------------------------------------------------------------------


@dataclasses.dataclass
class Place:
    """A fresh, empty store location: a SQLite file, or a PostgreSQL schema."""

    kind: str
    where: str
    label: str
    schema: str | None = None


class Places:
    def __init__(self, tmp: Path, dsn: str | None) -> None:
        self.tmp = tmp
        self.dsn = dsn

    def kinds(self) -> list[str]:
        return ["sqlite", *(["postgres"] if self.dsn else [])]

    def new(self, kind: str) -> Place:
        if kind == "sqlite":
            path = self.tmp / f"rel-{secrets.token_hex(6)}.db"
            return Place("sqlite", str(path), LABELS[kind])
        import psycopg
        from psycopg.conninfo import make_conninfo

        assert self.dsn is not None
        schema = f"trackway_rel_{os.getpid()}_{secrets.token_hex(4)}"
        with psycopg.connect(self.dsn, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
        where = make_conninfo(self.dsn, options=f"-c search_path={schema}")
        return Place("postgres", where, LABELS[kind], schema)

    def discard(self, place: Place) -> None:
        if place.kind == "sqlite":
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{place.where}{suffix}").unlink(missing_ok=True)
            return
        import psycopg

        assert self.dsn is not None
        with psycopg.connect(self.dsn, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {place.schema} CASCADE")


def source_state() -> dict[str, Any]:
    """The commit measured and whether the library's folders differ from it (read-only git
    calls; ``--no-optional-locks`` keeps git from refreshing the index)."""
    root = Path(__file__).resolve().parent.parent
    git = ["git", "--no-optional-locks", "-C", str(root)]
    try:
        head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()  # fmt: skip
        folders = ["engine", "agent", "recorders", "tools", "trackway"]
        diff = subprocess.run([*git, "diff", "--quiet", "HEAD", "--", *folders],
                              timeout=30, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None, "git_dirty": None}
    return {"git_commit": head, "git_dirty": diff.returncode != 0}


def sqlite_integrity(path: str) -> str:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])


# -- 1. kills ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Clean:
    """An uncrashed run of a chart, in the parent: what a recovered run must equal."""

    chart: str
    run_input: dict[str, Any]
    result: RunResult
    paths: list[str]
    acknowledged_before_branches: int = 0
    branch_paths: list[str] = dataclasses.field(default_factory=list)


def clean_run(chart: str, run_input: dict[str, Any]) -> Clean:
    result = Executor(CHARTS[chart](), store=MemoryStore(), max_iterations=LOOP_N + 10).run_sync(
        run_input
    )
    commits = result.snapshot.commits
    paths = [c.stage_path for c in commits]
    branch = [c.stage_path for c in commits if c.frame and c.kind == "stage"]
    first = next((i for i, c in enumerate(commits) if c.frame), 0)
    return Clean(chart, run_input, result, paths, first, branch)


def kill_once(
    places: Places,
    kind: str,
    durability: str,
    clean: Clean,
    target: int | str,
    delay: float,
    rng: random.Random,
) -> dict[str, Any]:
    """Start a child on a fresh store, SIGKILL it a random moment after ``target`` started,
    then check the store and recover the run in this process."""
    started = clock()
    row: dict[str, Any] = {
        "store": LABELS[kind],
        "durability": durability,
        "chart": clean.chart,
        "target": target,
        "killed": False,
        "ended_first": False,
        "stored": None,
        "acknowledged": None,
        "lost_acknowledged": 0,
        "prefix_ok": None,
        "integrity_ok": None,
        "recovered_ok": None,
        "problem": None,
    }
    store = None
    place: Place | None = None
    child: Child | None = None
    try:
        place = places.new(kind)
        child = Child(child_run, place.kind, place.where, durability, clean.chart,
                      clean.run_input, delay)  # fmt: skip
        ready = child.recv()
        if not ready or ready[0] != "ready":
            child.kill()
            row["problem"] = f"the child did not start: {ready!r}"
            return row
        child.send("go")
        while True:
            msg = child.recv()
            if msg is None:
                row["problem"] = "the child stalled or died before the kill"
                break
            if msg[0] == "started" and msg[1] == target:
                # anywhere in the stage's sleep, its commit, or the start of the next stage
                pause = rng.uniform(0, 1.5 * delay)
                row["kill_delay_ms"] = round(pause * 1e3, 3)
                time.sleep(pause)
                break
            if msg[0] in ("finished", "error"):
                row["ended_first"] = True
                if msg[0] == "error":
                    row["problem"] = f"the child's run failed: {msg[1]}"
                break
        code = child.kill()
        row["killed"] = code == -signal.SIGKILL
        if row["problem"] is not None:
            return row
        if isinstance(target, int):
            row["acknowledged"] = target - 1  # "started i": stages < i had committed
        else:
            row["acknowledged"] = clean.acknowledged_before_branches
        if place.kind == "sqlite":
            row["integrity_ok"] = sqlite_integrity(place.where) == "ok"
        store = open_store(place.kind, place.where)
        check_killed_run(store, row, clean, durability)
    except Exception as exc:  # a failure of the check itself is a failed kill, named
        row["problem"] = f"{type(exc).__name__}: {exc}"
    finally:
        if child is not None and child.proc.exitcode is None:
            child.kill()
        if store is not None:
            store.close()
        if place is not None:
            with contextlib.suppress(Exception):
                places.discard(place)
        row["seconds"] = round(clock() - started, 4)
    return row


def check_killed_run(store: Any, row: dict[str, Any], clean: Clean, durability: str) -> None:
    runs = store.list_runs()
    if len(runs) != 1:
        row["stored"] = 0
        row["lost_acknowledged"] = row["acknowledged"] or 0
        row["problem"] = f"the store holds {len(runs)} runs after the kill, not 1"
        return
    (info,) = runs
    meta = store.history(info.run_id)
    seqs = [m.seq for m in meta]
    paths = [m.stage_path for m in meta]
    row["stored"] = len(meta)
    row["stored_status"] = info.status
    row["prefix_ok"] = seqs == list(range(1, len(seqs) + 1)) and paths == clean.paths[: len(paths)]
    if not row["prefix_ok"]:
        row["problem"] = f"not a prefix: seqs {seqs[:50]}, paths {paths[:10]}"
    row["lost_acknowledged"] = max(0, row["acknowledged"] - len(meta))
    if durability == "sync" and row["lost_acknowledged"]:
        row["problem"] = (
            f"{row['lost_acknowledged']} acknowledged commits lost: {row['acknowledged']} "
            f"acknowledged, {len(meta)} stored"
        )
    executor = Executor(
        CHARTS[clean.chart](),
        store=store,
        durability=durability,  # type: ignore[arg-type]
        max_iterations=LOOP_N + 10,
    )
    if info.status == "running":
        try:
            result = executor.recover_sync(info.run_id)
        except Exception as exc:
            row["problem"] = row["problem"] or f"recover failed: {type(exc).__name__}: {exc}"
            return
        snapshot = result.snapshot
        status = result.status
    else:  # the run ended before the kill landed: the store must hold it whole
        snapshot = store.load(info.run_id)
        status = snapshot.status
    got = [c.stage_path for c in snapshot.commits]
    stored = store.load(info.run_id)
    final = store.list_runs()[0].status
    ok = (
        status == clean.result.status
        and snapshot.state == clean.result.state
        and got == clean.paths
        and stored == snapshot
        and final == clean.result.status
    )
    if clean.chart == "loop":
        n = clean.run_input["n"]
        ok = ok and snapshot.state["i"] == n and list(snapshot.state["seen"]) == [*range(1, n + 1)]
    row["recovered_ok"] = ok
    if not ok and row["problem"] is None:
        pairs = enumerate(zip(got, clean.paths, strict=False))
        differ = next((i for i, (a, b) in pairs if a != b), None)
        row["problem"] = (
            f"recovered wrong: status {status} (stored {final}), {len(got)} commits vs "
            f"{len(clean.paths)}, state i={snapshot.state.get('i')}, first diff at {differ}"
        )


def kill_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    killed = [r for r in rows if r["killed"] and not r["ended_first"]]
    ended_first = [r for r in rows if r["ended_first"]]
    held = [
        r
        for r in rows
        if r["problem"] is None
        and r["prefix_ok"] is True
        and r["recovered_ok"] is True
        and r["integrity_ok"] is not False
        and (r["durability"] != "sync" or r["lost_acknowledged"] == 0)
    ]
    stored_frac = [r["stored"] / r["acknowledged"] for r in rows if r.get("acknowledged")]
    return {
        "tried": len(rows),
        "held": len(held),
        "failed": len(rows) - len(held),
        "killed": len(killed),
        "ended_before_kill": len(ended_first),
        "prefix_violations": sum(1 for r in rows if r["prefix_ok"] is False),
        "integrity_failures": sum(1 for r in rows if r["integrity_ok"] is False),
        "unflushed_at_kill": sum(r["lost_acknowledged"] for r in rows if r["durability"] != "sync"),
        "acknowledged_lost_sync": sum(
            r["lost_acknowledged"] for r in rows if r["durability"] == "sync"
        ),
        "recovered_right": sum(1 for r in rows if r["recovered_ok"] is True),
        "stored_over_acknowledged_median": round(statistics.median(stored_frac), 3)
        if stored_frac
        else None,
        "problems": [
            {k: r[k] for k in ("store", "durability", "chart", "target", "problem")}
            for r in rows
            if r not in held
        ][:KEEP_PROBLEMS],
    }


def run_kills(
    places: Places, kills: int, rng: random.Random
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    loop_clean = clean_run("loop", {"n": LOOP_N})
    parallel_clean = {c: clean_run(c, {}) for c in ("selector", "fork")}
    records: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for kind in places.kinds():
        for durability in DURABILITIES:
            done = step(f"(1) kills: {kind}, durability={durability}, {kills} kills")
            rows = [
                kill_once(places, kind, durability, loop_clean, rng.randint(1, LOOP_N),
                          LOOP_STAGE_S, rng)
                for _ in range(kills)
            ]  # fmt: skip
            done()
            records += rows
            summary.append({"store": rows[0]["store"], "durability": durability,
                            "chart": "loop", **kill_rows(rows)})  # fmt: skip
    branch_records: list[dict[str, Any]] = []
    for kind in places.kinds():
        done = step(f"(1) kills inside parallel branches: {kind}, {kills} kills")
        rows = []
        for j in range(kills):
            clean = parallel_clean["selector" if j % 2 == 0 else "fork"]
            durability = DURABILITIES[(j // 2) % len(DURABILITIES)]
            target = rng.choice(clean.branch_paths)
            rows.append(kill_once(places, kind, durability, clean, target, BRANCH_STAGE_S, rng))
        done()
        branch_records += rows
        summary.append({"store": rows[0]["store"], "durability": "sync/batch/exit",
                        "chart": "selector/fork", **kill_rows(rows)})  # fmt: skip
    return records, branch_records, summary


# -- 2. resume races --------------------------------------------------------------------------


def run_races(places: Places, rounds: int, racers: int) -> tuple[list[dict[str, Any]], list[Any]]:
    records: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for kind in places.kinds():
        done = step(f"(2) resume races: {kind}, {rounds} rounds of {racers} processes")
        label = LABELS[kind]
        rows: list[dict[str, Any]] = []
        place: Place | None = None
        store: Any = None
        children: list[Child] = []
        try:
            place = places.new(kind)
            store = open_store(place.kind, place.where)  # the tables exist before racers start
            barrier = CTX.Barrier(racers)
            children = [
                Child(child_racer, place.kind, place.where, i, barrier) for i in range(racers)
            ]
            for child in children:
                msg = child.recv()
                if not msg or msg[0] != "ready":
                    raise RuntimeError(f"a racer did not start: {msg!r}")
            executor = Executor(pause_chart(), store=store)
            for k in range(rounds):
                paused = executor.run_sync({"amount": k})
                assert paused.checkpoint is not None
                blob = paused.checkpoint.to_json()
                for child in children:
                    child.send(blob)
                replies = [child.recv() for child in children]
                rows.append(check_race(store, paused.run_id, k, label, replies, racers))
                if None in replies:  # a racer died or stalled: the barrier cannot hold again
                    raise RuntimeError("a racer did not answer; the remaining rounds are off")
        except Exception as exc:
            rows.append({"store": label, "round": len(rows), "held": False,
                         "problem": f"{type(exc).__name__}: {exc}"})  # fmt: skip
        finally:
            for child in children:
                child.stop()
            if store is not None:
                store.close()
            if place is not None:
                places.discard(place)
        done()
        records += rows
        held = sum(1 for r in rows if r["held"])
        winners = Counter(r.get("winners") for r in rows)
        losers = Counter(name for r in rows for name in r.get("loser_errors", []))
        lost_at = Counter(where for r in rows for where in r.get("lost_at", []))
        summary.append({
            "store": label, "racers": racers, "tried": rounds, "held": held,
            "failed": rounds - held,
            "winners_per_round": {str(k): v for k, v in sorted(winners.items(), key=str)},
            "loser_errors": dict(losers),
            "lost_at": dict(lost_at),
            "problems": [r for r in rows if not r["held"]][:KEEP_PROBLEMS],
        })  # fmt: skip
    return records, summary


def _lost_at(message: str) -> str:
    """Where a losing resume was refused: at the atomic claim ("...resumed; a checkpoint
    resumes once"), or before it, on finding the run no longer paused ("...resumed: run")."""
    if "already resumed;" in message:
        return "claim"
    return "run moved on" if "already resumed:" in message else "other"


def check_race(
    store: Any, run_id: str, k: int, label: str, replies: list[Any], racers: int
) -> dict[str, Any]:
    winners = [r for r in replies if r and r[0] == "won"]
    claimed = [r for r in replies if r and r[0] == "claimed"]
    other = [r for r in replies if not r or r[0] not in ("won", "claimed")]
    row: dict[str, Any] = {
        "store": label,
        "round": k,
        "winners": len(winners),
        "claimed": len(claimed),
        "loser_errors": [r[1] for r in claimed] + [r[1] if r else "no reply" for r in other],
        "lost_at": [_lost_at(r[2]) for r in claimed],
        "held": False,
        "problem": None,
    }
    snap = store.load(run_id)
    resumes = [c for c in snap.commits if c.kind == "resume"]
    row.update(status=snap.status, resume_commits=len(resumes),
               payments=snap.state.get("payments"))  # fmt: skip
    row["held"] = (
        len(winners) == 1
        and len(claimed) == racers - 1
        and snap.status == "done"
        and len(resumes) == 1
        and snap.state.get("answer") == winners[0][1]
        and snap.state.get("payments") == 1
        and snap.state.get("answers") == 1
    )
    if not row["held"]:
        row["problem"] = (
            f"{len(winners)} winners, {len(claimed)} CheckpointClaimedError, other replies "
            f"{other[:3]}; run {snap.status} with {len(resumes)} resume commits, "
            f"payments={snap.state.get('payments')}"
        )
    return row


# -- 3. concurrent runs -----------------------------------------------------------------------


async def conc_step(scope: Scope) -> None:
    await anyio.sleep(scope["pace"])
    i = scope.get("i", 0) + 1
    scope["i"] = i
    scope.append("seen", i)


def _again(scope: Scope) -> str:
    return "more" if scope["i"] < scope["n"] else "stop"


def _nothing(scope: Scope) -> None:
    return None


def _finish(scope: Scope) -> None:
    scope["finished"] = True


def conc_chart() -> FlowChart:
    """A loop that ends by itself (status "done"): step, then a decider loops or stops."""
    return (
        flow_chart("Step", conc_step, id="step")
        .decider("Again", _again, id="again")
        .branch("more", "More", _nothing, id="more", loop_to="step")
        .branch("stop", "Stop", _finish, id="stop")
        .end()
        .build()
    )


class Rounds(Recorder):
    """Maps each task to its run id, and wakes a task's canceller when its run starts the
    loop round chosen for the cancel (so cancels spread over the whole life of a run)."""

    def __init__(self, wake_at: dict[int, int]) -> None:
        self.ids: dict[int, str] = {}
        self.tasks: dict[str, int] = {}
        self.rounds: Counter[str] = Counter()
        self.wake_at = wake_at
        self.woken = {i: anyio.Event() for i in wake_at}

    def on_run_start(self, event: RunStartEvent) -> None:
        self.ids[event.input["task"]] = event.run_id
        self.tasks[event.run_id] = event.input["task"]

    def on_stage_start(self, event: StageStartEvent) -> None:
        if event.stage_id != "step":
            return
        self.rounds[event.run_id] += 1
        task = self.tasks[event.run_id]
        if self.wake_at.get(task) == self.rounds[event.run_id]:
            self.woken[task].set()


async def concurrent_cell(
    label: str, store: Any, durability: str, m: int, seed: int
) -> dict[str, Any]:
    rng = random.Random(seed)
    wake_at = {i: rng.randint(1, CONC_STEPS) for i in rng.sample(range(m), m // 2)}
    ids = Rounds(wake_at)
    chart = conc_chart()
    executor = Executor(chart, store=store, durability=durability,  # type: ignore[arg-type]
                        recorders=[ids], max_iterations=CONC_STEPS + 5)  # fmt: skip
    clean = await Executor(chart, max_iterations=CONC_STEPS + 5).run(
        {"task": -1, "n": CONC_STEPS, "pace": 0}
    )
    clean_paths = [c.stage_path for c in clean.snapshot.commits]
    scopes = [anyio.CancelScope() for _ in range(m)]
    outcome: dict[int, str] = {}
    errors: dict[int, str] = {}
    returned: dict[int, Snapshot] = {}

    async def one(i: int, pace: float) -> None:
        with scopes[i]:
            try:
                result = await executor.run({"task": i, "n": CONC_STEPS, "pace": pace})
                outcome[i] = result.status
                returned[i] = result.snapshot
            except Exception as exc:
                outcome[i] = "raised"
                errors[i] = f"{type(exc).__name__}: {exc}"
            finally:
                if i in ids.woken:  # a run that ended early must not leave its canceller waiting
                    ids.woken[i].set()
            return
        outcome[i] = "cancelled"

    async def cancel_later(i: int, delay: float) -> None:
        await ids.woken[i].wait()  # its run started the chosen round
        await anyio.sleep(delay)
        scopes[i].cancel()

    started = clock()
    with anyio.fail_after(CHILD_TIMEOUT_S * 5):  # a hang fails the cell, named, not the bench
        async with anyio.create_task_group() as tg:
            for i in range(m):
                pace = rng.uniform(0, CONC_PACE_S)
                tg.start_soon(one, i, pace)
                if i in wake_at:  # a random moment within the round (or just after the run)
                    tg.start_soon(cancel_later, i, rng.uniform(0, 2 * pace))
    took = clock() - started
    problems: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    listed = {r.run_id: r.status for r in store.list_runs()}
    for i in range(m):
        run_id = ids.ids.get(i)
        got = outcome.get(i, "missing")
        counts[got] += 1
        problem = None
        if run_id is None:
            problem = "the run never started"
        else:
            snap = store.load(run_id)
            seqs = [c.seq for c in snap.commits]
            paths = [c.stage_path for c in snap.commits]
            outcomes = [c.outcome for c in snap.commits]
            i_now = snap.state.get("i", 0)
            clean_log = (
                seqs == list(range(1, len(seqs) + 1))
                and paths == clean_paths[: len(paths)]
                and all(o == "ok" for o in outcomes[:-1])
                and (not outcomes or outcomes[-1] in ("ok", "cancelled"))
                and list(snap.state.get("seen", [])) == [*range(1, i_now + 1)]
            )
            if not clean_log:
                problem = f"not a clean prefix: seqs {seqs[:30]} outcomes {outcomes[-3:]}"
            elif got == "cancelled":
                err = snap.error
                if snap.status != "failed" or err is None or err.type != "Cancelled":
                    problem = f"cancelled, stored {snap.status} with error {err}"
            elif got == "done":
                if snap.status != "done" or paths != clean_paths or snap != returned[i]:
                    problem = f"finished, stored {snap.status} with {len(paths)} commits"
            else:
                problem = f"the run {got}: {errors.get(i)}"
            if listed.get(run_id) == "running":
                problem = problem or "left 'running' in list_runs()"
        if problem is not None:
            problems.append({"task": i, "run_id": run_id, "outcome": got, "problem": problem})
    held = m - len(problems)
    return {
        "store": label,
        "durability": durability,
        "tried": m,
        "held": held,
        "failed": len(problems),
        "cancel_requested": len(wake_at),
        "cancelled": counts.get("cancelled", 0),
        "finished": counts.get("done", 0),
        "raised": counts.get("raised", 0),
        "left_running": sum(1 for s in listed.values() if s == "running"),
        "seconds": round(took, 3),
        "problems": problems[:KEEP_PROBLEMS],
    }


def run_concurrent(tmp: Path, m: int, seed: int) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = []
    for label, durability, backend in (
        ("MemoryStore", "sync", "asyncio"),
        ("MemoryStore", "sync", "trio"),
        ("SqliteStore", "sync", "asyncio"),
        ("SqliteStore", "batch", "asyncio"),
    ):
        name = f"{label}, {durability}, {backend}"
        done = step(f"(3) {m} concurrent runs, half cancelled: {name}")
        store: RunStore = (
            MemoryStore()
            if label == "MemoryStore"
            else SqliteStore(tmp / f"conc-{durability}-{secrets.token_hex(4)}.db")
        )
        try:
            cell = anyio.run(concurrent_cell, name, store, durability, m, seed, backend=backend)
        except Exception as exc:
            cell = {"store": name, "durability": durability, "tried": m, "held": 0,
                    "failed": m, "problems": [f"{type(exc).__name__}: {exc}"]}  # fmt: skip
        finally:
            store.close()
        done()
        cells.append(cell)
    return cells


# -- 4. bad inputs ----------------------------------------------------------------------------

Case = tuple[str, str, Callable[[], Any]]  # group, name, the attempt (returns if accepted)
IGNORED = "ignored"
"""What an attempt returns when the input was accepted but changed nothing: a tampered
checkpoint whose resumed run equals a twin resumed as made, a damaged snapshot that loads
equal to the original (e.g. a field pydantic coerces back, "1" -> 1)."""
ACCEPTED = "accepted"


def _paths(snapshot: Snapshot) -> list[str]:
    return [c.stage_path for c in snapshot.commits]


class _Thing:
    pass


@dataclasses.dataclass
class _Point:
    x: int


def _nested(depth: int, kind: type) -> Any:
    value: Any = [] if kind is list else {}
    for _ in range(depth):
        value = [value] if kind is list else {"d": value}
    return value


def _cyclic_list() -> Any:
    v: list[Any] = []
    v.append(v)
    return v


def _cyclic_dict() -> Any:
    d: dict[str, Any] = {}
    d["self"] = d
    return d


def _cycle_inside() -> Any:
    inner: dict[str, Any] = {"items": []}
    outer = [1, inner]
    inner["items"].append(outer)
    return {"outer": outer}


def hostile_values() -> list[tuple[str, Callable[[], Any]]]:
    return [
        ("cyclic list", _cyclic_list),
        ("cyclic dict", _cyclic_dict),
        ("cycle through a dict and a list", _cycle_inside),
        ("list nested 300 deep", lambda: _nested(300, list)),
        ("dict nested 300 deep", lambda: _nested(300, dict)),
        ("list nested 100,000 deep", lambda: _nested(100_000, list)),
        ("NaN", lambda: math.nan),
        ("inf", lambda: math.inf),
        ("-inf", lambda: -math.inf),
        ("NaN inside a list", lambda: [1.0, math.nan]),
        ("int 2**64", lambda: 2**64),
        ("int -(2**63) - 1", lambda: -(2**63) - 1),
        ("int 10**100", lambda: 10**100),
        ("tuple", lambda: (1, 2)),
        ("tuple inside a dict", lambda: {"xy": (1, 2)}),
        ("set", lambda: {1, 2}),
        ("frozenset", lambda: frozenset({1})),
        ("object()", object),
        ("instance of a class", _Thing),
        ("dataclass instance", lambda: _Point(1)),
        ("function", lambda: len),
        ("bytes", lambda: b"\x00\xff"),
        ("complex", lambda: 1 + 2j),
        ("Decimal", lambda: Decimal("1.10")),
        ("datetime", lambda: datetime(2020, 1, 1)),
        ("dict with an int key", lambda: {1: "a"}),
        ("dict with a None key", lambda: {None: "a"}),
        ("dict with a tuple key", lambda: {(1, 2): "a"}),
        ("lone surrogate str", lambda: "\ud800"),
        ("lone surrogate dict key", lambda: {"\udfff": 1}),
        ("lone surrogate deep inside", lambda: {"a": ["ok", "\ud83d"]}),
    ]


BAD_KEYS: list[tuple[str, Any]] = [
    ("int", 1),
    ("None", None),
    ("tuple", ("k",)),
    ("bytes", b"k"),
    ("lone surrogate", "\ud800"),
    ("NUL character", "a\x00b"),
]
BAD_REASONS: list[tuple[str, Callable[[], Any]]] = [
    ("int", lambda: 1),
    ("float", lambda: 1.5),
    ("NaN", lambda: math.nan),
    ("dict", lambda: {"why": 1}),
    ("list", lambda: ["why"]),
    ("bytes", lambda: b"why"),
    ("object()", object),
    ("lone surrogate", lambda: "\ud800"),
]


def _in_stage(action: Callable[[Scope], Any]) -> RunResult:
    def stage(scope: Scope) -> None:
        action(scope)

    return Executor(flow_chart("Write", stage, id="write").build()).run_sync()


def _noop() -> FlowChart:
    return flow_chart("Noop", _nothing, id="noop").build()


def _resume_signed(value: Any) -> RunResult:
    executor = Executor(pause_chart())
    paused = executor.run_sync({"amount": 1})
    assert paused.checkpoint is not None
    return executor.resume_sync(paused.checkpoint, value)


VALUE_PLACES: list[tuple[str, Callable[[Any], Any]]] = [
    ("state set", lambda v: _in_stage(lambda s: s.__setitem__("v", v))),
    ("state append", lambda v: _in_stage(lambda s: s.append("v", v))),
    ("run input", lambda v: Executor(_noop()).run_sync({"v": v})),
    ("emit payload", lambda v: _in_stage(lambda s: s.emit("event", v))),
    ("pause payload", lambda v: _in_stage(lambda s: s.pause(v))),
    ("resume value", _resume_signed),
]

Edit = Callable[[dict[str, Any]], Any]


def _set(path: Sequence[str | int], value: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        node: Any = doc
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return edit


def _drop(path: Sequence[str | int]) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        node: Any = doc
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]

    return edit


def _aim_at_other(doc: dict[str, Any]) -> None:
    """Point the checkpoint at another paused run (its ids are under ``_other``)."""
    other = doc["_other"]
    doc["run_id"], doc["checkpoint_id"] = other["run_id"], other["checkpoint_id"]


CHECKPOINT_EDITS: list[tuple[str, Edit, tuple[str, ...]]] = [
    ("payload edited", _set(["payload", "amount"], 10**6), ("stored", "signed")),
    ("state edited", _set(["state", "amount"], 10**6), ("stored", "signed")),
    ("paused_at edited", _set(["paused_at"], "pay#1"), ("stored", "signed")),
    ("run_id edited", _set(["run_id"], "run-0000000000000000-000000"), ("stored", "signed")),
    ("checkpoint_id edited", _set(["checkpoint_id"], "run-x@1"), ("stored", "signed")),
    ("ids of another paused run", _aim_at_other, ("stored", "signed")),
    ("signature removed", _drop(["signature"]), ("signed",)),
    ("signature zeroed", _set(["signature"], "0" * 64), ("signed",)),
    ("cursor counter edited", _set(["cursor", "counter"], 5), ("stored", "signed")),
    ("cursor node edited", _set(["cursor", "chain", "node"], "pay"), ("stored", "signed")),
    ("cursor counter a str", _set(["cursor", "counter"], "one"), ("stored", "signed")),
    ("cursor counter a numeric str", _set(["cursor", "counter"], "1"), ("stored", "signed")),
    ("cursor counter negative", _set(["cursor", "counter"], -1), ("stored", "signed")),
    ("cursor counter a float", _set(["cursor", "counter"], 1.5), ("stored", "signed")),
    ("cursor counter 2**63", _set(["cursor", "counter"], 2**63), ("stored", "signed")),
    ("cursor chain a list", _set(["cursor", "chain"], []), ("stored", "signed")),
    ("cursor a str", _set(["cursor"], "ask#0"), ("stored", "signed")),
    ("cursor removed", _drop(["cursor"]), ("stored", "signed")),
    ("cursor null", _set(["cursor"], None), ("stored", "signed")),
    ("cursor stage kind unknown", _set(["cursor", "chain", "at", "kind"], "warp"),
     ("stored", "signed")),
    ("cursor loops a list", _set(["cursor", "chain", "loops"], []), ("stored", "signed")),
    ("cursor resumes a str", _set(["cursor", "chain", "at", "resumes"], "none"),
     ("stored", "signed")),
    ("cursor resumes a numeric str", _set(["cursor", "chain", "at", "resumes"], "0"),
     ("stored", "signed")),
    ("cursor path garbage", _set(["cursor", "chain", "at", "path"], "#/#:x"),
     ("stored", "signed")),
    ("cursor node of another chart", _set(["cursor", "chain", "chart"], "elsewhere"),
     ("stored", "signed")),
    ("structure edited", _set(["structure", "nodes", "pay", "kind"], "fork"),
     ("stored", "signed")),
    ("fingerprint edited", _set(["fingerprint"], "0" * 64), ("stored", "signed")),
    ("chart_id edited", _set(["chart_id"], "other"), ("stored", "signed")),
    ("format unknown", _set(["format"], "trackway.checkpoint/99"), ("stored", "signed")),
    ("format removed", _drop(["format"]), ("stored", "signed")),
    ("redacted set", _set(["redacted"], True), ("stored", "signed")),
    ("embedded log: unknown op kind",
     _set(["snapshot", "commits", 0, "ops", 0, "kind"], "explode"), ("signed",)),
    ("embedded log: seq gap", _set(["snapshot", "commits", 0, "seq"], 7), ("signed",)),
    ("embedded log: commits removed", _set(["snapshot", "commits"], []), ("signed",)),
    ("embedded log: initial state edited",
     _set(["snapshot", "initial_state", "amount"], 10**6), ("signed",)),
    ("embedded log: a commit's run_id edited",
     _set(["snapshot", "commits", 0, "run_id"], "run-other"), ("signed",)),
    ("embedded log: not a snapshot", _set(["snapshot"], [1, 2, 3]), ("signed",)),
]  # fmt: skip


def _junk_checkpoints(blob: bytes) -> list[tuple[str, Any]]:
    deep = b"[" * 100_000 + b"]" * 100_000
    return [
        ("empty", b""),
        ("not JSON", b"checkpoint?"),
        ("truncated in half", blob[: len(blob) // 2]),
        ("a JSON array", b"[]"),
        ("an empty object", b"{}"),
        ("a number", b"42"),
        ("invalid UTF-8", blob.replace(b'"payload":', b'"payload\xff":', 1)),
        ("a lone surrogate escape", blob.replace(b'"question"', b'"\\ud800"', 1)),
        ("a NaN literal", blob.replace(b'"amount":1', b'"amount":NaN', 1)),
        ("an int of 70 bits", blob.replace(b'"amount":1', b'"amount":' + str(2**70).encode(), 1)),
        ("nested 100,000 deep", deep),
        ("a str of nonsense", "{\u0000}"),
        ("an int instead of a checkpoint", 42),
        ("None instead of a checkpoint", None),
        ("a dict instead of a checkpoint", {"format": "trackway.checkpoint/2"}),
    ]


def _tampered(mode: str, tmp: Path, edit: Edit) -> Callable[[], Any]:
    def attempt() -> Any:
        store = SqliteStore(tmp / "cases.db") if mode == "stored" else None
        try:
            executor = Executor(pause_chart(), store=store)
            paused = executor.run_sync({"amount": 1})
            assert paused.checkpoint is not None
            other = executor.run_sync({"amount": 2}).checkpoint
            assert other is not None
            doc = orjson.loads(paused.checkpoint.to_json())
            doc["_other"] = {"run_id": other.run_id, "checkpoint_id": other.checkpoint_id}
            edit(doc)
            doc.pop("_other", None)
            result = executor.resume_sync(orjson.dumps(doc), "yes")
            # accepted: did the edit change anything? compare with a twin run resumed as made
            twin = executor.run_sync({"amount": 1})
            assert twin.checkpoint is not None
            genuine = executor.resume_sync(twin.checkpoint, "yes")
            same = (
                result.status == genuine.status
                and result.state == genuine.state
                and _paths(result.snapshot) == _paths(genuine.snapshot)
            )
            return IGNORED if same else ACCEPTED
        finally:
            if store is not None:
                store.close()

    return attempt


def _junk(index: int) -> Callable[[], Any]:
    def attempt() -> Any:
        executor = Executor(pause_chart())
        paused = executor.run_sync({"amount": 1})
        assert paused.checkpoint is not None
        _, junk = _junk_checkpoints(paused.checkpoint.to_json())[index]
        return executor.resume_sync(junk, "yes")

    return attempt


def _base_snapshot() -> bytes:
    def first(scope: Scope) -> None:
        scope["i"] = 1
        scope.append("items", "a")

    def second(scope: Scope) -> None:
        scope.append("items", "b")
        scope.merge("meta", {"k": 1})
        scope.emit("note", {"x": 1})

    chart = flow_chart("First", first, id="first").then("Second", second, id="second").build()
    return Executor(chart).run_sync({"amount": 1}).snapshot.to_json()


def _commit_swap(doc: dict[str, Any]) -> None:
    c = doc["commits"]
    c[0], c[1] = c[1], c[0]


SNAPSHOT_EDITS: list[tuple[str, Edit]] = [
    ("format unknown", _set(["format"], "trackway.snapshot/99")),
    ("format removed", _drop(["format"])),
    ("commits not a list", _set(["commits"], {"0": 1})),
    ("commits removed", _drop(["commits"])),
    ("commits out of order", _commit_swap),
    ("seq gap", _set(["commits", 1, "seq"], 5)),
    ("duplicate seq", _set(["commits", 1, "seq"], 1)),
    ("seq a str", _set(["commits", 0, "seq"], "1")),
    ("unknown op kind", _set(["commits", 0, "ops", 0, "kind"], "explode")),
    ("op without a key", _drop(["commits", 0, "ops", 0, "key"])),
    ("op key an int", _set(["commits", 0, "ops", 0, "key"], 7)),
    ("append onto an int key", _set(["commits", 1, "ops", 0, "key"], "i")),
    ("merge op with a list value", _set(["commits", 1, "ops", 1, "value"], [1, 2])),
    ("stage_path an int", _set(["commits", 0, "stage_path"], 7)),
    ("stage_path garbage", _set(["commits", 0, "stage_path"], "#/#:x")),
    ("outcome unknown", _set(["commits", 0, "outcome"], "exploded")),
    ("kind unknown", _set(["commits", 0, "kind"], "warp")),
    ("started_at a str", _set(["commits", 0, "started_at"], "yesterday")),
    ("error not a pair", _set(["error"], ["only one"])),
    ("status unknown", _set(["status"], "sideways")),
    ("initial_state a list", _set(["initial_state"], [1])),
    ("a commit of another run", _set(["commits", 1, "run_id"], "run-other")),
    ("events not a list", _set(["commits", 1, "events"], "note")),
    ("event name an int", _set(["commits", 1, "events", 0, "name"], 3)),
    ("a commit a str", _set(["commits", 0], "commit")),
]


def _junk_snapshots(blob: bytes) -> list[tuple[str, bytes | str]]:
    return [
        ("empty", b""),
        ("not JSON", b"snapshot?"),
        ("truncated in half", blob[: len(blob) // 2]),
        ("a JSON array", b"[]"),
        ("invalid UTF-8", blob.replace(b'"commits":', b'"commits\xff":', 1)),
        ("a lone surrogate escape", blob.replace(b'"items"', b'"\\ud800"', 1)),
        ("an int of 70 bits", blob.replace(b'"amount":1', b'"amount":' + str(2**70).encode(), 1)),
        ("nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000),
    ]


def _load_snapshot(data: bytes | str, original: bytes) -> str:
    snap = Snapshot.from_json(data)
    # a damage the loader let through may still surface on use: touch what a reader uses
    _ = (snap.state, snap.state_at(len(snap)), snap.history(), snap.to_json())
    return IGNORED if snap == Snapshot.from_json(original) else ACCEPTED


def _damaged(edit: Edit) -> Callable[[], Any]:
    def attempt() -> Any:
        base = _base_snapshot()
        doc = orjson.loads(base)
        edit(doc)
        return _load_snapshot(orjson.dumps(doc), base)

    return attempt


def _junk_snapshot(index: int) -> Callable[[], Any]:
    def attempt() -> Any:
        base = _base_snapshot()
        return _load_snapshot(_junk_snapshots(base)[index][1], base)

    return attempt


def _put(put: Callable[[Any], Any], make: Callable[[], Any]) -> Callable[[], Any]:
    return lambda: put(make())


def _key_write(key: Any) -> Callable[[], Any]:
    return lambda: _in_stage(lambda s: s.__setitem__(key, 1))


def _key_input(key: Any) -> Callable[[], Any]:
    return lambda: Executor(_noop()).run_sync({key: 1})


def _event_name(name: Any) -> Callable[[], Any]:
    return lambda: _in_stage(lambda s: s.emit(name, 1))


def _break_reason(make: Callable[[], Any]) -> Callable[[], Any]:
    return lambda: _in_stage(lambda s: s.break_(make()))


def bad_input_cases(tmp: Path) -> list[Case]:
    """Every bad-input case, in a fixed order (the worker and the parent build the same list)."""
    cases: list[Case] = []
    for place, put in VALUE_PLACES:
        for name, make in hostile_values():
            cases.append((f"bad value as {place}", name, _put(put, make)))
    for name, key in BAD_KEYS:
        cases.append(("bad state key", f"{name} (scope[key] = 1)", _key_write(key)))
        cases.append(("bad state key", f"{name} (run input key)", _key_input(key)))
        cases.append(("bad event name", name, _event_name(key)))
    for name, make in BAD_REASONS:
        cases.append(("bad break reason", name, _break_reason(make)))
    for name, edit, modes in CHECKPOINT_EDITS:
        for mode in modes:
            cases.append((f"tampered checkpoint ({mode})", name, _tampered(mode, tmp, edit)))
    for index, (name, _) in enumerate(_junk_checkpoints(b"{}")):
        cases.append(("damaged checkpoint JSON", name, _junk(index)))
    for name, edit in SNAPSHOT_EDITS:
        cases.append(("damaged snapshot JSON", name, _damaged(edit)))
    for index, (name, _) in enumerate(_junk_snapshots(b"{}")):
        cases.append(("damaged snapshot JSON", name, _junk_snapshot(index)))
    return cases


def _chain(exc: BaseException) -> list[str]:
    names = [type(exc).__name__]
    seen = {id(exc)}
    cause = exc.__cause__
    while cause is not None and id(cause) not in seen:
        names.append(type(cause).__name__)
        seen.add(id(cause))
        cause = cause.__cause__
    return names


def run_case(index: int, case: Case) -> dict[str, Any]:
    """Try one case; classify what came back. A StageError (the run failed because the stage
    raised) counts as refused only when what the stage raised is a TrackwayError too."""
    group, name, attempt = case
    started = clock()
    exc: BaseException | None = None
    value: Any = None
    try:
        value = attempt()
    except BaseException as caught:  # everything is classified, nothing escapes
        exc = caught
    took = clock() - started
    row: dict[str, Any] = {"i": index, "group": group, "case": name, "ms": round(took * 1e3, 3)}
    if exc is None:
        row.update(outcome=IGNORED if value == IGNORED else ACCEPTED, error=None, message=None)
        return row
    chain = _chain(exc)
    refused = isinstance(exc, TrackwayError)
    if isinstance(exc, StageError) and exc.__cause__ is not None:
        refused = isinstance(exc.__cause__, TrackwayError)
    elif isinstance(exc, RunError) and not isinstance(exc, StageError):
        refused = True
    row.update(outcome="refused" if refused else "other", error=" <- ".join(chain),
               message=str(exc)[:240])  # fmt: skip
    return row


def run_bad_inputs(tmp: Path) -> list[dict[str, Any]]:
    cases = bad_input_cases(tmp)
    done = step(f"(4) bad inputs: {len(cases)} cases, deadline {CASE_DEADLINE_S:g} s each")
    results: list[dict[str, Any]] = []
    i = 0
    while i < len(cases):
        worker = Child(child_cases, str(tmp), i)
        ready = worker.recv()
        if not ready or ready[0] != "ready":
            worker.kill()
            group, name, _ = cases[i]
            results.append({"i": i, "group": group, "case": name, "outcome": "other",
                            "error": "no worker", "message": repr(ready)})  # fmt: skip
            i += 1
            continue
        while i < len(cases):
            reply = worker.recv(CASE_DEADLINE_S)
            group, name, _ = cases[i]
            if reply is None:  # no answer in time: a hang (or the worker died)
                alive = worker.timed_out
                worker.kill()
                results.append({"i": i, "group": group, "case": name,
                                "outcome": "hang" if alive else "other",
                                "error": None if alive else "the worker process died",
                                "message": f"no answer within {CASE_DEADLINE_S:g} s"
                                if alive else f"exit code {worker.proc.exitcode}",
                                "ms": None})  # fmt: skip
                i += 1
                break
            results.append(reply)
            i += 1
        else:
            worker.recv(CASE_DEADLINE_S)  # the closing ("done", n)
            worker.proc.join(timeout=10)
            worker.kill()
    done()
    return results


def bad_input_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(r["group"], []).append(r)
    rows = []
    for group, items in groups.items():
        outcomes = Counter(r["outcome"] for r in items)
        slowest = max((r["ms"] or 0.0 for r in items if r.get("ms") is not None), default=0.0)
        rows.append({
            "group": group,
            "tried": len(items),
            "held": outcomes.get("refused", 0) + outcomes.get(IGNORED, 0),
            "failed": len(items) - outcomes.get("refused", 0) - outcomes.get(IGNORED, 0),
            "refused": outcomes.get("refused", 0),
            "ignored": outcomes.get(IGNORED, 0),
            "other_errors": outcomes.get("other", 0),
            "accepted": outcomes.get("accepted", 0),
            "hangs": outcomes.get("hang", 0),
            "slowest_ms": round(slowest, 1),
            "not_refused": [f"{r['case']}: {r['outcome']} {r.get('error') or ''}".strip()
                            for r in items if r["outcome"] != "refused"],
            "ignored_cases": [r["case"] for r in items if r["outcome"] == IGNORED],
        })  # fmt: skip
    return rows


# -- report -----------------------------------------------------------------------------------


def step(label: str) -> Callable[[], None]:
    started = clock()
    print(f"  {label} ...", end="", flush=True)
    return lambda: print(f" done ({clock() - started:.1f} s)", flush=True)


def print_rows(
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    numeric: Sequence[int] = (1, 2, 3),
) -> None:
    """A markdown table: the ``numeric`` columns right-aligned, the others left-aligned."""
    print_table(title, headers, rows, numeric)


def kill_detail(s: dict[str, Any]) -> str:
    parts = [
        f"prefix violations {s['prefix_violations']}",
        f"recovered right {s['recovered_right']}/{s['tried']}",
    ]
    if s["durability"] == "sync":
        parts.insert(1, f"acknowledged commits lost {s['acknowledged_lost_sync']}")
    elif s["durability"] in ("batch", "exit"):
        parts.insert(1, f"unflushed at the kill {s['unflushed_at_kill']} (allowed)")
    else:
        parts.insert(1, f"acknowledged commits lost (sync kills) {s['acknowledged_lost_sync']}")
    if s["store"] == "SqliteStore":
        parts.append(f"integrity_check failures {s['integrity_failures']}")
    if s["ended_before_kill"]:
        parts.append(f"{s['ended_before_kill']} ended before the kill landed")
    return "; ".join(parts)


def summary_rows(report: dict[str, Any]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for s in report.get("kills_summary", []):
        what = f"kill -9, {s['store']}, {s['durability']}"
        if s["chart"] != "loop":
            what = f"kill -9 inside parallel branches, {s['store']}"
        rows.append([what, s["tried"], s["held"], s["failed"], kill_detail(s)])
    for s in report.get("races_summary", []):
        losers = ", ".join(f"{k} ×{v}" for k, v in s["loser_errors"].items()) or "none"
        where = ", ".join(f"{k} {v}" for k, v in s["lost_at"].items())
        detail = f"winners per round {s['winners_per_round']}; losers got {losers} ({where})"
        what = f"resume race, {s['racers']} processes, {s['store']}"
        rows.append([what, s["tried"], s["held"], s["failed"], detail])
    for c in report.get("concurrent", []):
        rows.append([f"concurrent runs, {c['store']}", c["tried"], c["held"],
                     c["failed"],
                     f"cancelled {c.get('cancelled')} (of {c.get('cancel_requested')} asked), "
                     f"finished {c.get('finished')}, raised {c.get('raised')}, left running "
                     f"{c.get('left_running')}, {c.get('seconds')} s"])  # fmt: skip
    for g in report.get("bad_inputs_summary", []):
        ignored = f" + ignored {g['ignored']} (no effect)" if g["ignored"] else ""
        detail = (
            f"refused {g['refused']}{ignored}; other errors {g['other_errors']}, accepted "
            f"{g['accepted']}, hangs {g['hangs']}; slowest {g['slowest_ms']} ms"
        )
        rows.append([g["group"], g["tried"], g["held"], g["failed"], detail])
    return rows


def make_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    targets: list[dict[str, Any]] = []

    def add(name: str, measured: float, threshold: str, ok: bool) -> None:
        targets.append({"target": name, "measured": measured, "threshold": threshold, "pass": ok})

    kills = report.get("kills_summary", [])
    if kills:
        loop = [s for s in kills if s["chart"] == "loop"]
        par = [s for s in kills if s["chart"] != "loop"]
        prefix = sum(s["prefix_violations"] + s["integrity_failures"] for s in kills)
        add("kills: stored log not a clean prefix (or integrity_check failed)", prefix, "= 0",
            prefix == 0)  # fmt: skip
        lost = sum(s["acknowledged_lost_sync"] for s in kills)
        add("kills under sync: acknowledged commits lost", lost, "= 0", lost == 0)
        wrong = sum(s["tried"] - s["recovered_right"] for s in loop)
        add("kills: recovered runs that ended wrong (counting loop)", wrong, "= 0", wrong == 0)
        pwrong = sum(s["tried"] - s["recovered_right"] for s in par)
        add("kills in parallel branches: recovered log ≠ uncrashed log", pwrong, "= 0",
            pwrong == 0)  # fmt: skip
        other = sum(s["failed"] for s in kills)
        add("kills: killed runs with any property failed", other, "= 0", other == 0)
    races = report.get("races_summary", [])
    if races:
        bad = sum(s["failed"] for s in races)
        add("resume races: rounds without exactly one winner", bad, "= 0", bad == 0)
    conc = report.get("concurrent", [])
    if conc:
        bad = sum(c["failed"] for c in conc)
        add("concurrent runs: broken log or wrong stored status", bad, "= 0", bad == 0)
    inputs = report.get("bad_inputs_summary", [])
    if inputs:
        bad = sum(g["failed"] for g in inputs)
        add("bad inputs: not refused with a TrackwayError (incl. hangs)", bad, "= 0", bad == 0)
    return targets


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="trackway reliability figures")
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--kills", type=int, help="kills per store and durability (25; quick 5)")
    ap.add_argument("--rounds", type=int, help="resume race rounds per store (30; quick 5)")
    ap.add_argument("--racers", type=int, default=6, help="processes per race (6)")
    ap.add_argument("--runs", type=int, help="concurrent runs per cell (600; quick 100)")
    ap.add_argument("--seed", type=int, help="random seed (default: a fresh one, printed)")
    ap.add_argument("--only", help=f"comma-separated sections: {','.join(SECTIONS)}")
    args, ignored = ap.parse_known_args(argv)  # run_all.py passes every bench's flags on
    kills = args.kills or (5 if args.quick else 25)
    rounds = args.rounds or (5 if args.quick else 30)
    runs = args.runs or (100 if args.quick else 600)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    only = set(args.only.split(",")) if args.only else set(SECTIONS)
    if only - set(SECTIONS):
        ap.error(f"--only takes {','.join(SECTIONS)}")
    rng = random.Random(seed)

    notes: list[str] = []
    if ignored:
        notes.append(f"ignored arguments (for other benches): {' '.join(ignored)}")
    dsn = os.environ.get(PG_ENV)
    if not dsn:
        notes.append(f"PostgresStore skipped: set {PG_ENV} to a PostgreSQL DSN to include it.")
    else:
        try:  # reach it without writing anything (the store would make its tables)
            import psycopg

            psycopg.connect(dsn, connect_timeout=10).close()
        except Exception as exc:
            print(f"bench_reliability: {PG_ENV} is set but unusable: {exc}", file=sys.stderr)
            return 2
    source = source_state()
    if source["git_dirty"]:
        notes.append(f"measured on a working tree that differs from commit "
                     f"{source['git_commit'][:10]} in the library's folders")  # fmt: skip
    # Preload what the children import (not "__main__": Python 3.11's forkserver ignores it),
    # so a child is forked with trackway imported and starts in milliseconds.
    CTX.set_forkserver_preload(PRELOAD)
    tmp = Path(tempfile.mkdtemp(prefix="trackway-bench-reliability-", dir="/tmp"))
    places = Places(tmp, dsn)
    print(f"bench_reliability: seed {seed}; kills {kills}, race rounds {rounds} × "
          f"{args.racers} processes, concurrent runs {runs}; stores in {tmp}"
          + (" and PostgreSQL" if dsn else ""), flush=True)  # fmt: skip
    report: dict[str, Any] = {}
    started = clock()
    try:
        if "kills" in only:
            records, branch_records, summary = run_kills(places, kills, rng)
            report.update(kills=records, branch_kills=branch_records, kills_summary=summary)
        if "races" in only:
            race_records, race_summary = run_races(places, rounds, args.racers)
            report.update(races=race_records, races_summary=race_summary)
        if "concurrent" in only:
            report["concurrent"] = run_concurrent(tmp, runs, rng.randrange(2**32))
        if "inputs" in only:
            results = run_bad_inputs(tmp)
            report.update(bad_inputs=results, bad_inputs_summary=bad_input_rows(results))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    took = clock() - started

    print_rows("Reliability (tried = attempts; held = attempts where every property held)",
               ["what", "tried", "held", "failed", "details"], summary_rows(report))  # fmt: skip
    not_refused = [
        [r["group"], r["case"], r["outcome"], r.get("error") or "–", (r.get("message") or "")[:90]]
        for r in report.get("bad_inputs", [])
        if r["outcome"] != "refused"
    ]
    if not_refused:
        print_rows("Bad inputs not refused with a TrackwayError ('ignored': accepted, and the "
                   "run or snapshot came out exactly as without the edit)",
                   ["group", "case", "outcome", "error", "message"], not_refused, ())  # fmt: skip
    problems = [
        [
            f"{p['store']} {p['durability']} {p['chart']}",
            str(p["target"]),
            (p["problem"] or "a check failed")[:120],
        ]
        for s in report.get("kills_summary", [])
        for p in s["problems"]
    ]
    if problems:
        print_rows("Kills where a property failed (first ones)",
                   ["cell", "killed at", "problem"], problems, ())  # fmt: skip
    targets = make_targets(report)
    print_targets(targets)

    notes += [
        f"(1) The counting loop has {LOOP_N} stages of {LOOP_STAGE_S * 1e3:g} ms; a child is "
        "killed a random 0..1.5 stage times after it reports that stage i (random, 1..N) "
        "started. 'Acknowledged' = the i - 1 stages before it (under 'sync' each was durable "
        "before the next started). 'Unflushed at the kill' sums acknowledged commits missing "
        "from the store under 'batch'/'exit', which those modes allow; they ran again on "
        "recovery. Parallel kills alternate a selector (2 of 3 branches) and a fork (3 "
        f"branches), each branch 3 async stages of {BRANCH_STAGE_S * 1e3:g} ms, and cycle "
        "through the durabilities; the kill lands while a random branch stage runs.",
        "(1) Every kill uses a fresh store (a new SQLite file; a new PostgreSQL schema via "
        "search_path, dropped after). Recovery runs in this process: "
        "Executor(chart, store=store, durability=...).recover_sync(run_id); its log and state "
        "are compared with an uncrashed run of the same chart.",
        "Children are forked from a multiprocessing forkserver that imported trackway once; "
        "they are ordinary processes with their own store connections, killed with SIGKILL.",
        f"(2) The racers are {args.racers} long-lived processes with a store of their own each; "
        "per round the parent pauses a run, sends its checkpoint JSON to all, and they call "
        "resume_sync together after a multiprocessing barrier. A round holds when one resume "
        "wins, all others raise CheckpointClaimedError, and the stored run is done with one "
        "resume commit, the winner's answer and one payment. A loser is refused either at "
        "the store's atomic claim ('claim') or, arriving later, on finding the run no longer "
        "paused ('run moved on'); both raise CheckpointClaimedError.",
        f"(3) One executor per cell runs all M at once in one task group (asyncio; the "
        "MemoryStore cell also on trio). "
        f"Each run loops {CONC_STEPS} times (an async stage sleeping a pace of "
        f"0..{CONC_PACE_S * 1e3:g} ms, then a decider). Half the runs, chosen at random, have "
        "their cancel scope cancelled 0..2 paces after their run starts a round chosen at "
        "random (1..N), so cancels land anywhere in a run's life, or just after it ended: a "
        "run cancelled after it ended counts as finished. Checked per run: seqs 1..n, the "
        "stage paths of an uncrashed run, only the last commit may be 'cancelled', "
        "seen == [1..i]; a cancelled "
        "run stored 'failed' with error type 'Cancelled', a finished one 'done' with the full "
        "log equal to the returned snapshot; nothing left 'running'.",
        f"(4) Cases run one after another in a worker process; a case with no answer within "
        f"{CASE_DEADLINE_S:g} s is a hang (the worker is killed and a new one goes on with the "
        "next case). 'Refused' = a TrackwayError was raised; when the run failed with "
        "StageError, what the stage raised must be a TrackwayError too (a raw TypeError "
        "wrapped in StageError counts as 'other'). Tampered checkpoints are tried on an "
        "executor with a SqliteStore ('stored': the store's copy is the authority, so "
        "signature edits are not tried there) and without a store ('signed': HMAC).",
    ]
    for note in notes:
        print(f"- {note}")
    print(f"\ntotal {took:.1f} s")

    payload: dict[str, Any] = {
        "versions": {
            "trackway": dist_version("trackway"),
            "sqlite": sqlite3.sqlite_version,
            "psycopg": dist_version("psycopg") if dsn else None,
            "anyio": dist_version("anyio"),
            "orjson": dist_version("orjson"),
            **source,
        },
        "config": {
            "seed": seed,
            "quick": args.quick,
            "kills": kills,
            "race_rounds": rounds,
            "racers": args.racers,
            "concurrent_runs": runs,
            "postgres": bool(dsn),
            "loop_n": LOOP_N,
            "loop_stage_s": LOOP_STAGE_S,
            "branch_stage_s": BRANCH_STAGE_S,
            "concurrent_steps": CONC_STEPS,
            "case_deadline_s": CASE_DEADLINE_S,
            "sections": sorted(only),
        },
        "seconds": round(took, 1),
        "summary": [
            dict(zip(["what", "tried", "held", "failed", "details"], row, strict=True))
            for row in summary_rows(report)
        ],
        **report,
        "targets": targets,
        "notes": notes,
    }
    path = write_json("bench_reliability", payload)
    print(f"\nwrote {path}")
    failed = [t["target"] for t in targets if not t["pass"]]
    if failed:
        print(f"\nFAIL: {len(failed)} reliability target(s) missed: {'; '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
