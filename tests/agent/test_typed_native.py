"""output_schema(strategy="native") on the wire: OpenAI's strict json_schema response
format, Anthropic's forced answer tool, the stops that fail a native answer even when its
text parses (refusal, max_tokens, a full context window), the build-time refusals; and a
report recorded before its fields were, read and replayed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest
from pydantic import BaseModel

from tests.law import assert_law
from trackway.agent import (
    Agent,
    AgentBuildError,
    OutputContractError,
    anthropic,
    load_recording,
    mock,
    openai,
    replay,
    save_recording,
    served_at,
)
from trackway.agent.output._contract import unmet_view
from trackway.engine import thaw
from trackway.tools import define_tool

from .test_anthropic import message
from .test_anthropic import sse as anthropic_sse
from .test_openai import chunk, completion
from .test_openai import sse as openai_sse
from .wire_server import Server


class Weather(BaseModel):
    city: str
    celsius: int
    note: str | None = None


class Place(BaseModel):
    name: str
    weather: Weather


VALID = '{"city": "Paris", "celsius": 22, "note": null}'
PARIS = Weather(city="Paris", celsius=22)
LOOKUP = define_tool(
    name="lookup",
    description="Look a city up.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    execute=lambda args, ctx: "sunny",
)


KEY = "k" * 12
JSON_MODE = {"type": "json_object"}


def openai_on(server: Server) -> Any:
    return openai(
        "gpt-test", base_url="https://llm.test/v1", api_key=KEY, transport=server.transport
    )


def on_openai(server: Server, *, strategy: str = "native", **options: Any) -> Agent:
    provider = openai_on(server)
    builder = Agent.create(provider=provider, stream=False, **options)
    return builder.output_schema(Weather, retries=0, strategy=strategy).build()


def on_anthropic(server: Server, *tools: Any, stream: bool = False) -> Agent:
    provider = anthropic(
        "claude-test", base_url="https://claude.test", api_key=KEY, transport=server.transport
    )
    builder = Agent.create(provider=provider, stream=stream).tools(tools)
    return builder.output_schema(Weather, retries=0, strategy="native").build()


def answer(value: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_9", "name": "Weather", "input": value, **fields}


STRICT = {
    "type": "object",
    "title": "Weather",
    "properties": {
        "city": {"type": "string", "title": "City"},
        "celsius": {"type": "integer", "title": "Celsius"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Note"},
    },
    "required": ["city", "celsius", "note"],
    "additionalProperties": False,
}


# -- OpenAI ------------------------------------------------------------------------------------


def test_openai_gets_a_strict_json_schema_and_the_law_holds() -> None:
    server = Server(completion(VALID))
    agent = on_openai(server)
    assert agent.run_typed_sync("weather?") == PARIS
    assert server.body()["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Weather", "strict": True, "schema": STRICT},
    }
    settings = thaw(agent.snapshot().state["settings"])
    assert settings["output_strategy"] == "native"
    assert settings["response_format"] == server.body()["response_format"]
    assert assert_law(agent) == 1


def test_a_nested_model_is_closed_at_every_level_and_a_free_mapping_is_refused() -> None:
    provider = mock(reply="x")
    agent = Agent.create(provider=provider, model="m").output_schema(Place, strategy="native")
    agent.build().run_sync("where?")
    schema = provider.requests[0].response_format["json_schema"]["schema"]  # type: ignore[index]
    assert schema["properties"]["weather"] == {"$ref": "#/$defs/Weather"}
    inner = schema["$defs"]["Weather"]
    assert inner["additionalProperties"] is False and inner["required"] == [
        "city",
        "celsius",
        "note",
    ]
    assert "default" not in orjson.dumps(schema).decode()

    class Loose(BaseModel):
        tags: dict[str, int]

    loose = Agent.create(provider=mock(reply="x"), model="m").output_schema(
        Loose, strategy="native"
    )
    with pytest.raises(AgentBuildError, match="Loose.tags is a free-form mapping"):
        loose.build()


def test_an_openai_refusal_fails_the_answer_and_is_reported() -> None:
    refused = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    body = {"choices": [{"index": 0, "message": refused, "finish_reason": "stop"}]}
    server = Server(httpx2.Response(200, json=body))
    agent = on_openai(server)
    assert agent.run_sync("weather?") == "I can't help with that."
    unmet = agent.output_contract_unmet()
    assert unmet is not None and unmet["stop_reason"] == "refusal"
    assert unmet["stage"] == "json-parse"
    with pytest.raises(OutputContractError) as info:
        agent.run_typed_sync("weather?")
    assert info.value.stop_reason == "refusal"


def test_a_streamed_refusal_stops_with_refusal() -> None:
    server = Server(
        openai_sse(chunk({"refusal": "I can't "}), chunk({"refusal": "help."}, "stop"), "[DONE]")
    )
    provider = openai_on(server)
    agent = Agent.create(provider=provider).output_schema(Weather, strategy="native").build()
    assert agent.run_sync("weather?") == "I can't help."
    assert agent.output_contract_unmet()["stop_reason"] == "refusal"  # type: ignore[index]


def test_a_native_answer_cut_at_max_tokens_fails_even_when_it_parses() -> None:
    agent = on_openai(Server(completion(VALID, finish_reason="length")))
    assert agent.run_sync("weather?") == VALID
    unmet = agent.output_contract_unmet()
    assert unmet is not None
    assert (unmet["stage"], unmet["stop_reason"], unmet["path"]) == (
        "stop-reason",
        "max_tokens",
        None,
    )
    assert "cut at max_tokens" in unmet["error"]
    instructed = on_openai(Server(completion(VALID, finish_reason="length")), strategy="instruct")
    assert instructed.run_typed_sync("weather?") == PARIS  # only native judges the stop


# -- Anthropic ---------------------------------------------------------------------------------


def test_anthropic_is_made_to_call_the_answer_tool_and_its_input_is_the_answer() -> None:
    server = Server(message(answer({"city": "Paris", "celsius": 22}), stop_reason="tool_use"))
    agent = on_anthropic(server)
    assert agent.run_typed_sync("weather?") == PARIS
    body = server.body()
    assert body["tool_choice"] == {"type": "tool", "name": "Weather"}
    (tool,) = body["tools"]
    assert tool["name"] == "Weather" and tool["input_schema"] == STRICT
    assert "response_format" not in body
    response = thaw(agent.snapshot().state["response"])
    assert response["tool_calls"] == [] and response["stop_reason"] == "stop"
    assert orjson.loads(response["content"]) == {"city": "Paris", "celsius": 22}
    assert assert_law(agent) == 1
    sent = served_at(agent, 1)  # the neutral request, rebuilt; on the wire, the forced tool
    assert orjson.loads(agent._cfg.provider.wire(sent)) == body  # type: ignore[attr-defined]


def test_beside_the_agents_tools_anthropic_must_call_one_and_the_answer_ends_the_turn() -> None:
    lookup = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"city": "Paris"}}
    server = Server(
        message(lookup, stop_reason="tool_use"),
        message(answer({"city": "Paris", "celsius": 21}), stop_reason="tool_use"),
    )
    agent = on_anthropic(server, LOOKUP)
    assert agent.run_typed_sync("weather?") == Weather(city="Paris", celsius=21)
    first = server.body(0)
    assert first["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in first["tools"]] == ["lookup", "Weather"]
    assert assert_law(agent) == 2


def test_a_streamed_answer_tool_is_read_as_the_answer() -> None:
    events = [
        {"type": "message_start", "message": {"model": "claude-test", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": answer({})},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Paris", '},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '"celsius": 22}'},
        },
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
        {"type": "message_stop"},
    ]
    agent = on_anthropic(Server(anthropic_sse(*events)), stream=True)
    assert agent.run_typed_sync("weather?") == PARIS
    assert server_stop(agent) == "stop"


def server_stop(agent: Agent) -> Any:
    return thaw(agent.snapshot().state["receipts"])[-1]["stop_reason"]


def test_a_full_context_window_fails_a_native_answer_that_parses() -> None:
    server = Server(
        message(
            answer({"city": "Paris", "celsius": 22}), stop_reason="model_context_window_exceeded"
        )
    )
    agent = on_anthropic(server)
    with pytest.raises(OutputContractError) as info:
        agent.run_typed_sync("weather?")
    assert info.value.stop_reason == "model_context_window_exceeded"
    assert info.value.stage == "stop-reason"


def test_native_is_refused_where_it_cannot_be_kept() -> None:
    class Plain:
        name = "plain"

        async def complete(self, request: Any) -> Any:  # pragma: no cover - never called
            raise AssertionError

    with pytest.raises(AgentBuildError, match="'plain' cannot ask for structured output"):
        Agent.create(provider=Plain(), model="m").output_schema(Weather, strategy="native").build()
    with pytest.raises(AgentBuildError, match="sets the response format itself"):
        json_mode = Agent.create(provider=mock(reply="x"), model="m", response_format=JSON_MODE)
        json_mode.output_schema(Weather, strategy="native").build()
    claude = anthropic("claude-test", api_key=KEY)
    with pytest.raises(AgentBuildError, match="tool_choice='auto' cannot be kept"):
        chosen = Agent.create(provider=claude, tool_choice="auto").tool(LOOKUP)
        chosen.output_schema(Weather, strategy="native").build()
    clash = define_tool(name="Weather", description="x", input_schema={}, execute=lambda a, c: "")
    with pytest.raises(AgentBuildError, match="named 'Weather', like a tool of the agent"):
        Agent.create(provider=claude).tool(clash).output_schema(Weather, strategy="native").build()


def test_configure_cannot_choose_another_response_format_for_a_native_run() -> None:
    builder = Agent.create(provider=mock(reply=VALID), model="m")
    builder = builder.configure(lambda ctx: {"response_format": JSON_MODE})
    agent = builder.output_schema(Weather, strategy="native").build()
    with pytest.raises(AgentBuildError, match="configure\\(\\) returned response_format"):
        agent.run_sync("weather?")
    dropped = Agent.create(provider=mock(reply=VALID), model="m")
    dropped = dropped.configure(lambda ctx: {"response_format": None})
    native = dropped.output_schema(Weather, strategy="native").build()
    assert native.run_typed_sync("weather?") == PARIS  # None drops nothing native asked for


# -- a report from before its fields -----------------------------------------------------------


def test_a_report_recorded_before_its_fields_reads_every_field_and_replays(tmp_path: Path) -> None:
    builder = Agent.create(provider=mock(replies=["x", "y"]), model="m")
    agent = builder.output_schema(Weather, retries=1).build()
    agent.run_sync("weather?")
    path = save_recording(agent, tmp_path / "now.jsonl")
    lines = []
    for line in path.read_bytes().splitlines():
        doc = orjson.loads(line)
        for op in doc.get("ops", ()):
            if op["key"] == "output_contract_unmet":  # as the previous version kept it
                op["value"] = {k: op["value"][k] for k in ("error", "attempts")}
        lines.append(orjson.dumps(doc))
    old = tmp_path / "before.jsonl"
    old.write_bytes(b"\n".join(lines) + b"\n")
    loaded = load_recording(old)
    assert thaw(loaded.state)["output_contract_unmet"] == {
        "error": "Invalid JSON: expected value at line 1 column 1",
        "attempts": 2,
    }
    assert unmet_view(loaded.state["output_contract_unmet"]) == {
        "attempts": 2,
        "retries_spent": 1,
        "stage": "json-parse",
        "error": "Invalid JSON: expected value at line 1 column 1",
        "path": None,
        "broken_by": None,
        "fallback_configured": False,
        "stop_reason": None,
    }
    replayed = replay(loaded, agent)
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
