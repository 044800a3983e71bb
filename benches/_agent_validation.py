"""The answer-validation case of ``bench_agent.py``: what claim contracts and the assessment
cost, and where.

- ``per turn``: a turn of ``n`` tool calls then the answer, with ``.answer_validation`` (two
  claims, one carried and one not) against the same agent without it. The checks run once,
  in ``final``: no model call gains a stage or a byte (checked: the same commits, the same
  requests), so the extra is a cost per answer, reported in µs, growing only with the
  results the checks read.
- ``at answer time``: one answer checked against a turn of ``n`` results of 4 KB each, by a
  claim whose value no result carries (so every result is read): the seconds the validation
  itself reports (``spent.seconds``), per KB read — flat if a check is O(bytes it reads).
- ``fold``: ``assess_answer(snapshot)`` over the same runs, per tool result — flat if the
  fold is O(the turn's record).

CPU time of the process (``time.process_time``) for the turns, rounds interleaved like the
middleware case; the answer-time and fold figures are medians of repeated runs.
"""

from __future__ import annotations

import logging
import statistics
import time
from typing import Any

from _common import cpu_run_sync, fresh_heap, variant_rows

from trackway.agent import (
    Agent,
    AnswerValidationLimits,
    assess_answer,
    claim,
    mock,
    receipts,
    replay,
    served_at,
)
from trackway.tools import define_tool

CALLS = (0, 1, 4, 16)  # tool calls in the turn
SIZES = (10, 100, 1000)  # results read at answer time
VARIANTS = ("none", "validated")
TARGET_FLAT = 2.0  # µs per KB (per result) at the largest size / at the smallest
REPEATS = 9
ANSWER = "Found 12 rows and 99999 errors."
ROW = "x " * 2048  # 4 KB a result, no number in it

CLAIMS = (
    claim("rows", pattern=r"(\d+) rows", from_tools=("lookup",)),
    claim("errors", pattern=r"(\d+) errors", from_tools=("lookup",)),
)


def _lookup(args: dict[str, Any], ctx: Any) -> str:
    return "12 rows" if args["key"] != "big" else ROW


TOOL = define_tool(
    name="lookup",
    description="Look a key up.",
    input_schema={"type": "object", "properties": {"key": {"type": "string"}, "n": {}}},
    execute=_lookup,
)


def build(variant: str, n: int, *, big: bool = False) -> Agent:
    """A fresh agent of ``variant`` with a turn of ``n`` calls scripted (one batch of ``n``
    4 KB results when ``big``)."""
    if big:
        batch = [
            {"id": f"c{i}", "name": "lookup", "args": {"key": "big", "n": i}} for i in range(n)
        ]
        script: list[Any] = [{"tool_calls": batch}, ANSWER]
    else:
        calls = [
            {"tool_calls": [{"id": f"c{i}", "name": "lookup", "args": {"key": "k"}}]}
            for i in range(n)
        ]
        script = [*calls, ANSWER]
    provider = mock(replies=script, keep_requests=False)
    builder = Agent.create(
        provider=provider,
        model="scripted",
        max_iterations=n + 1,
        stream=False,
        max_parallel_tool_calls=1,
        repeated_call_nudge=False,
    ).tool(TOOL)
    if variant == "validated":
        builder.answer_validation(claims=CLAIMS, limits=AnswerValidationLimits(max_seconds=60))
    return builder.build()


def check(agent: Agent, variant: str, n: int) -> dict[str, Any]:
    """After an untimed run: every call ran, the law holds at every call, the report is there
    only when configured (complete), and the run replays with the same report."""
    snap = agent.snapshot()
    state = snap.state
    assert len(state.get("tool_results", [])) == n
    calls = receipts(snap)
    assert all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(calls, 1))
    report = agent.answer_validation()
    assert (report is not None) == (variant == "validated")
    if report is not None:
        assert report["complete"] and replay(snap).state["answer_validation"] == report
    return {"commits": len(snap)}


def timed(variant: str, n: int) -> float:
    """CPU seconds of one ``run_sync`` of a fresh agent (built before the clock starts)."""
    return cpu_run_sync(build(variant, n), "go", ANSWER)


def at_answer_time(n: int) -> dict[str, Any]:
    """Validation and fold over ``n`` 4 KB results: medians of REPEATS runs."""
    seconds, folds, kb = [], [], 0.0
    for _ in range(REPEATS):
        agent = build("validated", n, big=True)
        agent.run_sync("go")
        report = agent.answer_validation()
        assert report is not None and report["spent"]["reads"] == 2 * n, report["spent"]
        kb = report["spent"]["bytes"] / 1024
        seconds.append(report["spent"]["seconds"])
        snap = agent.snapshot()
        fresh_heap()
        t = time.perf_counter()
        assessed = assess_answer(snap)
        folds.append(time.perf_counter() - t)
        assert assessed is not None and assessed.results_read == n
    validate = statistics.median(seconds)
    fold = statistics.median(folds)
    return {
        "results": n,
        "kb_read": kb,
        "validate_ms": validate * 1e3,
        "validate_us_per_kb": validate * 1e6 / kb,
        "fold_ms": fold * 1e3,
        "fold_us_per_result": fold * 1e6 / n,
    }


def measure(
    calls: tuple[int, ...], sizes: tuple[int, ...], rounds: int, per_round: int
) -> dict[str, Any]:
    logging.getLogger("trackway").setLevel(logging.ERROR)
    rows = variant_rows(
        "validation", calls, VARIANTS, build, check, timed, rounds, per_round, "extra_us"
    )
    for row in rows:
        assert row["none"]["commits"] == row["validated"]["commits"]  # no stage is added
    answer = [at_answer_time(n) for n in sizes]
    return {"results": rows, "answer_time": answer}


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for row in section["results"]:  # reported: a cost per answer, not per call
        out.append(
            {
                "target": f"validated - none, CPU µs per answer after {row['calls']} tool calls",
                "measured": row["validated"]["extra_us"],
                "threshold": "reported",
                "pass": None,
            }
        )
    first, last = section["answer_time"][0], section["answer_time"][-1]
    for key, what in (
        ("validate_us_per_kb", "validation µs per KB read"),
        ("fold_us_per_result", "assess_answer µs per tool result"),
    ):
        growth = last[key] / first[key]
        out.append(
            {
                "target": f"{what}, {last['results']} results / {first['results']}",
                "measured": growth,
                "threshold": f"≤ {TARGET_FLAT:g}",
                "pass": growth <= TARGET_FLAT,
            }
        )
    return out


def tables(section: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
    turns = [
        [row["calls"], v, row[v]["us_per_turn"], row[v].get("extra_us", 0.0), row[v]["commits"]]
        for row in section["results"]
        for v in VARIANTS
    ]
    answer = [
        [
            r["results"],
            r["kb_read"],
            r["validate_ms"],
            r["validate_us_per_kb"],
            r["fold_ms"],
            r["fold_us_per_result"],
        ]
        for r in section["answer_time"]
    ]
    return [
        (
            "answer validation: CPU µs per turn, validated vs none",
            ["tool calls", "variant", "CPU µs/turn", "extra µs", "commits"],
            turns,
        ),
        (
            "answer validation at answer time (4 KB results, every one read) and the fold",
            ["results", "KB read", "validate ms", "µs/KB", "fold ms", "fold µs/result"],
            answer,
        ),
    ]


NOTE = (
    "answer validation (benches/_agent_validation.py): one tool; per turn, n calls then the "
    "answer, with two claims (one carried, one not) against none, CPU time of run_sync, "
    "interleaved rounds; at answer time, one batch of n 4 KB results and a claim whose value "
    "no result carries (every result read by each of the two claims), the seconds the "
    "report itself records, and assess_answer(snapshot) over the same run. An untimed run "
    "per cell checks every call, served_at at every call, and a replay with the same report."
)
