"""Paused runs for ``bench_serving.py``: ``count`` agent runs that each ask a person
(``ask_human``) and pause in one store, then all resumed by 4 workers.

- SQLite: the runs start together on one loop and pause; 4 tasks then take checkpoints off
  one shared list and ``await agent.resume(checkpoint_json, answer)``.
- PostgreSQL: ``store.submit`` queues the runs; 4 ``Worker``s (one loop, ``idle_exit``)
  drive them to their pause; ``store.answer`` answers each; the 4 workers resume them.

Exactly once: the model counts, per run, the calls that read the person's answer (each must
be 1), every run is stored ``done``, and (SQLite) a second resume of a resumed checkpoint
must raise ``CheckpointClaimedError``.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import pg_schema, print_table
from _serving_load import MODEL_S, RssPeak, clock, settle_heap

WORKERS = 4
ANSWER = "yes"
DOUBLE_CHECKS = 20  # resumed checkpoints resumed again, each must be refused


class AskingProvider:
    """First call: ask the person; the call after the answer counts it, then answers."""

    name = "asking"

    def __init__(self) -> None:
        self.answered: Counter[str] = Counter()

    async def complete(self, request: Any) -> Any:
        from trackway.agent import LLMResponse, ToolCall

        key = request.messages[0].content
        await asyncio.sleep(MODEL_S)
        if len(request.messages) == 1:
            call = ToolCall(id="ask_0", name="ask_human", args={"question": "Go on?"})
            return LLMResponse(tool_calls=(call,))
        if request.messages[-1].content != ANSWER:
            raise AssertionError(f"{key}: the model read {request.messages[-1].content!r}")
        self.answered[key] += 1
        return LLMResponse(content=f"done {key}")


def _agent(provider: AskingProvider, store: Any) -> Any:
    from _serving_systems import trackway_agent

    from trackway.tools import ask_human

    return trackway_agent(provider, store, ask_human())


def _phase(fn: Any) -> dict[str, Any]:
    base = settle_heap()
    cpu = time.process_time()
    with RssPeak() as rss:
        t = clock()
        fn()
        wall = clock() - t
    return {"s": wall, "cpu_s": time.process_time() - cpu, "rss_mb": (rss.peak - base) / 2**20}


def sqlite_paused(count: int) -> dict[str, Any]:
    from trackway import CheckpointClaimedError, SqliteStore
    from trackway.agent import is_paused

    folder = tempfile.mkdtemp(prefix="bench_serving_paused_")
    store = SqliteStore(Path(folder) / "paused.db")
    provider = AskingProvider()
    agent = _agent(provider, store)
    checkpoints: list[str] = []

    async def pause_all() -> None:
        outs = await asyncio.gather(*(agent.run(f"go {i}") for i in range(count)))
        for out in outs:
            assert is_paused(out), out
            checkpoints.append(out.checkpoint.to_json())

    async def resume_all() -> None:
        todo = iter(checkpoints)

        async def worker() -> None:
            for cp in todo:
                out = await agent.resume(cp, ANSWER)
                assert isinstance(out, str), out

        await asyncio.gather(*(worker() for _ in range(WORKERS)))
        refused = 0
        for cp in checkpoints[:DOUBLE_CHECKS]:
            try:
                await agent.resume(cp, ANSWER)
            except CheckpointClaimedError:
                refused += 1
        result["double_refused"] = refused

    result: dict[str, Any] = {"store": "sqlite", "runs": count}
    try:
        result["pause"] = _phase(lambda: asyncio.run(pause_all()))
        result["resume"] = _phase(lambda: asyncio.run(resume_all()))
        statuses = Counter(run.status for run in store.list_runs())
        result["bytes"] = sum(p.stat().st_size for p in Path(folder).iterdir())
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)
    return _checked(result, provider, statuses, count)


def postgres_paused(count: int, base: str) -> dict[str, Any]:
    from trackway import PostgresStore
    from trackway.engine import Worker

    provider = AskingProvider()
    agent = _agent(provider, None)
    result: dict[str, Any] = {"store": "postgres", "runs": count}
    with pg_schema(base) as dsn:
        store = PostgresStore(dsn)

        async def drive() -> None:
            workers = [
                Worker(store, {"desk": agent}, max_concurrent_runs=64, poll_interval=0.05)
                for _ in range(WORKERS)
            ]
            await asyncio.gather(*(w.run(idle_exit=True) for w in workers))

        def pause_all() -> None:
            for i in range(count):
                store.submit("desk", f"go {i}")
            asyncio.run(drive())

        def resume_all() -> None:
            waiting = store.queue(["paused"], limit=count)
            assert len(waiting) == count, (len(waiting), store.queue_counts())
            for entry in waiting:
                store.answer(entry.checkpoint_id, ANSWER)
            asyncio.run(drive())

        try:
            result["pause"] = _phase(pause_all)
            result["resume"] = _phase(resume_all)
            statuses = Counter(run.status for run in store.list_runs())
            result["queue"] = dict(store.queue_counts())
        finally:
            store.close()
    return _checked(result, provider, statuses, count)


def _checked(
    result: dict[str, Any], provider: AskingProvider, statuses: Counter[str], count: int
) -> dict[str, Any]:
    answered = provider.answered
    result["statuses"] = dict(statuses)
    result["answered_once"] = sum(1 for i in range(count) if answered[f"go {i}"] == 1)
    result["answered_twice_or_more"] = sum(1 for v in answered.values() if v > 1)
    result["exactly_once"] = (
        result["answered_once"] == count
        and result["answered_twice_or_more"] == 0
        and statuses.get("done", 0) == count
        and result.get("double_refused", DOUBLE_CHECKS) == min(DOUBLE_CHECKS, count)
    )
    return result


def measure(count: int, pg: str | None, only: str) -> tuple[list[dict[str, Any]], list[str]]:
    stores = set(only.split(",")) if only else {"sqlite", "postgres"}
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    if "sqlite" in stores:
        print(f"  paused: {count:,} runs on SQLite ...", end="", flush=True)
        rows.append(sqlite_paused(count))
        print(" done", flush=True)
    if "postgres" in stores:
        if pg:
            print(f"  paused: {count:,} runs on PostgreSQL ...", end="", flush=True)
            rows.append(postgres_paused(count, pg))
            print(" done", flush=True)
        else:
            notes.append("paused runs on PostgreSQL are skipped: TRACKWAY_TEST_PG_DSN is not set.")
    return rows, notes


def print_rows(rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    print_table(
        f"Paused runs (ask_human), then all resumed by {WORKERS} workers",
        [
            "store",
            "runs",
            "pause s",
            "pause RSS MB",
            "resume s",
            "resumed/s",
            "resume RSS MB",
            "resume CPU ms/run",
            "answered once",
            "exactly once",
        ],
        [
            [
                r["store"],
                r["runs"],
                r["pause"]["s"],
                r["pause"]["rss_mb"],
                r["resume"]["s"],
                r["runs"] / r["resume"]["s"],
                r["resume"]["rss_mb"],
                r["resume"]["cpu_s"] / r["runs"] * 1e3,
                r["answered_once"],
                r["exactly_once"],
            ]
            for r in rows
        ],
    )


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "target": f"paused {r['runs']:,} on {r['store']}: runs not resumed exactly once",
            "measured": float(
                r["runs"]
                - r["answered_once"]
                + r["answered_twice_or_more"]
                + (0 if r["exactly_once"] else 0.5)
            ),
            "threshold": "= 0",
            "pass": bool(r["exactly_once"]),
        }
        for r in rows
    ]
