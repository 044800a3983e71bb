"""``agent.assessment()`` / ``assess_answer(record)``: the answer's standing folded from the
committed record. Every standing and every reason comes from a real run (the mock provider
stands in for the model only); the fold is the same over a saved and loaded recording, in
another process, and over any order of the state's keys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.agent.scripted import calls, returning
from tests.examples import examples
from trackway.agent import (
    Agent,
    AnswerAssessment,
    AnswerDeniedError,
    act,
    assess_answer,
    is_paused,
    load_recording,
    mock,
    save_recording,
)
from trackway.engine import StageError, thaw
from trackway.tools import ToolContext, absent, coverage, deny, withhold


def run(tools: list[Any], replies: list[Any], message: str = "go", **kw: Any) -> Agent:
    builder = Agent.create(provider=mock(replies=replies), model="m", **kw)
    for t in tools:
        builder.tool(t)
    agent = builder.build()
    agent.run_sync(message)
    return agent


def reasons(agent: Agent) -> list[dict[str, Any]]:
    assessed = agent.assessment()
    assert assessed is not None and assessed.standing == "not-sure"
    return [dict(r) for r in assessed.reasons]


PORTS = returning("ports", {"switch": "A", "down": 3, "up": 45})


# -- the standings ------------------------------------------------------------------------


def test_an_answer_with_no_tool_result_and_no_check_is_not_assessed() -> None:
    agent = run([], ["Paris is the capital of France."])
    assert agent.assessment() == AnswerAssessment(standing="not-assessed")


def test_results_that_fire_nothing_are_consistent_never_verified() -> None:
    agent = run([PORTS], [calls(("c1", "ports", {"q": "A"})), "3 ports are down on A."])
    assessed = agent.assessment()
    assert assessed == AnswerAssessment(standing="consistent", results_read=1)
    assert json.loads(assessed.to_json())["standing"] == "consistent"


def test_a_run_waiting_on_a_person_is_ask() -> None:
    agent = (
        Agent.create(provider=mock(replies=[calls(("c1", "ports", {"q": "A"})), "ok"]), model="m")
        .tool(PORTS)
        .check_in(["ports"])
        .build()
    )
    paused = agent.run_sync("go")
    assert is_paused(paused)
    assert agent.assessment() == AnswerAssessment(standing="ask")
    assert assess_answer(agent.snapshot()) == AnswerAssessment(standing="ask")
    agent.resume_sync(paused.checkpoint, "approve")
    assert agent.assessment() == AnswerAssessment(standing="consistent", results_read=1)


# -- no answer to assess --------------------------------------------------------------------


def test_no_assessment_before_a_run_during_one_or_after_a_failure() -> None:
    seen: list[Any] = []

    def look(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(agent.assessment())  # while the run is in flight
        seen.append(agent.answer_validation())
        return "A: 3 down"

    agent = (
        Agent.create(provider=mock(replies=[calls(("c1", "look", {})), "3 down."]), model="m")
        .tool(returning("look", look))
        .build()
    )
    assert agent.assessment() is None  # before the first run
    agent.run_sync("go")
    assert seen == [None, None]
    assert agent.assessment() is not None

    def boom(request: Any) -> Any:
        raise RuntimeError("the provider fell over")

    failing = Agent.create(provider=mock(respond=boom), model="m").build()
    with pytest.raises(StageError):
        failing.run_sync("go")
    assert failing.snapshot().status == "failed"
    assert failing.assessment() is None
    assert assess_answer(failing.snapshot()) is None


def test_no_assessment_of_an_answer_a_rule_refused() -> None:
    agent = (
        Agent.create(provider=mock(replies=["the secret is 42"]), model="m")
        .middleware(act(name="no-secrets", output=lambda m, ctx: deny("secrets are not said")))
        .build()
    )
    with pytest.raises(AnswerDeniedError):
        agent.run_sync("go")
    assert agent.assessment() is None
    assert assess_answer(agent.snapshot().state) is None


def test_no_assessment_when_the_question_was_withdrawn() -> None:
    agent = (
        Agent.create(provider=mock(replies=[calls(("c1", "ports", {"q": "A"})), "ok"]), model="m")
        .tool(PORTS)
        .check_in(["ports"])
        .build()
    )
    assert is_paused(agent.run_sync("go"))
    agent.abandon_pause_sync()
    assert agent.assessment() is None


# -- each reason, from a real run --------------------------------------------------------------


def boom(args: dict[str, Any], ctx: ToolContext) -> Any:
    raise ConnectionError("the switch did not answer")


def test_a_failed_tool_is_named() -> None:
    agent = run([returning("ports", boom)], [calls(("c1", "ports", {})), "All fine."])
    assert reasons(agent) == [
        {"reason": "tool-failed", "tool": "ports", "id": "c1", "status": "failure"}
    ]


@pytest.mark.parametrize(
    ("tool", "kw", "by"),
    [
        (returning("ports", "x" * 50), {"max_tool_result_chars": 10}, "truncated"),
        (returning("ports", "x" * 50, result_ceiling={"max_chars": 10}), {}, "refused"),
        (
            returning("ports", {"content": "A: 3", "effects": [], "status": "partial"}),
            {},
            "partial",
        ),
    ],
)
def test_a_result_the_model_read_only_part_of_is_incomplete(
    tool: Any, kw: dict[str, Any], by: str
) -> None:
    agent = run([tool], [calls(("c1", "ports", {})), "3 down."], **kw)
    assert reasons(agent) == [
        {"reason": "result-incomplete", "tool": "ports", "id": "c1", "by": by}
    ]


def test_a_withheld_result_is_incomplete() -> None:
    agent = (
        Agent.create(provider=mock(replies=[calls(("c1", "ports", {})), "ok"]), model="m")
        .tool(PORTS)
        .middleware(act(after_tool=lambda call, result, ctx: withhold("not for this person")))
        .build()
    )
    agent.run_sync("go")
    assert reasons(agent) == [
        {"reason": "result-incomplete", "tool": "ports", "id": "c1", "by": "withheld"}
    ]


@pytest.mark.parametrize("empty", [[], {}, "", None, "  ", "[ ]", "{\n}"])
def test_an_empty_result_that_declares_nothing_is_not_sure(empty: Any) -> None:
    agent = run([returning("ports", empty)], [calls(("c1", "ports", {})), "No ports are down."])
    assert reasons(agent) == [{"reason": "empty-undeclared", "tool": "ports", "id": "c1"}]


def test_an_absence_declared_through_absent_is_not_an_empty_result() -> None:
    gone = returning("ports", absent(what="ports down on A", checked=["every port of A"]))
    agent = run([gone], [calls(("c1", "ports", {})), "No ports are down."])
    assert agent.assessment() == AnswerAssessment(standing="consistent", results_read=1)


SEARCH = {
    "type": "object",
    "required": ["service", "window"],
    "properties": {
        "service": {"type": "string"},
        "window": {"type": "string", "enum": ["1h", "2h", "24h", "7d"]},
    },
}


def search_logs(value: Any = None, **rules: Any) -> Any:
    def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        return {"service": args["service"], "errors": 0} if value is None else value

    return returning(
        "search_logs",
        execute,
        input_schema=SEARCH,
        ask_or_assume={"window": {"assume": "2h"}},
        **rules,
    )


def test_a_bare_empty_result_after_a_library_note_still_reads_empty() -> None:
    agent = run(
        [search_logs(value=[])],
        [calls(("c1", "search_logs", {"service": "checkout"})), "No errors."],
    )
    served = next(m for m in agent.snapshot().state["history"] if m["role"] == "tool")["content"]
    assert served.startswith("[]\n[window was not in this search_logs call")  # the note
    assert reasons(agent) == [
        {"reason": "empty-undeclared", "tool": "search_logs", "id": "c1"},
        {
            "reason": "argument-assumed",
            "tool": "search_logs",
            "id": "c1",
            "argument": "window",
            "source": "default",
        },
    ]


def test_a_repeated_call_nudge_is_not_the_tools_words() -> None:
    agent = run(
        [returning("ports", [])],
        [calls(("c1", "ports", {})), calls(("c2", "ports", {})), "No ports are down."],
    )
    rows = agent.snapshot().state["tool_results"]
    assert rows[1]["nudged"] is True
    assert [r["id"] for r in reasons(agent)] == ["c1", "c2"]  # both read as the bare []


@pytest.mark.parametrize(
    ("args", "said"),
    [({"service": "checkout"}, None), ({"service": "checkout", "window": "2h"}, "2h")],
)
def test_a_default_the_rule_filled_or_the_model_copied_is_assumed(
    args: dict[str, Any], said: str | None
) -> None:
    agent = run([search_logs()], [calls(("c1", "search_logs", args)), "No errors."])
    assert reasons(agent) == [
        {
            "reason": "argument-assumed",
            "tool": "search_logs",
            "id": "c1",
            "argument": "window",
            "source": "default",
        }
    ]


def test_a_ruled_value_the_model_chose_is_unverified_unless_the_record_traces_it() -> None:
    script = [calls(("c1", "search_logs", {"service": "checkout", "window": "24h"})), "None."]
    untraced = run([search_logs()], script, message="any errors on checkout?")
    assert reasons(untraced) == [
        {"reason": "argument-unverified", "tool": "search_logs", "id": "c1", "argument": "window"}
    ]
    traced = run([search_logs()], script, message="any errors on checkout in the last 24H?")
    assert traced.assessment() == AnswerAssessment(standing="consistent", results_read=1)


def test_a_ruled_value_from_an_earlier_result_of_the_turn_is_traced() -> None:
    window = returning("default_window", {"window": "7d"})
    script = [
        calls(("c1", "default_window", {})),
        calls(("c2", "search_logs", {"service": "checkout", "window": "7d"})),
        "None.",
    ]
    agent = run([window, search_logs()], script, message="any errors on checkout?")
    assert agent.assessment() == AnswerAssessment(standing="consistent", results_read=2)
    # the same value in a result of the same batch traces nothing: the call was made first
    same_batch = [
        calls(
            ("c1", "default_window", {}), ("c2", "search_logs", {"service": "x", "window": "7d"})
        ),
        "None.",
    ]
    agent = run([window, search_logs()], same_batch, message="any errors?")
    assert [r["reason"] for r in reasons(agent)] == ["argument-unverified"]


def test_ground_a_tool_did_not_check_is_named() -> None:
    limited = returning(
        "ports",
        coverage(
            {"down": 3},
            checked=["ports of A"],
            not_checked=[{"what": "ports of B", "why": "timed out"}],
            cannot_cover=[{"what": "host multipathing", "why": "no collector"}],
        ),
    )
    agent = run([limited], [calls(("c1", "ports", {})), "3 down."])
    assert reasons(agent) == [
        {
            "reason": "not-checked",
            "tool": "ports",
            "id": "c1",
            "not_checked": ["ports of B"],
            "cannot_cover": ["host multipathing"],
        }
    ]


QUERIED = {"from": "2026-09-26T09:00:00Z", "to": "2026-09-26T10:00:00Z"}


@pytest.mark.parametrize(
    ("held", "verdict"),
    [
        ({"from": "2026-08-27T02:00:00Z", "to": "2026-09-26T02:00:00Z"}, "not-held"),
        ({"from": "2026-08-27T02:00:00Z", "to": "2026-09-26T09:30:00Z"}, "partly-held"),
        ("unknown", "unknown"),
        ({"from": "2026-08-27T02:00:00Z", "to": "2026-09-26T11:00:00Z"}, None),
    ],
)
def test_a_period_the_store_did_not_hold_is_named(held: Any, verdict: str | None) -> None:
    backups = returning(
        "backups",
        absent(
            what="failed backups", checked=["the export"], period={"queried": QUERIED, "held": held}
        ),
    )
    agent = run([backups], [calls(("c1", "backups", {})), "No failures."])
    if verdict is None:  # covered: nothing to say
        assert agent.assessment() == AnswerAssessment(standing="consistent", results_read=1)
    else:
        assert reasons(agent) == [
            {"reason": "period-not-held", "tool": "backups", "id": "c1", "verdict": verdict}
        ]


def test_a_result_that_owes_a_period_and_declares_none_is_named() -> None:
    agent = run(
        [search_logs(period={"argument": "window", "spelling": "lookback"})],
        [calls(("c1", "search_logs", {"service": "checkout", "window": "1h"})), "None."],
        message="errors in the last 1h?",
    )
    assert reasons(agent) == [{"reason": "period-undeclared", "tool": "search_logs", "id": "c1"}]


def test_an_answer_cut_short_is_stopped_early() -> None:
    agent = run(
        [PORTS],
        [calls(("c1", "ports", {})), calls(("c2", "ports", {"q": "B"}))],
        max_iterations=1,
        wrap_up_at_max_iterations=False,
    )
    assert reasons(agent)[-1] == {"reason": "stopped-early", "by": "max-iterations"}
    cut = run([], [{"content": "The answer is", "stop_reason": "max_tokens"}])
    assert reasons(cut) == [{"reason": "stopped-early", "by": "max-tokens"}]


class Verdict(BaseModel):
    healthy: bool


def test_an_answer_that_never_met_its_output_schema_is_named() -> None:
    agent = (
        Agent.create(provider=mock(replies=["not json"]), model="m")
        .output_schema(Verdict, retries=0)
        .build()
    )
    agent.run_sync("go")
    assert reasons(agent) == [{"reason": "output-contract-unmet", "attempts": 1}]


def test_a_typed_answer_a_fallback_served_still_names_the_unmet_contract() -> None:
    agent = (
        Agent.create(provider=mock(replies=["not json"]), model="m")
        .output_schema(Verdict, retries=0)
        .output_fallback(canned={"healthy": False})
        .build()
    )
    assert agent.run_typed_sync("go") == Verdict(healthy=False)
    assert reasons(agent) == [
        {"reason": "output-contract-unmet", "attempts": 1, "served_by": "canned"}
    ]


def test_a_continued_conversation_assesses_its_own_turn_only() -> None:
    agent = (
        Agent.create(
            provider=mock(replies=[calls(("c1", "ports", {})), "none", "Paris."]), model="m"
        )
        .tool(returning("ports", []))
        .build()
    )
    agent.run_sync("ports?")
    assert [r["reason"] for r in reasons(agent)] == ["empty-undeclared"]
    agent.run_sync("capital of France?", continue_from=agent.checkpoint())
    assert agent.assessment() == AnswerAssessment(standing="not-assessed")


# -- the fold: the same wherever the record is read -------------------------------------------


def busy_agent() -> Agent:
    return run(
        [search_logs(value=[]), returning("ports", boom)],
        [
            calls(("c1", "search_logs", {"service": "checkout"}), ("c2", "ports", {})),
            "No errors, all ports up.",
        ],
    )


def test_the_fold_is_the_same_over_a_saved_and_loaded_recording(tmp_path: Path) -> None:
    agent = busy_agent()
    live = agent.assessment()
    assert live is not None and len(live.reasons) == 3
    path = tmp_path / "run.jsonl"
    save_recording(agent, path)
    loaded = load_recording(path)
    assert assess_answer(loaded) == live
    assert assess_answer(loaded.state) == live  # the state alone folds the same


def test_the_fold_is_the_same_in_another_process(tmp_path: Path) -> None:
    agent = busy_agent()
    path = tmp_path / "run.jsonl"
    save_recording(agent, path)
    code = (
        "import sys; from trackway.agent import assess_answer, load_recording; "
        "sys.stdout.buffer.write(assess_answer(load_recording(sys.argv[1])).to_json())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, check=True, timeout=120
    )
    assessed = agent.assessment()
    assert assessed is not None
    assert json.loads(out.stdout) == json.loads(assessed.to_json())


def test_assess_answer_refuses_what_is_not_a_record() -> None:
    with pytest.raises(TypeError, match="takes a Snapshot"):
        assess_answer("run.jsonl")  # type: ignore[arg-type]


# -- the fold, as a property ----------------------------------------------------------------

ROW_STATUSES = ("success", "failure", "denied", "invalid", "partial", "absent")
CAUSES: dict[str, Any] = {
    "stopped_early": {"reason": "max-iterations"},
    "output_contract_unmet": {"error": "x", "attempts": 1},
    "unsupported_values": {"values": [{"value": "7", "kind": "number"}], "posture": "assist"},
    "answer_validation": {
        "checks": [{"check": "claim", "id": "c", "outcome": "fired", "values": [{"value": "7"}]}],
        "complete": True,
    },
}


@st.composite
def records(draw: Any) -> dict[str, Any]:
    """A committed state as an agent leaves one: this turn's calls (rows and the messages the
    model read), perhaps a continued conversation's earlier turn, and what ended the turn."""
    n = draw(st.integers(0, 4))
    prior = [{"role": "user", "content": "earlier"}] if draw(st.booleans()) else []
    history: list[dict[str, Any]] = [*prior, {"role": "user", "content": "now"}]
    rows = []
    for i in range(n):
        status = draw(st.sampled_from(ROW_STATUSES))
        text = draw(st.sampled_from(["[]", "{}", '{"a": 1}', "text", "", "null"]))
        history.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": f"c{i}", "name": "t", "args": {}}],
            }
        )
        history.append({"role": "tool", "content": text, "tool_call_id": f"c{i}", "name": "t"})
        rows.append(
            {"id": f"c{i}", "name": "t", "iteration": i + 1, "status": status, "chars": len(text)}
        )
    state: dict[str, Any] = {
        "history": history,
        "settings": {"model": "m"},
        "final_answer": draw(st.text(max_size=5)),
    }
    if prior:
        state["prior_history"] = prior
    if rows:
        state["tool_results"] = rows
    if draw(st.booleans()):  # the gate, its check passed in the validation report
        state["settings"]["evidence"] = {"posture": "assist"}
        gate = {"check": "evidence", "outcome": "passed", "unsupported": 0, "reads": n}
        gate["candidates"] = draw(st.integers(0, 3))
        state["answer_validation"] = {"checks": [gate], "complete": True}
    for key, value in CAUSES.items():
        if draw(st.booleans()):
            state[key] = value
    return state


RANK = {"known": 0, "consistent": 1, "not-assessed": 2, "not-sure": 3, "ask": 4}


@settings(max_examples=examples(200), deadline=None)
@given(state=records(), cause=st.sampled_from(sorted(CAUSES)), seed=st.randoms())
def test_the_fold_is_deterministic_and_a_cause_never_improves_the_standing(
    state: dict[str, Any], cause: str, seed: Any
) -> None:
    before = assess_answer(state)
    assert before is not None
    keys = list(state)
    seed.shuffle(keys)
    shuffled = {k: state[k] for k in keys}
    shuffled["unrelated_key"] = {"anything": [1, 2]}
    assert assess_answer(shuffled) == before  # the order of keys and other keys change nothing
    worse = assess_answer({**state, cause: CAUSES[cause]})
    assert worse is not None
    assert worse.standing == "not-sure"
    assert RANK[worse.standing] >= RANK[before.standing]
    assert set(map(repr, before.reasons)) <= set(map(repr, worse.reasons))
    assert (before.standing == "not-sure") == bool(before.reasons)
    if before.standing == "known":  # the gate passed with values, and nothing else fired
        assert state["answer_validation"]["checks"][0]["candidates"] > 0


def test_a_stored_state_mapping_folds_from_thawed_values() -> None:
    agent = busy_agent()
    assert assess_answer(thaw(agent.snapshot().state)) == agent.assessment()
