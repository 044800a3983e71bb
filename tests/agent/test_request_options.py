"""Request options (tool_choice, seed, top_p, stop, response_format, extra_body), the model
named once, one id per tool call, answers cut at max_tokens, and usage a provider did not
report: from Agent.create through the receipt to the wire."""

from __future__ import annotations

from typing import Any

import httpx2
import orjson
import pytest

from tests.backends import run_async
from trackway.agent import (
    Agent,
    AgentBuildError,
    LLMRequest,
    Message,
    ProviderRequestError,
    anthropic,
    mock,
    openai,
    receipts,
    replay,
    served_at,
)
from trackway.agent.messages._tool_ids import unique_calls
from trackway.agent.messages._usage import safe_url
from trackway.tools import define_tool

from .wire_server import WEATHER, Server

LOOKUP = define_tool(
    name="lookup",
    description="Look things up.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    execute=lambda args, ctx: f"found {args['q']}",
)


def agent_with(replies: list[Any], **options: Any) -> Agent:
    return Agent.create(provider=mock(replies=replies), model="m", **options).tool(LOOKUP).build()


# -- options: checked where given, committed, hashed, sent -------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"temperature": 3}, "temperature=3: use a number from 0.0 to 2.0"),
        ({"top_p": -0.1}, "top_p=-0.1: use a number from 0.0 to 1.0"),
        ({"seed": 1.5}, "seed=1.5: use a whole number"),
        ({"max_tokens": 0}, "max_tokens=0: use a positive whole number"),
        ({"stop": [""]}, "stop=\\[''\\]: use a non-empty str or a list"),
        ({"tool_choice": "weather"}, "tool_choice='weather' is not 'auto'.*\\('lookup'\\)"),
        ({"response_format": {"x": float("nan")}}, "response_format: the dict must be plain JSON"),
        ({"extra_body": {"model": "x"}}, "extra_body sets \\['model'\\], which the request"),
    ],
)
def test_a_bad_option_is_refused_at_create_naming_it(options: dict[str, Any], message: str) -> None:
    with pytest.raises(AgentBuildError, match=message):
        agent_with(["x"], **options)


def test_tool_choice_required_needs_a_tool() -> None:
    with pytest.raises(AgentBuildError, match="tool_choice='required' but the agent has no tools"):
        Agent.create(provider=mock(replies=["x"]), model="m", tool_choice="required").build()


def test_options_are_committed_in_settings_and_sent_with_every_call() -> None:
    provider = mock(
        replies=[{"tool_calls": [{"id": "a", "name": "lookup", "args": {"q": "x"}}]}, "done"]
    )
    options = {
        "tool_choice": "lookup",
        "seed": 7,
        "top_p": 0.5,
        "stop": "END",
        "response_format": {"type": "json_object"},
        "extra_body": {"repeat_penalty": 1.1},
    }
    agent = Agent.create(provider=provider, model="m", **options).tool(LOOKUP).build()
    assert agent.run_sync("go") == "done"
    settings = agent.snapshot().state["settings"]
    assert settings == {"model": "m", **options, "stop": ["END"]}
    for k, request in enumerate(provider.requests, start=1):
        assert request.tool_choice == "lookup"
        assert (request.seed, request.top_p, request.stop) == (7, 0.5, ("END",))
        assert request.extra_body == {"repeat_penalty": 1.1}
        assert served_at(agent, k).hash == receipts(agent)[k - 1]["request_hash"]
    replay(agent.snapshot())  # the recording alone carries the options


def test_tool_choice_is_not_sent_when_the_wrap_up_withholds_the_tools() -> None:
    call = {"tool_calls": [{"name": "lookup", "args": {"q": "x"}}]}
    provider = mock(replies=[call, "best I can do"])
    agent = (
        Agent.create(provider=provider, model="m", max_iterations=1, tool_choice="required")
        .tool(LOOKUP)
        .build()
    )
    assert agent.run_sync("go") == "best I can do"
    first, wrap_up = provider.requests
    assert first.tool_choice == "required" and first.tools is not None
    assert wrap_up.tool_choice is None and wrap_up.tools is None
    assert served_at(agent, 2).hash == receipts(agent)[1]["request_hash"]


def test_configure_sets_and_drops_options_for_one_run() -> None:
    provider = mock(replies=["a", "b"])
    agent = (
        Agent.create(provider=provider, model="m", temperature=0.3, seed=1)
        .configure(lambda ctx: {"seed": None, "top_p": 0.9, "tool_choice": "none"})
        .tool(LOOKUP)
        .build()
    )
    agent.run_sync("go")
    request = provider.requests[0]
    assert (request.temperature, request.seed, request.top_p) == (0.3, None, 0.9)
    assert request.tool_choice == "none"
    assert served_at(agent, 1).hash == receipts(agent)[0]["request_hash"]


def test_configure_refuses_what_it_cannot_set() -> None:
    bad = Agent.create(provider=mock(replies=["a"]), model="m").configure(
        lambda ctx: {"temprature": 1}
    )
    with pytest.raises(AgentBuildError, match="configure\\(\\) returned \\['temprature'\\]"):
        bad.build().run_sync("go")
    worse = Agent.create(provider=mock(replies=["a"]), model="m").configure(
        lambda ctx: {"top_p": 5}
    )
    with pytest.raises(AgentBuildError, match="configure\\(\\) returned top_p=5"):
        worse.build().run_sync("go")


def request_with(**options: Any) -> LLMRequest:
    return LLMRequest(
        model="m",
        messages=(Message(role="user", content="hi"),),
        tools=(WEATHER,),
        **options,
    )


def test_the_openai_wire_carries_every_option() -> None:
    p = openai("m", base_url="http://127.0.0.1:1/v1")
    body = p.body(
        request_with(
            tool_choice="weather",
            seed=3,
            top_p=0.2,
            stop=("a", "b"),
            response_format={"type": "json_object"},
            extra_body={"repeat_penalty": 1.2},
        )
    )
    assert body["tool_choice"] == {"type": "function", "function": {"name": "weather"}}
    assert (body["seed"], body["top_p"], body["stop"]) == (3, 0.2, ["a", "b"])
    assert body["response_format"] == {"type": "json_object"}
    assert body["repeat_penalty"] == 1.2
    assert p.body(request_with(tool_choice="required"))["tool_choice"] == "required"


def test_the_anthropic_wire_maps_tool_choice_and_stop_and_refuses_what_it_has_not() -> None:
    p = anthropic("m", base_url="http://127.0.0.1:1")
    assert p.body(request_with(tool_choice="required"))["tool_choice"] == {"type": "any"}
    assert p.body(request_with(tool_choice="weather"))["tool_choice"] == {
        "type": "tool",
        "name": "weather",
    }
    body = p.body(request_with(stop=("END",), top_p=0.4, extra_body={"top_k": 5}))
    assert (body["stop_sequences"], body["top_p"], body["top_k"]) == (["END"], 0.4, 5)
    with pytest.raises(ProviderRequestError, match="the Messages API has no seed"):
        p.body(request_with(seed=1))
    with pytest.raises(ProviderRequestError, match="no response_format"):
        p.body(request_with(response_format={"type": "json_object"}))


# -- the model, named once ---------------------------------------------------------------------


def test_the_model_is_named_once() -> None:
    provider = openai("gpt-small", base_url="http://127.0.0.1:1/v1")
    assert Agent.create(provider=provider).build()._cfg.model == "gpt-small"
    assert Agent.create(provider=provider, model="gpt-small").build()._cfg.model == "gpt-small"
    with pytest.raises(AgentBuildError, match="named twice and differently"):
        Agent.create(provider=provider, model="gpt-big")
    with pytest.raises(AgentBuildError, match="names none, so pass Agent.create"):
        Agent.create(provider=mock(replies=["x"]))


# -- one id per tool call ----------------------------------------------------------------------


def split(call_id: str, *pieces: str) -> list[dict[str, Any]]:
    return [
        {"id": call_id, "name": "lookup", "args": {"_unparsed_arguments": p} if p else {}}
        for p in pieces
    ]


def test_a_call_split_into_pieces_sharing_an_id_is_merged() -> None:
    calls, repairs = unique_calls(split("c1", "", '{"q"', ': "Par', 'is"}', ""))
    assert calls == [{"id": "c1", "name": "lookup", "args": {"q": "Paris"}}]
    assert repairs == [{"id": "c1", "action": "merged", "parts": 5}]


def test_separate_calls_sharing_an_id_are_renamed_in_place() -> None:
    raw = [
        {"id": "c", "name": "lookup", "args": {"q": "a"}},
        {"id": "d", "name": "lookup", "args": {"q": "b"}},
        {"id": "c", "name": "lookup", "args": {"q": "c"}},
        {"id": "c", "name": "other", "args": {}},
    ]
    calls, repairs = unique_calls(raw)
    assert [c["id"] for c in calls] == ["c", "d", "c~2", "c~3"]
    assert [c["args"] for c in calls] == [{"q": "a"}, {"q": "b"}, {"q": "c"}, {}]
    assert repairs == [{"id": "c", "action": "renamed", "as": ["c~2", "c~3"]}]


def test_a_turn_with_a_split_call_runs_it_once_and_records_the_repair() -> None:
    events: list[Any] = []
    agent = agent_with(
        [{"tool_calls": split("c1", '{"q":', ' "x"}')}, "done"],
    )
    agent.on("agent.tool_calls_repaired", lambda e: events.append(e.payload))
    assert agent.run_sync("go") == "done"
    state = agent.snapshot().state
    assert [m["role"] for m in state["history"]] == ["user", "assistant", "tool"]
    assert state["history"][2]["content"] == "found x"
    first = receipts(agent)[0]
    assert first["tool_call_repairs"] == [{"id": "c1", "action": "merged", "parts": 2}]
    assert events == [{"k": 1, "repairs": first["tool_call_repairs"]}]
    call_llm = next(c for c in agent.snapshot().history() if c.stage_id == "call-llm")
    (answer,) = [op.value for op in call_llm.ops if op.key == "response"]
    assert len(answer["tool_calls"]) == 2  # the answer is committed as the model gave it
    replay(agent.snapshot())  # the repair is repeated exactly


def test_a_streamed_anthropic_call_split_into_blocks_is_merged_by_the_agent() -> None:
    """What the litellm proxy's /v1/messages does to one streamed tool call."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3}}}
    ]
    for index, piece in enumerate(["{", ' "q', '": "Paris"', " }"]):
        events += [
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            },
        ]
    events += [
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    lines = "".join(f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}\n\n" for e in events)
    streamed = httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, content=lines.encode()
    )
    answer = {
        "type": "message",
        "content": [{"type": "text", "text": "Paris is found"}],
        "stop_reason": "end_turn",
    }
    server = Server(streamed, httpx2.Response(200, json=answer))
    provider = anthropic(
        "m", base_url="http://gateway.test", api_key="k", transport=server.transport
    )
    agent = Agent.create(provider=provider).tool(LOOKUP).build()
    assert agent.run_sync("go") == "Paris is found"
    sent = orjson.loads(server.requests[1].content)
    uses = [b for m in sent["messages"] for b in m["content"] if isinstance(b, dict)]
    assert [b["type"] for b in uses] == ["tool_use", "tool_result"]
    assert uses[0] == {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "Paris"}}
    assert receipts(agent)[0]["tool_call_repairs"] == [{"id": "t1", "action": "merged", "parts": 4}]


# -- answers cut at max_tokens, usage not reported, how each call was made ----------------------


def test_an_answer_cut_at_max_tokens_is_said_so() -> None:
    events: list[Any] = []
    agent = agent_with([{"content": "The answer is", "stop_reason": "max_tokens"}], max_tokens=5)
    agent.on("agent.answer_truncated", lambda e: events.append(e.payload))
    result = run_async(agent.run_result, "go")
    assert result.output == "The answer is"
    assert result.cut_at_max_tokens
    assert result.stopped_early == {
        "reason": "max-tokens",
        "iteration": 1,
        "k": 1,
        "limit": 5,
        "pending_count": 0,
        "empty_answer": False,
    }
    assert agent.stopped_early() == result.stopped_early
    assert events == [{"k": 1, "iteration": 1, "max_tokens": 5}]
    assert [m.role for m in result.messages] == ["user", "assistant"]


def test_a_finished_answer_is_not_stopped_early() -> None:
    result = run_async(agent_with(["fine"]).run_result, "go")
    assert result.stopped_early is None and not result.cut_at_max_tokens


def test_usage_a_provider_did_not_report_is_counted_as_unreported_not_zero() -> None:
    with_usage = {"content": "a", "usage": {"input_tokens": 10, "output_tokens": 2}}
    agent = agent_with(
        [{"tool_calls": [{"id": "x", "name": "lookup", "args": {"q": "1"}}]}, with_usage]
    )
    result = run_async(agent.run_result, "go")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10, 2)
    assert (result.usage.calls, result.usage.unreported_calls) == (2, 1)
    assert not result.usage.complete
    assert receipts(agent)[0]["usage"] is None


def test_each_receipt_says_how_its_call_was_made() -> None:
    server = Server(
        httpx2.Response(
            200, json={"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}
        )
    )
    provider = openai(
        "m",
        base_url="http://user:secret@127.0.0.1:9/v1?key=abc#x",
        api_key="k",
        transport=server.transport,
    )
    agent = Agent.create(provider=provider, stream=False).build()
    agent.run_sync("go")
    assert receipts(agent)[0]["via"] == {
        "provider": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "stream": False,
    }
    assert safe_url("https://[::1]:8/v1?x=1") == "https://[::1]:8/v1"


def test_an_option_the_provider_cannot_send_is_refused_at_build() -> None:
    provider = anthropic("m", base_url="http://127.0.0.1:1", api_key="k")
    with pytest.raises(AgentBuildError, match="'anthropic' cannot send seed: its API has no"):
        Agent.create(provider=provider, seed=1).build()


def test_wire_is_the_body_sent_streamed_or_not() -> None:
    p = anthropic("m", base_url="http://127.0.0.1:1", api_key="k", max_tokens=77)
    request = request_with(tool_choice="auto")
    assert orjson.loads(p.wire(request)) == p.body(request)
    streamed = orjson.loads(p.wire(request, stream=True))
    assert streamed == {**p.body(request), "stream": True}
    assert streamed["max_tokens"] == 77
    assert p.describe_call(True)["default_max_tokens"] == 77
