"""OpenAIProvider against a real, independent OpenAI-compatible server on 127.0.0.1.

The server is @dwmkerr/mock-llm, scripted by tests/agent/mock_llm_config.yaml and started by
``.ci/mock-llm.sh start``, which prints the URL to put in TRACKWAY_TEST_MOCK_LLM_URL.
"""

from __future__ import annotations

import os

import pytest

from tests.backends import run_async
from trackway.agent.messages._messages import (
    LLMRequest,
    LLMResponse,
    Message,
    StreamDelta,
    ToolCall,
)
from trackway.agent.providers._openai import OpenAIProvider, openai
from trackway.agent.providers._provider import ModelNotFoundError

from .wire_server import WEATHER


@pytest.fixture
def provider() -> OpenAIProvider:
    url = os.environ.get("TRACKWAY_TEST_MOCK_LLM_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CI must provide TRACKWAY_TEST_MOCK_LLM_URL (.ci/run starts mock-llm)")
        pytest.skip("no mock-llm server: set TRACKWAY_TEST_MOCK_LLM_URL (see .ci/mock-llm.sh)")
    return openai("mock-gpt", base_url=url, api_key="mock-key", timeout=10.0, backoff=0.01)


def test_a_tool_call_then_the_answer_from_its_result(provider: OpenAIProvider) -> None:
    asked = LLMRequest(
        model="mock-gpt",
        system="You answer weather questions.",
        messages=(Message(role="user", content="Weather in Paris?"),),
        tools=(WEATHER,),
    )
    first = run_async(provider.complete, asked)
    assert first.tool_calls == (
        ToolCall(id="call_weather_1", name="weather", args={"city": "Paris"}),
    )
    assert first.content == ""
    assert first.stop_reason == "tool_use"
    assert first.model == "mock-gpt"
    assert first.usage is not None
    assert (first.usage.input_tokens, first.usage.output_tokens) == (31, 9)

    # The server answers only if the call and its result come back in the OpenAI shape.
    answered = asked.model_copy(
        update={
            "messages": (
                *asked.messages,
                Message(role="assistant", tool_calls=first.tool_calls),
                Message(role="tool", tool_call_id="call_weather_1", content="sunny, 22 C"),
            )
        }
    )
    second = run_async(provider.complete, answered)
    assert second.content == "Paris: sunny, 22 C"
    assert second.tool_calls == ()
    assert second.stop_reason == "stop"


def test_a_streamed_answer_arrives_in_pieces(provider: OpenAIProvider) -> None:
    text = "Streaming works, one small piece at a time."
    request = LLMRequest(model="mock-gpt", messages=(Message(role="user", content=text),))

    async def collect() -> list[StreamDelta | LLMResponse]:
        return [item async for item in provider.stream(request)]

    items = run_async(collect)
    *deltas, final = items
    assert len(deltas) >= 3
    assert all(isinstance(d, StreamDelta) and d.text for d in deltas)
    assert isinstance(final, LLMResponse)
    assert final.content == "".join(d.text for d in deltas if isinstance(d, StreamDelta))
    assert final.content == text  # the server echoes the last message
    assert final.stop_reason == "stop"
    assert final.tool_calls == ()


def test_an_unknown_model_names_the_model_and_the_server(provider: OpenAIProvider) -> None:
    request = LLMRequest(model="no-such-model", messages=(Message(role="user", content="hi"),))
    with pytest.raises(ModelNotFoundError) as caught:
        run_async(provider.complete, request)
    assert "'no-such-model'" in str(caught.value)
    assert provider.base_url in str(caught.value)
    assert caught.value.status == 404


def test_agent_runs_a_tool_call_and_a_streamed_answer(provider: OpenAIProvider) -> None:
    """The whole agent against the server. mock-llm streams text only (never tool calls), so
    the tool round trip runs unstreamed and the streamed answer is a second turn; every
    request sent can be rebuilt from the log (the receipts match)."""
    from trackway.agent import Agent, receipts, served_at
    from trackway.tools import define_tool

    weather = define_tool(
        name="weather",
        description="Current weather for a city.",
        input_schema=WEATHER.input_schema,
        execute=lambda args, ctx: f"{args['city']} is sunny",
    )
    agent = (
        Agent.create(provider=provider, max_iterations=3, stream=False)
        .system("You answer weather questions.")
        .tool(weather)
        .build()
    )
    assert agent.run_sync("What is the weather in Paris?") == "Paris: Paris is sunny"
    history = agent.snapshot().state["history"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[1]["tool_calls"][0]["args"] == {"city": "Paris"}
    assert receipts(agent)[0]["usage"] == {"input_tokens": 31, "output_tokens": 9}
    for k, receipt in enumerate(receipts(agent), start=1):
        assert served_at(agent, k).hash == receipt["request_hash"]

    streamer = Agent.create(provider=provider, stream=True).build()
    tokens: list[str] = []
    streamer.on("stream.token", lambda event: tokens.append(event.payload["text"]))
    answer = streamer.run_sync("Tell me something streamed in several pieces")
    assert answer == "Tell me something streamed in several pieces"  # the server echoes
    assert len(tokens) >= 3 and "".join(tokens) == answer
    assert served_at(streamer, 1).hash == receipts(streamer)[0]["request_hash"]
