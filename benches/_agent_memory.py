"""The memory case of ``bench_agent.py``: what recalling an agent's memory costs with 100 and
with 10,000 remembered turns in a SQLite store (issue 33's target: under 2 ms per recall at
10,000 turns, and flat: the cost follows what is recalled, not what is kept).

Each size is a fresh SQLite file (``synchronous="FULL"``, the default) holding that many
turns for the person the runs are for, as ``memory-write`` keeps them, plus as many facts
and the same number of turns for nine other people (other scopes share the tables). Two
measures per size:

- ``recall``: the ``recent`` (10 turns) and ``facts`` (50) memories' recall through the store
  (the query, decoding the rows, making the served text), the median of many, outside an
  agent;
- ``stage``: the ``memory-recall`` stage inside real agent runs on that file (the recall of
  both memories and the stage's commit), from its commit's timestamps, the median over
  runs; and ``memory-write`` the same way.

The bench prints ``EXPLAIN QUERY PLAN`` of both reads: each is one range of one index.
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
from _common import clock, fresh_heap

from trackway.agent import Agent, define_memory, mock
from trackway.agent.memory._scope import scope_of
from trackway.agent.memory._store_io import StoreMemory
from trackway.engine import SqliteStore
from trackway.engine.stores._memory_rows import FACTS_SQL, RECENT_SQL, fact_digest

SIZES = (100, 10_000)
TARGET_RECALL_MS = 2.0  # per recall at 10,000 turns, SQLite
TARGET_FLAT = 1.5  # recall at 10,000 turns / at 100: flat, not O(stored)
RECALLS = 300  # recalls timed per size and memory
RUNS = 25  # agent runs per size
OTHERS = 9  # other people in the same tables
WHO = {"tenant": "acme", "principal": "ana", "conversation_id": "bench"}
TURNS = 10
FACTS = 50


def _memories() -> tuple[Any, Any]:
    return (
        define_memory("recent", turns=TURNS),
        define_memory("facts", extract=lambda t: {"last": t.user[-8:]}, max_facts=FACTS),
    )


def fill(path: Path, n: int) -> None:
    """``n`` turns and ``n`` facts for WHO and for each of OTHERS, in one transaction."""
    SqliteStore(path).close()  # the schema
    scopes = [scope_of(WHO, "").key] + [
        scope_of({"principal": f"other-{i}"}, "").key for i in range(OTHERS)
    ]
    now = time.time()
    with closing(sqlite3.connect(path)) as db:
        for scope in scopes:
            db.executemany(
                "INSERT INTO trackway_memory VALUES (?, 'recent', ?, 'turn', ?, ?)",
                (
                    (
                        scope,
                        seq,
                        now,
                        orjson.dumps({"user": f"question {seq}", "answer": f"a{seq}"}),
                    )
                    for seq in range(1, n + 1)
                ),
            )
            db.executemany(
                "INSERT INTO trackway_memory_facts VALUES (?, 'facts', ?, ?, ?, ?)",
                (
                    (scope, seq, fact_digest(f"k{seq}"), now,
                     orjson.dumps({"key": f"k{seq}", "value": f"v{seq}"}))
                    for seq in range(1, n + 1)
                ),
            )  # fmt: skip
        db.commit()


def _done(coroutine: Any) -> Any:
    """Run a coroutine that never waits (a store recall) to its result, without a loop."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("the recall waited")  # pragma: no cover


def plans(path: Path) -> dict[str, list[str]]:
    """``EXPLAIN QUERY PLAN`` of the two reads a recall makes."""
    scope = scope_of(WHO, "").key
    out = {}
    with closing(sqlite3.connect(path)) as db:
        for name, sql, memory in (("recent", RECENT_SQL, "recent"), ("facts", FACTS_SQL, "facts")):
            rows = db.execute("EXPLAIN QUERY PLAN " + sql.format(p="?"), (scope, memory, 10))
            out[name] = [r[3] for r in rows]
    return out


def measure_size(n: int, folder: Path) -> dict[str, Any]:
    path = folder / f"memory-{n}.db"
    fill(path, n)
    store = SqliteStore(path)
    recent, facts = _memories()
    io = StoreMemory({"recent": store, "facts": store})
    scope = scope_of(WHO, "").key
    row: dict[str, Any] = {"turns": n, "facts": n, "other_scopes": OTHERS}
    for memory in (recent, facts):
        for _ in range(20):  # warm: the pages of this scope in the cache
            _done(io.recall(memory, scope))
        times = []
        fresh_heap()
        for _ in range(RECALLS):
            t0 = clock()
            recalled = _done(io.recall(memory, scope))
            times.append(clock() - t0)
        row[f"recall_{memory.id}_us"] = statistics.median(times) * 1e6
        row[f"recall_{memory.id}_entries"] = recalled["entries"]
    stage: list[float] = []
    write: list[float] = []
    for i in range(RUNS):
        agent = Agent.create(provider=mock(reply=f"answer {i}"), model="m", store=store)
        agent = agent.system("Help.").memory(*_memories()).build()
        agent.run_sync(f"turn {i}", identity=WHO)
        for c in agent.snapshot().history():
            if c.stage_id == "memory-recall":
                stage.append(c.ended_at - c.started_at)
            elif c.stage_id == "memory-write":
                write.append(c.ended_at - c.started_at)
    row["stage_recall_us"] = statistics.median(stage[3:]) * 1e6  # the first runs warm up
    row["stage_write_us"] = statistics.median(write[3:]) * 1e6
    store.close()
    row["plan"] = plans(path)
    row["file_mb"] = sum(p.stat().st_size for p in folder.glob(f"memory-{n}.db*")) / 1e6
    return row


def measure(sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for n in sizes:
            print(f"  memory, {n:,} remembered turns ...", end="", flush=True)
            rows.append(measure_size(n, Path(tmp)))
            print(" done", flush=True)
    return {"rows": rows, "turns_recalled": TURNS, "facts_recalled": FACTS, "runs": RUNS}


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    rows = {r["turns"]: r for r in section["rows"]}
    small, large = rows[min(rows)], rows[max(rows)]
    out = []
    for key, what in (
        ("recall_recent_us", f"recall of the last {TURNS} turns"),
        ("recall_facts_us", f"recall of {FACTS} facts"),
        ("stage_recall_us", "memory-recall stage (both memories, with its commit)"),
    ):
        ms = large[key] / 1e3
        out.append({"target": f"{what}, ms at {large['turns']:,} turns (SQLite)",
                    "measured": ms, "threshold": f"< {TARGET_RECALL_MS}",
                    "pass": ms < TARGET_RECALL_MS})  # fmt: skip
        ratio = large[key] / small[key]
        out.append({"target": f"{what}: {large['turns']:,} / {small['turns']:,} turns",
                    "measured": ratio, "threshold": f"<= {TARGET_FLAT}",
                    "pass": ratio <= TARGET_FLAT})  # fmt: skip
    return out


def rows_for_table(section: dict[str, Any]) -> list[list[Any]]:
    return [
        [r["turns"], r["recall_recent_us"], r["recall_facts_us"], r["stage_recall_us"],
         r["stage_write_us"], r["file_mb"]]
        for r in section["rows"]
    ]  # fmt: skip


HEADERS = [
    "remembered turns",
    f"recall {TURNS} turns µs",
    f"recall {FACTS} facts µs",
    "memory-recall stage µs",
    "memory-write stage µs",
    "file MB",
]

NOTE = (
    "trackway memory (benches/_agent_memory.py): a SQLite file (synchronous=FULL) holding N "
    f"turns and N facts for the person the runs are for and for {OTHERS} others; recall = "
    f"the recent ({TURNS} turns) or facts ({FACTS}) memory's read, decode and served text "
    f"through the store, median of {RECALLS}; the stages = their commit's ended_at - "
    f"started_at in {RUNS} agent runs on the file (mock model, the first 3 left out), "
    "memory-write including its durable write (one transaction per memory)."
)
