"""The findings case of ``bench_agent.py`` (``--only findings``): what the served ledger piece
costs a call as a run grows from 4 to 128 tool calls, each declaring a standing on the result
before it (fact with an assertion, open, noise, ruled-out in turn; an exploratory basis with a
proposition on every call).

Two measures:

- **composition**: the piece composed for every call of a finished run, from the state that
  call read (``findings_piece`` with the run's one :class:`LedgerPiece` memo, as the request
  assembly does it), in µs per call; and the same with a fresh memo per call (what a
  from-scratch composition would cost). The piece itself grows with the ledger (one line a
  result), so its bytes are O(results); taking in the rows is O(new rows) and the kept lines
  are only joined again. The target is the ratio of the per-call cost at the largest size to
  the smallest, against the ratio of the piece's bytes (the join is linear in them).
- **end to end**: CPU per turn of the armed agent against the same agent whose recording
  predates the piece (``settings["findings"] = true``: the same declarations, tickets and
  rows, no piece), per call.

CPU time (``time.process_time``); the agent and its script are built before the clock starts.
"""

from __future__ import annotations

import logging
import statistics
import time
from typing import Any

from _common import cpu_run_sync, fresh_heap, variant_rows, variant_table

from trackway.agent import Agent, mock, receipts, replay, served_at
from trackway.agent.context._findings_piece import LedgerPiece, findings_piece
from trackway.agent.context._findings_plan import FindingsPlan
from trackway.agent.record._record import _llm_commits, _state_before
from trackway.tools import define_tool

CALLS = (4, 16, 32, 64, 128)
VARIANTS = ("none", "piece", "gate")  # gate: the piece and the evidence gate (contingent)
ANSWER = "done"
STANDINGS = ("fact", "open", "noise", "ruled-out")

TOOL = define_tool(
    name="lookup",
    description="Look a key up.",
    input_schema={"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
    execute=lambda args, ctx: f"value of {args['key']}",
)


def script(n: int) -> list[Any]:
    replies: list[Any] = []
    for i in range(n):
        findings: dict[str, Any] = {"basis": "exploratory", "proposition": f"key {i} holds it"}
        if i:
            standing = STANDINGS[(i - 1) % 4]
            judged: dict[str, Any] = {"id": f"c{i - 1}", "standing": standing, "note": f"n{i}"}
            if standing == "fact":
                judged["assertions"] = [{"about": f"key {i - 1}", "value": i - 1}]
            findings["previous"] = [judged]
        args = {"key": f"k{i}", "_findings": findings}
        replies.append({"tool_calls": [{"id": f"c{i}", "name": "lookup", "args": args}]})
    return [*replies, ANSWER]


def build(variant: str, n: int) -> Agent:
    """A fresh armed agent of ``variant`` (``none``: as a recording made before the piece)."""
    provider = mock(replies=script(n), keep_requests=False)
    builder = Agent.create(provider=provider, model="scripted", max_iterations=n + 1, stream=False)
    builder = builder.system("Answer briefly.").tool(TOOL).findings()
    if variant == "none":
        builder._findings_plan = FindingsPlan(piece=False)
    elif variant == "gate":
        builder = builder.names_and_numbers_from_evidence(posture="assist")
    return builder.build()


def check(agent: Agent, variant: str, n: int) -> dict[str, Any]:
    """After an untimed run: every call ran, the law holds at every call, the piece is
    served from the third call on (only when armed), and the run replays."""
    snap = agent.snapshot()
    calls = receipts(snap)
    assert len(calls) == n + 1
    assert all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(calls, 1))
    last = served_at(snap, n + 1).system or ""
    assert ("Findings ledger" in last) == (variant != "none" and n > 1), variant
    replay(snap)
    return {"ledger_rows": len(snap.state.get("findings", [])), "commits": len(snap)}


def timed(variant: str, n: int) -> float:
    """CPU seconds of one ``run_sync`` of a fresh agent (built before the clock starts)."""
    return cpu_run_sync(build(variant, n), "go", ANSWER)


def composition(n: int, repeats: int) -> dict[str, Any]:
    """The piece composed for each call of a finished ``n``-call run (states read first)."""
    agent = build("piece", n)
    agent.run_sync("go")
    snap = agent.snapshot()
    states = [_state_before(snap, c) for c in _llm_commits(snap)]
    incremental, scratch = [], []
    for _ in range(repeats):
        memo = LedgerPiece()
        fresh_heap()
        t = time.process_time()
        for state in states:
            findings_piece(state, memo)
        incremental.append((time.process_time() - t) / len(states))
        fresh_heap()
        t = time.process_time()
        for state in states:
            findings_piece(state, LedgerPiece())
        scratch.append((time.process_time() - t) / len(states))
    last = findings_piece(states[-1]) or ""
    return {
        "calls": n,
        "incremental_us_per_call": statistics.median(incremental) * 1e6,
        "scratch_us_per_call": statistics.median(scratch) * 1e6,
        "piece_bytes_last_call": len(last.encode()),
    }


def measure(sizes: tuple[int, ...], rounds: int, per_round: int) -> dict[str, Any]:
    logging.getLogger("trackway").setLevel(logging.ERROR)
    pieces = [composition(n, max(5, rounds)) for n in sizes]
    rows = variant_rows(
        "findings", sizes, VARIANTS, build, check, timed, rounds, per_round, "extra_us_per_turn"
    )
    for row in rows:
        for variant in ("piece", "gate"):
            extra = row[variant]["extra_us_per_turn"]
            row[variant]["extra_us_per_call"] = extra / (row["calls"] + 1)
    return {"composition": pieces, "results": rows}


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-call composition grows no faster than the piece it composes (O(new rows) to take
    in, plus a join of the kept lines): the per-call cost ratio, largest size over smallest,
    is at most the bytes ratio."""
    pieces = section["composition"]
    first, last = pieces[0], pieces[-1]
    cost = last["incremental_us_per_call"] / first["incremental_us_per_call"]
    size = last["piece_bytes_last_call"] / first["piece_bytes_last_call"]
    out = [
        {
            "target": f"piece composition µs per call, {last['calls']} calls / {first['calls']} "
            f"(piece bytes ratio {size:.1f})",
            "measured": cost,
            "threshold": f"≤ {size:.1f}",
            "pass": cost <= size,
        }
    ]
    for row in section["results"]:
        for variant in ("piece", "gate"):
            out.append(
                {
                    "target": f"{variant} - none, extra CPU µs per call, {row['calls']} calls "
                    f"(ratio {row[variant]['ratio']:.2f})",
                    "measured": row[variant]["extra_us_per_call"],
                    "threshold": "reported",
                    "pass": None,
                }
            )
    return out


def table(section: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    return variant_table(section, VARIANTS, "ledger rows")


def composition_table(section: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    headers = ["tool calls", "incremental µs/call", "from scratch µs/call", "piece bytes (last)"]
    rows = [
        [
            p["calls"],
            p["incremental_us_per_call"],
            p["scratch_us_per_call"],
            p["piece_bytes_last_call"],
        ]
        for p in section["composition"]
    ]
    return headers, rows


NOTE = (
    "trackway .findings() piece (benches/_agent_findings.py): one tool, a turn of n calls each "
    "declaring a standing on the result before it (fact with an assertion / open / noise / "
    "ruled-out in turn), then the answer; gate = the piece and the evidence gate (assist: the "
    "contingent check at every dispatch and at the answer). composition = findings_piece for "
    "every call's state of a finished run with the run's memo (incremental) or a fresh one "
    "per call (scratch); "
    "none = the same agent as a recording made before the piece (no piece served). CPU time "
    "(process_time); an untimed run per cell checks the law at every call and a replay."
)
