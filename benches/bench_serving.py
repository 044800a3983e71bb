"""Serving many runs at once (issue 39): N concurrent agent runs on one event loop, each
3 tool turns then an answer, a model that sleeps 20 ms per call, on no store, memory, SQLite
and PostgreSQL, with LangGraph ``create_react_agent`` (no checkpointer, ``InMemorySaver``,
``AsyncSqliteSaver``, ``AsyncPostgresSaver``) and pydantic-ai (no store) side by side in the
same process run; then many paused runs (an agent that asks a person) resumed by 4 workers.
See ``benches/README.md``.

    .venv/bin/python benches/bench_serving.py [--quick] [--no-peers] [--only memory,sqlite,postgres]
        [--sizes 10,100] [--peer-max 1000] [--paused 10000] [--no-paused] [--gc-freeze]
        [--gc-young N] [--rounds 3] [--steady SECONDS] [--census]

PostgreSQL runs when ``TRACKWAY_TEST_PG_DSN`` is set (each cell in a schema of its own);
without it its rows say skipped, and why.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
warnings.filterwarnings("ignore")

import _serving_census as census_case  # noqa: E402
import _serving_paused as paused_case  # noqa: E402
import _serving_steady as steady_case  # noqa: E402
from _common import dist_version, pg_schema, print_table, print_targets, write_json  # noqa: E402
from _serving_load import (  # noqa: E402
    CALLS,
    MODEL_S,
    GcTime,
    RssPeak,
    Traces,
    added_per_call,
    answer_for,
    clock,
    percentile,
    settle_heap,
)
from _serving_systems import (  # noqa: E402
    DURABILITY,
    LABELS,
    PEER_DISTS,
    PROBES,
    STORE_PROBES,
    STORES,
    system,
    unavailable,
)

SIZES = (10, 100, 1000, 5000)
QUICK_SIZES = (10, 100, 1000)
PEER_MAX = 1000  # peers run up to this N (LangGraph at ~20 runs/s would take minutes at 5,000)
WARM_RUNS = 10
PG_ENV = "TRACKWAY_TEST_PG_DSN"
TARGET_AT = 1000
TARGET_VS_LANGGRAPH = 10.0
TARGET_P99_MS = 5.0
TARGET_FLAT = 1.3
TARGET_KB_PER_RUN = 50.0
HEADERS = [
    "system",
    "store",
    "N",
    "runs/s",
    "× LangGraph",
    "added p50 ms",
    "added p99 ms",
    "RSS KB/run",
    "CPU ms/run",
    "of it GC ms",
]


async def _cell_async(
    name: str, store: str, n: int, where: dict[str, Any], freeze: bool = False
) -> dict[str, Any]:
    traces = Traces()
    async with system(name, store, traces, where) as run:
        keys = [f"warm {i}" for i in range(WARM_RUNS)]
        await _all(run, traces, keys)  # untimed: first-call imports and caches
        traces.by_key.clear()
        keys = [f"go {i}" for i in range(n)]
        base = settle_heap()
        if freeze:  # the server tuning --gc-freeze measures: startup's heap out of the GC
            gc.freeze()
        try:
            cpu = time.process_time()
            with RssPeak() as rss, GcTime() as gc_time:
                t = clock()
                await _all(run, traces, keys)
                wall = clock() - t
            cpu = time.process_time() - cpu
        finally:
            if freeze:
                gc.unfreeze()
    added = added_per_call(list(traces.by_key.values()))
    return {
        "n": n,
        "wall_s": wall,
        "runs_per_s": n / wall,
        "added_p50_ms": percentile(added, 50) * 1e3,
        "added_p99_ms": percentile(added, 99) * 1e3,
        "added_mean_ms": statistics.fmean(added) * 1e3,
        "rss_kb_per_run": (rss.peak - base) / n / 1024,
        "cpu_ms_per_run": cpu / n * 1e3,
        "cpu_us_per_call": cpu / n / CALLS * 1e6,
        "gc_ms_per_run": gc_time.seconds / n * 1e3,
        "gc_full_collections": gc_time.full,
    }


async def _all(run: Any, traces: Traces, keys: Sequence[str]) -> None:
    async def one(key: str) -> None:
        traces.start(key)
        out = await run(key)
        traces.end(key)
        assert out == answer_for(key), (key, out)

    await asyncio.gather(*(one(k) for k in keys))


def cell(name: str, store: str, n: int, pg: str | None, freeze: bool = False) -> dict[str, Any]:
    """One (system, store, N) cell in a fresh temp dir (and schema), on a fresh event loop;
    ``freeze``: ``gc.freeze()`` once the warm-up runs are done (``--gc-freeze``)."""
    where: dict[str, Any] = {"dir": tempfile.mkdtemp(prefix="bench_serving_")}
    try:
        if store == "postgres":
            assert pg is not None
            with pg_schema(pg) as dsn:
                where["dsn"] = dsn
                return asyncio.run(_cell_async(name, store, n, where, freeze))
        return asyncio.run(_cell_async(name, store, n, where, freeze))
    finally:
        shutil.rmtree(where["dir"], ignore_errors=True)


def plan(args: argparse.Namespace) -> tuple[list[tuple[str, str]], list[str]]:
    """The (system, store) pairs to run, and a note for each one skipped."""
    only = set(args.only.split(",")) if args.only else None
    pg = os.environ.get(PG_ENV)
    pairs: list[tuple[str, str]] = []
    notes: list[str] = []
    for name, stores in STORES.items():
        if name != "trackway" and args.no_peers:
            continue
        why = None if name == "trackway" else unavailable(PROBES[name])
        for store in stores:
            if only is not None and store not in only:
                continue
            label = f"{name} / {LABELS[name, store]}"
            reason = why or (
                unavailable(STORE_PROBES[name, store]) if (name, store) in STORE_PROBES else None
            )
            if store == "postgres" and not pg:
                reason = f"{PG_ENV} is not set"
            if reason:
                notes.append(f"{label} is skipped: {reason}.")
            else:
                pairs.append((name, store))
    return pairs, notes


def targets(rows: list[dict[str, Any]], sizes: Sequence[int]) -> list[dict[str, Any]]:
    by = {(r["system"], r["store"], r["n"]): r for r in rows}
    out: list[dict[str, Any]] = []
    for store in ("none", "memory", "sqlite", "postgres"):
        tw = by.get(("trackway", store, TARGET_AT))
        if tw is None:
            continue
        lg = by.get(("langgraph", store, TARGET_AT))
        if lg is not None:
            ratio = tw["runs_per_s"] / lg["runs_per_s"]
            out.append(
                {
                    "target": f"{store}: trackway runs/s / LangGraph "
                    f"({LABELS['langgraph', store]}), N={TARGET_AT}",
                    "measured": ratio,
                    "threshold": f"≥ {TARGET_VS_LANGGRAPH:g}",
                    "pass": ratio >= TARGET_VS_LANGGRAPH,
                }
            )
        out.append(
            {
                "target": f"{store}: trackway framework-added p99 ms per turn, N={TARGET_AT}",
                "measured": tw["added_p99_ms"],
                "threshold": f"≤ {TARGET_P99_MS:g}",
                "pass": tw["added_p99_ms"] <= TARGET_P99_MS,
            }
        )
        out.append(
            {
                "target": f"{store}: trackway RSS KB per in-flight run, N={TARGET_AT}",
                "measured": tw["rss_kb_per_run"],
                "threshold": f"≤ {TARGET_KB_PER_RUN:g}",
                "pass": tw["rss_kb_per_run"] <= TARGET_KB_PER_RUN,
            }
        )
        low, high = by.get(("trackway", store, 100)), by.get(("trackway", store, max(sizes)))
        if low is not None and high is not None and high is not low:
            flat = high["cpu_ms_per_run"] / low["cpu_ms_per_run"]
            out.append(
                {
                    "target": f"{store}: trackway CPU per run, N={high['n']} / N=100",
                    "measured": flat,
                    "threshold": f"≤ {TARGET_FLAT:g}",
                    "pass": flat <= TARGET_FLAT,
                }
            )
    return out


STEADY_HEADERS = [
    "N in flight",
    "startup heap",
    "runs",
    "runs/s",
    "CPU ms/run",
    "of it GC ms",
    "full collections",
    "promoted/run",
]


def census(n: int) -> int:
    """``--census``: the objects a run in flight keeps for the collector, and what a
    finished run leaves behind, with no store and on ``MemoryStore``."""
    print(f"bench_serving --census: {n} runs held at their third model call", flush=True)
    rows = census_case.measure(n)
    print_table(
        "What a run keeps for the cyclic collector (trackway, tracked objects per run)",
        ["store", "N", "in flight", "left per finished run", "in flight, by type"],
        [
            [
                r["store"],
                r["n"],
                r["in_flight_per_run"],
                r["left_per_finished_run"],
                ", ".join(f"{k} {v:g}" for k, v in list(r["in_flight_by_type"].items())[:6]),
            ]
            for r in rows
        ],
        numeric=range(1, 4),
    )
    write_json("bench_serving_census", {"config": {"n": n, "held_at_call": 3}, "rows": rows})
    return 0


def steady(n: int, seconds: float) -> int:
    """``--steady``: the collector's cost per run with N runs kept in flight."""
    print(f"bench_serving --steady: {n} runs in flight, {seconds:g} s timed", flush=True)
    rows = steady_case.measure(n, seconds)
    print_table(
        "Steady state (trackway, no store): the garbage collector per run",
        STEADY_HEADERS,
        [
            [
                r["n"],
                "frozen" if r["frozen"] else "collected",
                r["runs"],
                r["runs_per_s"],
                r["cpu_ms_per_run"],
                r["gc_ms_per_run"],
                r["gc_full_collections"],
                r["promoted_per_run"],
            ]
            for r in rows
        ],
        numeric=range(2, 8),
    )
    write_json(
        "bench_serving_steady",
        {
            "config": {"n": n, "seconds": seconds, "warm_s": 2.0, "gc": gc.get_threshold()},
            "rows": rows,
        },
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 10, 100, 1,000; 1,000 paused runs")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--profile", action="store_true", help="ignored (run_all passes it on)")
    ap.add_argument(
        "--only", default="", help="stores, comma-separated: none,memory,sqlite,postgres"
    )
    ap.add_argument("--sizes", default="", help="N values, comma-separated (overrides --quick)")
    ap.add_argument("--peer-max", type=int, default=PEER_MAX, help="largest N a peer runs")
    ap.add_argument(
        "--paused", type=int, default=0, help="paused runs (default 10,000; --quick 1,000)"
    )
    ap.add_argument("--no-paused", action="store_true")
    ap.add_argument(
        "--steady",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="only the steady-state garbage collector measure: N runs (the first of "
        "--sizes, else 1,000) kept in flight for SECONDS after a 2 s warm-up, in 2 pairs "
        "frozen (gc.freeze()) and not",
    )
    ap.add_argument(
        "--census",
        action="store_true",
        help="only count what a run keeps for the garbage collector: N runs (the first of "
        "--sizes, else 1,000) held at their third model call, with no store and on "
        "MemoryStore, and what each finished run leaves behind",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=0,
        help=f"rounds of the N={TARGET_AT} cells, the order rotated, each cell its median "
        "round (default 3; --quick 1)",
    )
    ap.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() before each cell's timed runs, for every system alike: the heap "
        "built at startup (imports, the built agent or graph) leaves the cyclic collector's "
        "full collections, as a server can do once after startup",
    )
    ap.add_argument(
        "--gc-young",
        type=int,
        default=0,
        help="allocations between the collector's young collections, for the whole process "
        "(every system alike; Python's default is 700): what trackway.engine.serving_gc, "
        "trackway serve and trackway worker set while serving",
    )
    ap.add_argument(
        "--durability",
        choices=("sync", "batch", "exit"),
        default="sync",
        help="when a trackway run's commits reach its store (default sync: each before the "
        "run's next stage); the peers keep theirs",
    )
    args = ap.parse_args(argv)
    DURABILITY["trackway"] = args.durability
    if args.durability != "sync":
        print(f"bench_serving: trackway durability {args.durability!r}", flush=True)
    if args.gc_young:
        gc.set_threshold(args.gc_young, *gc.get_threshold()[1:])
        print(f"bench_serving: gc threshold {gc.get_threshold()} for every system", flush=True)
    sizes = (
        tuple(int(s) for s in args.sizes.split(","))
        if args.sizes
        else (QUICK_SIZES if args.quick else SIZES)
    )
    args.rounds = args.rounds or (1 if args.quick else 3)
    if args.steady:
        return steady(int(args.sizes.split(",")[0]) if args.sizes else 1000, args.steady)
    if args.census:
        return census(int(args.sizes.split(",")[0]) if args.sizes else 1000)
    pg = os.environ.get(PG_ENV)
    pairs, notes = plan(args)
    print(
        f"bench_serving: {CALLS - 1} tool turns + an answer per run, "
        f"model {MODEL_S * 1e3:g} ms per call; "
        f"N = {', '.join(map(str, sizes))}; peers up to N = {args.peer_max}",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    for n in sizes:
        cells = [(name, store) for name, store in pairs if name == "trackway" or n <= args.peer_max]
        rounds = args.rounds if n == TARGET_AT else 1
        samples: dict[tuple[str, str], list[dict[str, Any]]] = {pair: [] for pair in cells}
        for r in range(rounds):
            # every cell once per round, the order rotated: a slow patch of the VM bills
            # each system alike, and each cell reports its median round (by runs/s)
            order = cells[r % len(cells) :] + cells[: r % len(cells)] if cells else []
            for name, store in order:
                tag = f" (round {r + 1}/{rounds})" if rounds > 1 else ""
                print(f"  {name} / {LABELS[name, store]}, N={n}{tag} ...", end="", flush=True)
                got = cell(name, store, n, pg, args.gc_freeze)
                samples[name, store].append(got)
                print(
                    f" {got['runs_per_s']:,.1f} runs/s, p99 +{got['added_p99_ms']:,.2f} ms",
                    flush=True,
                )
        for name, store in cells:
            runs = sorted(samples[name, store], key=lambda g: g["runs_per_s"])
            row = {
                "system": name,
                "store": store,
                "label": LABELS[name, store],
                **runs[len(runs) // 2],
            }
            if rounds > 1:
                row["rounds_runs_per_s"] = [g["runs_per_s"] for g in samples[name, store]]
            rows.append(row)
    lg_rate = {(r["store"], r["n"]): r["runs_per_s"] for r in rows if r["system"] == "langgraph"}
    table = []
    for r in rows:
        ratio = lg_rate.get((r["store"], r["n"]))
        r["vs_langgraph"] = (
            r["runs_per_s"] / ratio if ratio and r["system"] != "langgraph" else None
        )
        table.append(
            [
                r["system"],
                r["label"],
                r["n"],
                r["runs_per_s"],
                r["vs_langgraph"],
                r["added_p50_ms"],
                r["added_p99_ms"],
                r["rss_kb_per_run"],
                r["cpu_ms_per_run"],
                r["gc_ms_per_run"],
            ]
        )
    print_table(
        "Concurrent runs on one event loop (added: wall time between model calls, "
        "a run's setup and teardown included)",
        HEADERS,
        table,
        numeric=range(2, 10),
    )
    marks = targets(rows, sizes)
    paused: list[dict[str, Any]] = []
    if not args.no_paused:
        count = args.paused or (1000 if args.quick else 10_000)
        paused, more = paused_case.measure(count, pg, args.only)
        notes += more
        paused_case.print_rows(paused)
        marks += paused_case.targets(paused)
    print_targets(marks)
    for note in notes:
        print(f"note: {note}")
    versions = {d: dist_version(d) for d in ("trackway", *PEER_DISTS)}
    write_json(
        "bench_serving",
        {
            "config": {
                "sizes": list(sizes),
                "peer_max": args.peer_max,
                "model_s": MODEL_S,
                "tool_turns": CALLS - 1,
                "durability": args.durability,
                "gc_freeze": args.gc_freeze,
                "gc_young": args.gc_young or gc.get_threshold()[0],
                "rounds_at_target": args.rounds,
            },
            "versions": versions,
            "rows": rows,
            "paused": paused,
            "targets": marks,
            "notes": notes,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
