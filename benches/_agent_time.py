"""The time case of ``bench_agent.py``: what ``.time()`` costs a turn (its clock stage and a
call row per tool call), against the same agent without it. The target is its shape: a
fixed cost (the stage's commit) plus a constant per call (one row), never more per call as
the turn grows: extra CPU per turn ≤ 150 µs + 25 µs x calls.

``time`` arms the clock with the run's own ``now`` and zone; ``none`` is the same agent
without ``.time()``, which mounts nothing and writes no key. Every agent runs the same
scripted turn: ``n`` calls of one tool, then the answer.

Time is CPU time of the process (``time.process_time``) around ``run_sync`` alone (the agent
and its script are built before the clock starts), so a neighbour on this shared VM bills
less of its time to us; rounds interleave the variants so drift bills them alike.
"""

from __future__ import annotations

import logging
from typing import Any

from _agent_case import LOOKUP, lookup_script, scripted
from _common import cpu_run_sync, variant_rows, variant_table

from trackway.agent import Agent, receipts, replay, served_at

CALLS = (0, 1, 4, 16)  # tool calls in the turn (n + 1 model calls)
VARIANTS = ("none", "time")
FIXED_US, PER_CALL_US = 150.0, 25.0  # .time()'s extra CPU per turn: a stage, then a row a call
CLOCK = {"now": "2026-10-09T16:00:00Z", "zone": "America/Los_Angeles"}
ANSWER = "done"

TOOL = LOOKUP


def script(n: int) -> list[Any]:
    return lookup_script(n, ANSWER)


def build(variant: str, n: int) -> Agent:
    """A fresh agent of ``variant`` with the turn of ``n`` calls scripted."""
    builder = scripted(n, script(n))
    builder = builder.system("Answer briefly.").tool(TOOL)
    if variant == "time":
        builder = builder.time(zone="UTC")
    return builder.build()


def check(agent: Agent, variant: str, n: int) -> dict[str, Any]:
    """After an untimed run: every call ran, the law holds at every call, the time rows are
    one clock row and one row per call (none without ``.time()``), and the run replays."""
    snap = agent.snapshot()
    state = snap.state
    assert [r["status"] for r in state.get("tool_results", [])] == ["success"] * n
    calls = receipts(snap)
    assert len(calls) == n + 1
    assert all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(calls, 1))
    rows = state.get("time_rows", [])
    expected = {"none": 0, "time": 1 + n}[variant]
    assert len(rows) == expected, (variant, len(rows))
    replay(snap)
    return {"ledger_rows": len(rows), "commits": len(snap)}


def timed(variant: str, n: int) -> float:
    """CPU seconds of one ``run_sync`` of a fresh agent (built before the clock starts)."""
    return cpu_run_sync(build(variant, n), "go", ANSWER, time=CLOCK if variant == "time" else None)


def measure(sizes: tuple[int, ...], rounds: int, per_round: int) -> dict[str, Any]:
    """Each size: an untimed, checked run per variant, then ``rounds`` rounds running every
    variant ``per_round`` times in turn (who goes first rotates). A cell is the median of
    its runs; a ratio the median over rounds of the variant's round median / none's."""
    logging.getLogger("trackway").setLevel(logging.ERROR)
    rows = variant_rows(
        "time", sizes, VARIANTS, build, check, timed, rounds, per_round, "extra_us_per_turn"
    )
    return {"results": rows}


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The extra CPU per turn against ``FIXED_US + PER_CALL_US * calls``, per size."""
    out = []
    for row in section["results"]:
        extra = row["time"]["extra_us_per_turn"]
        limit = FIXED_US + PER_CALL_US * row["calls"]
        out.append(
            {
                "target": f"time - none, extra CPU µs per turn of {row['calls']} tool calls "
                f"(ratio {row['time']['ratio']:.2f})",
                "measured": extra,
                "threshold": f"≤ {limit:g}",
                "pass": extra <= limit,
            }
        )
    return out


def table(section: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """The report's table: one line per size and variant."""
    return variant_table(section, VARIANTS, "time rows")


NOTE = (
    "trackway with .time() (benches/_agent_time.py): one tool, a turn of n calls then the "
    "answer; none = no time layer; time = .time() with the run's clock (a clock row and a "
    "call row per call). CPU time (process_time) of run_sync only, median of interleaved "
    "rounds; ratio = median over rounds of the variant's round median / none's. An untimed "
    "run per cell checks every call, the rows, served_at at every call, and a replay."
)
