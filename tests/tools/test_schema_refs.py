"""``$ref`` in tool schemas: ``define_tool`` refuses the ones that would break a call's check
(a cycle on one value, a reference to nothing, one outside the schema) and keeps the ones
that work (recursion through properties or items, ``$id`` bases, the metaschemas)."""

from __future__ import annotations

from typing import Any

import pytest

from trackway import define_tool
from trackway.tools import ToolDefinitionError
from trackway.tools.define._schema_refs import local_validator, schema_fault


def _tool(schema: dict[str, Any]) -> Any:
    return define_tool(name="t", description="d", input_schema=schema, execute=lambda a, c: 1)


NODE = {
    "type": "object",
    "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
}

WORKING: dict[str, dict[str, Any]] = {
    "recursion through items": {"type": "object", "$defs": {"node": NODE}, "$ref": "#/$defs/node"},
    "recursion to the root": {"type": "object", "properties": {"next": {"$ref": "#"}}},
    "an absolute ref to its own $id": {
        "$id": "https://schemas.example/s",
        "type": "object",
        "properties": {"x": {"$ref": "https://schemas.example/s#/$defs/x"}},
        "$defs": {"x": {"type": "integer"}},
    },
    "a nested $id base": {
        "$id": "https://schemas.example/root",
        "type": "object",
        "properties": {
            "x": {"$id": "sub", "$defs": {"y": {"type": "string"}}, "$ref": "#/$defs/y"}
        },
    },
    "the 2020-12 metaschema": {
        "type": "object",
        "properties": {"schema": {"$ref": "https://json-schema.org/draft/2020-12/schema"}},
    },
    "a dynamic anchor through properties": {
        "type": "object",
        "$dynamicAnchor": "node",
        "properties": {"child": {"$dynamicRef": "#node"}},
    },
    "a bad $defs entry nothing refers to": {"type": "object", "$defs": {"a": {"$ref": "#/nope"}}},
}

BROKEN: dict[str, tuple[dict[str, Any], str]] = {
    "a cycle through allOf": (
        {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
        },
        "has a $ref cycle ($ref '#/$defs/b' -> allOf -> $ref '#/$defs/a')",
    ),
    "the root referring to itself": (
        {"type": "object", "$ref": "#"},
        "has a $ref cycle ($ref '#')",
    ),
    "a cycle through not": (
        {"type": "object", "$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"},
        "has a $ref cycle (not -> $ref '#/$defs/a')",
    ),
    "a dynamic cycle": (
        {"type": "object", "$dynamicAnchor": "n", "anyOf": [{"$dynamicRef": "#n"}]},
        "has a $ref cycle (anyOf -> $dynamicRef '#n')",
    ),
    "a pointer to nothing": (
        {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}},
        "has a $ref '#/$defs/missing' that points at nothing in the schema",
    ),
    "an anchor nobody declares": (
        {"type": "object", "properties": {"x": {"$ref": "#nobody"}}},
        "has a $ref '#nobody' that points at nothing in the schema",
    ),
    "a relative file": (
        {"type": "object", "properties": {"x": {"$ref": "other.json"}}},
        "has a $ref to 'other.json', outside the schema: trackway never fetches a schema",
    ),
}


@pytest.mark.parametrize("case", sorted(WORKING))
def test_refs_that_work_are_kept(case: str) -> None:
    schema = WORKING[case]
    assert schema_fault(schema) is None
    assert _tool(schema).input_schema == schema


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_refs_that_would_break_a_call_are_refused_where_the_tool_is_made(case: str) -> None:
    schema, said = BROKEN[case]
    fault = schema_fault(schema)
    assert fault is not None and fault.startswith(said)
    with pytest.raises(ToolDefinitionError) as caught:
        _tool(schema)
    assert str(caught.value) == f"tool 't': input_schema {fault}"


def test_every_refused_cycle_would_have_recursed_without_end() -> None:
    """The check is not stricter than it must be: each cycle it refuses does recurse in
    jsonschema, and each recursive schema it keeps does not."""
    for case in ("a cycle through allOf", "the root referring to itself", "a cycle through not"):
        # Where the interpreter's recursion limit lands decides what surfaces: a RecursionError,
        # or, when it lands inside rpds (the Rust maps `referencing` uses), the panic pyo3 makes
        # of it, which names the RecursionError.
        with pytest.raises(BaseException) as info:
            list(local_validator(BROKEN[case][0]).iter_errors({"x": 1}))
        raised = info.value
        assert isinstance(raised, RecursionError) or (
            type(raised).__name__ == "PanicException" and "RecursionError" in str(raised)
        ), repr(raised)
    tree = {"children": [{"children": [{"children": []}]}, {"children": 7}]}
    errors = list(local_validator(WORKING["recursion through items"]).iter_errors(tree))
    assert [e.message for e in errors] == ["7 is not of type 'array'"]


def test_a_schema_nested_too_deeply_is_refused_not_a_recursion_error() -> None:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(3000):
        schema = {"type": "object", "properties": {"a": schema}}
    with pytest.raises(ToolDefinitionError, match="input_schema is nested too deeply to check"):
        _tool(schema)


def test_a_remote_ref_is_refused_and_never_fetched(schema_host: tuple[str, list[str]]) -> None:
    url, requested = schema_host
    remote = {"type": "object", "properties": {"x": {"$ref": url}}}
    with pytest.raises(ToolDefinitionError, match=f"has a \\$ref to '{url}', outside the schema"):
        _tool(remote)
    with pytest.raises(Exception, match=f"Unresolvable: {url}"):
        list(local_validator(remote).iter_errors({"x": "seven"}))
    assert requested == []


def test_a_ruled_property_is_checked_on_its_own_so_its_refs_must_resolve_there() -> None:
    """A rule's value is checked against its property alone: a ``$ref`` into the root's
    ``$defs`` is refused by name, never an unresolvable-reference error from jsonschema."""
    schema = {
        "type": "object",
        "properties": {"window": {"type": "string", "$ref": "#/$defs/window"}},
        "$defs": {"window": {"enum": ["1h", "2h"]}},
    }
    assert schema_fault(schema) is None  # the schema itself works
    with pytest.raises(ToolDefinitionError) as caught:
        define_tool(
            name="t",
            description="d",
            input_schema=schema,
            execute=lambda a, c: 1,
            ask_or_assume={"window": {"assume": "2h"}},
        )
    assert str(caught.value) == (
        "tool 't', argument 'window': a ruled property is checked on its own, and on its own "
        "it has a $ref '#/$defs/window' that points at nothing in the schema; write the "
        "property out in place"
    )


def test_request_input_refuses_a_remote_ref_and_never_fetches_it(
    schema_host: tuple[str, list[str]],
) -> None:
    from trackway.tools import request_input

    url, requested = schema_host
    with pytest.raises(ToolDefinitionError, match="request_input\\(schema=...\\) has a \\$ref to"):
        request_input(schema={"type": "object", "properties": {"x": {"$ref": url}}}, question="?")
    assert requested == []
