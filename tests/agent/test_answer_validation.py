"""``.answer_validation(claims=..., limits=...)``: claim contracts checked on the terminal
answer within resource limits, the report (``agent.answer_validation()``), refusals at build,
and the record: settings only when configured, a replay that writes the same report (the time
limit's cut read from the recording), redaction, a recording kept from this version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.agent.scripted import calls, returning
from tests.examples import examples
from tests.law import assert_law
from trackway.agent import (
    Agent,
    AgentBuildError,
    AnswerValidationLimits,
    DeclaredClaim,
    assess_answer,
    claim,
    conversation_redaction,
    load_recording,
    mock,
    replay,
    save_recording,
)
from trackway.agent.grounding import _validation
from trackway.engine import thaw
from trackway.tools import ToolContext

FIXTURE = Path(__file__).parent / "fixtures" / "recording-validation-v1.jsonl"


FIGURES = {"region": "EMEA", "revenue": "1,200,000", "margin": "3.50"}
SALES = returning("sales", FIGURES)
CRM = returning("crm", {"accounts": 42, "owner": "Dana Reyes"})
REVENUE = claim(
    "revenue", pattern=r"(?i)revenue was \$?(\d[\d,]*(?:\.\d+)?)", from_tools=("sales",)
)
REGION = claim("region", pattern=r"(?i)\bin ([a-z]+)\b", from_tools="sales", description="Region")
MARGIN = claim("margin", pattern=r"margin of ([\d.]+)%", from_tools=["sales"])
ACCOUNTS = claim("accounts", pattern=r"(\d+) accounts", from_tools=("sales",))


def agent_for(
    answer: str,
    *claims: DeclaredClaim,
    limits: AnswerValidationLimits | None = None,
    tools: tuple[Any, ...] = (SALES, CRM),
    made: tuple[tuple[str, str, dict[str, Any]], ...] = (("c1", "sales", {}), ("c2", "crm", {})),
    **kw: Any,
) -> Agent:
    builder = Agent.create(provider=mock(replies=[calls(*made), answer]), model="m", **kw)
    for t in tools:
        builder.tool(t)
    return builder.answer_validation(claims=claims, limits=limits).build()


def report_of(agent: Agent) -> dict[str, Any]:
    report = agent.answer_validation()
    assert report is not None
    return report


def outcomes(agent: Agent) -> dict[str, str]:
    return {c["id"]: c["outcome"] for c in report_of(agent)["checks"]}


# -- claims ---------------------------------------------------------------------------------


def test_a_stated_value_a_result_carries_passes_in_any_spelling_and_case() -> None:
    agent = agent_for("Q3 revenue was $1200000 in emea, a margin of 3.5%.", REVENUE, REGION, MARGIN)
    agent.run_sync("how did Q3 go?")
    report = report_of(agent)
    assert report["checks"] == [
        {
            "check": "claim",
            "id": "revenue",
            "outcome": "passed",
            "values": [{"value": "1200000", "carried_by": "c1"}],
            "reads": 1,
            "bytes": len(orjson.dumps(FIGURES)),
        },
        {
            "check": "claim",
            "id": "region",
            "outcome": "passed",
            "values": [{"value": "emea", "carried_by": "c1"}],
            "reads": 1,
            "bytes": report["checks"][0]["bytes"],
        },
        {
            "check": "claim",
            "id": "margin",
            "outcome": "passed",
            "values": [{"value": "3.5", "carried_by": "c1"}],
            "reads": 1,
            "bytes": report["checks"][0]["bytes"],
        },
    ]
    assert report["complete"] is True and "stopped_by" not in report and "limits" not in report
    assert report["spent"]["reads"] == 3 and report["spent"]["checks"] == 3
    assert agent.assessment().standing == "consistent"  # type: ignore[union-attr]


def test_a_stated_value_no_result_of_the_claims_tools_carries_fires() -> None:
    # 42 is in a result, but of crm, not of the claim's tool; 1,300,000 is in none
    agent = agent_for("Revenue was 1,300,000 over 42 accounts.", REVENUE, ACCOUNTS)
    agent.run_sync("how did Q3 go?")
    checks = report_of(agent)["checks"]
    assert [(c["id"], c["outcome"], c["values"]) for c in checks] == [
        ("revenue", "fired", [{"value": "1,300,000"}]),
        ("accounts", "fired", [{"value": "42"}]),
    ]
    assessed = agent.assessment()
    assert assessed is not None and assessed.standing == "not-sure"
    assert list(assessed.reasons) == [
        {"reason": "claim-unmet", "claim": "revenue", "values": ["1,300,000"]},
        {"reason": "claim-unmet", "claim": "accounts", "values": ["42"]},
    ]


def test_a_claim_the_answer_does_not_make_passes_having_read_nothing() -> None:
    agent = agent_for("Sales were fine.", REVENUE)
    agent.run_sync("go")
    assert report_of(agent)["checks"] == [
        {
            "check": "claim",
            "id": "revenue",
            "outcome": "passed",
            "values": [],
            "reads": 0,
            "bytes": 0,
        }
    ]


def test_numbers_match_as_numbers_and_never_inside_a_longer_number() -> None:
    counts = returning("sales", {"units": 12345, "returns": 7})
    units = claim("units", pattern=r"(\d[\d ]*) units", from_tools=("sales",))
    agent = agent_for("We sold 234 units.", units, tools=(counts,), made=(("c1", "sales", {}),))
    agent.run_sync("go")
    assert outcomes(agent) == {"units": "fired"}  # 234 is inside 12345, not a number of it
    agent = agent_for("We sold 12 345 units.", units, tools=(counts,), made=(("c1", "sales", {}),))
    agent.run_sync("go")
    assert outcomes(agent) == {"units": "passed"}


SEARCH = {
    "type": "object",
    "required": ["service", "window"],
    "properties": {
        "service": {"type": "string"},
        "window": {"type": "string", "enum": ["1h", "2h", "24h"]},
    },
}


def test_a_library_note_is_never_the_tools_words() -> None:
    logs = returning(
        "search_logs",
        lambda args, ctx: {"errors": 0},
        input_schema=SEARCH,
        ask_or_assume={"window": {"assume": "2h"}},
    )
    window = claim("window", pattern=r"over the last (\w+)", from_tools=("search_logs",))
    agent = agent_for(
        "No errors over the last 2h.",
        window,
        tools=(logs,),
        made=(("c1", "search_logs", {"service": "checkout"}),),
    )
    agent.run_sync("any errors?")
    served = [m["content"] for m in agent.snapshot().state["history"] if m["role"] == "tool"]
    assert '"2h"' in served[0]  # the model read the value in the library's note
    assert outcomes(agent) == {"window": "fired"}


def test_a_result_of_an_earlier_turn_carries_nothing_for_this_one() -> None:
    provider = mock(replies=[calls(("c1", "sales", {})), "ok", "Revenue was 1,200,000."])
    agent = (
        Agent.create(provider=provider, model="m")
        .tool(SALES)
        .answer_validation(claims=[REVENUE])
        .build()
    )
    agent.run_sync("first")
    agent.run_sync("and revenue?", continue_from=agent.checkpoint())
    assert outcomes(agent) == {"revenue": "fired"}


# -- limits -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "stopped_by", "second"),
    [
        (AnswerValidationLimits(max_reads=1), "max_reads", {"reads": 0, "bytes": 0}),
        (AnswerValidationLimits(max_checks=1), "max_checks", {"reads": 0, "bytes": 0}),
        (AnswerValidationLimits(max_bytes=60), "max_bytes", {"reads": 0, "bytes": 0}),
    ],
)
def test_each_limit_cuts_the_checks_and_the_report_says_which(
    limits: AnswerValidationLimits, stopped_by: str, second: dict[str, Any]
) -> None:
    agent = agent_for("Revenue was 1,200,000 in EMEA.", REVENUE, REGION, limits=limits)
    agent.run_sync("go")
    report = report_of(agent)
    first, cut = report["checks"]
    assert first["outcome"] == "passed"
    assert cut["outcome"] == "skipped" and cut["cut_by"] == stopped_by
    assert {k: cut[k] for k in second} == second
    assert report["stopped_by"] == stopped_by and report["complete"] is False
    assert report["limits"] == limits.record()
    assessed = agent.assessment()
    assert assessed is not None and list(assessed.reasons) == [
        {"reason": "validation-incomplete", "stopped_by": stopped_by, "skipped": ["region"]}
    ]


def test_a_check_cut_part_way_is_skipped_never_passed() -> None:
    many = tuple((f"c{i}", "sales", {"q": str(i)}) for i in range(4))
    agent = agent_for(
        "Revenue was 9,999.", REVENUE, limits=AnswerValidationLimits(max_reads=3), made=many
    )
    agent.run_sync("go")
    (check,) = report_of(agent)["checks"]
    assert check == {
        "check": "claim",
        "id": "revenue",
        "outcome": "skipped",
        "cut_by": "max_reads",
        "values": [{"value": "9,999"}],
        "reads": 3,
        "bytes": check["bytes"],
    }
    assert report_of(agent)["spent"]["reads"] == 3


def test_zero_checks_runs_nothing_and_says_so() -> None:
    agent = agent_for(
        "Revenue was 1,200,000.", REVENUE, limits=AnswerValidationLimits(max_checks=0)
    )
    agent.run_sync("go")
    report = report_of(agent)
    assert report["spent"]["checks"] == 0 and report["complete"] is False
    assert agent.assessment().checks_run == 0  # type: ignore[union-attr]


def big(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"rows": [f"row {args['q']}-{i} nothing to see" for i in range(400)]}


def timed_agent() -> Agent:
    made = tuple((f"c{i}", "sales", {"q": str(i)}) for i in range(40))
    return agent_for(
        "Revenue was 9,999.",
        REVENUE,
        limits=AnswerValidationLimits(max_seconds=0.0005),
        tools=(returning("sales", big),),
        made=made,
    )


def test_the_time_limit_cuts_and_a_replay_cuts_at_the_recorded_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = timed_agent()
    agent.run_sync("go")
    report = report_of(agent)
    assert report["stopped_by"] == "max_seconds" and report["complete"] is False
    (check,) = report["checks"]
    assert check["outcome"] == "skipped" and check["reads"] < 40
    assert report["spent"]["seconds"] >= 0.0005
    path = tmp_path / "run.jsonl"
    save_recording(agent, path)
    loaded = load_recording(path)
    ticks = iter(range(0, 10**9, 1000))  # a replay on a machine a thousand seconds slower per read
    monkeypatch.setattr(_validation.time, "perf_counter", lambda: float(next(ticks)))
    for replayed in (replay(loaded), replay(loaded, agent)):
        assert thaw(replayed.state["answer_validation"]) == report


def test_a_run_within_its_time_limit_replays_the_same_on_any_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = agent_for(
        "Revenue was 1,200,000.", REVENUE, limits=AnswerValidationLimits(max_seconds=60)
    )
    agent.run_sync("go")
    report = report_of(agent)
    assert report["complete"] is True
    path = tmp_path / "run.jsonl"
    save_recording(agent, path)
    ticks = iter(range(0, 10**9, 1000))
    monkeypatch.setattr(_validation.time, "perf_counter", lambda: float(next(ticks)))
    assert thaw(replay(load_recording(path)).state["answer_validation"]) == report


@pytest.mark.parametrize(
    ("given", "fix"),
    [
        ({"max_reads": -1}, "whole number ≥ 0"),
        ({"max_bytes": 1.5}, "whole number ≥ 0"),
        ({"max_checks": True}, "whole number ≥ 0"),
        ({"max_seconds": 0}, "positive number of seconds"),
        ({"max_seconds": float("inf")}, "positive number of seconds"),
    ],
)
def test_bad_limits_are_refused_with_the_fix(given: dict[str, Any], fix: str) -> None:
    with pytest.raises(AgentBuildError, match=fix):
        AnswerValidationLimits(**given)


# -- refused at build -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: claim("x", pattern=r"(\d+", from_tools="sales"), "does not compile"),
        (lambda: claim("x", pattern=r"\d+ units", from_tools="sales"), "has 0 groups"),
        (lambda: claim("x", pattern=r"(\d+) (units)", from_tools="sales"), "has 2 groups"),
        (lambda: claim("x", pattern=r"(\d+)", from_tools=()), "name the tools"),
        (lambda: claim("", pattern=r"(\d+)", from_tools="sales"), "the id must be"),
        (lambda: claim("x", pattern="", from_tools="sales"), "regex str with one group"),
    ],
)
def test_a_bad_declaration_is_refused_where_it_is_written(make: Any, says: str) -> None:
    with pytest.raises(AgentBuildError, match=says):
        make()


def builder() -> Any:
    return Agent.create(provider=mock(reply="ok"), model="m").tool(SALES)


@pytest.mark.parametrize(
    ("configure", "says"),
    [
        (
            lambda b: b.limits_travel_with_the_answer().answer_validation(claims=[REVENUE]),
            "cannot stand beside limits_travel_with_the_answer",
        ),
        (
            lambda b: b.answer_validation(claims=[claim("c", pattern="(x)", from_tools="crm")]),
            r"from_tools \['crm'\], which are not tools of this agent",
        ),
        (lambda b: b.answer_validation(), "nothing to check"),
        (
            lambda b: b.answer_validation(claims=[REVENUE]).answer_validation(claims=[REGION]),
            "called twice",
        ),
        (lambda b: b.answer_validation(claims=[REVENUE, REVENUE]), "two claims have the id"),
        (lambda b: b.answer_validation(claims=["revenue"]), "takes claim"),
        (lambda b: b.answer_validation(claims=[REVENUE], limits={"max_reads": 1}), "takes Answer"),
    ],
)
def test_a_validation_the_agent_cannot_run_is_refused_at_build(configure: Any, says: str) -> None:
    with pytest.raises(AgentBuildError, match=says):
        configure(builder()).build()


# -- the record -------------------------------------------------------------------------------


def test_not_configured_writes_no_key_and_configured_changes_no_request() -> None:
    def run(validated: bool) -> tuple[Agent, Any]:
        provider = mock(replies=[calls(("c1", "sales", {})), "Revenue was 1,200,000."])
        b = Agent.create(provider=provider, model="m").tool(SALES)
        if validated:
            b.answer_validation(claims=[REVENUE])
        agent = b.build()
        agent.run_sync("go")
        return agent, provider

    plain, plain_provider = run(False)
    checked, checked_provider = run(True)
    assert plain.answer_validation() is None
    assert "answer_validation" not in plain.snapshot().state
    assert "answer_validation" not in plain.snapshot().state["settings"]
    assert [r.canonical_json() for r in plain_provider.requests] == [
        r.canonical_json() for r in checked_provider.requests
    ]

    def writes(agent: Agent) -> list[Any]:
        out = []
        for c in agent.snapshot().history():
            for kind, key, raw, _ in c.writes:
                if key == "settings":
                    raw = orjson.dumps(
                        {k: v for k, v in orjson.loads(raw).items() if k != "answer_validation"}
                    )
                if key != "answer_validation":
                    out.append((c.stage_path, kind, key, raw))
        return out

    assert writes(plain) == writes(checked)  # it adds its report and its settings, nothing else
    assert checked.snapshot().state["settings"]["answer_validation"] == {
        "claims": [REVENUE.record()]
    }
    assert_law(checked)


def test_replay_needs_neither_the_agent_nor_its_tools(tmp_path: Path) -> None:
    agent = agent_for("Revenue was 1,300,000 in EMEA.", REVENUE, REGION)
    agent.run_sync("go")
    path = tmp_path / "run.jsonl"
    save_recording(agent, path)
    loaded = load_recording(path)
    replayed = replay(loaded)
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    assert thaw(replayed.state["answer_validation"]) == agent.answer_validation()
    assert assess_answer(replayed) == agent.assessment()


def test_conversation_redaction_hides_the_stated_values(tmp_path: Path) -> None:
    agent = agent_for("Revenue was 7,654,321.", REVENUE, redact=conversation_redaction())
    agent.run_sync("go")
    live = report_of(agent)
    assert live["checks"][0]["values"] == [{"value": "7,654,321"}]  # the run sees real values
    kept = thaw(agent.snapshot().state["answer_validation"])
    assert kept["checks"][0]["values"] == [{"value": "[REDACTED]"}]
    assert kept["checks"][0]["outcome"] == "fired"
    path = tmp_path / "run.jsonl"
    save_recording(agent, path)
    assert b"7,654,321" not in path.read_bytes()


def fixture_agent() -> Agent:
    """The run kept in ``fixtures/recording-validation-v1.jsonl`` (made by this function):
    the evidence gate as the first check, then three claims, cut by ``max_reads``."""
    logs = returning(
        "search_logs",
        lambda args, ctx: [],
        input_schema=SEARCH,
        ask_or_assume={"window": {"assume": "2h"}},
    )
    made = calls(("c1", "sales", {}), ("c2", "crm", {}), ("c3", "search_logs", {"service": "api"}))
    answer = "Revenue was 1,200,000 in EMEA over 42 accounts."
    return (
        Agent.create(provider=mock(replies=[made, answer]), model="m")
        .tool(SALES)
        .tool(CRM)
        .tool(logs)
        .names_and_numbers_from_evidence(posture="guard")
        .answer_validation(
            claims=[REVENUE, ACCOUNTS, REGION],
            limits=AnswerValidationLimits(max_reads=5, max_seconds=30),
        )
        .build()
    )


def test_a_recording_from_this_version_loads_folds_and_replays() -> None:
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 2
    state = thaw(loaded.state)
    assert state["settings"]["answer_validation"] == {
        "claims": [REVENUE.record(), ACCOUNTS.record(), REGION.record()],
        "limits": {"max_reads": 5, "max_seconds": 30},
    }
    assert state["settings"]["evidence"]["posture"] == "guard"
    report = state["answer_validation"]
    assert [(c.get("id", c["check"]), c["outcome"]) for c in report["checks"]] == [
        ("evidence", "passed"),  # 1,200,000, EMEA and 42, each in a result (42 in crm's)
        ("revenue", "passed"),
        ("accounts", "fired"),  # 42 is in no result of sales, the claim's tool
        ("region", "skipped"),
    ]
    assert report["checks"][0]["reads"] == 3 and report["spent"]["reads"] == 5
    assert report["stopped_by"] == "max_reads" and report["complete"] is False
    assessed = assess_answer(loaded)
    assert assessed is not None and assessed.standing == "not-sure"
    assert [r["reason"] for r in assessed.reasons] == [
        "empty-undeclared",
        "argument-assumed",
        "claim-unmet",
        "validation-incomplete",
    ]
    replayed = replay(loaded)
    assert thaw(replayed.state["answer_validation"]) == report
    assert assess_answer(replayed) == assessed


if __name__ == "__main__":  # regenerate the fixture: python -m tests.agent.test_answer_validation
    made = fixture_agent()
    made.run_sync("How did Q3 go?")
    save_recording(made, FIXTURE)


def spelled(n: int, sep: str) -> str:
    """``n`` with its digit groups joined by ``sep`` ("" for none)."""
    return f"{n:,}".replace(",", sep)


@settings(max_examples=examples(60), deadline=None)
@given(
    n=st.integers(0, 10**9),
    other=st.integers(0, 10**9),
    said=st.sampled_from(["", ",", " ", "_"]),
    held=st.sampled_from(["", ",", " ", "_", "\u202f"]),
)
def test_a_number_in_any_grouping_is_carried_and_another_number_fires(
    n: int, other: int, said: str, held: str
) -> None:
    count = returning("count", {"total": f"{spelled(n, held)} units"})
    total = claim("total", pattern=r"total of (\d[\d,_ ]*\d|\d)", from_tools=("count",))
    # as the gate reads results: a number grouped by spaces grounds its groups as well
    groups = {int(g) for g in f"{n:,}".split(",")} if held in (" ", "\u202f") else set()
    for stated, carried in ((n, True), (other, other == n or other in groups)):
        agent = agent_for(
            f"A total of {spelled(stated, said)} units.",
            total,
            tools=(count,),
            made=(("c1", "count", {}),),
        )
        agent.run_sync("go")
        (check,) = report_of(agent)["checks"]
        assert check["outcome"] == ("passed" if carried else "fired"), (stated, said, held)
