"""Fan-out on Ray: what a branch costs as a Ray task, and from how many items Ray wins.

Two workloads, each run with the branches here (``runner=None``) and as Ray tasks
(``runner=ray_runner()``) on a local Ray instance started once with ``num_cpus`` = the
machine's cores (not timed; one untimed fan-out first, so the workers are up and have
imported trackway):

- **overhead**: a ``parallel_for_each`` of N trivial ``def`` branches (each writes its
  result); overhead per branch = (Ray time - inline time) / N.
- **crossover**: the same with a CPU-bound branch (a fixed loop calibrated to 2, 20 and 200
  ms on this machine), N = 1, 2, 4, ... (to 128; to 8 at 200 ms); the smallest N from which
  the Ray run is faster than the inline one at every larger N tried. Inline, ``def``
  branches run one after another on the event loop; on Ray they run on every core, so Ray
  can win by at most the core count. The target is on 200 ms items (``quick``: those only).

Each cell is the median of 3 runs (1 with ``quick``), ``time.perf_counter()`` around
``Executor(chart).run_sync(...)``, and every Ray run's final state is checked against the
inline run's. Standalone: ``.venv/bin/python benches/_scale_ray.py [--quick]``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

ITEMS_OVERHEAD = (200, 1000)
LONG = (1, 2, 4, 8, 16, 32, 64, 128)
SWEEPS = {2.0: LONG, 20.0: LONG, 200.0: (1, 2, 4, 8)}  # ms of CPU per item: item counts
OVERHEAD_LIMIT_MS = 5.0  # per branch, Ray over inline
CROSSOVER_WORK = 200.0  # ms of CPU per item in the crossover target
CROSSOVER_LIMIT = 4  # items


def _spinner(loops: int) -> Callable[[Any], None]:
    """A branch that burns ``loops`` iterations of CPU, then writes its result. A closure,
    so cloudpickle ships it by value (the workers need not import this file)."""

    def branch(scope: Any) -> None:
        total = 0
        for i in range(loops):
            total += i * i % 7
        scope["result"] = [scope["item"], total]

    return branch


def _calibrate(ms: float) -> int:
    """Loop iterations that take about ``ms`` milliseconds here (the fastest of 5 tries, so
    that another process's burst does not make the work too small)."""
    spin = _spinner(200_000)
    tries = []
    for _ in range(5):
        start = time.perf_counter()
        spin({"item": 0})
        tries.append(time.perf_counter() - start)
    return max(1, round(ms / 1000 / (min(tries) / 200_000)))


def _chart(branch: Callable[[Any], None], n: int, runner: Any) -> Any:
    from trackway import flow_chart

    return (
        flow_chart("Load", lambda s: s.__setitem__("xs", list(range(n))), id="load")
        .parallel_for_each(
            "Each", items="xs", branch=branch, into="out", max_branches=n, runner=runner
        )
        .build()
    )


def _timed(chart: Any, repeats: int) -> tuple[float, Any]:
    from trackway import Executor

    times, state = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = Executor(chart).run_sync()
        times.append(time.perf_counter() - start)
        state = result.state
    return statistics.median(times), state


def _pair(branch: Callable[[Any], None], n: int, repeats: int) -> tuple[float, float]:
    """Seconds inline and on Ray for ``n`` items; the two runs' states must agree."""
    from trackway.engine import ray_runner

    here, ours = _timed(_chart(branch, n, None), repeats)
    there, theirs = _timed(_chart(branch, n, ray_runner()), repeats)
    assert dict(theirs) == dict(ours), "the Ray run's state differs from the inline run's"
    return here, there


def ray_section(quick: bool) -> dict[str, Any]:
    """Overhead per branch on Ray against inline, and the item count at which Ray wins."""
    cores = os.cpu_count() or 1
    title = f"Fan-out on Ray: local Ray, {cores} CPUs, one Ray task per branch"
    try:
        import ray
    except ImportError:
        return {"title": title, "rows": [], "targets": [], "skipped": "pip install '.[ray]'"}
    repeats = 1 if quick else 3
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False)
    rows: list[dict[str, Any]] = []
    targets: list[dict[str, Any]] = []
    try:
        trivial = _spinner(0)
        _pair(trivial, 2 * cores, 1)  # warm-up: workers up, trackway imported there
        overhead = {}
        for n in ITEMS_OVERHEAD[:1] if quick else ITEMS_OVERHEAD:
            here, there = _pair(trivial, n, repeats)
            overhead[n] = (there - here) / n * 1000
            rows.append({
                "measure": f"trivial branches, N = {n:,}: Ray overhead per branch, ms",
                "value": overhead[n],
                "detail": f"inline {here * 1000:.1f} ms ({here / n * 1e6:.0f} µs per branch), "
                          f"Ray {there * 1000:.1f} ms",
            })  # fmt: skip
        worst = max(overhead.values())
        targets.append({
            "target": "Ray overhead per trivial branch (ms)", "measured": worst,
            "threshold": f"<= {OVERHEAD_LIMIT_MS:g}", "pass": worst <= OVERHEAD_LIMIT_MS,
        })  # fmt: skip
        for work, sweep in SWEEPS.items():
            if quick and work != CROSSOVER_WORK:
                continue
            spin = _spinner(_calibrate(work))
            cells, faster = [], []
            for n in sweep:
                here, there = _pair(spin, n, repeats)
                cells.append(f"{n}: {here * 1000:.0f}/{there * 1000:.0f}")
                faster.append(there < here)
            # the crossover: the smallest N from which Ray is faster at every larger N tried
            wins = next((n for i, n in enumerate(sweep) if all(faster[i:])), None)
            rows.append({
                "measure": f"{work:g} ms of CPU per item: Ray faster from N =",
                "value": wins,
                "detail": f"at N = {n}: {here / there:.2f}x inline ({here / n * 1000:.1f} ms "
                          "per item inline); ms inline/Ray by N: " + ", ".join(cells),
            })  # fmt: skip
            if work == CROSSOVER_WORK:
                targets.append({
                    "target": f"Ray wins by N items ({work:g} ms CPU each)",
                    "measured": float(wins if wins is not None else 10 * sweep[-1]),
                    "threshold": f"<= {CROSSOVER_LIMIT}",
                    "pass": wins is not None and wins <= CROSSOVER_LIMIT,
                })  # fmt: skip
    finally:
        if started_here:
            ray.shutdown()
    return {"title": title, "rows": rows, "targets": targets}


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _common import print_table, print_targets

    section = ray_section("--quick" in sys.argv)
    print_table(
        section["title"],
        ["measure", "value", "detail"],
        [[r["measure"], r["value"], r["detail"]] for r in section["rows"]],
        numeric=[1],
    )
    print_targets(section["targets"])
