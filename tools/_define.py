"""Tools: a name, a description, a JSON Schema for the arguments, and the code to run."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from ._errors import ToolDefinitionError

__all__ = ["Tool", "ToolContext", "define_tool"]


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may know about its call."""

    call_id: str
    tool_name: str
    run_id: str
    iteration: int
    extras: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    """A tool the model may call. ``execute(args, ctx)`` may be ``def`` or ``async def``."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    execute: Callable[[dict[str, Any], ToolContext], Any]
    is_async: bool = False

    def spec(self) -> dict[str, Any]:
        """The tool as the model sees it (JSON)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }


def define_tool(
    *,
    name: str,
    description: str,
    input_schema: Mapping[str, Any],
    execute: Callable[[dict[str, Any], ToolContext], Any],
) -> Tool:
    """Define a tool; the schema is checked as JSON Schema (draft 2020-12) right here."""
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "_-" for c in name):
        raise ToolDefinitionError(
            f"tool name {name!r} must be non-empty letters, digits, '_' or '-' (providers "
            "refuse other names)"
        )
    if not isinstance(description, str) or not description.strip():
        raise ToolDefinitionError(f"tool {name!r} needs a description: the model reads it")
    if not isinstance(input_schema, Mapping):
        raise ToolDefinitionError(f"tool {name!r}: input_schema must be a JSON Schema dict")
    try:
        jsonschema.Draft202012Validator.check_schema(dict(input_schema))
    except jsonschema.SchemaError as exc:
        raise ToolDefinitionError(
            f"tool {name!r}: input_schema is not valid JSON Schema: {exc.message}"
        ) from None
    if not callable(execute):
        raise ToolDefinitionError(f"tool {name!r}: execute must be a function (args, ctx)")
    return Tool(
        name, description, dict(input_schema), execute, inspect.iscoroutinefunction(execute)
    )
