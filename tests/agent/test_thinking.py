"""Thinking on the wire, against a recorded server: a real HTTP server on 127.0.0.1 replaying
payload shapes taken from the vendors' documentation (Anthropic extended thinking, streamed and
not, with ``thinking`` and ``redacted_thinking`` blocks and their signatures; DeepSeek-style
``reasoning_content`` from an OpenAI-compatible server). No reasoning-capable model runs
offline here, so these replay what such a model sends; the requests the agent makes are the
real thing, read back off the socket."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.law import assert_law
from trackway.agent import (
    Agent,
    LLMRequest,
    Message,
    ThinkingBlock,
    ToolCall,
    load_recording,
    mock,
    replay,
)
from trackway.agent.providers._anthropic import anthropic
from trackway.agent.providers._openai import openai
from trackway.agent.providers._provider import ProviderConfigError, ProviderRequestError
from trackway.engine import thaw
from trackway.tools import define_tool

# -- payloads, as the vendors document them ---------------------------------------------------

SIGNED = {
    "type": "thinking",
    "thinking": "The user wants the weather in Paris. I have get_weather: call it with Paris.",
    "signature": "BDaL4VrbR2Oj0hO4XpJxT28J5TILnCrrUXoKiiNBZW9P+nr8XSj1zuZzAl4egiCCpQNvfyUuFFJP5C"
    "ncdYZEQPPmLxYsNrcs==",
}
REDACTED = {
    "type": "redacted_thinking",
    "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5",
}
TOOL_TURN = {
    "id": "msg_01Aq9w938a90dw8q",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        SIGNED,
        REDACTED,
        {"type": "text", "text": "Let me check that for you."},
        {
            "type": "tool_use",
            "id": "toolu_01CswdEQBMshySk6Y9DFKrfq",
            "name": "get_weather",
            "input": {"location": "Paris"},
        },
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 412, "output_tokens": 96},
}
FINAL_TURN = {
    "id": "msg_01Bq9w938a90dw8q",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "It is 18C and sunny.", "signature": "EqQBCgIYAhIM=="},
        {"type": "text", "text": "Paris: 18C and sunny."},
    ],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 530, "output_tokens": 20},
}


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events
    )


def streamed_tool_turn() -> bytes:
    """TOOL_TURN as the Messages API streams it (thinking_delta, signature_delta)."""
    start = {k: v for k, v in TOOL_TURN.items() if k not in ("content", "stop_reason")}
    half = len(SIGNED["thinking"]) // 2
    return _sse(
        [
            {"type": "message_start", "message": {**start, "content": []}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
            *(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": piece},
                }
                for piece in (SIGNED["thinking"][:half], SIGNED["thinking"][half:])
            ),
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": SIGNED["signature"]},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1, "content_block": REDACTED},
            {"type": "content_block_stop", "index": 1},
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "text_delta", "text": "Let me check that for you."},
            },
            {"type": "content_block_stop", "index": 2},
            {
                "type": "content_block_start",
                "index": 3,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_01CswdEQBMshySk6Y9DFKrfq",
                    "name": "get_weather",
                    "input": {},
                },
            },
            {
                "type": "content_block_delta",
                "index": 3,
                "delta": {"type": "input_json_delta", "partial_json": '{"location": "Paris"}'},
            },
            {"type": "content_block_stop", "index": 3},
            {
                "type": "message_delta",
                "delta": {"type": "message_delta", "stop_reason": "tool_use"},
                "usage": {"output_tokens": 96},
            },
            {"type": "message_stop"},
        ]
    )


def streamed_final_turn() -> bytes:
    block = FINAL_TURN["content"][0]
    return _sse(
        [
            {"type": "message_start", "message": {"model": "claude-sonnet-4-5", "content": []}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": block["thinking"]},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": block["signature"]},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": "Paris: 18C and sunny."},
            },
            {"type": "content_block_stop", "index": 1},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
            {"type": "message_stop"},
        ]
    )


REASONING_TOOL_TURN = {
    "id": "930c60df-bf64-41c9-a88e-3ec75f81e00e",
    "object": "chat.completion",
    "model": "deepseek-reasoner",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "",
                "reasoning_content": "Okay, the user asks for Paris weather; call get_weather.",
                "tool_calls": [
                    {
                        "id": "call_0_ff9a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"location":"Paris"}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160},
}


def reasoning_stream() -> bytes:
    """A final answer streamed with ``reasoning_content`` deltas first (content null)."""
    chunks: list[dict[str, Any]] = [
        {
            "model": "deepseek-reasoner",
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": None, "reasoning_content": p},
                }
            ],
        }
        for p in ("18C, ", "sunny.")
    ]
    chunks.append(
        {"model": "deepseek-reasoner", "choices": [{"index": 0, "delta": {"content": "Sunny."}}]}
    )
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


# -- the recorded server ----------------------------------------------------------------------


class Recorded:
    """An HTTP server on 127.0.0.1 that answers each POST with the next recorded payload and
    keeps every request body it was sent."""

    def __init__(self, *answers: bytes | dict[str, Any]) -> None:
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("content-length", "0"))
                outer.bodies.append(orjson.loads(self.rfile.read(size)))
                answer = outer.answers.pop(0)
                streamed = isinstance(answer, bytes)
                data = answer if streamed else orjson.dumps(answer)
                self.send_response(200)
                kind = "text/event-stream" if streamed else "application/json"
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def recorded() -> Iterator[list[Recorded]]:
    servers: list[Recorded] = []
    yield servers
    for server in servers:
        server.close()


def weather_tool() -> Any:
    return define_tool(
        name="get_weather",
        description="Current weather for a location.",
        input_schema={
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
        execute=lambda args, ctx: "18C, sunny",
    )


def run_against(server: Recorded, provider: Any, *, stream: bool, budget: Any) -> Agent:
    agent = (
        Agent.create(provider=provider, stream=stream, thinking_budget=budget)
        .tool(weather_tool())
        .build()
    )
    assert agent.run_sync("Weather in Paris?") in ("Paris: 18C and sunny.", "Sunny.")
    return agent


# -- Anthropic --------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_signed_and_redacted_thinking_round_trip_through_a_tool_turn(
    recorded: list[Recorded], stream: bool
) -> None:
    answers = (streamed_tool_turn(), streamed_final_turn()) if stream else (TOOL_TURN, FINAL_TURN)
    server = Recorded(*answers)
    recorded.append(server)
    provider = anthropic("claude-sonnet-4-5", base_url=server.url, api_key="sk-test")
    agent = run_against(server, provider, stream=stream, budget=2048)

    first, second = server.bodies
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert first["max_tokens"] > 2048  # the answer's room on top of the budget
    turn = second["messages"][1]
    assert turn["role"] == "assistant"
    # the signed block first, byte-exact, then the redacted one, then text and the call
    assert turn["content"][:2] == [SIGNED, REDACTED]
    assert [b["type"] for b in turn["content"][2:]] == ["text", "tool_use"]
    assert second["messages"][2]["content"][0]["type"] == "tool_result"

    state = thaw(agent.snapshot().state)
    kept = state["history"][1]["thinking"]
    assert kept == [
        {"kind": "thinking", "text": SIGNED["thinking"], "signature": SIGNED["signature"]},
        {"kind": "redacted_thinking", "data": REDACTED["data"]},
    ]
    assert state["settings"]["thinking_budget"] == 2048
    assert assert_law(agent) == 2
    # the checkpoint keeps each turn's reasoning, the answer's too; redact_thinking drops it
    conversation = agent.checkpoint()
    assert conversation.history[1]["thinking"] == kept
    assert conversation.history[-1]["thinking"][0]["signature"] == "EqQBCgIYAhIM=="
    redacted = agent.checkpoint(redact_thinking=True)
    assert not any("thinking" in m for m in redacted.history)
    assert [m["content"] for m in redacted.history] == [m["content"] for m in conversation.history]


def test_a_replayed_thinking_run_needs_no_server(recorded: list[Recorded]) -> None:
    server = Recorded(TOOL_TURN, FINAL_TURN)
    recorded.append(server)
    provider = anthropic("claude-sonnet-4-5", base_url=server.url, api_key="sk-test")
    agent = run_against(server, provider, stream=False, budget="medium")
    server.close()
    recorded.clear()
    assert server.bodies[0]["thinking"]["budget_tokens"] == 8192
    again = replay(agent.snapshot())
    assert thaw(again.state)["final_answer"] == "Paris: 18C and sunny."
    assert thaw(again.state)["history"] == thaw(agent.snapshot().state)["history"]


def test_wire_puts_thinking_first_and_leaves_unsigned_reasoning_out() -> None:
    provider = anthropic("claude-sonnet-4-5", api_key="sk-test")
    blocks = (
        ThinkingBlock(kind="reasoning", text="from another vendor"),
        ThinkingBlock(kind="thinking", text="t", signature="s=="),
        ThinkingBlock(kind="redacted_thinking", data="d"),
    )
    request = LLMRequest(
        model="claude-sonnet-4-5",
        thinking_budget=4000,
        max_tokens=9000,
        messages=(
            Message(role="user", content="q"),
            Message(
                role="assistant",
                content="",
                thinking=blocks,
                tool_calls=(ToolCall(id="c", name="get_weather", args={}),),
            ),
            Message(role="tool", content="r", tool_call_id="c", name="get_weather"),
        ),
    )
    body = orjson.loads(provider.wire(request))
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "t", "signature": "s=="},
        {"type": "redacted_thinking", "data": "d"},
        {"type": "tool_use", "id": "c", "name": "get_weather", "input": {}},
    ]
    assert body["max_tokens"] == 9000  # already above the budget: kept
    with pytest.raises(ProviderRequestError, match="minimum of 1024"):
        provider.wire(request.model_copy(update={"thinking_budget": 500}))


# -- OpenAI-compatible reasoning_content ------------------------------------------------------


def test_reasoning_content_is_read_kept_and_never_sent_back(recorded: list[Recorded]) -> None:
    server = Recorded(REASONING_TOOL_TURN, reasoning_stream())
    recorded.append(server)
    provider = openai("deepseek-reasoner", base_url=server.url + "/v1", api_key="sk-test")
    agent = run_against(server, provider, stream=True, budget=3000)
    first, second = server.bodies
    assert first["reasoning_effort"] == "medium" and "thinking" not in first
    turn = second["messages"][1]
    assert turn["role"] == "assistant" and "reasoning_content" not in turn
    state = thaw(agent.snapshot().state)
    assert state["history"][1]["thinking"] == [
        {"kind": "reasoning", "text": "Okay, the user asks for Paris weather; call get_weather."}
    ]
    assert state["response"]["thinking"] == [{"kind": "reasoning", "text": "18C, sunny."}]
    assert assert_law(agent) == 2


# -- off by default; the budget checked; a kept recording ------------------------------------


def test_without_a_budget_no_key_is_written_and_the_request_is_unchanged() -> None:
    def run(**options: Any) -> tuple[dict[str, Any], list[LLMRequest]]:
        provider = mock(replies=[{"tool_calls": [{"id": "c", "name": "get_weather"}]}, "ok"])
        agent = Agent.create(provider=provider, model="m", **options).tool(weather_tool()).build()
        agent.run_sync("q")
        return thaw(agent.snapshot().state), list(provider.requests)

    plain, plain_requests = run()
    assert "thinking_budget" not in plain["settings"]
    assert not any("thinking" in m for m in plain["history"])
    asked, asked_requests = run(thinking_budget="low")
    assert asked["settings"]["thinking_budget"] == "low"
    assert [r.thinking_budget for r in asked_requests] == ["low", "low"]
    assert [r.messages for r in asked_requests] == [r.messages for r in plain_requests]


@pytest.mark.parametrize("budget", [0, -1, True, 2.5, "max"])
def test_a_bad_budget_is_refused_naming_the_fix(budget: Any) -> None:
    with pytest.raises(Exception, match="thinking_budget=.*positive whole number"):
        Agent.create(provider=mock(reply="x"), model="m", thinking_budget=budget).build()


def test_a_recording_with_thinking_from_this_version_loads_and_replays() -> None:
    """tests/agent/fixtures/recording-thinking-v1.jsonl: a mock run with a budget, signed,
    redacted and unsigned reasoning on a tool turn and the answer."""
    loaded = load_recording(Path(__file__).parent / "fixtures" / "recording-thinking-v1.jsonl")
    assert assert_law(loaded) == 2
    state = thaw(loaded.state)
    assert state["settings"]["thinking_budget"] == 2048
    assert [b["kind"] for b in state["history"][1]["thinking"]] == [
        "thinking",
        "redacted_thinking",
        "reasoning",
    ]
    replayed = replay(loaded)
    assert thaw(replayed.state)["final_answer"] == state["final_answer"] == "18C."


# -- think tags: a server that leaves the reasoning in the answer -----------------------------

THINK_TAGGED = "<think>\nParis, so 18C and sunny.\n</think>\n\nSunny."


def tagged(stream: bool) -> bytes | dict[str, Any]:
    """A Qwen3 answer from llama.cpp run with ``--reasoning-format none``: the reasoning
    inside ``<think>`` tags at the start of ``content``."""
    if not stream:
        return {
            "model": "qwen3-0.6b",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": THINK_TAGGED},
                    "finish_reason": "stop",
                }
            ],
        }
    pieces = ["<think>\nParis, so ", "18C and sunny.\n</think>", "\n\nSunny."]
    chunks = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


@pytest.mark.parametrize("stream", [False, True])
def test_think_tags_are_moved_out_of_the_answer_when_asked(
    recorded: list[Recorded], stream: bool
) -> None:
    server = Recorded(tagged(stream), tagged(stream))
    recorded.append(server)
    plain = openai("qwen3-0.6b", base_url=server.url + "/v1")
    agent = Agent.create(provider=plain, stream=stream).build()
    assert agent.run_sync("Weather?") == THINK_TAGGED  # by default the text is the server's

    split = openai("qwen3-0.6b", base_url=server.url + "/v1", thinking_handler="think-tags")
    agent = Agent.create(provider=split, stream=stream).build()
    assert agent.run_sync("Weather?") == "Sunny."
    state = thaw(agent.snapshot().state)
    assert state["response"]["thinking"] == [
        {"kind": "reasoning", "text": "Paris, so 18C and sunny."}
    ]
    assert state["receipts"][0]["via"]["thinking_handler"] == "think-tags"
    assert assert_law(agent) == 1


def test_an_unknown_thinking_handler_is_refused() -> None:
    with pytest.raises(ProviderConfigError, match="'reasoning_content' or 'think-tags'"):
        openai("m", base_url="http://127.0.0.1:1/v1", thinking_handler="tags")
