"""The window-facts case of ``bench_agent.py`` (``--only window_facts``): what the ledger-fact
hold (``.findings(keep_ledger_facts=...)``) keeps, and what it costs a call.

Reach (the seed's measure): a mock provider scripts 30 tool calls of one tool; every third
result is a planted fact (its text names a port) and the next call declares it ``fact`` (the
others ``noise``); the window is ``sliding_window(keep_recent_turns=6)``. Counted: how many of
the 10 planted facts' results the answer turn is served verbatim (``served_at`` of the last
call), by recency alone (``keep_ledger_facts=0``), under the default ceiling (4) and under a
ceiling of 6. The seed reports 2 / 6 / 8.

Cost: the same script at 10 to 300 calls, ``none`` (findings and the window, hold off) against
``facts`` (the default ceiling), CPU time of ``run_sync`` per model call, interleaved rounds.
The growth ratio of each variant is its per-call cost at the largest size over the smallest;
the target is that the hold's relative cost (facts/none) does not grow with the run.
"""

from __future__ import annotations

import logging
from typing import Any

from _common import cpu_run_sync, variant_rows

from trackway.agent import Agent, mock, receipts, replay, served_at, sliding_window
from trackway.tools import define_tool

REACH_CALLS, EVERY, KEEP_TURNS = 30, 3, 6
CEILINGS = {"recency alone": 0, "default ceiling": None, "ceiling 6": 6}
SEED = {"recency alone": 2, "default ceiling": 6, "ceiling 6": 8}
CALLS = (10, 30, 100, 300)
VARIANTS = ("none", "facts")
GROWTH_LIMIT = 1.25  # the hold's cost relative to none may not grow with the run
ANSWER = "port 3 and the others"


def _search(args: dict[str, Any], ctx: Any) -> str:
    q = int(args["q"])
    if q % EVERY == 0:
        return f"finding {q}: the optic on port {q} was swapped during the window"
    return f"nothing about port {q} in this log " + "." * 40


SEARCH = define_tool(
    name="search",
    description="Search the logs.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    execute=_search,
)


def script(n: int) -> list[Any]:
    replies: list[Any] = []
    for i in range(1, n + 1):
        args: dict[str, Any] = {"q": str(i)}
        if i > 1:
            standing = "fact" if (i - 1) % EVERY == 0 else "noise"
            args["_findings"] = {"previous": [{"id": f"c{i - 1}", "standing": standing}]}
        replies.append({"tool_calls": [{"id": f"c{i}", "name": "search", "args": args}]})
    return [*replies, ANSWER]


def agent(n: int, ceiling: int | None) -> Agent:
    provider = mock(replies=script(n), keep_requests=False)
    builder = Agent.create(provider=provider, model="scripted", max_iterations=n + 1, stream=False)
    builder = builder.tool(SEARCH).window(sliding_window(keep_recent_turns=KEEP_TURNS))
    return builder.findings(keep_ledger_facts=ceiling).build()


def reach() -> list[dict[str, Any]]:
    """How many planted facts' results the answer turn was served verbatim, per ceiling."""
    rows = []
    for label, ceiling in CEILINGS.items():
        a = agent(REACH_CALLS, ceiling)
        assert a.run_sync("which port had its optic swapped?") == ANSWER
        snap = a.snapshot()
        last = served_at(snap, len(receipts(snap)))
        tool_bytes = [len(m.content or "") for m in last.messages if m.role == "tool"]
        facts = [
            m.tool_call_id
            for m in last.messages
            if m.role == "tool" and (m.content or "").startswith("finding")
        ]
        noise = sum(len(m.content or "") for m in last.messages if m.role == "tool") - sum(
            len(m.content or "")
            for m in last.messages
            if m.role == "tool" and (m.content or "").startswith("finding")
        )
        window = snap.state["window"][-1]
        rows.append(
            {
                "row": label,
                "keep_ledger_facts": 4 if ceiling is None else ceiling,
                "facts_reached": len(facts),
                "planted": REACH_CALLS // EVERY,
                "seed": SEED[label],
                "yielded": window["ledger_facts"]["yielded"],
                "tool_result_bytes": sum(tool_bytes),
                "noise_share": round(noise / sum(tool_bytes), 3) if tool_bytes else 0.0,
            }
        )
    return rows


def build(variant: str, n: int) -> Agent:
    return agent(n, None if variant == "facts" else 0)


def check(a: Agent, variant: str, n: int) -> dict[str, Any]:
    """After an untimed run: the law at every call, the replay, and the hold's rows."""
    snap = a.snapshot()
    calls = receipts(snap)
    assert len(calls) == n + 1
    assert all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(calls, 1))
    replay(snap)
    pinned = sum(len(r["ledger_facts"]["pinned"]) for r in snap.state["window"])
    assert (pinned > 0) == (variant == "facts" and n > KEEP_TURNS + EVERY), (variant, n)
    return {"ledger_rows": pinned, "commits": len(snap)}


def timed(variant: str, n: int) -> float:
    """CPU seconds of one ``run_sync`` of a fresh agent (built before the clock starts)."""
    return cpu_run_sync(build(variant, n), "which port had its optic swapped?", ANSWER)


def measure(sizes: tuple[int, ...], rounds: int, per_round: int) -> dict[str, Any]:
    logging.getLogger("trackway").setLevel(logging.ERROR)
    rows = variant_rows(
        "window_facts", sizes, VARIANTS, build, check, timed, rounds, per_round, "extra_us_per_turn"
    )
    for row in rows:
        for v in VARIANTS:
            row[v]["us_per_call"] = row[v]["us_per_turn"] / (row["calls"] + 1)
    first, last = rows[0], rows[-1]
    growth = {v: last[v]["us_per_call"] / first[v]["us_per_call"] for v in VARIANTS}
    return {"reach": reach(), "results": rows, "growth": growth}


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    out = [
        {
            "target": f"planted facts served at the answer turn, {r['row']} (seed {r['seed']})",
            "measured": r["facts_reached"],
            "threshold": f"= {r['seed']}",
            "pass": r["facts_reached"] == r["seed"],
        }
        for r in section["reach"]
    ]
    g = section["growth"]
    first, last = section["results"][0]["facts"]["ratio"], section["results"][-1]["facts"]["ratio"]
    out.append(
        {
            "target": f"the hold's relative cost does not grow: facts/none CPU ratio at "
            f"{section['results'][-1]['calls']} calls ({last:.2f}) over at "
            f"{section['results'][0]['calls']} ({first:.2f}); per-call growth facts "
            f"{g['facts']:.2f}, none {g['none']:.2f}",
            "measured": round(last / first, 2),
            "threshold": f"≤ {GROWTH_LIMIT}",
            "pass": last / first <= GROWTH_LIMIT,
        }
    )
    return out


def tables(section: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
    reach_rows = [
        [r["row"], r["keep_ledger_facts"], f"{r['facts_reached']}/{r['planted']}", r["seed"],
         r["yielded"], r["tool_result_bytes"], r["noise_share"]]
        for r in section["reach"]
    ]  # fmt: skip
    cost_rows = [
        [row["calls"], v, row[v]["us_per_call"], row[v].get("extra_us_per_turn", 0.0),
         row[v].get("ratio", 1.0), row[v]["ledger_rows"]]
        for row in section["results"]
        for v in VARIANTS
    ]  # fmt: skip
    cost_rows += [
        ["growth (largest/smallest)", v, section["growth"][v], "", "", ""] for v in VARIANTS
    ]
    return [
        (
            f"trackway window facts: planted facts served at the answer turn ({REACH_CALLS} calls, "
            f"a fact every {EVERY}, sliding window of {KEEP_TURNS} turns)",
            ["row", "ceiling", "reached", "seed", "yielded", "tool bytes", "noise share"],
            reach_rows,
        ),
        (
            "trackway window facts: CPU µs per model call, hold (facts) vs none",
            ["tool calls", "variant", "µs/call", "extra µs/turn", "ratio", "pins filed"],
            cost_rows,
        ),
    ]


NOTE = (
    "trackway window facts (benches/_agent_window_facts.py): mock provider, one tool; each "
    "call declares the previous result fact (every third, its text names a port) or noise; "
    "sliding_window(keep_recent_turns=6) with .findings(keep_ledger_facts=0 | default 4 | 6). "
    "reached = planted facts whose result served_at(last call) carries verbatim. Cost: CPU "
    "time (process_time) of run_sync / (calls + 1), median of interleaved rounds, none = "
    "keep_ledger_facts=0, facts = the default; an untimed run per cell checks the law at "
    "every call and a replay. growth = per-call CPU at the largest size / the smallest."
)
