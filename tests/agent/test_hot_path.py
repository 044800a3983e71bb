"""The agent's hot path takes shortcuts only where they give the answer the slow path gives.

- The quick argument check says yes only when jsonschema finds no error (any other answer
  goes to the validator, which words the errors).
- A history entry of the library's shape becomes the same ``Message``, with the same request
  bytes, as validation makes; any other entry is validated (and refused) as before.
- An emit hands recorders the payload decoded at the write, without decoding it again.
- The loop's own events (built of exact JSON by the library) are encoded once and not
  decoded back: what listeners hear equals what the record decodes, in every feature's run.
- A tool call's cancel scope is entered around an await only: a sync tool still gets one.
"""

from __future__ import annotations

from typing import Any

import anyio
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trackway import Agent, Executor, flow_chart, mock, tool
from trackway.agent.context._arg_check import quick_check
from trackway.agent.messages._history_messages import message_of as _message
from trackway.agent.messages._messages import Message, canonical_json
from trackway.engine import Recorder, StateValueError, thaw
from trackway.engine.core._values import FrozenDict

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
    {
        "type": "object",
        "title": "args",
        "properties": {
            "n": {"type": "integer", "description": "a count"},
            "x": {"type": "number"},
            "b": {"type": "boolean"},
            "z": {"type": "null"},
            "a": {"type": "array"},
            "o": {"type": "object"},
            "any": {},
        },
        "required": ["n"],
        "additionalProperties": False,
    },
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
keys = st.sampled_from(["key", "n", "x", "b", "z", "a", "o", "any", "other"])


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(max_examples=examples(300), deadline=None)
@given(args=st.dictionaries(keys, json_values, max_size=5) | json_values)
def test_the_quick_check_says_yes_only_when_the_validator_does(
    schema: dict[str, Any], args: Any
) -> None:
    quick = quick_check(schema)
    assert quick is not None
    if quick(args):
        assert not list(jsonschema.Draft202012Validator(schema).iter_errors(args))


def test_schemas_with_other_keywords_get_no_quick_check() -> None:
    assert quick_check({"type": "object", "properties": {"k": {"enum": [1]}}}) is None
    assert quick_check({"type": "object", "minProperties": 1}) is None
    assert quick_check({"type": "array"}) is None
    assert quick_check({"type": "object", "properties": {"k": {"type": ["a", "b"]}}}) is None


def test_the_full_validator_is_built_only_for_a_call_the_quick_check_cannot_pass() -> None:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return "v"

    replies: list[Any] = [
        {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"key": "k"}}]},
        "first",
        {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"key": 3}}]},
        "second",
    ]
    agent = Agent.create(provider=mock(replies=replies), model="m").tool(lookup).build()
    assert agent.run_sync("go") == "first"
    checks = agent._cfg.validators["lookup"]
    assert checks.quick is not None and checks._validator is None  # plainly valid: no build
    assert agent.run_sync("go") == "second"
    assert checks._validator is not None
    (refused,) = [m for m in agent.snapshot().state["history"] if m["role"] == "tool"]
    assert refused["content"].startswith(
        'Error: invalid arguments for lookup: key: expected type "string", got 3.'
    )


ENTRIES: list[dict[str, Any]] = [
    {"role": "user", "content": "go"},
    {"role": "user", "content": "wrap up", "origin": "library"},
    {"role": "assistant", "content": ""},
    {"role": "assistant", "tool_calls": []},
    {
        "role": "assistant",
        "content": "two",
        "tool_calls": [
            {"id": "c1", "name": "lookup", "args": {"key": "k", "deep": {"x": [1, None]}}},
            {"id": "c2", "name": "fetch"},
        ],
    },
    {"role": "tool", "content": "ok", "tool_call_id": "c1", "name": "lookup"},
    {"role": "tool", "content": "ok", "tool_call_id": None, "name": None, "origin": None},
]


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_library_entry_becomes_the_validated_message_and_bytes(entry: dict[str, Any]) -> None:
    validated = Message.model_validate(entry)
    message, piece = _message(entry)
    assert message == validated
    assert message.model_fields_set == validated.model_fields_set
    assert piece == canonical_json(validated.model_dump(mode="json", exclude_none=True))
    assert message.canonical_json() == validated.canonical_json()
    for call in message.tool_calls or ():  # the message holds copies, never the record's
        original = next(c for c in entry["tool_calls"] if c["id"] == call.id)
        assert call.args == original.get("args", {})
        assert call.args is not original.get("args")


@pytest.mark.parametrize(
    "entry",
    [
        {"role": "system", "content": "x"},
        {"role": "user", "content": 5},
        {"role": "user", "content": "x", "extra": 1},
        {"role": "assistant", "tool_calls": [{"id": 1, "name": "n"}]},
    ],
)
def test_any_other_entry_is_validated_and_refused_as_before(entry: dict[str, Any]) -> None:
    with pytest.raises(Exception) as slow:
        Message.model_validate(entry)
    with pytest.raises(type(slow.value)):
        _message(entry)


def test_an_emit_hands_recorders_the_payload_decoded_at_the_write() -> None:
    heard: list[Any] = []

    class Listener(Recorder):
        def on_emit(self, event: Any) -> None:
            heard.append(event.payload)

    def stage(scope: Any) -> None:
        scope.emit("e", {"a": [1, {"b": 2}]})
        scope.emit("s", "text")

    chart = flow_chart("Stage", stage).build()
    result = Executor(chart, recorders=[Listener()]).run_sync({})
    assert isinstance(heard[0], FrozenDict) and heard[0] == {"a": [1, {"b": 2}]}
    assert heard[1] == "text"
    events = result.snapshot.commits[0].events
    assert [e.payload for e in events] == heard
    with pytest.raises(Exception, match="read-only"):
        heard[0]["a"].append(3)


def _scripted_run(turns: int, tool_result: Any, **options: Any) -> tuple[Agent, list[Any]]:
    from trackway.tools import define_tool

    replies: list[Any] = [
        {"tool_calls": [{"id": f"c{i}", "name": "lookup", "args": {"key": "k"}}]}
        for i in range(turns)
    ]
    replies.append({"content": "done", "usage": {"input_tokens": 3, "output_tokens": 1}})
    tool = define_tool(
        name="lookup",
        description="Look up.",
        input_schema={"type": "object", "properties": {"key": {"type": "string"}}},
        execute=lambda args, ctx: tool_result,
    )
    agent = (
        Agent.create(provider=mock(replies=replies), model="m", max_iterations=turns + 1, **options)
        .system("Be brief.")
        .tool(tool)
        .build()
    )
    heard: list[Any] = []
    agent.on("*", lambda event: heard.append((event.name, event.payload)))
    assert agent.run_sync("go") == "done"
    return agent, heard


@pytest.mark.parametrize(
    ("result", "options"),
    [
        ("ok", {}),
        ({"rows": [1, 2.5, None, True]}, {"max_tool_result_chars": 5}),
        ("ok", {"stream": True}),
    ],
)
def test_what_listeners_hear_of_the_loop_events_is_what_the_record_decodes(
    result: Any, options: dict[str, Any]
) -> None:
    agent, heard = _scripted_run(3, result, **options)  # a repeated call: the nudge fires too
    recorded = [(e.name, e.payload) for c in agent.snapshot().commits for e in c.events]
    names = {name for name, _ in heard}
    assert {"stream.llm_end", "cost.tick", "stream.tool_end", "agent.iteration_end"} <= names
    assert [(n, thaw(p)) for n, p in heard] == [(n, thaw(p)) for n, p in recorded]
    assert all(isinstance(p, FrozenDict) for n, p in heard if n != "stream.token")


def test_a_built_payload_that_is_not_json_takes_the_checked_path() -> None:
    def stage(scope: Any) -> None:
        scope._emit_built("e", {"a": object()})

    chart = flow_chart("Stage", stage).build()
    with pytest.raises(Exception) as raised:
        Executor(chart).run_sync({})
    assert isinstance(raised.value.__cause__, StateValueError)
    assert "payload of event 'e'" in str(raised.value.__cause__)


def test_a_sync_tool_gets_a_cancel_scope_entered_only_for_an_await() -> None:
    from trackway.tools import ToolContext, define_tool

    seen: list[ToolContext] = []

    def sync(args: dict[str, Any], ctx: ToolContext) -> Any:
        seen.append(ctx)
        assert ctx.cancel_scope is not None
        ctx.cancel_scope.cancel()  # before the await it returns: that await is cancelled

        async def later() -> str:
            await anyio.sleep(10)
            return "never"

        return later()

    tool = define_tool(name="t", description="d.", input_schema={"type": "object"}, execute=sync)
    replies = [{"tool_calls": [{"id": "c", "name": "t", "args": {}}]}, "done"]
    agent = Agent.create(provider=mock(replies=replies), model="m").tool(tool).build()
    assert agent.run_sync("go") == "done"
    assert isinstance(seen[0].cancel_scope, anyio.CancelScope)
    read = agent.snapshot().state["history"][2]["content"]
    assert read == "Error: t was cancelled before it returned a result."


def test_a_listener_added_during_a_run_hears_names_already_looked_up() -> None:
    from trackway.tools import define_tool

    # the engine keeps the event bus's lookup by name: a listener added (or removed) mid-run
    # must still change what is heard from the next emit on
    replies: list[Any] = [
        {"tool_calls": [{"id": f"c{i}", "name": "lookup", "args": {"key": "k"}}]} for i in range(4)
    ]
    agent = (
        Agent.create(provider=mock(replies=[*replies, "done"]), model="m", max_iterations=10)
        .tool(
            define_tool(
                name="lookup",
                description="Look up.",
                input_schema={"type": "object", "properties": {"key": {"type": "string"}}},
                execute=lambda args, ctx: "ok",
            )
        )
        .build()
    )
    late: list[int] = []
    stop: list[Any] = []

    def on_end(event: Any) -> None:  # heard from the first call on: adds, then removes
        k = event.payload["k"]
        if k == 2:
            stop.append(agent.on("stream.llm_start", lambda e: late.append(e.payload["k"])))
        if k == 4:
            stop[0]()

    agent.on("stream.llm_end", on_end)
    assert agent.run_sync("go") == "done"
    assert late == [3, 4]  # llm_start of calls 1 and 2 came before it was added; 5 after
