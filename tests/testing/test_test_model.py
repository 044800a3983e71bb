"""TestModel: every offered tool called once with schema-valid arguments, then an answer."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from trackway import Agent, LLMRequest, define_tool, tool
from trackway.agent import Message, ProviderRequestError, ToolSpec
from trackway.testing import TestModel
from trackway.testing._schema_values import Unsatisfiable, value_for
from trackway.tools import ToolDefinitionError


def _echo(name: str, schema: dict[str, Any]):
    async def execute(args: dict[str, Any], ctx: Any) -> str:
        return json.dumps(args, sort_keys=True)

    return define_tool(name=name, description=f"{name} tool", input_schema=schema, execute=execute)


RICH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 3},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "ratio": {"type": "number", "exclusiveMinimum": 0.5},
        "metric": {"type": "boolean"},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        "where": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
            "additionalProperties": False,
        },
        "note": {"type": ["string", "null"], "format": "date"},
    },
    "required": ["city", "days", "where"],
    "additionalProperties": False,
}


def test_every_tool_is_called_once_with_valid_arguments_then_the_results_are_the_answer():
    model = TestModel()
    agent = (
        Agent.create(provider=model, model="test")
        .tool(_echo("forecast", RICH_SCHEMA))
        .tool(_echo("ping", {"type": "object", "properties": {}}))
        .build()
    )
    answer = json.loads(agent.run_sync("What's the weather?"))
    assert set(answer) == {"forecast", "ping"}
    args = json.loads(answer["forecast"])
    assert args == {
        "city": "aaa",
        "days": 1,
        "ratio": 0.5 + 1e-9,
        "metric": True,
        "unit": "celsius",
        "tags": ["a", "a"],
        "where": {"lat": 0.0, "lon": 0.0},
        "note": "2024-01-01",
    }
    assert [c.name for c in model.calls] == ["forecast", "ping"]
    assert len(model.requests) == 2  # one call with the tools, one with their results


def test_the_arguments_are_deterministic():
    assert value_for(RICH_SCHEMA) == value_for(RICH_SCHEMA)


class Address(BaseModel):
    street: str
    zip_code: int


def test_typed_tools_with_nested_models_are_called_through_their_defs():
    @tool
    def ship(to: Address, express: bool = False) -> str:
        """Ship a parcel."""
        return f"to {to.street} ({to.zip_code}), express={express}"

    agent = Agent.create(provider=TestModel(), model="test").tool(ship).build()
    assert json.loads(agent.run_sync("ship it")) == {"ship": "to a (0), express=True"}


def test_final_text_and_the_chosen_tools():
    called: list[str] = []

    def track(name: str):
        async def execute(args: dict[str, Any], ctx: Any) -> str:
            called.append(name)
            return "done"

        return define_tool(
            name=name, description="t", input_schema={"type": "object"}, execute=execute
        )

    model = TestModel(call_tools=["b"], final_text="All good.")
    agent = Agent.create(provider=model, model="test").tool(track("a")).tool(track("b")).build()
    assert agent.run_sync("go") == "All good."
    assert called == ["b"]


def test_no_tools_answers_at_once_and_a_follow_up_calls_the_tools_again():
    bare = Agent.create(provider=TestModel(), model="test").build()
    assert bare.run_sync("hi") == "no tools were called"
    model = TestModel()
    agent = (
        Agent.create(provider=model, model="test").tool(_echo("ping", {"type": "object"})).build()
    )
    agent.run_sync("first")
    agent.run_sync("second", continue_from=agent.checkpoint())
    assert [c.name for c in model.calls] == ["ping", "ping"]


def test_a_streaming_agent_gets_the_same_answer():
    agent = Agent.create(provider=TestModel(final_text="streamed"), model="test", stream=True)
    assert agent.tool(_echo("ping", {"type": "object"})).build().run_sync("go") == "streamed"


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        (
            {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}},
            "$.code",
        ),
        (
            {
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 2}},
            },
            "$.n",
        ),
        ({"type": "object", "properties": {"x": {"not": {"type": "string"}}}}, "$.x"),
    ],
)
def test_an_unsatisfiable_schema_fails_naming_the_tool_and_the_path(schema, where):
    with pytest.raises(Unsatisfiable, match=rf"^\{where}"):
        value_for(schema)
    agent = Agent.create(provider=TestModel(), model="test").tool(_echo("strict", schema)).build()
    with pytest.raises(ProviderRequestError, match=r"TestModel cannot call tool 'strict'.*\$"):
        agent.run_sync("go")


def test_a_ref_to_nothing_is_unsatisfiable_and_no_tool_has_one():
    schema = {"type": "object", "properties": {"r": {"$ref": "#/$defs/Missing"}}}
    with pytest.raises(Unsatisfiable, match=r"^\$\.r"):
        value_for(schema)
    with pytest.raises(ToolDefinitionError, match="points at nothing"):  # refused where made
        _echo("strict", schema)


@pytest.mark.parametrize(
    "schema",
    [
        {
            "anyOf": [
                {"type": "string", "pattern": "^x$"},
                {"type": "integer", "multipleOf": 7, "minimum": 1},
            ]
        },
        {"allOf": [{"properties": {"a": {"type": "string"}}}, {"properties": {"b": {"const": 2}}}]},
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}]},
        {"type": "array", "maxItems": 0},
        {"type": "integer", "exclusiveMaximum": -3},
        {"type": "string", "maxLength": 2, "format": "email"},
        {"type": "object", "required": ["x"], "additionalProperties": {"type": "integer"}},
        {"type": "null"},
        True,
    ],
)
def test_generated_values_are_valid(schema):
    import jsonschema

    jsonschema.validate(value_for(schema), schema)


def test_a_schema_that_is_not_an_object_is_refused():
    model = TestModel()
    request = LLMRequest(
        model="test",
        messages=(Message(role="user", content="go"),),
        tools=(ToolSpec(name="odd", description="d", input_schema={"type": "string"}),),
    )
    with pytest.raises(ProviderRequestError, match="'odd'.*not an object"):
        anyio.run(model.complete, request)


def test_call_tools_must_be_all_or_a_list():
    with pytest.raises(TypeError, match=r"\['ping'\]"):
        TestModel(call_tools="ping")


def test_pytest_does_not_collect_it_as_a_test_class():
    assert TestModel.__test__ is False
