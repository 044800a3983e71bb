"""Engine benchmarks: per-stage overhead, growth over long runs, memory, chains and forks.

Runs every workload on trackway (in-memory log, no recorders) and, when installed, on
LangGraph (StateGraph, no checkpointer) and Burr (ApplicationBuilder, no persister), prints
tables and writes ``benches/results/bench_engine.json``. See ``benches/README.md``.

    .venv/bin/python benches/bench_engine.py [--no-peers] [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import operator
import os
import sys
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from _common import (
    clock,
    dist_version,
    fresh_heap,
    median_runs,
    print_table,
    print_targets,
    profile_call,
    tenth_growth,
    top_functions,
    write_json,
)

os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
warnings.filterwarnings("ignore")

from trackway import Executor, flow_chart  # noqa: E402

PAYLOAD = "x" * 1000
REPEATS = 3
LOOP_SIZES = (1_000, 10_000, 100_000)
GROW_SIZES = (1_000, 10_000)
PEER_CAP = 10_000  # peers are not run above this many loop iterations
CHAIN_LEN = 500
FORK_WIDTH = 100
MEMORY_N = 10_000
SLOW_RUN_S = 5.0  # a peer run slower than this is not repeated (the cell is one run)
WARM_N = 1_000  # loop iterations of the untimed warm-up run before each measured cell

TARGET_US_PER_STAGE = 15.0
TARGET_GROWTH = 1.3
TARGET_MEMORY_FACTOR = 1.5
TARGET_VS_LANGGRAPH = 20.0
TARGET_VS_BURR = 7.0

Metrics = dict[str, float]
Runner = Callable[[], Metrics]


def _loop_metrics(total: float, steps: int, stamps: list[float]) -> Metrics:
    return {"total_s": total, "us_per_stage": total / steps * 1e6, **tenth_growth(stamps)}


# -- trackway -------------------------------------------------------------------------------


def tw_loop(n: int, grow: bool) -> Runner:
    """One stage looping on itself: read and increment ``n`` (and append 1 KB), break at n."""
    stamps: list[float] = []
    stamp = stamps.append

    def step(scope: Any) -> None:
        stamp(clock())
        if grow:
            scope.append("log", PAYLOAD)
        v = scope["n"] + 1
        scope["n"] = v
        if v >= n:
            scope.break_("done")

    executor = Executor(
        flow_chart("Step", step, id="step").loop_to("step").build(), max_iterations=n + 10
    )

    def run() -> Metrics:
        stamps.clear()
        t = clock()
        result = executor.run_sync({"n": 0})
        total = clock() - t
        assert result.state["n"] == n and len(result.snapshot) == n, result.status
        return _loop_metrics(total, n, stamps)

    return run


def tw_memory(n: int) -> dict[str, Any]:
    """Heap retained by a finished run of the growing loop (the result kept alive)."""

    def step(scope: Any) -> None:
        scope.append("log", PAYLOAD)
        v = scope["n"] + 1
        scope["n"] = v
        if v >= n:
            scope.break_("done")

    executor = Executor(
        flow_chart("Step", step, id="step").loop_to("step").build(), max_iterations=n + 10
    )
    fresh_heap()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = executor.run_sync({"n": 0})
    fresh_heap()
    retained = tracemalloc.get_traced_memory()[0] - base
    sites = tracemalloc.take_snapshot().statistics("lineno")[:6]
    tracemalloc.stop()
    assert len(result.state["log"]) == n and len(result.snapshot) == n
    del result
    written = n * len(PAYLOAD)
    bound = TARGET_MEMORY_FACTOR * (written + 1024 * n)
    return {
        "n": n,
        "retained_bytes": retained,
        "bytes_written": written,
        "bound_bytes": bound,
        "retained_per_commit_bytes": retained / n,
        "retained_over_written": retained / written,
        "pass": retained <= bound,
        "top_sites": [
            {
                "site": f"{os.path.basename(st.traceback[0].filename)}:{st.traceback[0].lineno}",
                "bytes": st.size,
                "count": st.count,
                "bytes_per_block": st.size / st.count,
            }
            for st in sites
        ],
    }


def _stage_writing(i: int) -> Callable[[Any], None]:
    key = f"k{i}"

    def stage(scope: Any) -> None:
        scope[key] = i

    return stage


def tw_chain(length: int) -> Runner:
    builder = flow_chart("S0", _stage_writing(0), id="s0")
    for i in range(1, length):
        builder = builder.then(f"S{i}", _stage_writing(i), id=f"s{i}")
    executor = Executor(builder.build())

    def run() -> Metrics:
        t = clock()
        result = executor.run_sync()
        total = clock() - t
        assert len(result.state) == length and len(result.snapshot) == length
        return {"total_s": total, "us_per_stage": total / length * 1e6}

    return run


def tw_fork(width: int) -> Runner:
    branches = {f"b{i}": _stage_writing(i) for i in range(width)}
    chart = flow_chart("Start", lambda scope: None, id="start").fork("Fan", branches).build()
    executor = Executor(chart)

    def run() -> Metrics:
        t = clock()
        result = executor.run_sync()
        total = clock() - t
        # the start stage, one commit per branch, and the merge commit
        assert len(result.state) == width and len(result.snapshot) == width + 2
        return {"total_s": total, "us_per_stage": total / width * 1e6}

    return run


# -- LangGraph ------------------------------------------------------------------------------


def lg_loop(n: int, grow: bool) -> Runner:
    from langgraph.graph import END, START, StateGraph

    fields: dict[str, Any] = {"n": int}
    if grow:
        fields["log"] = Annotated[list, operator.add]
    state_type = TypedDict("LoopState", fields)  # type: ignore[operator]
    stamps: list[float] = []
    stamp = stamps.append

    def step(s: dict[str, Any]) -> dict[str, Any]:
        stamp(clock())
        return {"n": s["n"] + 1, "log": [PAYLOAD]} if grow else {"n": s["n"] + 1}

    g = StateGraph(state_type)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["n"] >= n else "step")
    app = g.compile()
    inp: dict[str, Any] = {"n": 0, "log": []} if grow else {"n": 0}

    def run() -> Metrics:
        stamps.clear()
        t = clock()
        out = app.invoke(inp, {"recursion_limit": n + 10})
        total = clock() - t
        assert out["n"] == n
        return _loop_metrics(total, n, stamps)

    return run


def _lg_writer(i: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    key = f"k{i}"
    return lambda s: {key: i}


def lg_chain(length: int) -> Runner:
    from langgraph.graph import END, START, StateGraph

    state_type = TypedDict("ChainState", {f"k{i}": int for i in range(length)})  # type: ignore[operator]
    g = StateGraph(state_type)
    prev = START
    for i in range(length):
        g.add_node(f"s{i}", _lg_writer(i))
        g.add_edge(prev, f"s{i}")
        prev = f"s{i}"
    g.add_edge(prev, END)
    app = g.compile()

    def run() -> Metrics:
        t = clock()
        out = app.invoke({}, {"recursion_limit": length + 10})
        total = clock() - t
        assert len(out) == length
        return {"total_s": total, "us_per_stage": total / length * 1e6}

    return run


def lg_fork(width: int) -> Runner:
    from langgraph.graph import END, START, StateGraph

    state_type = TypedDict("ForkState", {f"k{i}": int for i in range(width)})  # type: ignore[operator]
    g = StateGraph(state_type)
    for i in range(width):
        g.add_node(f"b{i}", _lg_writer(i))
        g.add_edge(START, f"b{i}")
        g.add_edge(f"b{i}", END)
    app = g.compile()

    def run() -> Metrics:
        t = clock()
        out = app.invoke({})
        total = clock() - t
        assert len(out) == width
        return {"total_s": total, "us_per_stage": total / width * 1e6}

    return run


# -- Burr -----------------------------------------------------------------------------------


def burr_loop(n: int, grow: bool) -> Runner:
    from burr.core import ApplicationBuilder, State, action, default, expr

    stamps: list[float] = []
    stamp = stamps.append
    keys = ["n", "log"] if grow else ["n"]

    @action(reads=keys, writes=keys)
    def step(state: State) -> State:
        stamp(clock())
        st = state.update(n=state["n"] + 1)
        return st.append(log=PAYLOAD) if grow else st

    @action(reads=[], writes=[])
    def done(state: State) -> State:
        return state

    def build() -> Any:
        return (
            ApplicationBuilder()
            .with_actions(step=step, done=done)
            .with_transitions(("step", "step", expr(f"n < {n}")), ("step", "done", default))
            .with_state(n=0, **({"log": []} if grow else {}))
            .with_entrypoint("step")
            .build()
        )

    def run() -> Metrics:
        stamps.clear()
        app = build()
        t = clock()
        _, _, state = app.run(halt_after=["done"])
        total = clock() - t
        assert state["n"] == n
        return _loop_metrics(total, n + 1, stamps)  # n steps plus the final "done" action

    return run


def _burr_writer(i: int) -> Any:
    from burr.core import State, action

    key = f"k{i}"

    @action(reads=[], writes=[key])
    def write(state: State) -> State:
        return state.update(**{key: i})

    return write


def burr_chain(length: int) -> Runner:
    from burr.core import ApplicationBuilder

    actions = {f"s{i}": _burr_writer(i) for i in range(length)}
    transitions = [(f"s{i}", f"s{i + 1}") for i in range(length - 1)]

    def run() -> Metrics:
        app = (
            ApplicationBuilder()
            .with_actions(**actions)
            .with_transitions(*transitions)
            .with_entrypoint("s0")
            .build()
        )
        t = clock()
        _, _, state = app.run(halt_after=[f"s{length - 1}"])
        total = clock() - t
        assert all(f"k{i}" in state for i in range(length))
        return {"total_s": total, "us_per_stage": total / length * 1e6}

    return run


def burr_fork(width: int) -> Runner:
    from burr.core import ApplicationBuilder
    from burr.core.action import create_action
    from burr.core.parallelism import MapActions

    keys = [f"k{i}" for i in range(width)]
    branches = [create_action(_burr_writer(i), f"b{i}") for i in range(width)]

    class Fan(MapActions):  # type: ignore[misc]
        def actions(self, state: Any, context: Any, inputs: Any) -> Any:
            yield from branches

        def reduce(self, state: Any, states: Any) -> Any:
            merged: dict[str, Any] = {}
            for sub in states:
                merged.update({k: sub[k] for k in keys if k in sub})
            return state.update(**merged)

        @property
        def reads(self) -> list[str]:
            return []

        @property
        def writes(self) -> list[str]:
            return keys

    def run() -> Metrics:
        app = (
            ApplicationBuilder()
            .with_actions(fan=Fan())
            .with_transitions()
            .with_entrypoint("fan")
            .build()
        )
        t = clock()
        _, _, state = app.run(halt_after=["fan"])
        total = clock() - t
        assert all(k in state for k in keys)
        return {"total_s": total, "us_per_stage": total / width * 1e6}

    return run


# -- driver ---------------------------------------------------------------------------------


def _available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def measure(make: Callable[[], Runner], warm: Callable[[], Runner], *, peer: bool) -> Any:
    """Warm up on a small instance, then take the median of REPEATS runs."""
    warm()()
    return median_runs(make(), REPEATS, adaptive_s=SLOW_RUN_S if peer else None)


def profile_loop(n: int) -> list[dict[str, Any]]:
    """cProfile the plain trackway loop at ``n`` and return the top 10 functions by tottime."""
    runner = tw_loop(n, grow=False)
    runner()
    return top_functions(profile_call(runner), 10)


TRACKWAY = {"loop": tw_loop, "chain": tw_chain, "fork": tw_fork}
LANGGRAPH = {"loop": lg_loop, "chain": lg_chain, "fork": lg_fork}
BURR = {"loop": burr_loop, "chain": burr_chain, "fork": burr_fork}


def run_workloads(
    peers: dict[str, dict[str, Callable[..., Runner]]],
    loop_sizes: tuple[int, ...],
    grow_sizes: tuple[int, ...],
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def bench(workload: str, kind: str, n: int, *params: Any) -> None:
        warm = (min(n, WARM_N), *params[1:]) if kind == "loop" else params
        print(f"  {workload} N={n:,} ...", end="", flush=True)
        tw = TRACKWAY[kind]
        row: dict[str, Any] = {"workload": workload, "n": n}
        row["trackway"] = measure(lambda: tw(*params), lambda: tw(*warm), peer=False)
        for name, fns in peers.items():
            if kind == "loop" and n > PEER_CAP:
                row[name] = None
                continue
            f = fns[kind]
            cell = measure(lambda f=f: f(*params), lambda f=f: f(*warm), peer=True)
            cell["ratio"] = cell["us_per_stage"] / row["trackway"]["us_per_stage"]
            row[name] = cell
        rows.append(row)
        print(" done", flush=True)

    for n in loop_sizes:
        bench("(a) loop, 1 int key", "loop", n, n, False)
    for n in grow_sizes:
        bench("(b) loop, +1 KB/step", "loop", n, n, True)
    bench(f"(c) chain of {CHAIN_LEN} stages", "chain", CHAIN_LEN, CHAIN_LEN)
    bench(f"(d) fork of {FORK_WIDTH} branches", "fork", FORK_WIDTH, FORK_WIDTH)
    return rows


def check_targets(rows: list[dict[str, Any]], memory: dict[str, Any]) -> list[dict[str, Any]]:
    targets: list[dict[str, Any]] = []

    def target(name: str, measured: float, threshold: str, ok: bool) -> None:
        targets.append({"target": name, "measured": measured, "threshold": threshold, "pass": ok})

    for row in rows:
        tw, n, tag = row["trackway"], row["n"], row["workload"][:3]
        if tag == "(a)":
            us = tw["us_per_stage"]
            target(f"(a) µs/stage, N={n:,}", us, f"≤ {TARGET_US_PER_STAGE:g}",
                   us <= TARGET_US_PER_STAGE)  # fmt: skip
        if tag in ("(a)", "(b)"):
            g = tw["growth"]
            target(f"{tag} growth last/first tenth, N={n:,}", g, f"≤ {TARGET_GROWTH:g}",
                   g <= TARGET_GROWTH)  # fmt: skip
    mb = memory["retained_bytes"] / 2**20
    target(f"(b) retained MB, N={memory['n']:,}", mb,
           f"≤ {memory['bound_bytes'] / 2**20:.1f}", memory["pass"])  # fmt: skip
    for row in rows:
        if row["workload"][:3] != "(a)":
            continue
        for name, label, goal in (
            ("langgraph", "LangGraph", TARGET_VS_LANGGRAPH),
            ("burr", "Burr", TARGET_VS_BURR),
        ):
            if row.get(name) is not None:
                r = row[name]["ratio"]
                target(f"(a) {label}/trackway per step, N={row['n']:,}", r, f"≥ {goal:g}×",
                       r >= goal)  # fmt: skip
    return targets


def _two(value: float | None) -> str | None:
    return None if value is None else f"{value:.2f}"


def print_report(
    rows: list[dict[str, Any]], memory: dict[str, Any], targets: list[dict[str, Any]]
) -> None:
    def peer_cells(row: dict[str, Any], name: str) -> list[Any]:
        cell = row.get(name)
        if cell is None:
            return [None, None]
        mark = "*" if cell["repeats"] < REPEATS else ""
        return [f"{cell['us_per_stage']:,.1f}{mark}", f"{cell['ratio']:,.1f}×"]

    table = [
        [row["workload"], row["n"], row["trackway"]["total_s"] * 1e3,
         row["trackway"]["us_per_stage"], _two(row["trackway"].get("growth")),
         _two(row["trackway"].get("growth_median")),
         *peer_cells(row, "langgraph"), *peer_cells(row, "burr")]
        for row in rows
    ]  # fmt: skip
    print_table(
        "Per stage, µs ((d): per branch). growth = last tenth / first tenth of the run, by mean "
        "stage time (med: by median, GC pauses left out). LG/tw, Burr/tw = peer time / trackway",
        ["workload", "N", "tw total ms", "tw µs", "tw growth", "growth med",
         "LangGraph µs", "LG/tw", "Burr µs", "Burr/tw"],
        table,
    )  # fmt: skip
    print_table(
        f"Memory retained after the +1 KB/step loop, N={memory['n']:,} (tracemalloc, "
        "result kept alive); bound = 1.5 × (bytes written + 1 KB per commit)",
        ["N", "retained MB", "written MB", "bound MB", "bytes/commit", "result"],
        [[memory["n"], memory["retained_bytes"] / 2**20, memory["bytes_written"] / 2**20,
          memory["bound_bytes"] / 2**20, memory["retained_per_commit_bytes"], memory["pass"]]],
    )  # fmt: skip
    print_table(
        "Where that memory was allocated (tracemalloc, top sites)",
        ["site", "MB", "blocks", "bytes/block"],
        [[t["site"], t["bytes"] / 2**20, t["count"], t["bytes_per_block"]]
         for t in memory["top_sites"]],
    )  # fmt: skip
    print_targets(targets)


def main() -> int:
    global REPEATS
    ap = argparse.ArgumentParser(description="trackway engine benchmarks")
    ap.add_argument("--no-peers", action="store_true", help="trackway only")
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat (smoke test)")
    ap.add_argument("--profile", action="store_true", help="also cProfile the loop at 10,000")
    args = ap.parse_args()

    loop_sizes, grow_sizes, memory_n = LOOP_SIZES, GROW_SIZES, MEMORY_N
    if args.quick:
        REPEATS, loop_sizes, grow_sizes, memory_n = 1, (1_000,), (1_000,), 1_000

    peers: dict[str, dict[str, Callable[..., Runner]]] = {}
    notes: list[str] = []
    if not args.no_peers:
        for name, fns in (("langgraph", LANGGRAPH), ("burr", BURR)):
            if _available(name):
                peers[name] = fns
            else:
                notes.append(f"{name} is not installed, so its columns are empty "
                             "(pip install -e '.[bench]')")  # fmt: skip

    print(f"bench_engine: each cell is the median of {REPEATS} runs unless marked", flush=True)
    rows = run_workloads(peers, loop_sizes, grow_sizes)
    print(f"  (b) memory N={memory_n:,} ...", end="", flush=True)
    memory = tw_memory(memory_n)
    print(" done", flush=True)
    targets = check_targets(rows, memory)
    print_report(rows, memory, targets)

    if peers:
        notes += [
            f"Peers run only up to N={PEER_CAP:,} loop iterations (LangGraph at 100,000 would "
            "take minutes), so their 100,000 cells are empty.",
            f"* = one run only: a peer run slower than {SLOW_RUN_S:g} s is not repeated.",
            "LangGraph: StateGraph, no checkpointer; (a)/(b) loop one node through a conditional "
            "edge, (b) appends through an operator.add list channel; (d) fans 100 nodes out "
            "from START, joined by the superstep barrier (no extra join node).",
            "Burr: no persister; the loop uses expr() transitions and ends with a 'done' action "
            "(time divided by N+1 actions); (d) is burr.core.parallelism.MapActions over 100 "
            "actions (Burr's default sync executor, a thread pool) plus a reduce().",
        ]
    notes += [
        "trackway: Executor.run_sync, in-memory log, no recorders; (d) includes a trivial start "
        "stage (a chart begins with a stage) and the merge commit (default merge policy).",
        "Times are wall clock around the run call only (charts and graphs built beforehand).",
    ]
    for note in notes:
        print(f"- {note}")

    payload: dict[str, Any] = {
        "versions": {
            "trackway": dist_version("trackway"),
            "orjson": dist_version("orjson"),
            "langgraph": dist_version("langgraph") if "langgraph" in peers else None,
            "apache-burr": dist_version("apache-burr") if "burr" in peers else None,
        },
        "config": {
            "repeats": REPEATS,
            "loop_sizes": loop_sizes,
            "grow_sizes": grow_sizes,
            "peer_cap": PEER_CAP,
            "chain_len": CHAIN_LEN,
            "fork_width": FORK_WIDTH,
            "slow_run_s": SLOW_RUN_S,
            "quick": args.quick,
        },
        "results": rows,
        "memory": memory,
        "targets": targets,
        "notes": notes,
    }
    if args.profile:
        top = profile_loop(10_000)
        payload["profile_loop_10000"] = top
        print_table(
            "cProfile, (a) loop at N=10,000: top 10 by tottime",
            ["function", "ncalls", "tottime ms", "cumtime ms"],
            [[r["function"], r["ncalls"], r["tottime_s"] * 1e3, r["cumtime_s"] * 1e3]
             for r in top],
        )  # fmt: skip
    path = write_json("bench_engine", payload)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
