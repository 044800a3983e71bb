"""Arguments valid against a tool's JSON Schema, generated the same way every time.

``TestModel`` calls each tool with them. The value is the simplest one the schema admits:
an enum's first member, a number at its lower bound, a string as short as allowed, an array
as short as allowed (at least one item, so item schemas are exercised), every property of an
object (required or not). ``$ref`` into ``$defs`` / ``definitions``, ``anyOf`` / ``oneOf``
(the first branch that works), ``allOf`` of objects, ``const``, nullable types and the common
string formats are understood; a schema it cannot satisfy (``not``, an unmatched
``pattern``, contradictory bounds) raises :class:`Unsatisfiable` with the path that failed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["Unsatisfiable", "value_for"]

_FORMATS = {
    "date": "2024-01-01",
    "date-time": "2024-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "email": "a@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
}
_UNSUPPORTED = ("not", "if", "patternProperties", "dependentSchemas", "contains")
_MAX_DEPTH = 32


class Unsatisfiable(Exception):
    """No value could be generated; ``path`` is where (``$.address.zip``), ``str`` why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path


def value_for(schema: Mapping[str, Any]) -> Any:
    """The generated value of ``schema`` (its ``$defs`` resolved against itself)."""
    return _Generator(schema).value(schema, "$", 0)


class _Generator:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def value(self, schema: Any, path: str, depth: int) -> Any:
        if schema is True or schema == {}:
            return "a"
        if not isinstance(schema, Mapping):
            raise Unsatisfiable(path, f"the schema {schema!r} admits nothing")
        if depth > _MAX_DEPTH:
            raise Unsatisfiable(path, "the schema recurses deeper than 32 levels")
        if "$ref" in schema:
            return self.value(self._resolve(schema["$ref"], path), path, depth + 1)
        for keyword in _UNSUPPORTED:
            if keyword in schema:
                raise Unsatisfiable(path, f"{keyword!r} is not supported by the generator")
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            if not schema["enum"]:
                raise Unsatisfiable(path, "the enum is empty")
            return schema["enum"][0]
        for keyword in ("anyOf", "oneOf"):
            if keyword in schema:
                return self._first_branch(schema, keyword, path, depth)
        if "allOf" in schema:
            return self.value(self._merged(schema, path), path, depth + 1)
        return self._typed(schema, self._type(schema), path, depth)

    def _typed(self, schema: Mapping[str, Any], kind: str, path: str, depth: int) -> Any:
        if kind == "object":
            return self._object(schema, path, depth)
        if kind == "array":
            return self._array(schema, path, depth)
        if kind == "string":
            return self._string(schema, path)
        if kind in ("integer", "number"):
            return _number(schema, kind == "integer", path)
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        raise Unsatisfiable(path, f"unknown type {kind!r}")

    def _type(self, schema: Mapping[str, Any]) -> str:
        declared = schema.get("type")
        if isinstance(declared, list):
            non_null = [t for t in declared if t != "null"]
            return str(non_null[0] if non_null else "null")
        if isinstance(declared, str):
            return declared
        if "properties" in schema or "required" in schema:
            return "object"
        if "items" in schema or "prefixItems" in schema:
            return "array"
        if any(k in schema for k in ("minimum", "maximum", "multipleOf")):
            return "number"
        return "string"

    def _resolve(self, ref: str, path: str) -> Any:
        if not ref.startswith("#"):
            raise Unsatisfiable(path, f"$ref {ref!r} points outside the schema")
        node: Any = self.root
        for part in ref.lstrip("#").strip("/").split("/"):
            if not part:
                continue
            key = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or key not in node:
                raise Unsatisfiable(path, f"$ref {ref!r} does not resolve")
            node = node[key]
        return node

    def _first_branch(self, schema: Mapping[str, Any], keyword: str, path: str, depth: int) -> Any:
        reasons = []
        siblings = {k: v for k, v in schema.items() if k != keyword}
        for branch in schema[keyword]:
            merged = {**siblings, **branch} if isinstance(branch, Mapping) else branch
            try:
                return self.value(merged, path, depth + 1)
            except Unsatisfiable as exc:
                reasons.append(str(exc))
        raise Unsatisfiable(path, f"no branch of {keyword} works ({'; '.join(reasons)})")

    def _merged(self, schema: Mapping[str, Any], path: str) -> dict[str, Any]:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part = self._resolve(part["$ref"], path) if "$ref" in part else part
            for key, value in part.items():
                if key == "properties":
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required":
                    merged["required"] = [*merged.get("required", []), *value]
                elif key in merged and merged[key] != value:
                    raise Unsatisfiable(path, f"allOf parts disagree on {key!r}")
                else:
                    merged[key] = value
        return merged

    def _object(self, schema: Mapping[str, Any], path: str, depth: int) -> dict[str, Any]:
        properties = schema.get("properties", {})
        out = {
            name: self.value(sub, f"{path}.{name}", depth + 1) for name, sub in properties.items()
        }
        for name in schema.get("required", []):
            if name not in out:
                extra = schema.get("additionalProperties", True)
                if extra is False:
                    raise Unsatisfiable(path, f"{name!r} is required but not allowed")
                out[name] = self.value(extra, f"{path}.{name}", depth + 1)
        if len(out) < schema.get("minProperties", 0):
            raise Unsatisfiable(path, "minProperties asks for more properties than it names")
        return out

    def _array(self, schema: Mapping[str, Any], path: str, depth: int) -> list[Any]:
        prefix = list(schema.get("prefixItems", []))
        items = schema.get("items", {} if not prefix else False)
        low = int(schema.get("minItems", 0))
        high = schema.get("maxItems")
        count = max(low, len(prefix), 1 if items is not False else 0)
        if high is not None and count > high:
            count = int(high)
        if count < low:
            raise Unsatisfiable(path, "minItems is larger than maxItems")
        out = [
            self.value(prefix[i] if i < len(prefix) else items, f"{path}[{i}]", depth + 1)
            for i in range(count)
        ]
        if schema.get("uniqueItems") and len({repr(v) for v in out}) < len(out):
            raise Unsatisfiable(path, "uniqueItems with items that generate the same value")
        return out

    def _string(self, schema: Mapping[str, Any], path: str) -> str:
        low = int(schema.get("minLength", 0))
        high = schema.get("maxLength")
        known = _FORMATS.get(str(schema.get("format")))
        candidates = [known] if known else []
        candidates += ["a" * max(low, 1), "a" * low, "0" * max(low, 1), "example"]
        pattern = schema.get("pattern")
        for text in candidates:
            fits = len(text) >= low and (high is None or len(text) <= high)
            if fits and (pattern is None or re.search(pattern, text)):
                return text
        raise Unsatisfiable(
            path,
            f"no simple string fits pattern {pattern!r}"
            if pattern is not None
            else f"minLength {low} is larger than maxLength {high}",
        )


def _number(schema: Mapping[str, Any], integer: bool, path: str) -> int | float:
    low = schema.get("minimum", -math.inf)
    high = schema.get("maximum", math.inf)
    if "exclusiveMinimum" in schema:
        low = max(low, schema["exclusiveMinimum"] + (1 if integer else 1e-9))
    if "exclusiveMaximum" in schema:
        high = min(high, schema["exclusiveMaximum"] - (1 if integer else 1e-9))
    step = schema.get("multipleOf")
    value: float = 0 if low <= 0 <= high else low if low > -math.inf else high
    if integer:
        value = math.ceil(value) if value == low else math.floor(value)
    if step:
        value = math.ceil(value / step) * step
    if not low <= value <= high:
        raise Unsatisfiable(path, f"no {'integer' if integer else 'number'} fits these bounds")
    return int(value) if integer else float(value)
