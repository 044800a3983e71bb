"""The patterns' own cost per member: ``map_reduce``, ``tree_of_thoughts`` and ``swarm`` against
the hand-written composition that runs the same members (a ``Parallel`` of the mapper, a
``Parallel`` of the proposer with the scoring as its merge, a ``Sequence`` of the swarm's
members), on the mock provider, so what differs is the pattern's structure alone: its split,
slots, beam or handoff stages, and its record.

Each cell is µs per member (the run's time over its members), the median of interleaved
rounds (every variant in turn, who goes first rotating); ``ratio`` is the median over the
rounds of the pattern's time over the hand-written one's in the same round.

Run: ``.venv/bin/python benches/bench_patterns.py`` (about a minute), ``--quick`` for a smoke
test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import clock, fresh_heap, interleaved, print_table, print_targets, write_json

from trackway.agent import (
    Agent,
    LLMCall,
    Parallel,
    Sequence,
    handoff_tool,
    map_reduce,
    mock,
    swarm,
    tree_of_thoughts,
)

RATIO_TARGET = 2.0
"""A pattern may cost at most this many times its hand-written twin per member."""


def _call(prefix: str) -> Agent:
    return LLMCall.create(
        provider=mock(respond=lambda request: f"{prefix}:{len(request.messages[-1].content)}"),
        model="m",
    ).build()


def _member(index: int, n: int) -> Agent:
    """Swarm member ``index``: hands off to the next (a tool call, then a line), the last
    answers; in a sequence the same calls are made."""

    def respond(request: Any) -> Any:
        last = request.messages[-1]
        if index == n - 1:
            return "answered"
        if last.role == "tool":
            return "passing on"
        return {"tool_calls": [{"id": "h", "name": "handoff", "args": {"to": f"m{index + 1}"}}]}

    return Agent.create(provider=mock(respond=respond), model="m").tool(handoff_tool()).build()


def pairs(n: int) -> dict[str, tuple[Agent, Agent]]:
    """Per pattern: (the pattern, its hand-written twin), each running ``n`` members."""
    mapped = map_reduce(
        _call("m"), split=lambda m: [f"{m}{i}" for i in range(n)], max_items=n, concurrency=n
    )
    by_hand = Parallel.create()
    for i in range(n):
        by_hand.branch(f"b{i}", _call("m"))
    tree = tree_of_thoughts(
        _call("t"), evaluate=lambda p, t: float(len(t[-1])), k=n, beam=1, depth=1
    )
    scored = Parallel.create().merge(lambda answers: max(answers.values(), key=len))
    for i in range(n):
        scored.branch(f"p{i}", _call("t"))
    chain = swarm({f"m{i}": _member(i, n) for i in range(n)}, max_hops=n)
    in_order = Sequence.create()
    for i in range(n):
        in_order.step(f"m{i}", _member(i, n))
    return {
        "map_reduce": (mapped, by_hand.build()),
        "tree_of_thoughts": (tree, scored.build()),
        "swarm": (chain, in_order.build()),
    }


def measure(n: int, rounds: int, per_round: int) -> list[dict[str, Any]]:
    rows = []
    for pattern, (made, twin) in pairs(n).items():
        runners = {"pattern": made, "hand-written": twin}
        for runner in runners.values():
            runner.run_sync("go")  # warm, and checked to run
        assert len(made.snapshot().history()) > 0

        def timed(variant: str, runners: dict[str, Agent] = runners) -> float:
            fresh_heap()
            started = clock()
            runners[variant].run_sync("go")
            return clock() - started

        samples, ratios = interleaved(list(runners), "hand-written", timed, rounds, per_round)
        per = {v: statistics.median(s) / n * 1e6 for v, s in samples.items()}
        commits = {v: len(r.snapshot().history()) for v, r in runners.items()}
        rows.append(
            {
                "pattern": pattern,
                "members": n,
                "us_per_member": round(per["pattern"], 1),
                "hand_written_us_per_member": round(per["hand-written"], 1),
                "ratio": round(statistics.median(ratios["pattern"]), 2),
                "commits": commits["pattern"],
                "hand_written_commits": commits["hand-written"],
            }
        )
        print(f"  {pattern}, {n} members: ratio {rows[-1]['ratio']}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="the patterns' cost per member")
    ap.add_argument("--quick", action="store_true", help="4 members, 2 rounds (smoke test)")
    args = ap.parse_args(argv)
    sizes, rounds, per_round = ((4,), 2, 1) if args.quick else ((4, 16), 5, 3)
    print(f"bench_patterns: {rounds} interleaved rounds of {per_round} runs per variant")
    rows = [row for n in sizes for row in measure(n, rounds, per_round)]
    print_table(
        "Per member: the pattern vs the same members hand-written (µs per member, median)",
        ["pattern", "members", "pattern µs", "hand-written µs", "ratio", "commits", "by hand"],
        [
            [
                r["pattern"],
                r["members"],
                r["us_per_member"],
                r["hand_written_us_per_member"],
                r["ratio"],
                r["commits"],
                r["hand_written_commits"],
            ]
            for r in rows
        ],
    )
    targets = [
        {
            "target": f"{r['pattern']} ({r['members']} members) / hand-written, per member",
            "measured": r["ratio"],
            "threshold": f"≤ {RATIO_TARGET}",
            "pass": r["ratio"] <= RATIO_TARGET,
        }
        for r in rows
    ]
    print_targets(targets)
    write_json("bench_patterns", {"rows": rows, "targets": targets})
    return 0


if __name__ == "__main__":
    sys.exit(main())
