"""The evidence gate as answer validation's first check: its corpus read within the limits
(a corpus a limit cut only flags, whatever the posture), its check in the report before the
claims, the ``known`` standing it alone can give, and a replay that writes every report the
run wrote — the gate's, each revision's, the final one — time cuts included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.law import assert_law
from trackway.agent import (
    Agent,
    AnswerAssessment,
    AnswerValidationLimits,
    UnsupportedValuesError,
    claim,
    load_recording,
    mock,
    replay,
    save_recording,
)
from trackway.agent.grounding import _validation
from trackway.engine import thaw
from trackway.tools import define_tool

OBJECT = {"type": "object", "properties": {"q": {"type": "string"}}}


def figures(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"quarter": args.get("q", "Q3"), "revenue": 1_200_000, "region": "EMEA"}


SALES = define_tool(
    name="sales", description="Quarterly sales.", input_schema=OBJECT, execute=figures
)
REVENUE = claim("revenue", pattern=r"(?i)revenue (?:was|of) (\d[\d,]*)", from_tools=("sales",))


def calls(n: int = 1) -> dict[str, Any]:
    return {
        "tool_calls": [{"id": f"c{i}", "name": "sales", "args": {"q": f"Q{i}"}} for i in range(n)]
    }


def build(
    replies: list[Any],
    *,
    posture: str = "assist",
    claims: tuple[Any, ...] = (REVENUE,),
    limits: AnswerValidationLimits | None = None,
) -> Agent:
    return (
        Agent.create(provider=mock(replies=replies), model="m")
        .tool(SALES)
        .names_and_numbers_from_evidence(posture=posture)
        .answer_validation(claims=claims, limits=limits)
        .build()
    )


def report_of(agent: Agent) -> dict[str, Any]:
    report = agent.answer_validation()
    assert report is not None
    return report


def test_the_gate_is_the_first_check_and_a_grounded_answer_is_known() -> None:
    agent = build([calls(), "Q0 revenue was 1,200,000 in EMEA."])
    agent.run_sync("How did Q0 go?")
    report = report_of(agent)
    gate, revenue = report["checks"]
    assert gate == {
        "check": "evidence",
        "outcome": "passed",
        "candidates": 3,  # Q0, 1,200,000, EMEA
        "unsupported": 0,
        "reads": 1,
        "bytes": gate["bytes"],
    }
    assert revenue["outcome"] == "passed" and revenue["values"][0]["carried_by"] == "c0"
    assert report["spent"]["checks"] == 2 and report["complete"] is True
    assert "pending" not in report
    assert agent.assessment() == AnswerAssessment(standing="known", results_read=1, checks_run=2)
    assert_law(agent)


def test_an_answer_that_states_no_value_is_consistent_not_known() -> None:
    agent = build([calls(), "All good."], claims=())
    agent.run_sync("go")
    (gate,) = report_of(agent)["checks"]
    assert gate["outcome"] == "passed" and gate["candidates"] == 0
    assert agent.assessment() == AnswerAssessment(
        standing="consistent", results_read=1, checks_run=1
    )


def test_a_value_no_result_carries_fires_the_gates_check() -> None:
    agent = build([calls(), "Revenue was 1,300,000."])
    agent.run_sync("go")
    gate, revenue = report_of(agent)["checks"]
    assert (gate["outcome"], gate["unsupported"]) == ("fired", 1)
    assert revenue["outcome"] == "fired"
    assessed = agent.assessment()
    assert assessed is not None and [r["reason"] for r in assessed.reasons] == [
        "unsupported-values",
        "claim-unmet",
    ]


@pytest.mark.parametrize(
    ("limits", "cut_by", "reads"),
    [
        (AnswerValidationLimits(max_reads=1), "max_reads", 1),
        (AnswerValidationLimits(max_bytes=40), "max_bytes", 1),
        (AnswerValidationLimits(max_checks=0), "max_checks", 0),
    ],
)
def test_a_corpus_a_limit_cut_only_flags_even_on_rails(
    limits: AnswerValidationLimits, cut_by: str, reads: int
) -> None:
    # the value is in the second result, which the limit keeps the gate from reading
    def later(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"quarter": args["q"], "revenue": 7_000_000 if args["q"] == "Q1" else 5}

    sales = define_tool(name="sales", description="Sales.", input_schema=OBJECT, execute=later)
    agent = (
        Agent.create(provider=mock(replies=[calls(2), "Revenue was 7,000,000."]), model="m")
        .tool(sales)
        .names_and_numbers_from_evidence(posture="rails")
        .answer_validation(claims=[REVENUE], limits=limits)
        .build()
    )
    assert agent.run_sync("go") == "Revenue was 7,000,000."  # not withheld, not revised
    verdict = agent.unsupported_values()
    assert verdict is not None and verdict["corpus_truncated"] is True
    assert verdict["refused"] is False and verdict["downgraded_from"] == "rails"
    report = report_of(agent)
    gate, revenue = report["checks"]
    assert (gate["outcome"], gate["cut_by"], gate["reads"]) == ("skipped", cut_by, reads)
    assert (revenue["outcome"], revenue["cut_by"]) == ("skipped", cut_by)
    assert report["stopped_by"] == cut_by and report["complete"] is False
    assessed = agent.assessment()
    assert assessed is not None and [r["reason"] for r in assessed.reasons] == [
        "unsupported-values",
        "validation-incomplete",
    ]
    assert assessed.reasons[0]["corpus_truncated"] is True
    assert assessed.reasons[1]["skipped"] == ["evidence", "revenue"]


def test_a_withheld_answers_report_says_the_claims_never_ran() -> None:
    agent = build([calls(), "Revenue was 9,999.", "Revenue was 9,999."], posture="rails")
    with pytest.raises(UnsupportedValuesError):
        agent.run_sync("go")
    report = report_of(agent)
    assert [c["check"] for c in report["checks"]] == ["evidence"]
    assert report["pending"] == ["revenue"] and report["complete"] is False
    assert agent.assessment() is None  # a rule refused the answer


def test_a_revision_writes_a_report_per_judgment_and_the_replay_writes_each(
    tmp_path: Path,
) -> None:
    agent = build(
        [calls(), "Revenue was 9,999.", "Revenue was 1,200,000."],
        posture="guard",
        limits=AnswerValidationLimits(max_seconds=30),
    )
    assert agent.run_sync("go") == "Revenue was 1,200,000."
    writes = [
        thaw(op.value)
        for c in agent.snapshot().history()
        for op in c.ops
        if op.key == "answer_validation"
    ]
    assert [w["checks"][0]["outcome"] for w in writes] == ["fired", "passed", "passed"]
    assert [("pending" in w) for w in writes] == [True, True, False]
    assert writes[-1]["checks"][1]["outcome"] == "passed"
    path = tmp_path / "run.jsonl"
    save_recording(agent, path)
    loaded = load_recording(path)
    assert thaw(replay(loaded).state["answer_validation"]) == writes[-1]
    assert thaw(replay(loaded, agent).state["answer_validation"]) == writes[-1]


def big(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"q": args["q"], "rows": [f"row {i} of {args['q']}" for i in range(300)]}


def test_the_time_limit_cuts_the_gates_corpus_where_the_replay_cuts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sales = define_tool(name="sales", description="Rows.", input_schema=OBJECT, execute=big)
    agent = (
        Agent.create(provider=mock(replies=[calls(60), "Revenue was 4,242."]), model="m")
        .tool(sales)
        .names_and_numbers_from_evidence(posture="guard")
        .answer_validation(claims=[REVENUE], limits=AnswerValidationLimits(max_seconds=0.0005))
        .build()
    )
    agent.run_sync("go")
    report = report_of(agent)
    gate = report["checks"][0]
    assert gate["cut_by"] == "max_seconds" and gate["reads"] < 60
    assert report["stopped_by"] == "max_seconds"
    assert (agent.unsupported_values() or {}).get("downgraded_from") == "guard"  # no revision
    path = tmp_path / "run.jsonl"
    save_recording(agent, path)
    loaded = load_recording(path)
    ticks = iter(range(0, 10**9, 1000))  # a replay a thousand seconds slower per read
    monkeypatch.setattr(_validation.time, "perf_counter", lambda: float(next(ticks)))
    assert thaw(replay(loaded).state["answer_validation"]) == report


def test_the_gate_alone_is_something_to_validate() -> None:
    agent = build([calls(), "Revenue was 1,200,000."], claims=())
    agent.run_sync("go")
    report = report_of(agent)
    assert [c["check"] for c in report["checks"]] == ["evidence"]
    assert report["complete"] is True
    assert agent.snapshot().state["settings"]["answer_validation"] == {}
