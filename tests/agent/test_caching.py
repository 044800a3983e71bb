"""Prompt caching: the decision each call records, the markers each vendor gets on the wire,
byte-stable prefixes, the warning for a moving piece, and usage normalised before pricing."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.law import assert_law
from trackway import tool
from trackway.agent import (
    Agent,
    AgentBuildError,
    CacheWarning,
    anthropic,
    load_recording,
    mock,
    openai,
    receipts,
    replay,
    served_at,
)
from trackway.engine import thaw

from .test_openai import completion
from .wire_server import Server

FIXTURE = Path(__file__).parent / "fixtures" / "recording-cache-v1.jsonl"


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: 12 C"


@tool
def atlas(city: str) -> str:
    """Find a city on the map."""
    return f"{city}: 48N"


def run(**options: Any) -> Agent:
    replies = [
        {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"city": "Oslo"}}]},
        {"content": "12 C in Oslo."},
    ]
    agent = (
        Agent.create(provider=mock(replies=replies), model="m", **options)
        .system("Answer with the weather.")
        .tool(lookup)
        .tool(atlas)
        .build()
    )
    agent.run_sync("Weather in Oslo?")
    return agent


def test_caching_not_configured_writes_no_key_and_sends_no_marker() -> None:
    agent = run()
    state = agent.snapshot().state
    assert "cache" not in state["settings"]
    assert all("cache" not in r for r in state["receipts"])
    wire = anthropic("claude-test", api_key="k").wire(served_at(agent.snapshot(), 2))
    assert b"cache_control" not in wire


@pytest.mark.parametrize(
    ("options", "breakpoints"),
    [
        ({"system_prompt_cache_policy": "always"}, ["tools", "system"]),
        ({"system_prompt_cache_policy": "never"}, ["tools"]),
        ({"cache_strategy": "conversation"}, ["tools", "system", "messages"]),
        (
            {"cache_strategy": "conversation", "system_prompt_cache_policy": "never"},
            ["tools", "messages"],
        ),
        ({"caching_disabled": True}, []),
        ({"cache": ["system", "tools"]}, ["tools", "system"]),  # one canonical order
    ],
)
def test_each_call_records_its_cache_decision(
    options: dict[str, Any], breakpoints: list[str]
) -> None:
    agent = run(**options)
    state = agent.snapshot().state
    assert state["settings"]["cache"] == breakpoints
    assert [r["cache"] for r in state["receipts"]] == [{"breakpoints": breakpoints}] * 2
    assert assert_law(agent) == 2
    assert served_at(agent.snapshot(), 1).cache == tuple(breakpoints)


def test_anthropic_gets_markers_on_tools_system_and_last_message() -> None:
    agent = run(cache_strategy="conversation")
    provider = anthropic("claude-test", api_key="k")
    body = orjson.loads(provider.wire(served_at(agent.snapshot(), 2)))
    ephemeral = {"type": "ephemeral"}
    assert body["system"] == [
        {"type": "text", "text": "Answer with the weather.", "cache_control": ephemeral}
    ]
    assert [t.get("cache_control") for t in body["tools"]] == [None, ephemeral]  # the last
    last = body["messages"][-1]["content"]
    assert last[-1]["type"] == "tool_result" and last[-1]["cache_control"] == ephemeral
    assert body["messages"][0]["content"] == "Weather in Oslo?"  # earlier turns unmarked
    assert provider.wire(served_at(agent.snapshot(), 2)).count(b"cache_control") <= 4
    stream = orjson.loads(provider.wire(served_at(agent.snapshot(), 2), stream=True))
    assert stream["system"] == body["system"]


def test_anthropic_first_call_marks_a_plain_user_message_as_a_block() -> None:
    agent = run(cache_strategy="conversation")
    body = orjson.loads(anthropic("claude-test", api_key="k").wire(served_at(agent.snapshot(), 1)))
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather in Oslo?", "cache_control": {"type": "ephemeral"}}
            ],
        }
    ]


def test_never_and_disabled_send_what_they_say() -> None:
    provider = anthropic("claude-test", api_key="k")
    never = orjson.loads(
        provider.wire(served_at(run(system_prompt_cache_policy="never").snapshot(), 2))
    )
    assert never["system"] == "Answer with the weather."
    assert never["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    off = provider.wire(served_at(run(caching_disabled=True).snapshot(), 2))
    assert b"cache_control" not in off


def test_openai_gets_a_byte_stable_prefix_and_no_vendor_marker() -> None:
    agent = run(cache_strategy="conversation")
    provider = openai("gpt-test", api_key="k")
    first, second = (provider.wire(served_at(agent.snapshot(), k)) for k in (1, 2))
    assert b"cache" not in first and b"cache" not in second
    one, two = orjson.loads(first), orjson.loads(second)
    assert one["tools"] == two["tools"] and [t["function"]["name"] for t in two["tools"]] == [
        "lookup",
        "atlas",
    ]  # declared order, every call
    # the messages of call 1 are served again, byte for byte, at the start of call 2
    head = orjson.dumps(one["messages"])[:-1]
    assert orjson.dumps(two["messages"]).startswith(head)
    assert first == provider.wire(served_at(agent.snapshot(), 1))  # rebuilt: the same bytes


@settings(max_examples=examples(25), deadline=None)
@given(
    breakpoints=st.lists(st.sampled_from(["tools", "system", "messages"]), unique=True),
    turns=st.integers(1, 3),
)
def test_served_at_rebuilds_every_marked_call(breakpoints: list[str], turns: int) -> None:
    replies = [
        {"tool_calls": [{"id": f"c{i}", "name": "lookup", "args": {"city": "X"}}]}
        for i in range(turns)
    ] + [{"content": "done"}]
    agent = (
        Agent.create(provider=mock(replies=replies), model="m", max_iterations=5, cache=breakpoints)
        .system("S")
        .tool(lookup)
        .build()
    )
    agent.run_sync("go")
    assert assert_law(agent) == turns + 1
    provider = anthropic("claude-test", api_key="k")
    for k, receipt in enumerate(receipts(agent.snapshot()), 1):
        request = served_at(agent.snapshot(), k)
        assert receipt["cache"] == {
            "breakpoints": [b for b in ("tools", "system", "messages") if b in breakpoints]
        }
        marks = provider.wire(request).count(b"cache_control")
        assert marks == len(breakpoints)  # system, tools and a last message are always there
    assert thaw(replay(agent.snapshot()).state)["receipts"] == thaw(
        agent.snapshot().state["receipts"]
    )


def test_a_moving_piece_before_a_breakpoint_warns_once() -> None:
    builder = Agent.create(provider=mock(reply="x"), model="m", cache_strategy="prefix")
    builder.tool(lookup).findings()
    with pytest.warns(CacheWarning, match="tool schemas change per call") as caught:
        builder.build()
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Agent.create(provider=mock(reply="x"), model="m", cache_strategy="prefix").tool(
            lookup
        ).build()
        Agent.create(provider=mock(reply="x"), model="m", caching_disabled=True).tool(
            lookup
        ).findings().build()  # no breakpoint: nothing to warn about


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"system_prompt_cache_policy": "sometimes"}, "use 'always'"),
        (
            {"system_prompt_cache_policy": lambda call: "always", "caching_disabled": True},
            "caching_disabled=True and a system_prompt_cache_policy function",
        ),
        ({"cache_strategy": "everything"}, "use 'prefix' or 'conversation'"),
        ({"caching_disabled": "yes"}, "use True or False"),
        ({"cache": ["prompt"]}, "distinct breakpoints"),
        ({"cache": ["tools", "tools"]}, "distinct breakpoints"),
        ({"cache": ["tools"], "cache_strategy": "prefix"}, "both given"),
    ],
)
def test_bad_caching_arguments_are_refused_by_name(options: dict[str, Any], match: str) -> None:
    with pytest.raises(AgentBuildError, match=match):
        Agent.create(provider=mock(reply="x"), model="m", **options)


def test_openai_prompt_tokens_are_normalised_so_the_cached_part_is_priced_once() -> None:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 10,
        "prompt_tokens_details": {"cached_tokens": 800},
    }
    server = Server(completion("Hi!", usage=usage))
    provider = openai(
        "gpt-test", api_key="k", base_url="https://api.test/v1", transport=server.transport
    )
    prices = {"gpt-test": {"input": 1.0, "output": 10.0, "cache_read": 0.1}}
    agent = Agent.create(provider=provider, pricing_table=prices, stream=False).build()
    agent.run_sync("hi")
    state = agent.snapshot().state
    assert state["receipts"][0]["usage"] == {
        "input_tokens": 200,
        "output_tokens": 10,
        "cache_read_tokens": 800,
    }
    # 200 uncached at $1/M + 800 cached at $0.1/M + 10 out at $10/M (was 1000 + 800 at input)
    assert state["cost"][0]["usd"] == pytest.approx((200 * 1.0 + 800 * 0.1 + 10 * 10.0) / 1e6)


def test_anthropic_usage_already_excludes_the_cache() -> None:
    from .test_anthropic import message
    from .test_anthropic import provider as anthropic_provider

    usage = {
        "input_tokens": 20,
        "output_tokens": 5,
        "cache_read_input_tokens": 700,
        "cache_creation_input_tokens": 100,
    }
    server = Server(message({"type": "text", "text": "Hi!"}, usage=usage))
    prices = {"claude-test": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}}
    agent = Agent.create(
        provider=anthropic_provider(server), pricing_table=prices, stream=False
    ).build()
    agent.run_sync("hi")
    state = agent.snapshot().state
    assert state["receipts"][0]["usage"]["input_tokens"] == 20
    want = (20 * 3.0 + 5 * 15.0 + 700 * 0.3 + 100 * 3.75) / 1e6
    assert state["cost"][0]["usd"] == pytest.approx(want)


def test_a_recording_with_cache_decisions_from_this_version_loads_and_replays() -> None:
    """tests/agent/fixtures/recording-cache-v1.jsonl: two calls with the conversation
    strategy; its requests are rebuilt with their breakpoints and it replays without the agent."""
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 2
    assert [r["cache"] for r in receipts(loaded)] == [
        {"breakpoints": ["tools", "system", "messages"]}
    ] * 2
    body = orjson.loads(anthropic("claude-test", api_key="k").wire(served_at(loaded, 2)))
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    replayed = replay(loaded)
    assert thaw(replayed.state)["final_answer"] == thaw(loaded.state)["final_answer"]


def test_configure_decides_the_breakpoints_per_run_and_the_record_keeps_them() -> None:
    replies = [{"content": "one"}, {"content": "two"}]
    agent = (
        Agent.create(provider=mock(replies=replies), model="m", cache_strategy="prefix")
        .system("S")
        .tool(lookup)
        .configure(lambda run: {"cache": []} if run["message"] == "quiet" else {})
        .build()
    )
    agent.run_sync("loud")
    assert receipts(agent.snapshot())[0]["cache"] == {"breakpoints": ["tools", "system"]}
    agent.run_sync("quiet")
    assert receipts(agent.snapshot())[0]["cache"] == {"breakpoints": []}
    assert assert_law(agent) == 1
    assert thaw(replay(agent.snapshot()).state)["receipts"] == thaw(
        agent.snapshot().state["receipts"]
    )
