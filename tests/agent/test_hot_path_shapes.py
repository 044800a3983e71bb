"""The agent's hot-path shortcuts by shape give what validation and pydantic give.

- Any history entry (of the loop's written shapes, near misses, or anything else) becomes
  the message and request bytes validation makes, or is refused as validation refuses it.
- ``answer_record`` is ``response.model_dump(mode="json", exclude_none=True)`` for any
  response, floats, NaN and nested arguments included.
- A tool's context built without the dataclass checks has every field and equals the one
  the constructor makes.
- A run makes no reference cycle: nothing it leaves is garbage only the collector finds.
- A scripted reply that does not validate still fails at the call that uses it; a mock
  that keeps no requests still counts them.
"""

from __future__ import annotations

import dataclasses
import gc
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trackway import Agent, mock
from trackway.agent import LLMResponse
from trackway.agent.loop._model_call import answer_record
from trackway.agent.messages._history_messages import message_of
from trackway.agent.messages._messages import Message, canonical_json
from trackway.tools import ToolContext, define_tool

scalars = (  # what a committed entry can hold: ints within 64 bits
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=3)
)
values = st.recursive(
    scalars | st.floats(),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=5,
)
texts = st.text(max_size=4)
calls = st.fixed_dictionaries(
    {"id": texts, "name": texts, "args": st.dictionaries(st.text(max_size=2), values, max_size=3)}
)
tool_results = st.fixed_dictionaries(
    {"role": st.just("tool"), "content": texts, "tool_call_id": texts, "name": texts}
)
askings = st.fixed_dictionaries(
    {"role": st.just("assistant"), "content": texts, "tool_calls": st.lists(calls, max_size=3)}
)
near_misses = st.dictionaries(
    st.sampled_from(["role", "content", "tool_calls", "tool_call_id", "name", "origin", "x"]),
    st.sampled_from(["tool", "assistant", "user", "library", None, 5, ""])
    | st.lists(calls | st.just({"id": 1, "name": "n"}), max_size=2),
    max_size=5,
)


@settings(max_examples=examples(400), deadline=None)
@given(entry=tool_results | askings | near_misses)
def test_every_entry_becomes_what_validation_makes_or_is_refused_alike(entry: Any) -> None:
    entry = _finite(entry)
    try:
        validated = Message.model_validate(entry)
    except Exception as exc:
        with pytest.raises(type(exc)):
            message_of(entry)
        return
    message, piece = message_of(entry)
    assert message == validated
    assert message.model_fields_set == validated.model_fields_set
    assert piece == canonical_json(validated.model_dump(mode="json", exclude_none=True))
    for call in message.tool_calls or ():  # copies, never the record's own arguments
        assert all(call.args is not c.get("args") for c in entry["tool_calls"])


def _finite(value: Any) -> Any:
    """History entries are committed JSON: no NaN or infinity."""
    if isinstance(value, float):
        return 0.5 if value != value or value in (float("inf"), float("-inf")) else value
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


usages = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": st.integers(0, 10**6),
        "output_tokens": st.integers(0, 10**6),
        "cache_read_tokens": st.none() | st.integers(0, 9),
    },
)


@settings(max_examples=examples(300), deadline=None)
@given(
    content=texts,
    asked=st.lists(calls, max_size=3),
    usage=usages,
    stop=st.none() | texts,
    model=st.none() | texts,
)
def test_the_answer_record_is_the_json_mode_dump(
    content: str, asked: list[Any], usage: Any, stop: Any, model: Any
) -> None:
    response = LLMResponse.model_validate(
        {
            "content": content,
            "tool_calls": asked,
            "usage": usage,
            "stop_reason": stop,
            "model": model,
        }
    )
    record = answer_record(response)
    assert canonical_json(record) == canonical_json(
        response.model_dump(mode="json", exclude_none=True)
    )
    assert list(record) == list(response.model_dump(mode="json", exclude_none=True))
    for recorded, call in zip(record["tool_calls"], response.tool_calls, strict=True):
        assert recorded["args"] is not call.args  # the record owns its copy


def _agent(execute: Any, turns: int = 3) -> Agent:
    tool = define_tool(name="t", description="d.", input_schema={"type": "object"}, execute=execute)
    replies: list[Any] = [
        {"tool_calls": [{"id": f"c{i}", "name": "t", "args": {"i": i}}]} for i in range(turns)
    ]
    replies.append("done")
    return (
        Agent.create(provider=mock(replies=replies), model="m", max_iterations=turns + 1)
        .tool(tool)
        .build()
    )


def test_a_context_built_on_the_hot_path_equals_the_constructed_one() -> None:
    seen: list[ToolContext] = []
    _agent(lambda args, ctx: seen.append(ctx) or "ok", turns=1).run_sync("go")
    ctx = seen[0]
    names = {f.name for f in dataclasses.fields(ToolContext)}
    assert set(vars(ctx)) == names
    assert ctx == ToolContext(**{name: getattr(ctx, name) for name in names})
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.call_id = "other"  # type: ignore[misc]


async def _async_tool(args: dict[str, Any], ctx: ToolContext) -> str:
    await anyio.lowlevel.checkpoint()
    return "ok"


def _garbage_of_a_run(execute: Any, turns: int) -> int:
    agent = _agent(execute, turns=turns)
    gc.collect()
    gc.disable()
    try:
        assert agent.run_sync("go") == "done"
        return gc.collect()  # what of the run only the collector could free
    finally:
        gc.enable()


@pytest.mark.parametrize("execute", [lambda args, ctx: "ok", _async_tool], ids=["sync", "async"])
def test_a_turn_leaves_no_reference_cycle_for_the_collector(execute: Any) -> None:
    few, many = _garbage_of_a_run(execute, 3), _garbage_of_a_run(execute, 23)
    assert many == few  # the event loop's own start and end may; twenty more turns add none


def test_a_scripted_reply_that_does_not_validate_fails_at_its_call() -> None:
    replies = [{"tool_calls": [{"id": "c", "name": "t", "args": "not a dict"}]}, "done"]
    provider = mock(replies=replies)  # accepted here, as it always was
    agent = _agent(lambda args, ctx: "ok")
    agent = (
        Agent.create(provider=provider, model="m")
        .tool(define_tool(name="t", description="d.", input_schema={}, execute=lambda a, c: "ok"))
        .build()
    )
    with pytest.raises(Exception, match="args"):
        agent.run_sync("go")


def test_a_mock_that_keeps_no_requests_still_counts_them() -> None:
    provider = mock(replies=["a", "b"], keep_requests=False)
    agent = Agent.create(provider=provider, model="m").build()
    assert agent.run_sync("one") == "a" and agent.run_sync("two") == "b"
    assert provider.requests == [] and provider.calls == 2
    kept = mock(replies=["a"])
    Agent.create(provider=kept, model="m").build().run_sync("one")
    assert len(kept.requests) == 1 and kept.calls == 1
