"""A tool that raises, or a call that cannot run, is logged, emitted and counted."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from trackway import Agent, define_tool, mock
from trackway.agent import replay, save_recording
from trackway.tools import ToolDefinitionError

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _boom(args: dict[str, Any], ctx: Any) -> str:
    raise LookupError(f"no such city: {args['city']}")


def _agent(replies: list[Any]) -> Any:
    tool = define_tool(name="weather", description="Weather.", input_schema=SCHEMA, execute=_boom)
    return Agent.create(provider=mock(replies=replies), model="m").tool(tool).build()


def test_a_tool_that_raises_is_logged_with_its_traceback_emitted_and_counted(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    agent = _agent(
        [{"tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Atlantis"}}]}, "ok"]
    )
    heard: list[dict[str, Any]] = []
    agent.on("tools.error", lambda event: heard.append(dict(event.payload)))
    with caplog.at_level(logging.ERROR, logger="trackway.tools"):
        result = anyio.run(agent.run_result, "Weather?")
    (record,) = [r for r in caplog.records if r.name == "trackway.tools"]
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert "tool 'weather' raised LookupError" in record.getMessage()
    assert heard == [
        {
            "id": "c1",
            "name": "weather",
            "iteration": 1,
            "kind": "raised",
            "type": "LookupError",
            "message": "no such city: Atlantis",
        }
    ]
    assert result.output == "ok"  # the model read the error and the run went on
    (row,) = result.tool_errors
    assert row["status"] == "failure" and row["error"]["type"] == "LookupError"
    # the record replays to the same commits, events included, with no tool run
    rec = save_recording(agent, tmp_path / "rec.jsonl")
    replayed = replay(rec)
    events = [e.name for c in replayed.history() for e in c.events]
    assert "tools.error" in events


def test_arguments_the_model_got_wrong_and_an_unknown_tool_are_signalled_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = _agent(
        [
            {
                "tool_calls": [
                    {"id": "c1", "name": "weather", "args": {"town": "Paris"}},
                    {"id": "c2", "name": "forecast", "args": {}},
                ]
            },
            "sorry",
        ]
    )
    heard: list[dict[str, Any]] = []
    agent.on("tools.error", lambda event: heard.append(dict(event.payload)))
    with caplog.at_level(logging.WARNING, logger="trackway.tools"):
        result = anyio.run(agent.run_result, "Weather?")
    assert [(e["kind"], e["type"]) for e in heard] == [
        ("invalid_arguments", "InvalidArguments"),
        ("unknown_tool", "UnknownTool"),
    ]
    assert "invalid arguments for weather" in heard[0]["message"]
    assert "there is no tool named 'forecast'" in heard[1]["message"]
    assert len(result.tool_errors) == 2
    assert [r.levelno for r in caplog.records if r.name == "trackway.tools"] == [
        logging.WARNING,
        logging.WARNING,
    ]


def test_a_run_without_tool_errors_counts_none() -> None:
    agent = Agent.create(provider=mock(reply="hi"), model="m").build()
    assert anyio.run(agent.run_result, "hello").tool_errors == ()


def test_an_execute_with_the_wrong_signature_is_refused_where_it_is_defined() -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        define_tool(name="w", description="W.", input_schema=SCHEMA, execute=lambda args: "x")
    assert "cannot be called as execute(args, ctx)" in str(caught.value)
    assert "def execute(args, ctx)" in str(caught.value)
