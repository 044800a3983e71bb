"""Instructions per agent tool turn, counted by valgrind's callgrind: a reading that the
machine's speed does not move.

``bench_agent.py`` times the same scripted loop by the clock, and on a shared VM its cells
drift by ±40% over minutes, unevenly across frameworks (a memory-bound run slows more than a
compute-bound one). Counting instructions instead gives the same number run after run (two
runs agreed to 0.05% at 50 and 100 turns and to 2% at 200, with the walker's wall-time yield
switched off in the children: see ``child``), so a change to the hot path can be judged in
one run, and a cost that grows with the history shows as growth in instructions.

How a cell is counted: two child processes run under callgrind. Both import the bench, warm
the framework up with a 10-turn run, build two scripted runs of N turns, collect garbage, run
the first, and collect again; the second child also runs the second. The difference of their
counts is one N-turn run started after a full collection, as ``bench_agent.py`` starts it
(the garbage collector's own work during the run included). Instructions are not time: a
run that waits on memory takes more time per instruction, so ratios here can differ from
the clock's (see the notes the bench prints).
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from _common import dist_version, print_table, print_targets, write_json

RATIO_TURNS = 100
"""The size the frameworks are compared at (pydantic-ai's 200-turn run takes minutes under
callgrind, and every framework is counted at the same size)."""
GROWTH_TURNS = (50, 100, 200)
"""trackway's sizes for the marginal cost of a turn early and late in a run."""
_COLLECTED = re.compile(rb"Collected\s*:\s*(\d+)")


def _runner(name: str, turns: int) -> Callable[[], object]:
    """One scripted run of ``turns`` tool turns, built beforehand (run it once)."""
    import bench_agent as agent_bench

    if name == "trackway":
        agent = agent_bench._tw_agent(turns)
        return lambda: agent.run_sync("go")
    return agent_bench.PEERS[name][2](turns)


def child(name: str, runs: int, turns: int) -> None:
    """What one callgrind child runs (see the module docstring)."""
    from trackway.engine.run import _walker

    # The walker yields to the event loop after every 5 ms of wall time: natively about once
    # in 40 turns, but callgrind runs ~50× slower, and slower still on a busy machine, so the
    # yields would multiply with the machine's load (~4% of a turn with two children at once).
    # Counted without them, the count no longer follows the machine's load.
    _walker._YIELD_SECONDS = float("inf")
    _runner(name, 10)()
    first, second = _runner(name, turns), _runner(name, turns)
    gc.collect()
    first()
    gc.collect()
    if runs == 2:
        second()


def _count(name: str, runs: int, turns: int) -> int:
    """Instructions a child process executes, by callgrind."""
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        name,
        str(runs),
        str(turns),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same dict layouts in every child
    done = subprocess.run(cmd, capture_output=True, env=env, check=False)
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        tail = done.stderr.decode(errors="replace")[-2000:]
        raise RuntimeError(f"callgrind child {name} {runs}x{turns} failed:\n{tail}")
    return int(found.group(1))


def count_runs(cells: Sequence[tuple[str, int]], jobs: int) -> dict[tuple[str, int], int]:
    """Instructions of one run per ``(framework, turns)`` cell, children run ``jobs`` at once
    (a line as each child ends: the whole takes minutes)."""
    work = [(name, runs, turns) for name, turns in cells for runs in (1, 2)]
    counts: dict[tuple[str, int, int], int] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_count, *w): w for w in work}
        for done in as_completed(futures):
            key = futures[done]
            counts[key] = done.result()
            print(
                f"  {key[0]}, {key[1]} run(s) of {key[2]} turns: {counts[key]:,} instructions "
                f"({len(counts)} of {len(work)})",
                flush=True,
            )
    return {(n, turns): counts[(n, 2, turns)] - counts[(n, 1, turns)] for n, turns in cells}


def main() -> int:
    ap = argparse.ArgumentParser(description="instructions per agent tool turn (callgrind)")
    ap.add_argument("--no-peers", action="store_true", help="trackway only")
    ap.add_argument("--quick", action="store_true", help="trackway at 50 and 100 turns only")
    ap.add_argument("--profile", action="store_true", help="(accepted for run_all; unused)")
    ap.add_argument("--child", nargs=3, metavar=("NAME", "RUNS", "TURNS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]))
        return 0

    notes: list[str] = []
    if shutil.which("valgrind") is None:
        why = "valgrind is not installed (e.g. apt-get install valgrind): nothing was counted"
        print(f"bench_instructions: skipped, {why}")
        write_json("bench_instructions", {"skipped": why, "targets": []})
        return 0
    import bench_agent as agent_bench  # its peers, probed as it probes them

    labels = {name: entry[0] for name, entry in agent_bench.PEERS.items()}
    sizes = (50, 100) if args.quick else GROWTH_TURNS
    peers: list[str] = []
    if not args.no_peers and not args.quick:
        for name, (label, probe, _factory) in agent_bench.PEERS.items():
            why = agent_bench._available(probe)
            if why is None:
                peers.append(name)
            else:
                notes.append(f"{label} is skipped: `import {probe}` failed ({why}).")
    cells = [("trackway", n) for n in sizes] + [(name, RATIO_TURNS) for name in peers]
    jobs = max(1, min(len(cells) * 2, os.cpu_count() or 1))
    print(f"bench_instructions: {len(cells) * 2} callgrind children, {jobs} at a time", flush=True)
    per_run = count_runs(cells, jobs)

    ours = per_run[("trackway", RATIO_TURNS)] / RATIO_TURNS
    rows: list[dict[str, Any]] = []
    for (name, turns), count in per_run.items():
        per_turn = count / turns
        rows.append(
            {
                "framework": name,
                "turns": turns,
                "instructions_per_run": count,
                "instructions_per_turn": round(per_turn),
                "ratio": per_turn / ours if turns == RATIO_TURNS else None,
            }
        )
    early = (per_run[("trackway", sizes[1])] - per_run[("trackway", sizes[0])]) / (
        sizes[1] - sizes[0]
    )
    targets: list[dict[str, Any]] = []
    growth: dict[str, Any] = {"marginal_early": early}
    if len(sizes) > 2:
        late = (per_run[("trackway", sizes[2])] - per_run[("trackway", sizes[1])]) / (
            sizes[2] - sizes[1]
        )
        growth.update(marginal_late=late, growth=late / early)
        targets.append(
            {
                "target": f"trackway marginal instructions per turn, {sizes[1]}→{sizes[2]} "
                f"over {sizes[0]}→{sizes[1]} turns",
                "measured": late / early,
                "threshold": "≤ 1.2",
                "pass": late / early <= 1.2,
            }
        )
    for name in peers:
        targets.append(
            {
                "target": f"{labels[name]}/trackway instructions per turn, {RATIO_TURNS} turns",
                "measured": per_run[(name, RATIO_TURNS)] / RATIO_TURNS / ours,
                "threshold": "reported",
                "pass": None,
            }
        )

    print_table(
        "instructions per tool turn (one run after a full collection, by callgrind)",
        ["framework", "turns", "instructions/run", "instructions/turn", f"×tw @{RATIO_TURNS}"],
        [
            [
                labels.get(r["framework"], r["framework"]),
                r["turns"],
                r["instructions_per_run"],
                r["instructions_per_turn"],
                "" if r["ratio"] is None else f"{r['ratio']:.1f}×",
            ]
            for r in rows
        ],
    )
    marginal = f"{early:,.0f} ({sizes[0]}→{sizes[1]} turns)"
    if "marginal_late" in growth:
        marginal += f", {growth['marginal_late']:,.0f} ({sizes[1]}→{sizes[2]})"
    print(f"\ntrackway marginal instructions per turn: {marginal}")
    print_targets(targets)
    notes += [
        "A run's count includes its fixed cost (event loop, setup, the final answer), so "
        "instructions per turn fall with the size; the marginal counts leave it out.",
        "Instructions are not time. On the 2-core VM LangGraph's turn ran at between a half "
        "and three quarters of trackway's instructions per nanosecond (it walks a growing "
        "heap), so its clock ratio in bench_agent.py reads higher than the ratio here.",
        "Children run with PYTHONHASHSEED=0 and without the walker's yield to the event loop "
        "every 5 ms of wall time (natively about once in 40 turns; under callgrind it would "
        "fire ~50 times as often, more on a busy machine). Two runs of the bench agreed to 0.05% "
        "at 50 and 100 turns and to 2% at 200 turns.",
    ]
    for note in notes:
        print(f"- {note}")
    versions = {"trackway": dist_version("trackway"), "valgrind": _valgrind_version()}
    for name in peers:
        for dist in agent_bench.PEER_DISTS[name]:
            versions[dist] = dist_version(dist)
    payload = {
        "versions": versions,
        "config": {"ratio_turns": RATIO_TURNS, "growth_turns": sizes, "peers": peers},
        "results": rows,
        "growth": growth,
        "targets": targets,
        "notes": notes,
    }
    path = write_json("bench_instructions", payload)
    print(f"\nwrote {path}")
    return 0


def _valgrind_version() -> str | None:
    try:
        out = subprocess.run(["valgrind", "--version"], capture_output=True, check=False)
    except OSError:
        return None
    return out.stdout.decode().strip() or None


if __name__ == "__main__":
    sys.exit(main())
