"""An agent's narrative: one short human line per step by default, every read and write with
``detail="full"``, and the same lines told live, from the log, from a recording and by
``trackway show``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from trackway import Executor, SqliteStore, flow_chart
from trackway.agent import (
    Agent,
    Conditional,
    LLMCall,
    Loop,
    MockExhaustedError,
    Parallel,
    Paused,
    Sequence,
    load_recording,
    mock,
    save_recording,
)
from trackway.cli import main
from trackway.engine import ConfigurationError, RunTimeoutError
from trackway.recorders import narrative, narrative_from_log
from trackway.tools import ToolContext, ask_human, define_tool, static_tools

# keys the loop keeps for itself: a compact line never names them
INTERNAL_KEYS = (
    "prior_history",
    "receipts",
    "usage_total",
    "wrap_up_asked",
    "window_view",
    "findings_tickets",
    "pending_question",
    "cost_budget_hit",
    "max_iterations",
    "tool_results",
    "resolved_instructions",
    "system_prompt",
    "session_id",
    "identity",
    "settings",
    "iteration",
)
LONG_RESULT = "Paris: sunny, 22°C. " + "Light wind from the west. " * 20
ANSWER = (
    "Paris is sunny at 22°C and Rome is sunny too; the station was offline, so I could not "
    "check the pressure. "
) * 3


def _broken(args: dict[str, Any], ctx: ToolContext) -> str:
    raise RuntimeError("station offline")


def weather_agent(*recorders: Any, store: Any = None) -> Agent:
    """A realistic turn: three calls at once (one fails), a question to a person, an answer."""
    weather = define_tool(
        name="weather",
        description="Weather for a city.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
        execute=lambda args, ctx: LONG_RESULT if args["city"] == "Paris" else "Rome: sunny",
    )
    station = define_tool(
        name="station", description="A station.", input_schema={"type": "object"}, execute=_broken
    )
    model = mock(
        replies=[
            {
                "content": "Let me look that up.",
                "tool_calls": [
                    {"id": "c1", "name": "weather", "args": {"city": "Paris"}},
                    {"id": "c2", "name": "weather", "args": {"city": "Rome"}},
                    {"id": "c3", "name": "station", "args": {"id": 7}},
                ],
                "usage": {"input_tokens": 120, "output_tokens": 30},
            },
            {
                "tool_calls": [
                    {
                        "id": "q1",
                        "name": "ask_human",
                        "args": {"question": "Celsius or Fahrenheit?"},
                    }
                ]
            },
            ANSWER,
        ]
    )
    builder = (
        Agent.create(provider=model, model="mock", max_iterations=5, name="weather", store=store)
        .system("You answer weather questions.")
        .tool(weather)
        .tool(station)
        .tool(ask_human())
    )
    for recorder in recorders:
        builder.recorder(recorder)
    return builder.build()


def _run(agent: Agent) -> None:
    out = agent.run_sync("Weather in Paris and Rome?")
    assert agent.resume_sync(out.checkpoint, "Celsius") == ANSWER  # type: ignore[union-attr]


def test_an_agent_is_told_one_short_human_line_per_step() -> None:
    story = narrative()
    _run(weather_agent(story))
    lines = story.lines()
    assert lines == [
        'Agent weather was asked "Weather in Paris and Rome?"',
        'Model call 1 (120 in, 30 out tokens) asked for weather ×2, station; said "Let me look '
        'that up."',
        'Tool weather {city: "Paris"}: success — "Paris: sunny, 22°C. Light wind from the west.'
        ' Light wind from the west. Light wi..." (540 chars)',
        'Tool weather {city: "Rome"}: success — "Rome: sunny"',
        'Tool station {id: 7}: failure — "Error: station failed: RuntimeError: station offline"',
        "Model call 2 asked for ask_human",
        'Tool ask_human: waiting for a person\'s answer — "Celsius or Fahrenheit?"',
        'A person answered "Celsius"',
        'Tool ask_human: success — "Celsius"',
        'Model call 3 answered "Paris is sunny at 22°C and Rome is sunny too; the station was '
        'offline, so I coul..." (318 chars)',
        'Agent weather answered "Paris is sunny at 22°C and Rome is sunny too; the station was '
        'offline, so I coul..." (318 chars)',
    ]
    assert max(len(line) for line in lines) <= 160
    text = story.text()
    assert "(absent)" not in text
    for key in INTERNAL_KEYS:
        assert not re.search(rf"\b{key}\b", text), key


def test_the_full_narrative_still_tells_every_read_and_write() -> None:
    story = narrative(detail="full")
    _run(weather_agent(story))
    text = story.text()
    assert text.startswith('Stage 1: Seed — read message = "Weather in Paris and Rome?", ')
    assert "prior_history (absent)" in text and "Stage 4: Call LLM — read history" in text
    assert 'emitted stream.tool_start {id: "c1", name: "weather", args: {city: "Paris"}}' in text
    assert len(story.lines()) == 13  # one line per stage


def test_values_off_tells_names_statuses_and_sizes_only() -> None:
    story = narrative(values=False)
    _run(weather_agent(story))
    lines = story.lines()
    assert lines[0] == "Agent weather was asked (26 chars)"
    assert lines[2] == "Tool weather: success — (540 chars)"
    assert "Paris" not in story.text() and "Celsius" not in story.text()


def test_the_log_a_recording_and_show_tell_the_same_lines(tmp_path: Path, capsys: Any) -> None:
    story = narrative()
    store = SqliteStore(tmp_path / "runs.db")
    agent = weather_agent(story, store=store)
    _run(agent)
    snap = agent.snapshot()
    assert narrative_from_log(snap).lines() == story.lines()
    recording = load_recording(save_recording(agent, tmp_path / "rec.jsonl"))
    assert narrative_from_log(recording).lines() == story.lines()
    full = narrative_from_log(snap, detail="full")
    assert "(absent)" in full.text() and len(full.lines()) == 13
    store.close()
    assert main(["show", snap.run_id, "--store", str(tmp_path / "runs.db")]) == 0
    shown = capsys.readouterr().out
    assert story.text() in shown and "(absent)" not in shown.split("Commits:")[0]
    assert (
        main(["show", snap.run_id, "--store", str(tmp_path / "runs.db"), "--detail", "full"]) == 0
    )
    assert "prior_history (absent)" in capsys.readouterr().out


def test_a_composition_is_told_by_member_and_the_log_agrees() -> None:
    def llm(reply: str) -> Agent:
        return LLMCall.create(provider=mock(replies=[reply]), model="m").build()

    debate = Parallel.create(name="debate").branch("pro", llm("yes")).branch("con", llm("no"))
    flow = Sequence.create(name="flow").step("debate", debate.build()).step("sum", llm("a tie"))
    story = narrative()
    runner = flow.build()
    runner.attach(story)
    assert runner.run_sync("tabs?") == "a tie"
    assert story.lines() == [
        'Sequence flow was asked "tabs?"',
        '  Parallel debate (member debate) was asked "tabs?"',
        '        The agent (member debate.pro) was asked "tabs?"',
        '        Model call 1 answered "yes"',
        '        The agent (member debate.pro) answered "yes"',
        '        The agent (member debate.con) was asked "tabs?"',
        '        Model call 1 answered "no"',
        '        The agent (member debate.con) answered "no"',
        '  Gathered the answers: "pro: yes\\n\\ncon: no"',
        '  Parallel debate (member debate) answered "pro: yes\\n\\ncon: no"',
        '  The agent (member sum) was asked "pro: yes\\n\\ncon: no"',
        '  Model call 1 answered "a tie"',
        '  The agent (member sum) answered "a tie"',
        'Sequence flow answered "a tie"',
    ]
    assert narrative_from_log(runner.snapshot()).lines() == story.lines()


def test_a_chart_that_mounts_an_agent_keeps_its_own_lines() -> None:
    agent = LLMCall.create(provider=mock(replies=["hello"]), model="m").build()
    chart = (
        flow_chart("Ask", lambda scope: scope.__setitem__("q", "hi"), id="ask")
        .subflow("R", agent.spec(), id="r", input={"message": "q"}, output={"a": "final_answer"})
        .build(name="plain", chart_id="plain")
    )
    story = narrative()
    result = Executor(chart, recorders=[story]).run_sync({})
    assert story.lines() == [
        'Stage 1: Ask — wrote q = "hi"',
        'Entering subflow agent-agent — read q = "hi"; input message = "hi"',
        '  The agent (member r) was asked "hi"',
        '  Model call 1 answered "hello"',
        '  The agent (member r) answered "hello"',
        'Leaving subflow agent-agent — output a = "hello"',
    ]
    assert narrative_from_log(result.snapshot).lines() == story.lines()


def test_an_unknown_detail_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match="detail='short'"):
        narrative(detail="short")  # type: ignore[arg-type]


def test_a_continued_turn_a_cut_result_and_a_wrap_up_are_told() -> None:
    big = define_tool(
        name="big", description="d", input_schema={"type": "object"}, execute=lambda a, c: "x" * 500
    )

    def call(i: int) -> dict[str, Any]:
        return {"tool_calls": [{"id": f"c{i}", "name": "big", "args": {}}]}

    story = narrative()
    agent = (
        Agent.create(
            provider=mock(replies=["first", call(1), call(2), "I could not finish."]),
            model="m",
            max_iterations=2,
            max_tool_result_chars=100,
        )
        .tool(big)
        .recorder(story)
        .build()
    )
    agent.run_sync("hello")
    agent.run_sync("go on", continue_from=agent.checkpoint())
    lines = story.lines()
    assert lines[0] == 'The agent was asked "go on", after 2 earlier messages'
    assert lines[2].startswith('Tool big: success (truncated from 500 chars) — "xxxx')
    assert lines[2].endswith('..." (169 chars)')  # what the model read, cut here, and its size
    assert lines[4:] == [
        "Asked the model to wrap up: max_iterations (2) reached with 1 tool call not run",
        'Model call 3 answered "I could not finish."',
        'The agent answered (stopped early: max-iterations, 1 tool call not run) "I could not '
        'finish."',
    ]
    assert narrative_from_log(agent.snapshot()).lines() == lines


def test_a_failed_model_call_is_told_by_its_error() -> None:
    story = narrative()
    agent = Agent.create(provider=mock(replies=[]), model="m").recorder(story).build()
    with pytest.raises(MockExhaustedError, match="ran out of replies"):
        agent.run_sync("hello")
    assert story.lines()[0] == 'The agent was asked "hello"'
    assert story.lines()[1].startswith("Call LLM failed with MockExhaustedError: mock provider")
    assert len(story.lines()) == 2
    assert narrative_from_log(agent.snapshot()).lines() == story.lines()


class City(BaseModel):
    city: str


def test_a_check_in_an_offer_an_output_retry_and_a_withdrawn_question_are_told() -> None:
    deploy = define_tool(
        name="deploy",
        description="d",
        input_schema={"type": "object", "properties": {"env": {"type": "string"}}},
        execute=lambda a, c: "deployed",
    )
    extra = define_tool(
        name="extra", description="e", input_schema={"type": "object"}, execute=lambda a, c: "x"
    )
    replies = [
        {"tool_calls": [{"id": "d1", "name": "deploy", "args": {"env": "prod"}}]},
        "not json",
        '{"city": "Paris"}',
    ]
    story = narrative()
    agent = (
        Agent.create(provider=mock(replies=replies), model="m")
        .tool(deploy)
        .tools_from(static_tools(extra))
        .check_in(["deploy"], question="Deploy to prod?")
        .output_schema(City)
        .recorder(story)
        .build()
    )
    out = agent.run_sync("ship it")
    assert isinstance(out, Paused)
    agent.resume_sync(out.checkpoint, {"decision": "approve", "note": "go ahead"})
    assert story.lines() == [
        'The agent was asked "ship it"',
        "Offered tools: deploy, extra",
        "Model call 1 asked for deploy",
        'Tool deploy {env: "prod"}: waiting for a person\'s approval — "Deploy to prod?"',
        'A person decided: approve — "go ahead"',
        'Tool deploy: success — "deployed"',
        'Model call 2 answered "not json"',
        "Asked the model again (attempt 1): its answer did not match the output schema: "
        '"Invalid JSON: expected ident at line 1 column 2"',
        'Model call 3 answered {city: "Paris"}',
        'The agent answered {city: "Paris"}',
    ]
    assert narrative_from_log(agent.snapshot()).lines() == story.lines()

    withdrawn = narrative()
    asking = (
        Agent.create(
            provider=mock(
                replies=[
                    {"tool_calls": [{"id": "q", "name": "ask_human", "args": {"question": "Hi?"}}]}
                ]
            ),
            model="m",
        )
        .tool(ask_human())
        .recorder(withdrawn)
        .build()
    )
    asking.run_sync("go")
    assert asking.abandon_pause_sync() is not None
    assert withdrawn.lines()[-2:] == [
        "The question was withdrawn: the waiting call and any after it were not run",
        'Tool ask_human: denied — "The person did not answer: the question was withdrawn."',
    ]
    assert narrative_from_log(asking.snapshot()).lines() == withdrawn.lines()


def test_a_conditional_and_a_loop_say_what_their_rules_decided() -> None:
    def llm(*replies: str) -> Agent:
        return LLMCall.create(provider=mock(replies=list(replies)), model="m").build()

    desk = (
        Conditional.create(name="desk")
        .when(lambda message, state: "refund" in message, "billing", llm("refund noted"))
        .otherwise("general", llm("draft", "draft OK"))
        .build()
    )
    revise = Loop.create(desk, name="revise").until(lambda a, r: "OK" in a).max_rounds(3)
    story = narrative()
    runner = revise.build()
    runner.attach(story)
    assert runner.run_sync("hello") == "draft OK"
    told = [line.strip() for line in story.lines()]
    assert [line for line in told if line.startswith(("Picked", "Round", "Loop"))] == [
        'Loop revise was asked "hello"',
        "Picked general: no rule held (otherwise)",
        "Round 1 done; going again",
        "Picked general: no rule held (otherwise)",
        "Round 2 done; stopping: until held",
        'Loop revise answered "draft OK"',
    ]
    assert narrative_from_log(runner.snapshot()).lines() == story.lines()


def test_a_tool_call_cut_off_by_a_timeout_is_told() -> None:
    async def slow(args: dict[str, Any], ctx: ToolContext) -> str:
        await anyio.sleep(10)
        return "late"

    tool = define_tool(name="slow", description="d", input_schema={"type": "object"}, execute=slow)
    calls = {"tool_calls": [{"id": "s1", "name": "slow", "args": {"n": 1}}]}
    story = narrative()
    agent = Agent.create(provider=mock(replies=[calls]), model="m").tool(tool).recorder(story)
    runner = agent.build()
    with pytest.raises(RunTimeoutError):
        runner.run_sync("go", timeout=0.3)
    assert story.lines()[1:4] == [
        "Model call 1 asked for slow",
        "Tool slow {n: 1}: cut off before it returned",
        "Tool calls was cancelled",
    ]
    assert story.lines()[4].startswith("The run failed: RunTimeoutError: ")
    assert narrative_from_log(runner.snapshot()).lines() == story.lines()
