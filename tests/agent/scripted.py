"""Test helpers for scripted agent runs: a tool that returns a fixed value, and a model
answer that calls tools."""

from __future__ import annotations

from typing import Any

from trackway.tools import define_tool

__all__ = ["OBJECT", "calls", "returning"]

OBJECT = {"type": "object", "properties": {"q": {"type": "string"}}}


def returning(name: str, value: Any, **kw: Any) -> Any:
    """A tool that returns ``value`` (called with the arguments) whatever it is asked."""
    return define_tool(
        name=name,
        description=f"The {name} tool.",
        input_schema=kw.pop("input_schema", OBJECT),
        execute=value if callable(value) else (lambda args, ctx: value),
        **kw,
    )


def calls(*made: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A model answer calling each ``(id, name, args)`` in order."""
    return {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in made]}
