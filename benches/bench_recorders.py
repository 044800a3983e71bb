"""Recorder benchmarks: what each built-in recorder costs per stage, inline and deferred.

Runs the ``bench_engine`` trivial loop (one stage reading and incrementing an int key, break
at N) with no recorder and with ``narrative()``, ``metrics()``, ``jsonl(path)``, a no-op
``on_commit`` recorder and ``otel()`` (in-memory exporter, when opentelemetry-sdk is
importable), each inline and under ``deferred(...)``. Reports µs per stage for the whole run
(deferred delivery included) and for the hot path (median stage-to-stage time), the deferred
queue stats, and the peers' closest equivalents (a LangGraph callback handler, a Burr
lifecycle hook) when installed. Prints tables and writes
``benches/results/bench_recorders.json``. See ``benches/README.md``.

    .venv/bin/python benches/bench_recorders.py [--no-peers] [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from _common import (
    clock,
    dist_version,
    fresh_heap,
    print_table,
    profile_call,
    top_functions,
    write_json,
)

os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
warnings.filterwarnings("ignore")

from trackway import Commit, Executor, Recorder, flow_chart  # noqa: E402
from trackway.engine import deferred  # noqa: E402
from trackway.engine.run._recorder import _RunQueue  # noqa: E402  (profile: delivery time)
from trackway.recorders import jsonl, metrics, narrative, otel  # noqa: E402

REPEATS = 5
LOOP_SIZES = (1_000, 10_000)
PEER_SIZES = (1_000, 10_000)
WARM_N = 1_000  # loop iterations of the untimed warm-up run of every cell
SLOW_RUN_S = 5.0  # a peer run slower than this is not repeated
PROFILE_N = 10_000
DEFAULT_MAX_QUEUE = 10_000  # deferred()'s default; every deferred cell uses it

TARGET_DEFERRED_US = 5.0

Metrics = dict[str, float]
Runner = Callable[[], Metrics]
Check = Callable[[Any], None]
# A recorder factory: called with N once per run (outside the clock), gives the recorder to
# pass and a check run on the result afterwards.
Make = Callable[[int], tuple[object, Check]]


def _no_check(result: Any) -> None:
    return None


def _hot(stamps: list[float]) -> float:
    """Median stage-to-stage time in µs, from a stamp taken at the start of every stage."""
    return statistics.median(b - a for a, b in itertools.pairwise(stamps)) * 1e6


# -- recorders ------------------------------------------------------------------------------


class CommitOnly(Recorder):
    """A recorder with one hook, ``on_commit``, that does nothing."""

    name = "noop_on_commit"

    def on_commit(self, commit: Commit) -> None:
        return None


def _otel_available() -> bool:
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        return False
    return True


class Factories:
    """The recorder factories of one bench run; ``jsonl`` files go to a temp dir."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.files = 0

    def narrative(self, n: int) -> tuple[object, Check]:
        rec = narrative()

        def check(result: Any) -> None:
            assert len(rec.entries(result.run_id)) >= n

        return rec, check

    def metrics(self, n: int) -> tuple[object, Check]:
        rec = metrics()

        def check(result: Any) -> None:
            assert rec.summary()["step"]["count"] == n

        return rec, check

    def jsonl(self, n: int) -> tuple[object, Check]:
        self.files += 1
        path = self.tmp / f"run{self.files}.jsonl"
        rec = jsonl(path)

        def check(result: Any) -> None:
            lines = path.read_bytes().count(b"\n")
            path.unlink()
            assert lines >= 4 * n, lines

        return rec, check

    def noop(self, n: int) -> tuple[object, Check]:
        return CommitOnly(), _no_check

    def otel(self, n: int) -> tuple[object, Check]:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        rec = otel(provider)

        def check(result: Any) -> None:
            spans = exporter.get_finished_spans()
            assert len(spans) == n + 1, len(spans)  # one per stage, one for the run
            exporter.clear()

        return rec, check


def recorder_cells(f: Factories, with_otel: bool) -> list[tuple[str, str, str, Any]]:
    """(row label, recorder name, delivery, factory taking N) for every cell of the table."""
    kinds: list[tuple[str, Make]] = [
        ("narrative()", f.narrative),
        ("metrics()", f.metrics),
        ("jsonl(path)", f.jsonl),
        ("no-op on_commit", f.noop),
    ]
    if with_otel:
        kinds.append(("otel() in-memory", f.otel))
    cells: list[tuple[str, str, str, Any]] = [("no recorder", "–", "–", None)]
    for name, make in kinds:
        cells.append((name, name, "inline", make))
        cells.append((f"deferred({name})", name, "deferred", _deferring(make)))
    return cells


def _deferring(make: Make) -> Make:
    def wrapped(n: int) -> tuple[object, Check]:
        rec, check = make(n)
        return deferred(rec), check

    return wrapped


# -- trackway -------------------------------------------------------------------------------


def tw_loop(n: int, make: Make | None) -> Runner:
    """The trivial loop with one recorder (a fresh one, and a fresh Executor, every run)."""
    stamps: list[float] = []
    stamp = stamps.append

    def step(scope: Any) -> None:
        stamp(clock())
        v = scope["n"] + 1
        scope["n"] = v
        if v >= n:
            scope.break_("done")

    chart = flow_chart("Step", step, id="step").loop_to("step").build()

    def run() -> Metrics:
        rec, check = (None, _no_check) if make is None else make(n)
        executor = Executor(chart, max_iterations=n + 10, recorders=() if rec is None else [rec])
        stamps.clear()
        t = clock()
        result = executor.run_sync({"n": 0})
        total = clock() - t
        assert result.state["n"] == n and len(result.snapshot) == n, result.status
        assert not result.snapshot.recorder_failures, result.snapshot.recorder_failures
        check(result)
        out: Metrics = {
            "total_s": total,
            "us_per_stage": total / n * 1e6,
            "hot_us": _hot(stamps),
        }
        for st in result.snapshot.observer_stats:
            assert st.delivered + st.dropped > 0
            out.update(
                delivered=st.delivered,
                dropped=st.dropped,
                inline_flushes=st.inline_flushes,
                max_depth=st.max_depth,
                events_per_stage=(st.delivered + st.dropped) / n,
            )
        return out

    return run


# -- peers ----------------------------------------------------------------------------------


def lg_loop(n: int, with_hook: bool) -> Runner:
    """LangGraph loop of one node; with_hook: a no-op callback handler on the invoke config."""
    from langchain_core.callbacks import BaseCallbackHandler
    from langgraph.graph import END, START, StateGraph

    class NoopHandler(BaseCallbackHandler):
        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            return None

        def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
            return None

    class LoopState(TypedDict):
        n: int

    stamps: list[float] = []
    stamp = stamps.append

    def step(s: LoopState) -> LoopState:
        stamp(clock())
        return {"n": s["n"] + 1}

    g = StateGraph(LoopState)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["n"] >= n else "step")
    app = g.compile()

    def run() -> Metrics:
        config: Any = {"recursion_limit": n + 10}
        if with_hook:
            config["callbacks"] = [NoopHandler()]
        stamps.clear()
        t = clock()
        out = app.invoke({"n": 0}, config)
        total = clock() - t
        assert out["n"] == n
        return {"total_s": total, "us_per_stage": total / n * 1e6, "hot_us": _hot(stamps)}

    return run


def burr_loop(n: int, with_hook: bool) -> Runner:
    """Burr loop (expr transitions, final 'done'); with_hook: a no-op PostRunStepHook."""
    from burr.core import ApplicationBuilder, State, action, default, expr
    from burr.lifecycle import PostRunStepHook

    class NoopHook(PostRunStepHook):
        def post_run_step(self, **kwargs: Any) -> None:
            return None

    stamps: list[float] = []
    stamp = stamps.append

    @action(reads=["n"], writes=["n"])
    def step(state: State) -> State:
        stamp(clock())
        return state.update(n=state["n"] + 1)

    @action(reads=[], writes=[])
    def done(state: State) -> State:
        return state

    def build() -> Any:
        builder: Any = (
            ApplicationBuilder()
            .with_actions(step=step, done=done)
            .with_transitions(("step", "step", expr(f"n < {n}")), ("step", "done", default))
            .with_state(n=0)
            .with_entrypoint("step")
        )
        if with_hook:
            builder = builder.with_hooks(NoopHook())
        return builder.build()

    def run() -> Metrics:
        app = build()
        stamps.clear()
        t = clock()
        _, _, state = app.run(halt_after=["done"])
        total = clock() - t
        assert state["n"] == n
        # n steps plus the final "done" action
        return {"total_s": total, "us_per_stage": total / (n + 1) * 1e6, "hot_us": _hot(stamps)}

    return run


# -- driver ---------------------------------------------------------------------------------

# Stats where one bad repeat must show: the worst repeat is kept, not the median.
_WORST = ("dropped", "inline_flushes", "max_depth")


def _aggregate(samples: list[Metrics]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in samples[0]:
        values = [s[key] for s in samples]
        out[key] = max(values) if key in _WORST else statistics.median(values)
    out["repeats"] = len(samples)
    return out


def interleaved(
    runners: dict[str, Runner], repeats: int, *, adaptive_s: float | None = None
) -> dict[str, dict[str, Any]]:
    """Median of ``repeats`` runs per cell, the cells taken in turn (the order rotating each
    round), so that drift in the machine's speed bills every cell alike. A full collection
    runs before each run. With ``adaptive_s``, a cell whose first run is slower than that
    is not repeated.
    """
    samples: dict[str, list[Metrics]] = {k: [] for k in runners}
    labels = list(runners)
    for i in range(repeats):
        k = i % len(labels)
        for label in labels[k:] + labels[:k]:
            first = samples[label][0] if samples[label] else None
            if i > 0 and adaptive_s is not None and first and first["total_s"] > adaptive_s:
                continue
            fresh_heap()
            samples[label].append(runners[label]())
    return {label: _aggregate(s) for label, s in samples.items()}


def run_trackway(
    cells: list[tuple[str, str, str, Any]], sizes: tuple[int, ...]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for n in sizes:
        print(f"  trackway N={n:,} ...", end="", flush=True)
        runners = {label: tw_loop(n, make) for label, _, _, make in cells}
        for _label, _, _, make in cells:  # one untimed warm-up per cell
            tw_loop(min(n, WARM_N), make)()
        medians = interleaved(runners, REPEATS)
        base = medians["no recorder"]
        for label, name, delivery, _ in cells:
            m = medians[label]
            m["over_total_us"] = m["us_per_stage"] - base["us_per_stage"]
            m["over_hot_us"] = m["hot_us"] - base["hot_us"]
            rows.append({"n": n, "cell": label, "recorder": name, "delivery": delivery, **m})
        print(" done", flush=True)
    return rows


def run_peers(
    peers: dict[str, Callable[[int, bool], Runner]], sizes: tuple[int, ...]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, make in peers.items():
        for n in sizes:
            print(f"  {name} N={n:,} ...", end="", flush=True)
            make(min(n, WARM_N), False)()
            make(min(n, WARM_N), True)()
            m = interleaved(
                {"plain": make(n, False), "hook": make(n, True)}, REPEATS, adaptive_s=SLOW_RUN_S
            )
            plain, hook = m["plain"], m["hook"]
            rows.append(
                {
                    "peer": name,
                    "n": n,
                    "plain": plain,
                    "hook": hook,
                    "over_total_us": hook["us_per_stage"] - plain["us_per_stage"],
                    "over_hot_us": hook["hot_us"] - plain["hot_us"],
                }
            )
            print(" done", flush=True)
    return rows


def check_targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    targets: list[dict[str, Any]] = []

    def target(name: str, measured: float, threshold: str, ok: bool) -> None:
        targets.append({"target": name, "measured": measured, "threshold": threshold, "pass": ok})

    deferred_rows = [r for r in rows if r["delivery"] == "deferred"]
    for r in deferred_rows:
        us = r["over_hot_us"]
        target(f"{r['cell']} +µs/stage, hot path, N={r['n']:,}", us,
               f"≤ {TARGET_DEFERRED_US:g}", us <= TARGET_DEFERRED_US)  # fmt: skip
    for r in deferred_rows:
        us = r["over_total_us"]
        target(f"{r['cell']} +µs/stage, whole run, N={r['n']:,}", us,
               f"≤ {TARGET_DEFERRED_US:g} (info)", us <= TARGET_DEFERRED_US)  # fmt: skip
    dropped = sum(r["dropped"] for r in deferred_rows)
    target(f"events dropped by deferred queues (max_queue={DEFAULT_MAX_QUEUE:,}, every run)",
           dropped, "= 0", dropped == 0)  # fmt: skip
    return targets


def profile_cells(cells: list[tuple[str, str, str, Any]], n: int) -> dict[str, Any]:
    """cProfile one run of every deferred cell at ``n``: the share spent delivering (under
    ``Dispatch.flush``), and the top functions by tottime."""
    out: dict[str, Any] = {}
    for label, _, delivery, make in cells:
        if delivery != "deferred":
            continue
        runner = tw_loop(n, make)
        runner()
        raw = profile_call(runner)
        total = sum(tt for (_cc, _nc, tt, _ct, _) in raw.values())
        # every delivery goes through _RunQueue.flush (called from Dispatch.flush)
        code = _RunQueue.flush.__code__
        flush = sum(
            ct
            for (file, line, func), (_cc, _nc, _tt, ct, _) in raw.items()
            if (file, line, func) == (code.co_filename, code.co_firstlineno, code.co_name)
        )
        top = top_functions(raw, 12, name=_short)
        out[label] = {
            "n": n,
            "profiled_total_s": total,
            "delivery_s": flush,
            "hot_path_s": total - flush,
            "top": top,
        }
    return out


def _short(file: str) -> str:
    parts = Path(file).parts
    return "/".join(parts[-2:]) if len(parts) >= 2 else file


def print_report(
    rows: list[dict[str, Any]], peer_rows: list[dict[str, Any]], targets: list[dict[str, Any]]
) -> None:
    for n in sorted({r["n"] for r in rows}):
        table = [
            [r["cell"], r["us_per_stage"], r["over_total_us"], r["hot_us"], r["over_hot_us"],
             r.get("events_per_stage"), r.get("delivered"), r.get("dropped"),
             r.get("inline_flushes"), r.get("max_depth")]
            for r in rows if r["n"] == n
        ]  # fmt: skip
        print_table(
            f"Trivial loop, N={n:,}: µs per stage. whole = run time / N (deferred delivery "
            "included); hot = median stage-to-stage time; + = over no recorder. Queue stats "
            "of the deferred cells: delivered (median), dropped/inline/max depth (worst run)",
            ["recorder", "whole µs", "+whole", "hot µs", "+hot", "events/stage",
             "delivered", "dropped", "inline flushes", "max depth"],
            table,
        )  # fmt: skip
    if peer_rows:
        print_table(
            "Peers: the same loop with their closest equivalent of a recorder (LangGraph: a "
            "no-op callback handler; Burr: a no-op PostRunStepHook). µs per step",
            ["peer", "N", "whole µs", "with hook", "+whole", "hot µs", "hot with hook",
             "+hot"],
            [[r["peer"], r["n"], r["plain"]["us_per_stage"], r["hook"]["us_per_stage"],
              r["over_total_us"], r["plain"]["hot_us"], r["hook"]["hot_us"], r["over_hot_us"]]
             for r in peer_rows],
        )  # fmt: skip
    print_table(
        "Targets (the target is the hot path; the whole-run rows, delivery included, are "
        "shown against the same bar for information)",
        ["target", "measured", "threshold", "result"],
        [[t["target"], _measured(t["measured"]), t["threshold"], t["pass"]] for t in targets],
    )


def _measured(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


def _available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main() -> int:
    global REPEATS
    ap = argparse.ArgumentParser(description="trackway recorder benchmarks")
    ap.add_argument("--no-peers", action="store_true", help="trackway only")
    ap.add_argument("--quick", action="store_true", help="N=1,000 only, one repeat (smoke test)")
    ap.add_argument(
        "--profile", action="store_true", help=f"also cProfile every deferred cell at {PROFILE_N:,}"
    )
    args = ap.parse_args()

    sizes: tuple[int, ...] = LOOP_SIZES
    peer_sizes: tuple[int, ...] = PEER_SIZES
    profile_n = PROFILE_N
    if args.quick:
        REPEATS, sizes, peer_sizes, profile_n = 1, (1_000,), (1_000,), 1_000

    notes: list[str] = []
    with_otel = _otel_available()
    if not with_otel:
        notes.append("opentelemetry-sdk is not importable, so the otel() rows are missing "
                     "(pip install -e '.[otel]')")  # fmt: skip
    peers: dict[str, Callable[[int, bool], Runner]] = {}
    if not args.no_peers:
        for name, fn in (("langgraph", lg_loop), ("burr", burr_loop)):
            if _available(name):
                peers[name] = fn
            else:
                notes.append(f"{name} is not installed, so its peer rows are missing "
                             "(pip install -e '.[bench]')")  # fmt: skip

    tmp = Path(tempfile.mkdtemp(prefix="trackway-bench-recorders-"))
    try:
        factories = Factories(tmp)
        cells = recorder_cells(factories, with_otel)
        print(f"bench_recorders: each cell is the median of {REPEATS} runs", flush=True)
        rows = run_trackway(cells, sizes)
        peer_rows = run_peers(peers, peer_sizes)
        profile = profile_cells(cells, profile_n) if args.profile else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    targets = check_targets(rows)
    print_report(rows, peer_rows, targets)
    if profile is not None:
        print_table(
            f"cProfile, deferred cells at N={profile_n:,}: time under the queue flush "
            "(delivery) vs the rest (hot path), ms (profiler overhead included)",
            ["cell", "profiled ms", "hot path ms", "delivery ms", "hot path share"],
            [[k, v["profiled_total_s"] * 1e3, v["hot_path_s"] * 1e3, v["delivery_s"] * 1e3,
              f"{v['hot_path_s'] / v['profiled_total_s']:.0%}"] for k, v in profile.items()],
        )  # fmt: skip
        for label, v in profile.items():
            print_table(
                f"cProfile, {label} at N={profile_n:,}: top 12 by tottime",
                ["function", "ncalls", "tottime ms", "cumtime ms"],
                [[r["function"], r["ncalls"], r["tottime_s"] * 1e3, r["cumtime_s"] * 1e3]
                 for r in v["top"]],
            )  # fmt: skip

    notes += [
        "Every run gets a fresh recorder and a fresh Executor, built before the clock starts; "
        "jsonl files go to a temp dir (one file per run, deleted after it, the dir at the end); "
        "otel() gets a TracerProvider with a SimpleSpanProcessor and an InMemorySpanExporter.",
        "Deferred delivery happens in the same thread: between stages when the run yields to "
        "the event loop (about every 5 ms of work) and before run() returns. So the recorder's "
        "own work is still paid by the run: it is in 'whole', not in 'hot'.",
        "hot = median of the intervals between stamps taken at the start of every stage (a "
        "closure appending perf_counter() to a list): it leaves out the rare intervals holding "
        "a flush or a GC pause. It includes the inline recorders' work and the deferred "
        "recorders' event building and queueing.",
        f"Cells run interleaved: {REPEATS} round(s), each running every cell once (order "
        "rotating), after one untimed warm-up run per cell at min(N, 1,000); a gc.collect() "
        "before each run.",
    ]
    if peers:
        notes.append(
            "Peers: LangGraph StateGraph loop (no checkpointer) with and without a "
            "BaseCallbackHandler (on_chain_start/on_chain_end no-ops) in the invoke config; "
            "Burr loop (no persister, expr() transitions, time / (N+1) actions) with and "
            "without a PostRunStepHook. Neither peer defers: their hooks run inline."
        )
    for note in notes:
        print(f"- {note}")

    payload: dict[str, Any] = {
        "versions": {
            "trackway": dist_version("trackway"),
            "orjson": dist_version("orjson"),
            "opentelemetry-sdk": dist_version("opentelemetry-sdk") if with_otel else None,
            "langgraph": dist_version("langgraph") if "langgraph" in peers else None,
            "apache-burr": dist_version("apache-burr") if "burr" in peers else None,
        },
        "config": {
            "repeats": REPEATS,
            "loop_sizes": sizes,
            "peer_sizes": peer_sizes if peers else [],
            "warm_n": WARM_N,
            "max_queue": DEFAULT_MAX_QUEUE,
            "target_deferred_us": TARGET_DEFERRED_US,
            "quick": args.quick,
        },
        "results": rows,
        "peers": peer_rows,
        "targets": targets,
        "notes": notes,
    }
    if profile is not None:
        payload["profile"] = profile
    path = write_json("bench_recorders", payload)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
