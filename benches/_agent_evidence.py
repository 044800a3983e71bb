"""The evidence case of ``bench_agent.py`` (``--only evidence``): what the evidence gate costs
(issue 34). The gate judges an answer once, in the ``route`` that ends the turn: it reads the
turn's tool results once and looks each value of the answer up, so its cost should follow the
corpus (O(corpus) once per answer) and add nothing to the routes of the other model calls.

Two measures, both from the ``route`` commits' timestamps inside real agent runs (the model
scripted, the tool real), the gate (``posture="assist"``) against the same agent without it:

- ``corpus``: one turn whose results total 1k to 1M characters (results of at most 10,000
  characters each, read by one answer stating 12 values), without a ceiling and with the
  default one (100,000 tokens: 400,000 characters); the extra time of the final ``route``
  per character of corpus should stay flat as the corpus grows;
- ``calls``: turns of 2 to 128 model calls (one tiny result each), the extra time of a
  ``route`` that does not end the turn, which should be nothing, and the number of judgements
  (``agent.evidence_checked``), which should be one per answer.
"""

from __future__ import annotations

import statistics
from typing import Any

from _common import dist_version, fresh_heap, print_table, print_targets, write_json

from trackway.agent import Agent, mock
from trackway.tools import define_tool

SIZES = (1_000, 10_000, 100_000, 1_000_000)  # characters of tool results in the turn
CALLS = (2, 8, 32, 128)  # model calls in the turn
PIECE = 10_000  # characters of one tool result
ROW = "row {i}: ACME-{i} booked 4,{j:03d} units at 1.{j:02d} each\n"
ANSWER = (
    "ACME-7 booked 4,007 units and ACME-12 booked 4,012 at 1.07 each; Globex booked 9,999 "
    "units on 2025-03-01, per ledger_v2 and Q2 figures from NWT, about 17.5% more."
)  # 12 values, some grounded
TARGET_FLATNESS = 2.0  # extra ns per corpus character, 1M / 10k (no ceiling)
NOTE = (
    "Times are the `route` stage's own, from its commit's timestamps (wall clock), the "
    "median over runs; `extra` is the gate's route minus the same agent's without the gate."
)


def _text(chars: int) -> str:
    rows, i = [], 0
    while sum(map(len, rows)) < chars:
        rows.append(ROW.format(i=i, j=i % 1000))
        i += 1
    return "".join(rows)[:chars]


def _agent(results: list[str], answer: str, gate: bool, ceiling: int | None) -> Agent:
    texts = iter(results)
    tool = define_tool(
        name="ledger",
        description="Read the ledger.",
        input_schema={"type": "object", "properties": {"page": {"type": "integer"}}},
        execute=lambda args, ctx: next(texts),
    )
    calls = [{"id": f"c{n}", "name": "ledger", "args": {"page": n}} for n in range(len(results))]
    provider = mock(replies=[{"tool_calls": calls}, answer], keep_requests=False)
    builder = Agent.create(provider=provider, model="m", stream=False).tool(tool)
    if gate:
        builder.names_and_numbers_from_evidence(posture="assist", max_corpus_tokens=ceiling)
    return builder.build()


def _turns(n: int, gate: bool) -> Agent:
    tool = define_tool(
        name="ledger",
        description="Read the ledger.",
        input_schema={"type": "object", "properties": {"page": {"type": "integer"}}},
        execute=lambda args, ctx: f"page {args['page']}: ACME-{args['page']}",
    )
    replies: list[Any] = [
        {"tool_calls": [{"id": f"c{k}", "name": "ledger", "args": {"page": k}}]}
        for k in range(n - 1)
    ]
    provider = mock(replies=[*replies, "ACME-1 and ACME-99."], keep_requests=False)
    builder = Agent.create(provider=provider, model="m", max_iterations=n, stream=False)
    builder.tool(tool)
    if gate:
        builder.names_and_numbers_from_evidence(posture="assist")
    return builder.build()


def _routes(agent: Agent) -> list[float]:
    """Each ``route`` commit's duration in seconds, in order (the last ends the turn)."""
    return [c.ended_at - c.started_at for c in agent.snapshot().history() if c.stage_id == "route"]


def _judgements(agent: Agent) -> int:
    history = agent.snapshot().history()
    return sum(1 for c in history for e in c.events if e.name == "agent.evidence_checked")


def measure_corpus(sizes: tuple[int, ...], runs: int) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        text = _text(size)
        pieces = [text[i : i + PIECE] for i in range(0, len(text), PIECE)]
        row: dict[str, Any] = {"chars": size, "results": len(pieces)}
        for variant, gate, ceiling in (
            ("none", False, None),
            ("gate", True, None),
            ("gate, default ceiling", True, 100_000),
        ):
            times = []
            for _ in range(runs):
                agent = _agent(pieces, ANSWER, gate, ceiling)
                fresh_heap()
                agent.run_sync("go")
                times.append(_routes(agent)[-1])
            cell: dict[str, Any] = {"final_route_us": statistics.median(times) * 1e6}
            if gate:
                verdict = agent.unsupported_values() or {}
                cell["flagged"] = len(verdict.get("values", ()))
                cell["corpus_truncated"] = bool(verdict.get("corpus_truncated"))
                assert _judgements(agent) == 1
            row[variant] = cell
        base = row["none"]["final_route_us"]
        for variant in ("gate", "gate, default ceiling"):
            extra = row[variant]["final_route_us"] - base
            row[variant]["extra_us"] = extra
            row[variant]["extra_ns_per_char"] = extra * 1e3 / size
        rows.append(row)
        print(f"  corpus {size:,} chars done", flush=True)
    return rows


def measure_calls(calls: tuple[int, ...], runs: int) -> list[dict[str, Any]]:
    rows = []
    for n in calls:
        row: dict[str, Any] = {"model_calls": n}
        for variant, gate in (("none", False), ("gate", True)):
            other, final, judged = [], [], 0
            for _ in range(runs):
                agent = _turns(n, gate)
                fresh_heap()
                agent.run_sync("go")
                routes = _routes(agent)
                other.extend(routes[:-1])
                final.append(routes[-1])
                judged = _judgements(agent)
            row[variant] = {
                "other_route_us": statistics.median(other) * 1e6 if other else 0.0,
                "final_route_us": statistics.median(final) * 1e6,
                "judgements": judged,
            }
        row["extra_other_route_us"] = row["gate"]["other_route_us"] - row["none"]["other_route_us"]
        rows.append(row)
        print(f"  {n} model calls done", flush=True)
    return rows


def targets(corpus: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_size = {row["chars"]: row for row in corpus}
    out = []
    if 10_000 in by_size and 1_000_000 in by_size:
        flat = (
            by_size[1_000_000]["gate"]["extra_ns_per_char"]
            / by_size[10_000]["gate"]["extra_ns_per_char"]
        )
        out.append({"target": "gate cost per corpus char, 1M / 10k (O(corpus))",
                    "measured": round(flat, 2), "threshold": f"<= {TARGET_FLATNESS}",
                    "pass": flat <= TARGET_FLATNESS})  # fmt: skip
    judged = all(row["gate"]["judgements"] == 1 for row in calls)
    out.append({"target": "judgements per answer, whatever the model calls",
                "measured": max(row["gate"]["judgements"] for row in calls),
                "threshold": "== 1", "pass": judged})  # fmt: skip
    worst = max(row["extra_other_route_us"] for row in calls)
    out.append({"target": "extra µs of a route that does not end the turn",
                "measured": round(worst, 2), "threshold": "reported (noise)",
                "pass": None})  # fmt: skip
    return out


def main(quick: bool) -> int:
    """``--only evidence``: both measures, printed and written to
    ``results/bench_agent_evidence.json``."""
    runs = 3 if quick else 9
    sizes = SIZES[:3] if quick else SIZES
    print(f"bench_agent --only evidence: the median of {runs} runs a cell", flush=True)
    corpus = measure_corpus(sizes, runs)
    calls = measure_calls(CALLS[:2] if quick else CALLS, runs)
    print_table(
        "evidence gate: the final route (µs) by corpus size, and its extra ns per character",
        ["chars", "results", "none µs", "gate µs", "extra ns/char", "ceiling µs", "cut"],
        [[r["chars"], r["results"], r["none"]["final_route_us"], r["gate"]["final_route_us"],
          r["gate"]["extra_ns_per_char"], r["gate, default ceiling"]["final_route_us"],
          "yes" if r["gate, default ceiling"]["corpus_truncated"] else "no"] for r in corpus],
    )  # fmt: skip
    print_table(
        "evidence gate: routes that do not end the turn (µs, median), and judgements",
        ["model calls", "none µs", "gate µs", "extra µs", "judgements"],
        [[r["model_calls"], r["none"]["other_route_us"], r["gate"]["other_route_us"],
          r["extra_other_route_us"], r["gate"]["judgements"]] for r in calls],
    )  # fmt: skip
    found = targets(corpus, calls)
    print_targets(found)
    print(f"- {NOTE}")
    versions = {"trackway": dist_version("trackway"), "orjson": dist_version("orjson")}
    doc = {"versions": versions, "corpus": corpus, "calls": calls, "targets": found,
           "notes": [NOTE]}  # fmt: skip
    path = write_json("bench_agent_evidence", doc)
    print(f"\nwrote {path}")
    return 0 if all(t["pass"] is not False for t in found) else 1
