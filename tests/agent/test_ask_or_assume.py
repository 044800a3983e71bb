"""``ask_or_assume`` through an agent: a left-out argument filled by the tool's rule (the
model told, the row filing it as assumed) or asked of the person; the served schema; replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from trackway.agent import (
    Agent,
    InvalidAnswerError,
    Paused,
    load_recording,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
)
from trackway.tools import ToolContext, ToolDefinitionError, define_tool, tool

SCHEMA = {
    "type": "object",
    "required": ["service", "window"],
    "properties": {
        "service": {"type": "string", "description": "Service name."},
        "window": {
            "type": "string",
            "enum": ["1h", "2h", "24h", "7d"],
            "description": "Look-back.",
        },
    },
}


def search_logs(ran: list[dict[str, Any]], rule: dict[str, Any]) -> Any:
    def execute(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        ran.append(dict(args))
        return {"service": args["service"], "window": args["window"], "errors": 0}

    return define_tool(
        name="search_logs",
        description="Error lines for one service over a look-back period.",
        input_schema=SCHEMA,
        execute=execute,
        ask_or_assume={"window": rule},
        period={"argument": "window", "spelling": "lookback"},
    )


def calls(args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "search_logs", "args": args}]}


def build(ran: list[dict[str, Any]], rule: dict[str, Any], replies: list[Any], **kw: Any) -> Agent:
    return (
        Agent.create(provider=mock(replies=replies), model="m", **kw)
        .tool(search_logs(ran, rule))
        .build()
    )


def heard_args(agent: Agent) -> list[Any]:
    heard: list[Any] = []
    agent.on("tools.argument_filled", lambda e: heard.append(e.payload))
    return heard


def test_a_left_out_argument_is_filled_noted_and_filed_as_assumed() -> None:
    ran: list[dict[str, Any]] = []
    agent = build(ran, {"assume": "2h"}, [calls({"service": "checkout"}), "No errors."])
    heard = heard_args(agent)
    assert agent.run_sync("any errors on checkout?") == "No errors."
    assert ran == [{"service": "checkout", "window": "2h"}]  # the library filled it
    state = agent.snapshot().state
    read = state["history"][2]["content"]
    own = orjson.dumps({"service": "checkout", "window": "2h", "errors": 0}).decode()
    assert read == (
        own + '\n[window was not in this search_logs call; it ran with "2h", the value the '
        "tool's rule assumes — recorded as assumed, not as the person's words.]"
    )
    row = state["tool_results"][0]
    assert row["assumed"] == [{"argument": "window", "value": "2h", "source": "default"}]
    assert row["chars"] == len(read)
    assert heard == [{"id": "c1", "name": "search_logs", "argument": "window", "source": "default"}]
    # the call in history is the model's, as it sent it
    assert state["history"][1]["tool_calls"][0]["args"] == {"service": "checkout"}


def test_the_served_schema_says_the_rule_and_the_authors_is_untouched() -> None:
    ran: list[dict[str, Any]] = []
    agent = build(ran, {"assume": "2h"}, [calls({"service": "a"}), "ok"])
    agent.run_sync("go")
    served = served_at(agent.snapshot(), 1).tools
    assert served is not None
    schema = served[0].input_schema
    assert schema["required"] == ["service"]
    assert schema["properties"]["window"]["description"] == (
        'Look-back. If left out, the tool\'s rule fills "2h", recorded as assumed.'
    )
    assert SCHEMA["required"] == ["service", "window"]  # never edited
    assert agent._cfg.tools["search_logs"].input_schema == SCHEMA
    for k, receipt in enumerate(receipts(agent.snapshot()), start=1):
        assert served_at(agent.snapshot(), k).hash == receipt["request_hash"]


def test_a_default_the_model_copies_is_filed_as_default_without_a_note() -> None:
    ran: list[dict[str, Any]] = []
    agent = build(ran, {"assume": "2h"}, [calls({"service": "a", "window": "2h"}), "ok"])
    agent.run_sync("go")
    state = agent.snapshot().state
    assert "[window was not" not in state["history"][2]["content"]
    assert state["tool_results"][0]["assumed"] == [
        {"argument": "window", "value": "2h", "source": "default", "proposed": "2h"}
    ]
    other = build([], {"assume": "2h"}, [calls({"service": "a", "window": "7d"}), "ok"])
    other.run_sync("go")
    assert "assumed" not in other.snapshot().state["tool_results"][0]  # a choice of its own


def test_an_ask_rule_pauses_for_the_person_before_anything_runs() -> None:
    ran: list[dict[str, Any]] = []
    rule = {"ask": "Which window should the search cover?", "choices": ["1h", "24h"]}
    agent = build(ran, rule, [calls({"service": "checkout"}), "Done."])
    heard = heard_args(agent)
    out = agent.run_sync("errors on checkout?")
    assert isinstance(out, Paused) and out.kind == "arguments"
    assert out.question == "Which window should the search cover?"
    assert out.schema == {
        "type": "object",
        "properties": {"window": {**SCHEMA["properties"]["window"], "enum": ["1h", "24h"]}},
        "required": ["window"],
    }
    assert ran == []
    with pytest.raises(InvalidAnswerError, match=r"must be one of \[\"1h\",\"24h\"\]"):
        agent.resume_sync(out.checkpoint, "2h")  # not a choice: the checkpoint stays usable
    with pytest.raises(InvalidAnswerError, match="the answer gives days"):
        agent.resume_sync(out.checkpoint, {"days": 1})
    assert agent.resume_sync(out.checkpoint, "24h") == "Done."
    assert ran == [{"service": "checkout", "window": "24h"}]
    row = agent.snapshot().state["tool_results"][0]
    assert row["asked"] == [{"argument": "window", "value": "24h", "source": "person"}]
    assert "assumed" not in row
    assert "[window was not" not in agent.snapshot().state["history"][2]["content"]
    assert heard == [{"id": "c1", "name": "search_logs", "argument": "window", "source": "person"}]


def test_answers_survive_a_later_check_in_of_the_same_call() -> None:
    ran: list[dict[str, Any]] = []
    rule = {"ask": "Which window?"}
    agent = (
        Agent.create(provider=mock(replies=[calls({"service": "a"}), "ok"]), model="m")
        .tool(search_logs(ran, rule))
        .check_in(["search_logs"])
        .build()
    )
    first = agent.run_sync("go")
    assert isinstance(first, Paused) and first.kind == "arguments"
    second = agent.resume_sync(first.checkpoint, "7d")
    assert isinstance(second, Paused) and second.kind == "check_in"
    assert agent.resume_sync(second.checkpoint, "approve") == "ok"
    assert ran == [{"service": "a", "window": "7d"}]
    row = agent.snapshot().state["tool_results"][0]
    assert row["asked"] == [{"argument": "window", "value": "7d", "source": "person"}]


def test_a_filled_value_is_still_validated_and_gated() -> None:
    seen: list[Any] = []

    def gate(call: dict[str, Any], ctx: ToolContext) -> Any:
        from trackway.tools import allow

        seen.append(call["args"])
        return allow()

    ran: list[dict[str, Any]] = []
    agent = (
        Agent.create(provider=mock(replies=[calls({"service": 5}), "ok"]), model="m")
        .tool(search_logs(ran, {"assume": "2h"}))
        .gate(gate)
        .build()
    )
    agent.run_sync("go")
    assert ran == [] and seen == []  # service is not a string: refused before the gate
    assert agent.snapshot().state["tool_results"][0]["status"] == "invalid"
    agent2 = (
        Agent.create(provider=mock(replies=[calls({"service": "a"}), "ok"]), model="m")
        .tool(search_logs([], {"assume": "2h"}))
        .gate(gate)
        .build()
    )
    agent2.run_sync("go")
    assert seen == [{"service": "a", "window": "2h"}]  # the gate judges what will run


@pytest.mark.parametrize("rule", [{"assume": "2h"}, {"ask": "Which window?"}])
@pytest.mark.parametrize("with_agent", [False, True])
def test_replay_is_exact_and_needs_no_agent(
    tmp_path: Path, rule: dict[str, Any], with_agent: bool
) -> None:
    ran: list[dict[str, Any]] = []
    agent = build(ran, rule, [calls({"service": "a"}), calls({"service": "b"}, "c2"), "ok"])
    out = agent.run_sync("go")
    while isinstance(out, Paused):
        out = agent.resume_sync(out.checkpoint, "1h")
    loaded = load_recording(save_recording(agent, tmp_path / "run.json"))
    before = len(ran)
    replayed = replay(loaded, agent if with_agent else None)
    assert len(ran) == before  # nothing ran again
    assert replayed.state["tool_results"] == agent.snapshot().state["tool_results"]
    assert replayed.state["history"] == agent.snapshot().state["history"]
    assert agent.snapshot().state["tool_rules"] == {
        "search_logs": {
            "ask_or_assume": {"window": rule},
            "period": {"argument": "window", "spelling": "lookback"},
            "input_schema": SCHEMA,
        }
    }
    for k, receipt in enumerate(receipts(loaded), start=1):
        assert served_at(loaded, k).hash == receipt["request_hash"]


def test_no_rules_write_no_key() -> None:
    plain = define_tool(
        name="t", description="d", input_schema={"type": "object"}, execute=lambda a, c: "x"
    )
    agent = (
        Agent.create(
            provider=mock(replies=[{"tool_calls": [{"id": "c", "name": "t", "args": {}}]}, "ok"]),
            model="m",
        )
        .tool(plain)
        .build()
    )
    agent.run_sync("go")
    state = agent.snapshot().state
    assert "tool_rules" not in state and "people" not in state
    assert set(state["tool_results"][0]) == {"id", "name", "iteration", "status", "chars"}


def test_rules_are_checked_where_they_are_written() -> None:
    with pytest.raises(ToolDefinitionError, match="'days'"):
        define_tool(
            name="t",
            description="d",
            input_schema=SCHEMA,
            execute=lambda a, c: "x",
            ask_or_assume={"days": {"assume": 1}},
        )
    with pytest.raises(ToolDefinitionError, match="window"):
        define_tool(
            name="t",
            description="d",
            input_schema=SCHEMA,
            execute=lambda a, c: "x",
            ask_or_assume={"window": {"assume": "3h"}},  # not in the enum
        )

    @tool(ask_or_assume={"window": {"assume": "2h"}})
    def logs(service: str, window: str) -> str:
        """Search logs."""
        return f"{service}/{window}"

    assert logs.spec()["input_schema"]["required"] == ["service"]
    with pytest.raises(ToolDefinitionError, match="@tool takes name"):
        tool(retries=3)(logs.execute)
