"""A fast yes for tool arguments that plainly match a simple schema.

Tool arguments are checked against the tool's JSON Schema (draft 2020-12) before the tool
runs; that check is the edge and stays. Most tools declare the simplest schema there is, an
object of typed properties with some required, and most calls match it. For such a schema
:func:`quick_check` builds a plain-Python check that answers ``True`` only when jsonschema
would find no error; any other answer (a mismatch, or a schema with any other keyword) goes
to the full validator, which words the errors. So the verdict and every message are the
validator's; only the common "valid" answer is reached without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jsonschema

from trackway.engine import thaw
from trackway.tools.define._schema_refs import local_validator

__all__ = ["ArgChecks", "quick_check"]

_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment"})
"""Keywords that never make an instance invalid."""
_OBJECT_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}
_PROPERTY_KEYWORDS = _ANNOTATIONS | {"type"}


def _is_integer(value: Any) -> bool:
    # JSON Schema's integer: any number with a zero fractional part, never a bool
    t = type(value)
    return t is int or (t is float and value.is_integer())


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str,
    "integer": _is_integer,
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "array": lambda v: type(v) is list,
    "object": lambda v: type(v) is dict,
}
"""Each JSON type over the plain values JSON decodes to; any other Python type (a tuple, a
frozen view, a subclass) answers no, and the full validator decides."""


def quick_check(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """A check that is ``True`` only for arguments ``schema`` plainly accepts, or ``None``
    when the schema uses more than ``type: object``, typed ``properties``, ``required`` and
    a boolean ``additionalProperties`` (and annotations)."""
    if type(schema) is not dict or schema.get("type") != "object":
        return None
    if not _OBJECT_KEYWORDS.issuperset(schema):
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if type(properties) is not dict or type(required) is not list or type(extra) is not bool:
        return None
    if not all(type(name) is str for name in required):
        return None
    typed: dict[str, Callable[[Any], bool] | None] = {}
    for name, prop in properties.items():
        if type(prop) is not dict or not _PROPERTY_KEYWORDS.issuperset(prop):
            return None
        kind = prop.get("type")
        if kind is None:
            typed[name] = None
        elif type(kind) is str and kind in _TYPES:
            typed[name] = _TYPES[kind]
        else:
            return None
    need = tuple(required)

    def check(args: Any) -> bool:
        if type(args) is not dict:
            return False
        for name in need:
            if name not in args:
                return False
        for name, value in args.items():
            if name in typed:
                ok = typed[name]
                if ok is not None and not ok(value):
                    return False
            elif not extra:
                return False
        return True

    return check


class ArgChecks:
    """A tool's argument checks, built once per agent: the quick yes for a simple schema
    (``None`` for any other) and the validator that decides everything else, built the
    first time a call is not plainly valid (building one costs more than many quick checks,
    and most agents never need it). Its references (``$ref``) resolve inside the schema, never
    by a fetch."""

    __slots__ = ("_schema", "_validator", "quick")

    def __init__(self, tool: Any) -> None:
        self._schema = schema = dict(tool.input_schema)
        try:
            self.quick: Callable[[Any], bool] | None = quick_check(thaw(schema))
        except TypeError:  # a schema of mapping types JSON does not know: the validator alone
            self.quick = None
        self._validator: jsonschema.Validator | None = None

    @property
    def validator(self) -> jsonschema.Validator:
        if self._validator is None:
            self._validator = local_validator(self._schema)
        return self._validator
