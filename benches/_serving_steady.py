"""What the cyclic garbage collector costs a server in steady state (``bench_serving.py
--steady SECONDS``): N trackway runs (no store, the serving workload) kept in flight, each
worker starting its next run when one ends, for a warm-up and then ``SECONDS`` timed; in
pairs, with the startup heap frozen (``gc.freeze()``) and not, the order alternated.

Reported per run: CPU, the collector's share, full collections, and how many objects
reached the old generation: at each generation-1 collection, the objects of generations 0
and 1 less what it collected (the collector promotes every survivor).
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

from _serving_load import GcTime, Promotions, Traces, clock, settle_heap
from _serving_systems import system


async def _steady(n: int, seconds: float, warm: float, freeze: bool) -> dict[str, Any]:
    traces = Traces()
    async with system("trackway", "none", traces, {"dir": "."}) as run:
        started = 0
        deadline = 0.0

        async def worker() -> None:
            nonlocal started
            while time.perf_counter() < deadline:
                started += 1
                key = f"go {started}"
                traces.start(key)
                await run(key)
                traces.end(key)

        deadline = time.perf_counter() + warm  # to steady state: the old generation filled
        await asyncio.gather(*(worker() for _ in range(n)))
        settle_heap()
        traces.by_key.clear()
        if freeze:
            gc.freeze()
        try:
            before = started
            cpu = time.process_time()
            with GcTime() as gc_time, Promotions() as promoted:
                t = clock()
                deadline = time.perf_counter() + seconds
                await asyncio.gather(*(worker() for _ in range(n)))
                wall = clock() - t  # the runs in flight at the deadline run to their end
            cpu = time.process_time() - cpu
        finally:
            if freeze:
                gc.unfreeze()
        runs = started - before
    return {
        "n": n,
        "frozen": freeze,
        "runs": runs,
        "runs_per_s": runs / wall,
        "cpu_ms_per_run": cpu / runs * 1e3,
        "gc_ms_per_run": gc_time.seconds / runs * 1e3,
        "gc_full_collections": gc_time.full,
        "promoted_per_run": promoted.count / runs,
    }


def measure(n: int, seconds: float, warm: float = 2.0, pairs: int = 2) -> list[dict[str, Any]]:
    """``pairs`` pairs of steady cells, frozen and not, the order alternated."""
    rows = []
    for i in range(pairs):
        for freeze in (False, True) if i % 2 == 0 else (True, False):
            rows.append(asyncio.run(_steady(n, seconds, warm, freeze)))
    return rows
