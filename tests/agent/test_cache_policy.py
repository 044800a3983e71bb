"""A ``system_prompt_cache_policy`` function: asked before each model call, its answer is the
call's ``cache`` (and so its hash), recorded in the receipt, rebuilt by ``served_at`` and
reproduced by ``replay`` with or without the agent."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.law import assert_law
from trackway import tool
from trackway.agent import (
    Agent,
    CacheCall,
    CachePolicyError,
    ReplayDivergence,
    anthropic,
    load_recording,
    mock,
    receipts,
    replay,
    served_at,
)
from trackway.engine import thaw

FIXTURE = Path(__file__).parent / "fixtures" / "recording-cachefn-v1.jsonl"


@tool
def look(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def _replies(calls: int) -> list[dict[str, Any]]:
    tools = [
        {"tool_calls": [{"id": f"c{i}", "name": "look", "args": {"q": str(i)}}]}
        for i in range(calls)
    ]
    return [*tools, {"content": "done"}]


def not_on_wrap_up(call: CacheCall) -> str:
    """Caches the system prompt except on the wrap-up call."""
    return "never" if call.wrap_up else "always"


def _agent(policy: Any, *, max_iterations: int = 2, **options: Any) -> Any:
    return (
        Agent.create(
            provider=mock(replies=_replies(max_iterations)),
            model="m",
            max_iterations=max_iterations,
            system_prompt_cache_policy=policy,
            **options,
        )
        .system("Be brief.")
        .tool(look)
        .build()
    )


def test_decisions_differ_across_calls_and_the_wire_follows_them() -> None:
    agent = _agent(not_on_wrap_up)
    assert agent.run_sync("hi") == "done"
    record = agent.snapshot()
    assert record.state["settings"]["cache_policy"] == "function"
    assert [r["cache"] for r in receipts(record)] == [
        {"breakpoints": ["tools", "system"], "policy": "function", "system": "always"},
        {"breakpoints": ["tools", "system"], "policy": "function", "system": "always"},
        {"breakpoints": ["tools"], "policy": "function", "system": "never"},
    ]
    assert assert_law(record) == 3
    provider = anthropic("claude-test", api_key="k")
    second = orjson.loads(provider.wire(served_at(record, 2)))
    third = orjson.loads(provider.wire(served_at(record, 3)))
    assert second["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert third["system"] == "Be brief."  # no marker: a plain string
    assert served_at(record, 3).cache == ("tools",)


def test_the_function_is_told_the_call() -> None:
    seen: list[CacheCall] = []

    def watch(call: CacheCall) -> str:
        seen.append(call)
        return "always" if call.k % 2 else "never"

    agent = _agent(watch, max_iterations=3, cache_strategy="conversation")
    agent.run_sync("hi")
    assert [(c.k, c.iteration, c.wrap_up, c.messages) for c in seen] == [
        (1, 1, False, 1),
        (2, 2, False, 3),
        (3, 3, False, 5),
        (4, 4, True, 6),  # the wrap-up prompt follows the unanswered calls
    ]
    assert {c.model for c in seen} == {"m"} and {c.system_prompt for c in seen} == {"Be brief."}
    record = agent.snapshot()
    assert [r["cache"]["breakpoints"] for r in receipts(record)] == [
        ["tools", "system", "messages"],
        ["tools", "messages"],
        ["tools", "system", "messages"],
        ["tools", "messages"],
    ]
    assert assert_law(record) == 4


def test_a_constant_function_records_the_same_hash_as_the_string() -> None:
    by_string = _agent("always")
    by_string.run_sync("hi")
    by_function = _agent(lambda call: "always")
    by_function.run_sync("hi")
    hashes = [[r["request_hash"] for r in receipts(a.snapshot())] for a in (by_string, by_function)]
    assert hashes[0] == hashes[1]


def test_replay_without_the_agent_runs_no_user_code() -> None:
    calls: list[int] = []

    def counting(call: CacheCall) -> str:
        calls.append(call.k)
        return not_on_wrap_up(call)

    agent = _agent(counting)
    agent.run_sync("hi")
    asked = len(calls)
    replayed = replay(agent.snapshot())
    assert len(calls) == asked == 3
    assert [r["cache"] for r in receipts(replayed)] == [r["cache"] for r in receipts(agent)]


def test_replay_with_the_agent_asks_it_again_and_diverges_when_it_decides_otherwise() -> None:
    answers = {"wrap": "never"}

    def flips(call: CacheCall) -> str:
        return answers["wrap"] if call.wrap_up else "always"

    agent = _agent(flips)
    agent.run_sync("hi")
    replay(agent.snapshot(), agent)
    answers["wrap"] = "always"
    with pytest.raises(ReplayDivergence, match=r"call 3: system_prompt_cache_policy .*flips"):
        replay(agent.snapshot(), agent)


@pytest.mark.parametrize(
    ("policy", "match"),
    [
        (lambda call: "sometimes", r"returned 'sometimes' at call 1 .*return 'always'"),
        (lambda call: 1 / 0, r"raised ZeroDivisionError: .* at call 1 .*return 'always'"),
    ],
)
def test_a_bad_answer_fails_the_run_by_name_and_keeps_what_was_committed(
    policy: Any, match: str
) -> None:
    agent = _agent(policy)
    with pytest.raises(Exception) as caught:
        agent.run_sync("hi")
    error: BaseException | None = caught.value
    while error is not None and not isinstance(error, CachePolicyError):
        error = error.__cause__
    assert isinstance(error, CachePolicyError)
    assert re.search(match, str(error)), str(error)
    state = agent.snapshot().state
    assert state["history"][0]["content"] == "hi"  # the seed's commit stands
    assert "receipts" not in state


def test_a_policy_string_writes_no_policy_key() -> None:
    agent = _agent("always")
    agent.run_sync("hi")
    record = agent.snapshot()
    assert "cache_policy" not in record.state["settings"]
    assert all(set(r["cache"]) == {"breakpoints"} for r in receipts(record))


def test_a_recording_from_this_version_loads_and_replays() -> None:
    """tests/agent/fixtures/recording-cachefn-v1.jsonl: three calls, the last (the wrap-up)
    decided "never" by a function; rebuilt and replayed without the agent."""
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 3
    assert [r["cache"]["system"] for r in receipts(loaded)] == ["always", "always", "never"]
    body = orjson.loads(anthropic("claude-test", api_key="k").wire(served_at(loaded, 3)))
    assert "cache_control" not in orjson.dumps(body["system"]).decode()
    replayed = replay(loaded)
    assert thaw(replayed.state)["final_answer"] == "done"


def test_the_reader_says_what_decides() -> None:
    assert _agent(not_on_wrap_up).system_prompt_cache_policy is not_on_wrap_up
    assert _agent("never").system_prompt_cache_policy == "never"
    assert _agent("always").system_prompt_cache_policy == "always"
    plain = Agent.create(provider=mock(reply="x"), model="m").build()
    assert plain.system_prompt_cache_policy is None
