"""Shared helpers for the benches: timing, medians, machine info, tables and JSON output."""

from __future__ import annotations

import contextlib
import cProfile
import datetime as _dt
import functools
import gc
import io
import itertools
import json
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"


def clock() -> float:
    """The benchmark clock (``time.perf_counter``), in seconds."""
    return time.perf_counter()


def fresh_heap() -> None:
    """Collect garbage twice so one run's leftovers do not bill the next run."""
    gc.collect()
    gc.collect()


ProfileTable = dict[tuple[str, int, str], tuple[int, int, float, float, Any]]
"""pstats' raw table: ``(file, line, function) -> (cc, ncalls, tottime, cumtime, callers)``."""


def profile_table(prof: cProfile.Profile) -> ProfileTable:
    """What ``prof`` recorded, as pstats' raw table."""
    table: ProfileTable = pstats.Stats(prof, stream=io.StringIO()).stats  # type: ignore[attr-defined]
    return table


def profile_call(run: Callable[[], object]) -> ProfileTable:
    """cProfile one call of ``run``, on a fresh heap."""
    fresh_heap()
    prof = cProfile.Profile()
    prof.enable()
    run()
    prof.disable()
    return profile_table(prof)


def top_functions(
    table: ProfileTable, k: int, name: Callable[[str], str] = os.path.basename
) -> list[dict[str, Any]]:
    """The ``k`` functions with the most own time (``tottime``), ``name`` shortening files."""
    rows: list[dict[str, Any]] = [
        {"function": f"{name(file)}:{line}({func})", "ncalls": nc, "tottime_s": tt, "cumtime_s": ct}
        for (file, line, func), (_cc, nc, tt, ct, _) in table.items()
    ]
    rows.sort(key=lambda r: r["tottime_s"], reverse=True)
    return rows[:k]


def median_runs(
    fn: Callable[[], Mapping[str, float]],
    repeats: int,
    *,
    adaptive_s: float | None = None,
) -> dict[str, Any]:
    """Run ``fn`` up to ``repeats`` times and return the median of every metric it reports.

    ``fn`` returns a dict of floats (one of them should be ``"total_s"``). A full collection
    runs before each repeat. With ``adaptive_s``, a first run slower than that many seconds
    is not repeated (the slow peer runs); ``"repeats"`` in the result says how many ran.
    """
    samples: list[Mapping[str, float]] = []
    for i in range(repeats):
        fresh_heap()
        samples.append(fn())
        if i == 0 and adaptive_s is not None and samples[0].get("total_s", 0.0) > adaptive_s:
            break
    out: dict[str, Any] = {
        key: statistics.median(s[key] for s in samples) for key in samples[0] if key != "_"
    }
    out["repeats"] = len(samples)
    return out


def checked_row(
    what: str,
    n: int,
    variants: Sequence[str],
    build: Callable[[str, int], Any],
    check: Callable[[Any, str, int], dict[str, Any]],
) -> dict[str, Any]:
    """The row of one size: an untimed run of each variant's agent for a turn of ``n``
    calls, checked (``check`` returns the variant's first cell) before anything is timed."""
    print(f"  {what}, {n} calls ...", end="", flush=True)
    row: dict[str, Any] = {"calls": n, "model_calls": n + 1}
    for variant in variants:
        agent = build(variant, n)
        agent.run_sync("go")
        row[variant] = check(agent, variant, n)
    return row


def cpu_run_sync(agent: Any, message: str, expected: Any, **run: Any) -> float:
    """CPU seconds of one ``agent.run_sync(message, **run)`` of an agent built before the clock
    starts, on a fresh heap; the answer is checked against ``expected``."""
    fresh_heap()
    t = time.process_time()
    answer = agent.run_sync(message, **run)
    spent = time.process_time() - t
    assert answer == expected, answer
    return spent


def interleaved(
    variants: Sequence[str],
    base: str,
    timed: Callable[[str], float],
    rounds: int,
    per_round: int,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """``rounds`` rounds, each running every variant ``per_round`` times in turn (who goes
    first rotates), so the VM's drift bills them alike. Returns every variant's samples and,
    for each variant but ``base``, its round medians over ``base``'s, one per round."""
    samples: dict[str, list[float]] = {v: [] for v in variants}
    ratios: dict[str, list[float]] = {v: [] for v in variants if v != base}
    for r in range(rounds):
        medians = {}
        k = r % len(variants)
        for variant in [*variants[k:], *variants[:k]]:
            runs = [timed(variant) for _ in range(per_round)]
            samples[variant] += runs
            medians[variant] = statistics.median(runs)
        for variant in ratios:
            ratios[variant].append(medians[variant] / medians[base])
    return samples, ratios


def variant_rows(
    what: str,
    sizes: Sequence[int],
    variants: Sequence[str],
    build: Callable[[str, int], Any],
    check: Callable[[Any, str, int], dict[str, Any]],
    timed: Callable[..., float],
    rounds: int,
    per_round: int,
    extra_key: str = "extra_us_per_turn",
) -> list[dict[str, Any]]:
    """One checked row per size (``checked_row``), then every variant timed against
    ``"none"`` in interleaved rounds: a cell is the median of its runs (``us_per_turn``), a
    ratio the median over rounds of the variant's round median over none's, and
    ``extra_key`` the variant's extra CPU per turn."""
    rows: list[dict[str, Any]] = []
    for n in sizes:
        row = checked_row(what, n, variants, build, check)
        samples, ratios = interleaved(
            variants, "none", functools.partial(timed, n=n), rounds, per_round
        )
        base = statistics.median(samples["none"])
        for variant in variants:
            cpu = statistics.median(samples[variant])
            row[variant].update(us_per_turn=cpu * 1e6, repeats=len(samples[variant]))
            if variant in ratios:
                row[variant]["ratio"] = statistics.median(ratios[variant])
                row[variant][extra_key] = (cpu - base) * 1e6
        rows.append(row)
        print(" done", flush=True)
    return rows


def variant_table(
    section: dict[str, Any], variants: Sequence[str], rows_header: str
) -> tuple[list[str], list[list[Any]]]:
    """A variant case's table: one line per size and variant (``rows_header`` names the
    case's row count, ``ledger_rows`` in each cell)."""
    headers = ["tool calls", "variant", "CPU µs/turn", "extra µs", "ratio", rows_header]
    rows = [
        [
            row["calls"],
            v,
            row[v]["us_per_turn"],
            row[v].get("extra_us_per_turn", 0.0),
            row[v].get("ratio", 1.0),
            row[v]["ledger_rows"],
        ]
        for row in section["results"]
        for v in variants
    ]
    return headers, rows


def tenth_growth(stamps: Sequence[float]) -> dict[str, float]:
    """Stage time early vs late in a run, from a timestamp taken at the start of every stage.

    ``first_tenth_us``/``last_tenth_us`` are the mean interval over the first and last tenth
    of the run (GC pauses included: this is what the run paid); ``growth`` is last / first.
    ``growth_median`` compares the median interval of the two tenths instead, which leaves out
    rare pauses (cyclic GC) and shows whether the ordinary stage itself got slower.
    """
    n = len(stamps)
    k = max(1, (n - 1) // 10)
    first = (stamps[k] - stamps[0]) / k
    last = (stamps[-1] - stamps[-1 - k]) / k
    head = [b - a for a, b in itertools.pairwise(stamps[: k + 1])]
    tail = [b - a for a, b in itertools.pairwise(stamps[-1 - k :])]
    med_first, med_last = statistics.median(head), statistics.median(tail)
    return {
        "first_tenth_us": first * 1e6,
        "last_tenth_us": last * 1e6,
        "growth": last / first if first > 0 else float("inf"),
        "growth_median": med_last / med_first if med_first > 0 else float("inf"),
    }


def dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "executable": sys.executable,
    }


def trackway_build() -> dict[str, Any]:
    """Which trackway build this process imports: ``compiled`` (with its compiled modules:
    ``make bench`` runs on that build, docs/compiled.md) or ``pure``."""
    from trackway.engine import compiled_modules

    modules = compiled_modules()
    return {"build": "compiled" if modules else "pure", "compiled_modules": list(modules)}


def write_json(name: str, payload: Mapping[str, Any]) -> Path:
    """Write ``payload`` to ``benches/results/<name>.json`` (the directory is gitignored),
    with the machine and the trackway build it was measured on; say the build."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    build = trackway_build()
    doc = {
        "bench": name,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "trackway_build": build,
        **payload,
    }
    count = len(build["compiled_modules"])
    print(
        f"measured on the {build['build']} build of trackway"
        + (f" ({count} modules compiled)" if count else "")
    )
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def fmt(value: Any, digits: int = 1) -> str:
    """A table cell: numbers with thousands separators, ``None`` as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "PASS" if value else "FAIL"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def print_table(
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    numeric: Sequence[int] | None = None,
) -> None:
    """Print a markdown table: the ``numeric`` columns right-aligned (default: all but the
    first), the others left-aligned."""
    right = set(range(1, len(headers)) if numeric is None else numeric)
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if i in right else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "| " + " | ".join(parts) + " |"

    rule = ["-" * (w - 1) + ":" if i in right else "-" * w for i, w in enumerate(widths)]
    print(f"\n{title}\n")
    print(line(headers))
    print("| " + " | ".join(rule) + " |")
    for row in cells:
        print(line(row))
    sys.stdout.flush()


def print_targets(targets: Sequence[Mapping[str, Any]]) -> None:
    """The table of a bench's targets: what was measured against which threshold."""
    print_table(
        "Targets",
        ["target", "measured", "threshold", "result"],
        [[t["target"], f"{t['measured']:,.2f}", t["threshold"], t["pass"]] for t in targets],
    )


@contextlib.contextmanager
def pg_schema(base: str) -> Iterator[str]:
    """A DSN on ``base``'s server whose search_path is a new schema, dropped afterwards: a
    bench's tables never meet another's."""
    import uuid
    from urllib.parse import quote

    import psycopg

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {name}")
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options={quote(f'-csearch_path={name}')}"
    finally:
        with psycopg.connect(base, autocommit=True) as db:
            db.execute(f"DROP SCHEMA {name} CASCADE")
