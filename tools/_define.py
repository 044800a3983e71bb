"""Tools: a name, a description, a JSON Schema for the arguments, and the code to run."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import jsonschema

from ._errors import ToolDefinitionError
from ._identity import Identity

__all__ = ["Tool", "ToolContext", "define_tool"]


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may know about its call.

    ``identity`` and ``session_id`` are what the caller passed to ``run`` (``None`` when it
    passed none). ``iteration`` is the agent's loop iteration (1-based). The tool runs under
    the run's anyio cancellation: a run's ``timeout=`` or a cancelled caller cancels an
    ``async`` tool at its next ``await`` (a sync tool runs to its end). ``cancel_scope`` is
    the scope around this one call: an async tool may read its ``deadline`` or ``cancel()``
    it to stop itself, and the model then reads that the call was cancelled.
    """

    call_id: str
    tool_name: str
    run_id: str
    iteration: int
    extras: Mapping[str, Any] = field(default_factory=dict)
    identity: Identity | None = None
    session_id: str | None = None
    cancel_scope: anyio.CancelScope | None = None


@dataclass(frozen=True)
class Tool:
    """A tool the model may call. ``execute(args, ctx)`` may be ``def`` or ``async def``."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    execute: Callable[[dict[str, Any], ToolContext], Any]
    is_async: bool = False
    asks: Mapping[str, Any] | None = None
    """Set on tools that ask a person (``ask_human``, ``request_input``): the run pauses
    at the call instead of running ``execute``."""

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
