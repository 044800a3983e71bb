"""The middleware case of ``bench_agent.py``: what an empty middleware chain costs a turn,
against the same agent with no middleware (issue 33's target: under 5% per turn).

"Empty" means links that all pass (``allow()``), so every door runs its walk, records a
ledger row per link and decides nothing: ``messages`` stands one link at the input and the
output door (``act(input=, output=)``); ``messages+tools`` adds one at the tool doors
(``.tool_middleware(before, after=)``, before each call and after it ran). ``none`` is the
same agent without middleware, which mounts nothing and writes no key. Every agent runs the
same scripted turn: ``n`` calls of one tool, then the answer.

Time is CPU time of the process (``time.process_time``) around ``run_sync`` alone (the agent
and its script are built before the clock starts), so a neighbour on this shared VM bills
less of its time to us; rounds interleave the variants so drift bills them alike.
"""

from __future__ import annotations

import logging
from typing import Any

from _agent_case import LOOKUP, lookup_script, scripted
from _common import cpu_run_sync, variant_rows, variant_table

from trackway.agent import Agent, act, receipts, replay, served_at
from trackway.tools import allow

CALLS = (0, 1, 4, 16)  # tool calls in the turn (n + 1 model calls)
VARIANTS = ("none", "messages", "messages+tools")
TARGET_RATIO = 1.05  # an empty chain / none, per turn
ANSWER = "done"

TOOL = LOOKUP


def passes(*given: Any) -> Any:
    """A link that decides nothing: ``allow()``, at whichever door it stands."""
    return allow()


def script(n: int) -> list[Any]:
    return lookup_script(n, ANSWER)


def build(variant: str, n: int) -> Agent:
    """A fresh agent of ``variant`` with the turn of ``n`` calls scripted."""
    builder = scripted(n, script(n))
    builder = builder.system("Answer briefly.").tool(TOOL)
    if variant != "none":
        builder = builder.middleware(act(name="messages", input=passes, output=passes))
    if variant == "messages+tools":
        builder = builder.tool_middleware(passes, after=passes, name="tools")
    return builder.build()


def check(agent: Agent, variant: str, n: int) -> dict[str, Any]:
    """After an untimed run: every call ran, the law holds at every call, the ledger holds
    one row per door a link passed (none without middleware), and the run replays."""
    snap = agent.snapshot()
    state = snap.state
    assert [r["status"] for r in state.get("tool_results", [])] == ["success"] * n
    calls = receipts(snap)
    assert len(calls) == n + 1
    assert all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(calls, 1))
    rows = state.get("middleware_decisions", [])
    expected = {"none": 0, "messages": 2, "messages+tools": 2 + 2 * n}[variant]
    assert len(rows) == expected, (variant, len(rows))
    replay(snap)
    return {"ledger_rows": len(rows), "commits": len(snap)}


def timed(variant: str, n: int) -> float:
    """CPU seconds of one ``run_sync`` of a fresh agent (built before the clock starts)."""
    return cpu_run_sync(build(variant, n), "go", ANSWER)


def measure(sizes: tuple[int, ...], rounds: int, per_round: int) -> dict[str, Any]:
    """Each size: an untimed, checked run per variant, then ``rounds`` rounds running every
    variant ``per_round`` times in turn (who goes first rotates). A cell is the median of
    its runs; a ratio the median over rounds of the variant's round median / none's."""
    logging.getLogger("trackway").setLevel(logging.ERROR)
    rows = variant_rows(
        "middleware", sizes, VARIANTS, build, check, timed, rounds, per_round, "extra_us_per_turn"
    )
    return {"results": rows}


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The 5% target, per size and variant (every row must pass)."""
    out = []
    for row in section["results"]:
        for variant in VARIANTS[1:]:
            ratio = row[variant]["ratio"]
            out.append(
                {
                    "target": f"{variant} (links that pass) / none, CPU µs per turn of "
                    f"{row['calls']} tool calls",
                    "measured": ratio,
                    "threshold": f"≤ {TARGET_RATIO:g}",
                    "pass": ratio <= TARGET_RATIO,
                }
            )
    return out


def table(section: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """The report's table: one line per size and variant."""
    return variant_table(section, VARIANTS, "ledger rows")


NOTE = (
    "trackway with middleware (benches/_agent_middleware.py): one tool, a turn of n calls "
    "then the answer; none = no middleware; messages = act(input=allow, output=allow); "
    "messages+tools = + .tool_middleware(allow, after=allow). CPU time (process_time) of "
    "run_sync only, median of interleaved rounds; ratio = median over rounds of the variant's "
    "round median / none's. An untimed run per cell checks every call, the ledger's rows, "
    "served_at at every call, and a replay from the record."
)
