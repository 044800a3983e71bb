"""The native strategy's request: the output model as a strict JSON Schema in the response
format every provider reads (``response_format={"type": "json_schema", "json_schema":
{"name", "strict": true, "schema"}}``), refused at build when strict mode cannot say it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ..messages._errors import AgentBuildError

__all__ = ["native_format", "schema_name", "strict_schema"]

_NAMED = ("properties", "$defs", "definitions", "patternProperties")
"""Keys whose value maps names (fields, definitions) to schemas: the names are kept as they
are, whatever they are called."""

_DROPPED = ("default",)
"""Keywords strict structured output does not take (the answer states every field)."""


def schema_name(model: type[BaseModel]) -> str:
    """The schema's name on the wire (letters, digits, ``_`` and ``-``; at most 64)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", model.__name__)[:64] or "answer"


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON Schema as strict structured output takes it: every object closed
    (``additionalProperties: false``) with every property required (an optional field is
    then sent as ``null``), no ``default``, a ``$ref`` alone. A free-form mapping (a
    ``dict`` field) has no strict form and is refused, naming where it is."""
    out = _strict(model.model_json_schema(), model.__name__)
    assert isinstance(out, dict)
    return out


def native_format(model: type[BaseModel]) -> dict[str, Any]:
    """The response format that asks the provider for ``model``'s JSON natively."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema_name(model), "strict": True, "schema": strict_schema(model)},
    }


def _strict(node: Any, where: str) -> Any:
    if isinstance(node, list):
        return [_strict(item, where) for item in node]
    if not isinstance(node, Mapping):
        return node
    if "$ref" in node:
        return {"$ref": node["$ref"]}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key in _NAMED and isinstance(value, Mapping):
            out[key] = {name: _strict(sub, f"{where}.{name}") for name, sub in value.items()}
        else:
            out[key] = _strict(value, where)
    if out.get("type") == "object" or "properties" in out:
        extra = out.get("additionalProperties")
        if "properties" not in out or extra not in (None, False):
            raise AgentBuildError(
                f"output_schema(..., strategy='native'): {where} is a free-form mapping (a dict "
                "field), which strict structured output cannot express; give it a model with "
                "named fields, or use strategy='instruct'"
            )
        out["additionalProperties"] = False
        out["required"] = list(out["properties"])
    return out
