"""Store benchmarks: per-stage cost under each store and durability mode, bytes stored, reads.

Runs a trivial loop under MemoryStore, SqliteStore (synchronous FULL and NORMAL) and, when
``TRACKWAY_TEST_PG_DSN`` is set, PostgresStore, each with durability "sync", "batch" and
"exit"; measures bytes stored for a run whose state grows by 1 KB per step; times the read
side of a 10,000-commit run stored in SQLite; and runs LangGraph (SqliteSaver) and Burr
(SQLitePersister) on the same workloads when installed. Prints tables and writes
``benches/results/bench_stores.json``. See ``benches/README.md``.

    .venv/bin/python benches/bench_stores.py [--no-peers] [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import operator
import os
import secrets
import shutil
import sqlite3
import statistics
import sys
import tempfile
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from _common import (
    clock,
    dist_version,
    fresh_heap,
    median_runs,
    print_table,
    print_targets,
    profile_table,
    top_functions,
    write_json,
)

os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
warnings.filterwarnings("ignore")

from trackway import Executor, MemoryStore, PostgresStore, SqliteStore, flow_chart  # noqa: E402

PG_ENV = "TRACKWAY_TEST_PG_DSN"
PAYLOAD = "x" * 1000
REPEATS = 3
LOOP_N = 2_000  # trivial loop, every store and mode ...
SYNC_FULL_N = 300  # ... except "sync" on SQLite FULL (one fsync per commit)
PEER_LOOP_N = 300  # LangGraph and Burr with a SQLite persister (a durable write per step)
GROW_SIZES = (200, 400)
READ_N = 10_000
STATE_AT_CALLS = 1_000
WARM_N = 50  # loop iterations of the untimed warm-up run before each measured cell
SLOW_RUN_S = 5.0  # a run slower than this is not repeated (the cell is one run)
FLOOR_BATCH = 256  # rows per transaction in the group-commit floor (the batch sink's size)
DURABILITIES = ("sync", "batch", "exit")

TARGET_STORAGE_RATIO = 1.5
TARGET_BATCH_US = 30.0
TARGET_HISTORY_MS = 20.0
TARGET_STATE_AT_MS = 2.0

Metrics = dict[str, float]
Runner = Callable[[], Metrics]


# -- where runs are stored ------------------------------------------------------------------


class Opened:
    """One store for one run: the store, then its bytes on disk, then cleanup."""

    def __init__(
        self,
        store: Any,
        size: Callable[[], int | None] = lambda: None,
        discard: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self._size = size
        self._discard = discard
        self._closed = False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.store.close()

    def bytes_stored(self) -> int | None:
        """Bytes the store holds for this run (SQLite: measured after close)."""
        return self._size()

    def discard(self) -> None:
        self.close()
        self._discard()


def sqlite_files_size(path: Path) -> int:
    """The database file plus any ``-wal`` / ``-shm`` beside it."""
    return sum(
        os.path.getsize(p)
        for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal"))
        if p.exists()
    )


def remove_sqlite(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


class Backend:
    """A kind of store: ``open()`` gives a fresh, empty store for one run."""

    def __init__(self, label: str, open_: Callable[[], Opened]) -> None:
        self.label = label
        self.open = open_


def memory_backend() -> Backend:
    return Backend("MemoryStore", lambda: Opened(MemoryStore()))


def sqlite_backend(tmp: Path, synchronous: str) -> Backend:
    def open_() -> Opened:
        path = tmp / f"tw-{uuid.uuid4().hex}.sqlite"
        opened: Opened

        def size() -> int:
            opened.close()
            return sqlite_files_size(path)

        opened = Opened(
            SqliteStore(path, synchronous=synchronous),  # type: ignore[arg-type]
            size,
            lambda: remove_sqlite(path),
        )
        return opened

    return Backend(f"SqliteStore {synchronous}", open_)


def pg_dsn_with_schema(dsn: str, schema: str) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(dsn, options=f"-c search_path={schema}")


def pg_backend(dsn: str) -> Backend:
    """Each run gets its own schema (so sizes are that run's alone), dropped afterwards."""
    import psycopg

    def open_() -> Opened:
        schema = f"trackway_bench_{secrets.token_hex(4)}"
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
        store = PostgresStore(pg_dsn_with_schema(dsn, schema))

        def size() -> int:
            with psycopg.connect(dsn, autocommit=True) as admin:
                row = admin.execute(
                    "SELECT COALESCE(SUM(pg_total_relation_size("
                    "quote_ident(schemaname) || '.' || quote_ident(tablename))), 0) "
                    "FROM pg_tables WHERE schemaname = %s",
                    (schema,),
                ).fetchone()
            return int(row[0]) if row else 0

        def discard() -> None:
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")

        return Opened(store, size, discard)

    return Backend("PostgresStore", open_)


# -- trackway -------------------------------------------------------------------------------


def loop_chart(n: int, grow: bool) -> Any:
    """One stage looping on itself: increment ``n`` (and append 1 KB to ``log``), break at n."""

    def step(scope: Any) -> None:
        if grow:
            scope.append("log", PAYLOAD)
        v = scope["n"] + 1
        scope["n"] = v
        if v >= n:
            scope.break_("done")

    return flow_chart("Step", step, id="step").loop_to("step").build()


def tw_store_loop(
    backend: Backend | None, durability: str, n: int, *, grow: bool = False, sizes: bool = False
) -> Runner:
    """Time ``run_sync`` (begin_run, every commit, flush, finish_run) on a fresh store."""
    chart = loop_chart(n, grow)

    def run() -> Metrics:
        opened = backend.open() if backend is not None else None
        try:
            executor = Executor(
                chart,
                store=None if opened is None else opened.store,
                durability=durability,  # type: ignore[arg-type]
                max_iterations=n + 10,
            )
            t = clock()
            result = executor.run_sync({"n": 0})
            total = clock() - t
            assert result.state["n"] == n and len(result.snapshot) == n, result.status
            out: Metrics = {"total_s": total, "us_per_stage": total / n * 1e6}
            if sizes and opened is not None:
                store = opened.store
                t = clock()
                meta = store.history(result.run_id)
                out["history_ms"] = (clock() - t) * 1e3
                t = clock()
                snap = store.load(result.run_id)
                out["load_ms"] = (clock() - t) * 1e3
                assert len(meta) == n and len(snap) == n
                if grow:
                    assert len(snap.state["log"]) == n
                size = opened.bytes_stored()
                if size is not None:
                    out["bytes"] = size
            return out
        finally:
            if opened is not None:
                opened.discard()

    return run


def floor_sqlite(tmp: Path, synchronous: str, n: int, per_tx: int) -> Runner:
    """Raw sqlite3: one small row (the trivial loop's commit, ~300 B) per transaction."""
    doc = b'{"seq":1,"stage_path":"step#0","stage_id":"step","ops":[],"pad":"' + b"x" * 200 + b'"}'

    def run() -> Metrics:
        path = tmp / f"floor-{uuid.uuid4().hex}.sqlite"
        db = sqlite3.connect(path, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={synchronous}")
            db.execute(
                "CREATE TABLE log (run_id TEXT NOT NULL, seq INTEGER NOT NULL, "
                "stage_path TEXT NOT NULL, doc BLOB NOT NULL, UNIQUE (run_id, seq))"
            )
            rows = [("run-1", i, f"step#{i}", doc) for i in range(n)]
            t = clock()
            for i in range(0, n, per_tx):
                db.execute("BEGIN IMMEDIATE")
                db.executemany("INSERT INTO log VALUES (?, ?, ?, ?)", rows[i : i + per_tx])
                db.execute("COMMIT")
            total = clock() - t
        finally:
            db.close()
            remove_sqlite(path)
        return {"total_s": total, "us_per_stage": total / n * 1e6}

    return run


# -- LangGraph ------------------------------------------------------------------------------


def lg_sqlite_loop(tmp: Path, n: int, grow: bool) -> Runner:
    """LangGraph loop of one node with a SqliteSaver on a file (WAL), durability="sync"."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    fields: dict[str, Any] = {"n": int}
    if grow:
        fields["log"] = Annotated[list, operator.add]
    state_type = TypedDict("LoopState", fields)  # type: ignore[operator]

    def step(s: dict[str, Any]) -> dict[str, Any]:
        return {"n": s["n"] + 1, "log": [PAYLOAD]} if grow else {"n": s["n"] + 1}

    g = StateGraph(state_type)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["n"] >= n else "step")
    inp: dict[str, Any] = {"n": 0, "log": []} if grow else {"n": 0}

    def run() -> Metrics:
        path = tmp / f"lg-{uuid.uuid4().hex}.sqlite"
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            app = g.compile(checkpointer=SqliteSaver(conn))
            cfg: Any = {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": n + 10}
            t = clock()
            out = app.invoke(inp, cfg, durability="sync")
            total = clock() - t
            assert out["n"] == n
            t = clock()
            hist = list(app.get_state_history(cfg))
            history_ms = (clock() - t) * 1e3
            t = clock()
            app.get_state(cfg)
            get_state_ms = (clock() - t) * 1e3
            conn.close()
            size = sqlite_files_size(path)
        finally:
            conn.close()
            remove_sqlite(path)
        return {
            "total_s": total,
            "us_per_stage": total / n * 1e6,
            "history_ms": history_ms,
            "history_len": len(hist),
            "get_state_ms": get_state_ms,
            "bytes": size,
        }

    return run


# -- Burr -----------------------------------------------------------------------------------


def burr_sqlite_loop(tmp: Path, n: int, grow: bool) -> Runner:
    """Burr loop with a SQLitePersister on a file (its default: rollback journal)."""
    from burr.core import ApplicationBuilder, State, action, default, expr
    from burr.core.persistence import SQLitePersister

    keys = ["n", "log"] if grow else ["n"]

    @action(reads=keys, writes=keys)
    def step(state: State) -> State:
        st = state.update(n=state["n"] + 1)
        return st.append(log=PAYLOAD) if grow else st

    @action(reads=[], writes=[])
    def done(state: State) -> State:
        return state

    def run() -> Metrics:
        path = tmp / f"burr-{uuid.uuid4().hex}.sqlite"
        persister = SQLitePersister(db_path=str(path))
        try:
            persister.initialize()
            app = (
                ApplicationBuilder()
                .with_actions(step=step, done=done)
                .with_transitions(("step", "step", expr(f"n < {n}")), ("step", "done", default))
                .with_state(n=0, **({"log": []} if grow else {}))
                .with_entrypoint("step")
                .with_identifiers(app_id=uuid.uuid4().hex)
                .with_state_persister(persister)
                .build()
            )
            t = clock()
            _, _, state = app.run(halt_after=["done"])
            total = clock() - t
            assert state["n"] == n
            persister.cleanup()
            size = sqlite_files_size(path)
        finally:
            with contextlib.suppress(Exception):
                persister.connection.close()
            remove_sqlite(path)
        # n steps plus the final "done" action, each persisted
        return {"total_s": total, "us_per_stage": total / (n + 1) * 1e6, "bytes": size}

    return run


# -- driver ---------------------------------------------------------------------------------


def measure(make: Callable[[int], Runner], n: int, *, repeats: int | None = None) -> Any:
    """One untimed warm-up run at WARM_N, then the median of REPEATS runs at ``n``."""
    make(min(n, WARM_N))()
    return median_runs(make(n), repeats or REPEATS, adaptive_s=SLOW_RUN_S)


def step(label: str) -> Callable[[], None]:
    print(f"  {label} ...", end="", flush=True)
    return lambda: print(" done", flush=True)


def run_per_stage(
    backends: list[Backend], tmp: Path, loop_n: int, sync_full_n: int
) -> list[dict[str, Any]]:
    """(1) µs per stage, amortized over the run, for each store × durability."""
    rows: list[dict[str, Any]] = []
    done = step(f"(1) no store, N={loop_n:,}")
    base = measure(lambda k: tw_store_loop(None, "sync", k), loop_n)
    rows.append({"store": "none (log in memory)", "durability": "–", "n": loop_n, **base})
    done()
    for backend in backends:
        for durability in DURABILITIES:
            n = (
                sync_full_n
                if (backend.label, durability) == ("SqliteStore FULL", "sync")
                else (loop_n)
            )
            done = step(f"(1) {backend.label} {durability}, N={n:,}")
            cell = measure(lambda k, b=backend, d=durability: tw_store_loop(b, d, k, sizes=True), n)
            cell["over_no_store_us"] = cell["us_per_stage"] - base["us_per_stage"]
            rows.append({"store": backend.label, "durability": durability, "n": n, **cell})
            done()
    for synchronous, per_tx, n in (
        ("FULL", 1, sync_full_n),
        ("NORMAL", 1, loop_n),
        ("FULL", FLOOR_BATCH, loop_n),
    ):
        label = f"floor: raw sqlite3 WAL {synchronous}"
        mode = "1 row/tx" if per_tx == 1 else f"{per_tx} rows/tx"
        done = step(f"(1) {label}, {mode}, N={n:,}")
        cell = measure(lambda k, s=synchronous, p=per_tx: floor_sqlite(tmp, s, k, p), n)
        rows.append({"store": label, "durability": mode, "n": n, **cell})
        done()
    return rows


def run_storage(backends: list[Backend], grow_sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    """(2) bytes stored for the +1 KB/step loop, durability="sync"."""
    rows: list[dict[str, Any]] = []
    for backend in backends:
        for n in grow_sizes:
            done = step(f"(2) {backend.label}, +1 KB/step, N={n:,}")
            cell = measure(
                lambda k, b=backend: tw_store_loop(b, "sync", k, grow=True, sizes=True), n
            )
            raw = n * len(PAYLOAD)
            cell["raw_bytes"] = raw
            cell["ratio_to_raw"] = cell["bytes"] / raw
            rows.append({"who": f"trackway {backend.label}", "n": n, **cell})
            done()
    return rows


def sqlite_breakdown(tmp: Path, n: int) -> list[dict[str, Any]]:
    """Where the bytes of a +1 KB/step SqliteStore file go, by table and index (dbstat)."""
    path = tmp / f"tw-dbstat-{uuid.uuid4().hex}.sqlite"
    store = SqliteStore(path)
    try:
        result = Executor(loop_chart(n, True), store=store, max_iterations=n + 10).run_sync(
            {"n": 0}
        )
        doc_bytes = sum(len(c.to_bytes()) for c in result.snapshot.commits)
        store.close()
        db = sqlite3.connect(path)
        try:
            rows = db.execute(
                "SELECT name, COUNT(*), SUM(pgsize), SUM(unused), SUM(payload) FROM dbstat "
                "GROUP BY name ORDER BY SUM(pgsize) DESC"
            ).fetchall()
        except sqlite3.OperationalError:  # SQLite built without SQLITE_ENABLE_DBSTAT_VTAB
            rows = []
        finally:
            db.close()
        out = [
            {"object": name, "pages": pages, "bytes": size, "unused": unused, "payload": payload}
            for name, pages, size, unused, payload in rows
        ]
        out.append({"object": "(commit docs: sum of len(doc))", "bytes": doc_bytes, "n": n})
        return out
    finally:
        with contextlib.suppress(Exception):
            store.close()
        remove_sqlite(path)


def run_reads(tmp: Path, n: int, calls: int) -> dict[str, Any]:
    """(3) reads of an n-commit trivial-loop run stored in SQLite (durability="batch")."""
    path = tmp / f"tw-read-{uuid.uuid4().hex}.sqlite"
    store = SqliteStore(path)
    try:
        executor = Executor(loop_chart(n, False), store=store, durability="batch",
                            max_iterations=n + 10)  # fmt: skip
        t = clock()
        run_id = executor.run_sync({"n": 0}).run_id
        write_s = clock() - t

        def timed(fn: Callable[[], Any], times: int) -> list[float]:
            fn()  # warm: the first call reads pages from the OS cache
            out = []
            for _ in range(times):
                t = clock()
                fn()
                out.append((clock() - t) * 1e3)
            return out

        ops: list[dict[str, Any]] = []

        def record(op: str, samples: list[float], target: float | None = None) -> None:
            med = statistics.median(samples)
            ops.append({"op": op, "median_ms": med, "min_ms": min(samples),
                        "max_ms": max(samples), "calls": len(samples),
                        "target_ms": target,
                        "pass": None if target is None else med <= target})  # fmt: skip

        assert len(store.history(run_id)) == n
        record("store.history(run_id)", timed(lambda: store.history(run_id), 50),
               TARGET_HISTORY_MS)  # fmt: skip
        gc.disable()  # a diagnostic: how much of the listing is cyclic-GC passes
        try:
            record("store.history(run_id), gc disabled", timed(lambda: store.history(run_id), 50))
        finally:
            gc.enable()
        record("store.list_runs()", timed(store.list_runs, 20))
        record("store.load(run_id)", timed(lambda: store.load(run_id), 5))
        snap = store.load(run_id)
        assert len(snap) == n and snap.state["n"] == n
        for k in (1, n // 2, n):
            assert snap.state_at(k)["n"] == k
            record(f"snapshot.state_at({k:,})", timed(lambda k=k: snap.state_at(k), calls),
                   TARGET_STATE_AT_MS)  # fmt: skip
        record("snapshot.history()", timed(snap.history, 100))
        return {"n": n, "write_s": write_s, "write_us_per_stage": write_s / n * 1e6, "ops": ops}
    finally:
        with contextlib.suppress(Exception):
            store.close()
        remove_sqlite(path)


def commit_costs(tmp: Path, n: int) -> list[dict[str, Any]]:
    """Per-commit cost of the write path, piece by piece, outside the executor."""
    commits = (
        Executor(loop_chart(n, False), max_iterations=n + 10).run_sync({"n": 0}).snapshot.commits
    )
    out: list[dict[str, Any]] = []

    def timed(label: str, fn: Callable[[], Any]) -> None:
        fn()
        samples = []
        for _ in range(REPEATS):
            t = clock()
            fn()
            samples.append((clock() - t) / n * 1e6)
        out.append({"what": label, "us_per_commit": statistics.median(samples)})

    timed("Commit.to_bytes()", lambda: [c.to_bytes() for c in commits])
    for synchronous in ("FULL", "NORMAL"):
        path = tmp / f"tw-cost-{uuid.uuid4().hex}.sqlite"
        store = SqliteStore(path, synchronous=synchronous)  # type: ignore[arg-type]
        try:
            counter = iter(range(10**9))

            def batches(
                store: SqliteStore = store, size: int = FLOOR_BATCH, ids: Any = counter
            ) -> None:
                rid = f"run-{next(ids)}"
                store.begin_run(rid, "step", {})
                for i in range(0, n, size):
                    store.append(rid, commits[i : i + size])

            timed(f"SqliteStore.append, {FLOOR_BATCH} commits/tx, {synchronous}", batches)
            if synchronous == "NORMAL":
                timed("SqliteStore.append, 1 commit/tx, NORMAL", lambda: batches(size=1))
        finally:
            store.close()
            remove_sqlite(path)
    return out


def run_peers(
    peers: list[str], tmp: Path, loop_n: int, grow_sizes: tuple[int, ...]
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"loop": [], "storage": []}
    makers = {"langgraph": lg_sqlite_loop, "burr": burr_sqlite_loop}
    labels = {"langgraph": "LangGraph SqliteSaver", "burr": "Burr SQLitePersister"}
    for name in peers:
        make = makers[name]
        done = step(f"(4) {labels[name]}, trivial loop, N={loop_n:,}")
        cell = measure(lambda k, m=make: m(tmp, k, False), loop_n)
        out["loop"].append({"who": labels[name], "n": loop_n, **cell})
        done()
        for n in grow_sizes:
            done = step(f"(4) {labels[name]}, +1 KB/step, N={n:,}")
            cell = measure(lambda k, m=make: m(tmp, k, True), n)
            cell["raw_bytes"] = n * len(PAYLOAD)
            cell["ratio_to_raw"] = cell["bytes"] / cell["raw_bytes"]
            out["storage"].append({"who": labels[name], "n": n, **cell})
            done()
    return out


class TimedSqliteStore(SqliteStore):
    """SqliteStore that counts its append calls and the time spent inside them."""

    def __init__(self, *args: Any, prof: cProfile.Profile | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.appends: list[tuple[int, float]] = []
        self.prof = prof  # enabled inside append only, on the thread that calls it

    def append(self, run_id: str, commits: Any) -> None:
        if self.prof is not None:
            self.prof.enable()
        t = clock()
        super().append(run_id, commits)
        self.appends.append((len(commits), clock() - t))
        if self.prof is not None:
            self.prof.disable()


def profile_batch(tmp: Path, n: int) -> dict[str, Any]:
    """The batch-mode SqliteStore FULL loop: the writer thread's append calls (count, batch
    sizes, time inside append), then cProfile of the run's thread and, separately, of the
    writer thread inside ``SqliteStore.append``."""
    chart = loop_chart(n, False)

    def once(main: cProfile.Profile | None, writer: cProfile.Profile | None) -> Any:
        path = tmp / f"tw-prof-{uuid.uuid4().hex}.sqlite"
        store = TimedSqliteStore(path, prof=writer)
        try:
            executor = Executor(chart, store=store, durability="batch", max_iterations=n + 10)
            fresh_heap()
            if main is not None:
                main.enable()
            t = clock()
            executor.run_sync({"n": 0})
            total = clock() - t
            if main is not None:
                main.disable()
            return total, store
        finally:
            store.close()
            remove_sqlite(path)

    once(None, None)
    total, store = once(None, None)
    sizes = [k for k, _ in store.appends]
    busy = sum(s for _, s in store.appends)
    writer = {
        "run_s": total,
        "append_calls": len(store.appends),
        "mean_batch": statistics.mean(sizes),
        "max_batch": max(sizes),
        "append_busy_s": busy,
        "append_us_per_commit": busy / sum(sizes) * 1e6,
        "busy_share_of_run": busy / total,
    }
    main, inside = cProfile.Profile(), cProfile.Profile()
    once(main, inside)
    return {
        "writer": writer,
        "main_thread_top": top_functions(profile_table(main), 12),
        "append_top": top_functions(profile_table(inside), 8),
    }


def _available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def check_targets(
    per_stage: list[dict[str, Any]], storage: list[dict[str, Any]], reads: dict[str, Any]
) -> list[dict[str, Any]]:
    targets: list[dict[str, Any]] = []

    def target(name: str, measured: float, threshold: str, ok: bool) -> None:
        targets.append({"target": name, "measured": measured, "threshold": threshold, "pass": ok})

    for row in storage:
        r = row["ratio_to_raw"]
        target(f"(2) {row['who']} bytes / raw, N={row['n']:,}", r,
               f"≤ {TARGET_STORAGE_RATIO:g}×", r <= TARGET_STORAGE_RATIO)  # fmt: skip
    for row in per_stage:
        if (row["store"], row["durability"]) == ("SqliteStore FULL", "batch"):
            us = row["us_per_stage"]
            target(f"(1) SqliteStore FULL batch µs/stage, N={row['n']:,}", us,
                   f"≤ {TARGET_BATCH_US:g}", us <= TARGET_BATCH_US)  # fmt: skip
    for op in reads["ops"]:
        if op["target_ms"] is not None:
            target(f"(3) {op['op']} ms, {reads['n']:,} commits", op["median_ms"],
                   f"≤ {op['target_ms']:g}", op["pass"])  # fmt: skip
    return targets


def _ratio(a: float | None, b: float | None) -> str | None:
    return None if a is None or not b else f"{a / b:,.1f}×"


def _kb(value: float | None) -> float | None:
    return None if value is None else value / 1024


def print_report(
    per_stage: list[dict[str, Any]],
    storage: list[dict[str, Any]],
    peers: dict[str, list[dict[str, Any]]],
    breakdown: list[dict[str, Any]],
    reads: dict[str, Any],
    costs: list[dict[str, Any]],
    targets: list[dict[str, Any]],
) -> None:
    def mark(cell: dict[str, Any]) -> str:
        return "*" if cell["repeats"] < REPEATS else ""

    print_table(
        "(1) Trivial loop under each store: µs per stage, amortized (run_sync time / N: "
        "begin_run, every commit, flush, finish_run). +µs = over the same loop with no store",
        ["store", "durability", "N", "total ms", "µs/stage", "+µs"],
        [[r["store"], r["durability"], r["n"], f"{r['total_s'] * 1e3:,.1f}{mark(r)}",
          r["us_per_stage"], r.get("over_no_store_us")] for r in per_stage],
    )  # fmt: skip

    tw_sync = next(
        (r for r in per_stage if (r["store"], r["durability"]) == ("SqliteStore FULL", "sync")),
        None,
    )
    if tw_sync is not None:
        loop_rows = [["trackway SqliteStore FULL, sync", tw_sync["n"], tw_sync["us_per_stage"],
                      None, tw_sync.get("history_ms"), _kb(tw_sync.get("bytes"))]]  # fmt: skip
        for r in peers["loop"]:
            loop_rows.append([r["who"], r["n"], f"{r['us_per_stage']:,.1f}{mark(r)}",
                              _ratio(r["us_per_stage"], tw_sync["us_per_stage"]),
                              r.get("history_ms"), _kb(r["bytes"])])  # fmt: skip
        print_table(
            "(4) Trivial loop, a durable SQLite write per step (trackway durability=sync, "
            "LangGraph durability=sync). peer/tw = peer µs / trackway µs; history = "
            "store.history (trackway), list(get_state_history) (LangGraph)",
            ["who", "N", "µs/step", "peer/tw", "history ms", "stored KB"],
            loop_rows,
        )

    tw_by_n = {r["n"]: r for r in storage if r["who"] == "trackway SqliteStore FULL"}
    rows = []
    for r in [*storage, *peers["storage"]]:
        tw = tw_by_n.get(r["n"])
        is_peer = not r["who"].startswith("trackway")
        rows.append([
            r["who"], r["n"], _kb(r["bytes"]), r["ratio_to_raw"], r["bytes"] / r["n"],
            f"{r['us_per_stage']:,.1f}{mark(r)}", r.get("history_ms"), r.get("load_ms"),
            _ratio(r["bytes"], tw["bytes"]) if is_peer and tw else None,
            _ratio(r["us_per_stage"], tw["us_per_stage"]) if is_peer and tw else None,
        ])  # fmt: skip
    print_table(
        "(2) Bytes stored, state +1 KB per step (durability=sync). ×raw = stored / (N × 1000); "
        "history = store.history (trackway) or list(get_state_history) (LangGraph); "
        "load = store.load (trackway); peer/tw for bytes and µs against trackway SqliteStore",
        ["who", "N", "stored KB", "×raw", "bytes/step", "µs/step", "history ms", "load ms",
         "bytes peer/tw", "µs peer/tw"],
        rows,
    )  # fmt: skip
    slope_rows = []
    for who in dict.fromkeys(r["who"] for r in [*storage, *peers["storage"]]):
        cells = sorted((r for r in [*storage, *peers["storage"]] if r["who"] == who),
                       key=lambda r: r["n"])  # fmt: skip
        if len(cells) >= 2:
            a, b = cells[0], cells[-1]
            per_step = (b["bytes"] - a["bytes"]) / (b["n"] - a["n"])
            slope_rows.append([who, f"{a['n']}→{b['n']}", per_step, per_step / len(PAYLOAD),
                               b["bytes"] / a["bytes"]])  # fmt: skip
    print_table(
        "(2) Growth: marginal bytes per extra step between the two sizes (linear storage: "
        "about 1,000 and flat; ×size = bytes at the larger N / bytes at the smaller)",
        ["who", "N", "marginal bytes/step", "×raw marginal", "×size"],
        slope_rows,
    )
    if breakdown:
        print_table(
            f"(2) Where the SqliteStore bytes go, +1 KB/step at N={breakdown[-1]['n']:,} "
            "(dbstat: pages per table and index; payload = bytes of row content)",
            ["object", "pages", "KB", "unused KB", "payload KB"],
            [[b["object"], b.get("pages"), _kb(b["bytes"]), _kb(b.get("unused")),
              _kb(b.get("payload"))] for b in breakdown],
        )  # fmt: skip
    print_table(
        f"(3) Reads of a {reads['n']:,}-commit trivial-loop run stored in SQLite (written with "
        f"durability=batch at {reads['write_us_per_stage']:,.1f} µs/stage); median per call",
        ["operation", "calls", "median ms", "min ms", "max ms", "target ms", "result"],
        [[o["op"], o["calls"], f"{o['median_ms']:,.4f}", f"{o['min_ms']:,.4f}",
          f"{o['max_ms']:,.3f}", o["target_ms"], o["pass"]] for o in reads["ops"]],
    )  # fmt: skip
    print_table(
        "Write path per commit, outside the executor (trivial-loop commits, ~300 B each)",
        ["what", "µs/commit"],
        [[c["what"], c["us_per_commit"]] for c in costs],
    )
    print_targets(targets)


def main() -> int:
    global REPEATS
    ap = argparse.ArgumentParser(description="trackway store benchmarks")
    ap.add_argument("--no-peers", action="store_true", help="trackway only")
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat (smoke test)")
    ap.add_argument("--profile", action="store_true",
                    help="also profile the batch-mode SqliteStore FULL loop")  # fmt: skip
    args = ap.parse_args()

    loop_n, sync_full_n, peer_n = LOOP_N, SYNC_FULL_N, PEER_LOOP_N
    grow_sizes, read_n, calls = GROW_SIZES, READ_N, STATE_AT_CALLS
    if args.quick:
        REPEATS, loop_n, sync_full_n, peer_n = 1, 200, 50, 50
        grow_sizes, read_n, calls = (20, 40), 1_000, 100

    notes: list[str] = []
    peers: list[str] = []
    if not args.no_peers:
        for name, module, pip in (
            ("langgraph", "langgraph.checkpoint.sqlite", "langgraph-checkpoint-sqlite"),
            ("burr", "burr.core.persistence", "apache-burr"),
        ):
            if _available(module):
                peers.append(name)
            else:
                notes.append(f"{name}: {module} is not importable, so its rows are missing "
                             f"(pip install {pip})")  # fmt: skip
    dsn = os.environ.get(PG_ENV)
    if not dsn:
        notes.append(f"PostgresStore skipped: set {PG_ENV} to a PostgreSQL DSN to include it.")

    tmp = Path(tempfile.mkdtemp(prefix="trackway-bench-stores-", dir="/tmp"))
    print(f"bench_stores: each cell is the median of {REPEATS} runs unless marked *; "
          f"database files in {tmp}", flush=True)  # fmt: skip
    try:
        backends = [memory_backend(), sqlite_backend(tmp, "FULL"), sqlite_backend(tmp, "NORMAL")]
        stored = [backends[1]]
        if dsn:
            backends.append(pg_backend(dsn))
            stored.append(backends[-1])
        per_stage = run_per_stage(backends, tmp, loop_n, sync_full_n)
        storage = run_storage(stored, grow_sizes)
        done = step("(2) dbstat breakdown")
        breakdown = sqlite_breakdown(tmp, grow_sizes[-1])
        done()
        done = step(f"(3) reads, {read_n:,} commits")
        reads = run_reads(tmp, read_n, calls)
        done()
        done = step("write path per commit")
        costs = commit_costs(tmp, loop_n)
        done()
        peer_rows = run_peers(peers, tmp, peer_n, grow_sizes)
        profile = None
        if args.profile:
            done = step(f"profile: SqliteStore FULL batch, N={loop_n:,}")
            profile = profile_batch(tmp, loop_n)
            done()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    targets = check_targets(per_stage, storage, reads)
    print_report(per_stage, storage, peer_rows, breakdown, reads, costs, targets)
    if profile is not None:
        w = profile["writer"]
        print_table(
            f"Profile, SqliteStore FULL batch at N={loop_n:,}: the writer thread's appends",
            ["run ms", "append calls", "mean batch", "max batch", "append busy ms",
             "µs/commit in append", "busy / run"],
            [[w["run_s"] * 1e3, w["append_calls"], w["mean_batch"], w["max_batch"],
              w["append_busy_s"] * 1e3, w["append_us_per_commit"], w["busy_share_of_run"]]],
        )  # fmt: skip
        print_table(
            "Profile, same run: the run's thread, top 12 by tottime (cProfile)",
            ["function", "ncalls", "tottime ms", "cumtime ms"],
            [[r["function"], r["ncalls"], r["tottime_s"] * 1e3, r["cumtime_s"] * 1e3]
             for r in profile["main_thread_top"]],
        )  # fmt: skip
        print_table(
            "Profile, same run: the writer thread inside SqliteStore.append, top 8 by tottime",
            ["function", "ncalls", "tottime ms", "cumtime ms"],
            [[r["function"], r["ncalls"], r["tottime_s"] * 1e3, r["cumtime_s"] * 1e3]
             for r in profile["append_top"]],
        )  # fmt: skip

    notes += [
        f"(1) N={loop_n:,} everywhere except durability=sync on SqliteStore FULL and the FULL "
        f"1 row/tx floor (N={sync_full_n:,}): each commit there waits for an fsync, so its cost "
        "is the disk's fsync latency, and a larger N only makes the bench slower.",
        "(1) Each run gets a fresh store (a new SQLite file; a new PostgreSQL schema), opened "
        "before the clock starts; the time covers Executor.run_sync only.",
        f"(1) The floors are raw sqlite3 on a WAL file inserting a ~300 B row: one transaction "
        f"per row (the cost a sync commit cannot beat) and {FLOOR_BATCH} rows per transaction "
        "(the batch sink's group size).",
        "(2) SQLite bytes are the file plus any -wal/-shm after store.close(); PostgreSQL bytes "
        "are pg_total_relation_size summed over the trackway tables of the run's own schema "
        "(heap, indexes, TOAST), so they include fixed per-table pages. The payload is "
        "'x' * 1000, which compresses to almost nothing: no store here compresses it (PostgreSQL "
        "TOAST starts at ~2 KB rows), and a store that did would flatter itself on this "
        "workload.",
        "(3) 'gc disabled' repeats store.history with the cyclic GC off: the difference is the "
        "collections that the listing's ~20,000 new tuples trigger, whose cost grows with the "
        "process's heap.",
        "Times are time.perf_counter() around the call measured; SQLite numbers depend on the "
        "disk's fsync latency, which can swing by 10× on shared VMs: compare ratios within "
        "one run.",
    ]
    if peers:
        notes += [
            "(2)/(4) LangGraph: StateGraph loop of one node, SqliteSaver on a file connection "
            "(it sets WAL; synchronous stays FULL), durability='sync', the +1 KB/step key is "
            "Annotated[list, operator.add]. Burr: SQLitePersister (its default rollback journal, "
            "synchronous FULL, one transaction per action), expr() transitions and a final "
            "'done' action, time divided by N+1 actions.",
            f"(4) Peers run the trivial loop at N={peer_n:,} only, against trackway's SqliteStore "
            "FULL sync cell at the same N.",
        ]
    for note in notes:
        print(f"- {note}")

    payload: dict[str, Any] = {
        "versions": {
            "trackway": dist_version("trackway"),
            "sqlite": sqlite3.sqlite_version,
            "psycopg": dist_version("psycopg") if dsn else None,
            "langgraph": dist_version("langgraph") if "langgraph" in peers else None,
            "langgraph-checkpoint-sqlite": (
                dist_version("langgraph-checkpoint-sqlite") if "langgraph" in peers else None
            ),
            "apache-burr": dist_version("apache-burr") if "burr" in peers else None,
        },
        "config": {
            "repeats": REPEATS,
            "loop_n": loop_n,
            "sync_full_n": sync_full_n,
            "peer_loop_n": peer_n,
            "grow_sizes": grow_sizes,
            "read_n": read_n,
            "state_at_calls": calls,
            "postgres": bool(dsn),
            "quick": args.quick,
        },
        "per_stage": per_stage,
        "storage": storage,
        "storage_breakdown": breakdown,
        "reads": reads,
        "write_path": costs,
        "peers": peer_rows,
        "targets": targets,
        "notes": notes,
    }
    if profile is not None:
        payload["profile_batch"] = profile
    path = write_json("bench_stores", payload)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
