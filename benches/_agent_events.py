"""The events case of ``bench_agent.py``: what emitting costs a tool chain when listeners
hear every event, and that the event catalogue adds nothing to it (the registry is read by
docs and tests only: no emit consults it).

``none`` has no listener; ``listen`` has one listener on ``"*"`` (it counts); ``audit`` has
an ``EventAudit`` on ``"*"`` (the tests-only check of every payload against its TypedDict,
shown for what it costs, which is why it stays in tests). Every agent runs the same scripted
turn: ``n`` calls of one tool, then the answer. The untimed check run swaps the registry for
a mapping that counts its reads and asserts the run read it zero times.

Time is CPU time of the process (``time.process_time``) around ``run_sync`` alone (the agent
and its script are built before the clock starts); rounds interleave the variants.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from _agent_case import LOOKUP, lookup_script, scripted
from _common import cpu_run_sync, variant_rows, variant_table

from trackway.agent import Agent, EventAudit, receipts, replay, served_at
from trackway.agent.events import _registry

CALLS = (0, 1, 4, 16)  # tool calls in the turn (n + 1 model calls)
VARIANTS = ("none", "listen", "audit")
FIXED_US, PER_CALL_US = (
    150.0,
    40.0,
)  # listen - none per turn: a first hearing, then ~7 events a call
ANSWER = "done"

TOOL = LOOKUP


def script(n: int) -> list[Any]:
    return lookup_script(n, ANSWER)


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, event: Any) -> None:
        self.n += 1


def build(variant: str, n: int) -> Agent:
    """A fresh agent of ``variant`` with the turn of ``n`` calls scripted."""
    builder = scripted(n, script(n))
    agent = builder.system("Answer briefly.").tool(TOOL).build()
    if variant == "listen":
        agent.on("*", _Counter())
    elif variant == "audit":
        agent.on("*", EventAudit())
    return agent


class _CountingReads(dict[str, Any]):
    """The registry's dict, counting every read a run makes of it."""

    reads = 0

    def __getitem__(self, key: str) -> Any:
        type(self).reads += 1
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        type(self).reads += 1
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        type(self).reads += 1
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        type(self).reads += 1
        return super().__iter__()


def check(agent: Agent, variant: str, n: int) -> dict[str, Any]:
    """After an untimed run: every call ran, the law holds at every call, and the run
    replays; then one more run with the registry counting its reads: zero without the audit
    (and at least one an event with it: the counter does count)."""
    snap = agent.snapshot()
    state = snap.state
    assert [r["status"] for r in state.get("tool_results", [])] == ["success"] * n
    calls = receipts(snap)
    assert len(calls) == n + 1
    assert all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(calls, 1))
    replay(snap)
    events = sum(len(c.events) for c in snap.history())
    counted = _CountingReads(_registry._EVENTS)
    saved, _registry._EVENTS = _registry._EVENTS, counted
    try:
        _CountingReads.reads = 0
        again = build(variant, n)
        assert again.run_sync("go") == ANSWER
    finally:
        _registry._EVENTS = saved
    if variant == "audit":  # the counter sees reads: the audit makes them, per event
        assert _CountingReads.reads >= events, (_CountingReads.reads, events)
    else:
        assert _CountingReads.reads == 0, "an emit read the event registry"
    return {"ledger_rows": events, "commits": len(snap)}


def timed(variant: str, n: int) -> float:
    """CPU seconds of one ``run_sync`` of a fresh agent (built before the clock starts)."""
    return cpu_run_sync(build(variant, n), "go", ANSWER)


def measure(sizes: tuple[int, ...], rounds: int, per_round: int) -> dict[str, Any]:
    """Each size: an untimed, checked run per variant, then ``rounds`` rounds running every
    variant ``per_round`` times in turn. A cell is the median of its runs; a ratio the median
    over rounds of the variant's round median / none's."""
    logging.getLogger("trackway").setLevel(logging.ERROR)
    rows = variant_rows(
        "events", sizes, VARIANTS, build, check, timed, rounds, per_round, "extra_us_per_turn"
    )
    for row in rows:  # per call: the extra over the turn's calls (the answer's call too)
        for variant in VARIANTS[1:]:
            cell = row[variant]
            cell["extra_us_per_call"] = cell["extra_us_per_turn"] / (row["calls"] + 1)
    return {"results": rows}


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """A listener's extra CPU per turn against ``FIXED_US + PER_CALL_US * (calls + 1)``, per
    size (the audit's is reported)."""
    out = []
    for row in section["results"]:
        cell = row["listen"]
        limit = FIXED_US + PER_CALL_US * (row["calls"] + 1)
        out.append(
            {
                "target": f"listen - none, extra CPU µs per turn of {row['calls']} tool calls "
                f"({cell['extra_us_per_call']:.1f} a model call, ratio {cell['ratio']:.2f})",
                "measured": cell["extra_us_per_turn"],
                "threshold": f"≤ {limit:g}",
                "pass": cell["extra_us_per_turn"] <= limit,
            }
        )
        audit = row["audit"]
        out.append(
            {
                "target": f"audit - none, extra CPU µs per turn of {row['calls']} tool calls "
                f"({audit['extra_us_per_call']:.1f} a model call, ratio {audit['ratio']:.2f}; "
                "tests only)",
                "measured": audit["extra_us_per_turn"],
                "threshold": "reported",
                "pass": None,
            }
        )
    return out


def table(section: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """The report's table: one line per size and variant (events kept by the run)."""
    return variant_table(section, VARIANTS, "events")


NOTE = (
    "trackway events (benches/_agent_events.py): one tool, a turn of n calls then the "
    "answer; none = no listener; listen = one counting listener on '*'; audit = an "
    "EventAudit on '*' (the tests-only payload check). CPU time (process_time) of run_sync "
    "only, median of interleaved rounds; ratio = median over rounds of the variant's round "
    "median / none's; per call = extra per turn / (n + 1) model calls. An untimed run per "
    "cell checks every call, served_at at every call and a replay, and runs again with the "
    "registry counting its reads: zero for none and listen (the audit's reads show the "
    "counter counts)."
)
