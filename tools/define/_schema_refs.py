"""``$ref`` in tool schemas: resolved inside the schema, never fetched, never circular.

A tool's input schema comes from its author or from an MCP server, and the agent checks
every call's arguments against it. Three kinds of ``$ref`` would break that check at call
time, so :func:`schema_fault` finds them when the tool is made: a cycle of references that
loops on one value without reading into it (the check would never end; Python stops it with
``RecursionError``), a reference that points at nothing, and a reference outside the schema.
:func:`local_validator` is the validator every argument check uses: its registry holds the
schema and the JSON Schema metaschemas jsonschema ships, and refuses anything else rather
than fetch it (jsonschema's default registry downloads remote references).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
import jsonschema_specifications  # type: ignore[import-untyped]
import referencing
import referencing.exceptions
import referencing.jsonschema

__all__ = ["local_validator", "ref_fault", "schema_fault"]


class _Refused(Exception):
    """A ``$ref`` outside the schema, which is never fetched."""

    def __init__(self, uri: str) -> None:
        super().__init__(uri)
        self.uri = uri


def _refuse(uri: str) -> referencing.Resource[Any]:
    raise _Refused(uri)


_REGISTRY: referencing.jsonschema.SchemaRegistry = jsonschema_specifications.REGISTRY.combine(
    referencing.Registry(retrieve=_refuse)  # type: ignore[call-arg]
)

_SAME_VALUE_ONE = ("not", "if", "then", "else")
_SAME_VALUE_MANY = ("allOf", "anyOf", "oneOf")
_SAME_VALUE_MAP = ("dependentSchemas", "dependencies")
"""Applicators that apply a subschema to the value at hand (``dependencies`` is draft 7's,
which a subschema may switch to with ``$schema``)."""
_INNER_ONE = (
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_INNER_MANY = ("prefixItems", "items")
_INNER_MAP = ("properties", "patternProperties")
"""Applicators that apply a subschema to a part of the value (a property, an item, a key):
a reference cycle through one of these ends where the value ends."""
_REFS = ("$ref", "$dynamicRef")


def local_validator(schema: Mapping[str, Any]) -> jsonschema.Validator:
    """A draft 2020-12 validator of ``schema`` whose references resolve inside it (and to
    the metaschemas); a reference anywhere else raises instead of being fetched."""
    return jsonschema.Draft202012Validator(dict(schema), registry=_REGISTRY)


def schema_fault(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` cannot check a tool's arguments, worded to follow "its input schema"
    (``None`` when it can): not valid JSON Schema, nested too deeply, or a ``$ref`` that
    points at nothing, outside the schema, or round a cycle."""
    plain = dict(schema)
    try:
        jsonschema.Draft202012Validator.check_schema(plain)
    except jsonschema.SchemaError as exc:
        return f"is not valid JSON Schema: {exc.message}"
    except RecursionError:
        return "is nested too deeply to check"
    return ref_fault(plain)


def ref_fault(schema: Mapping[str, Any]) -> str | None:
    """The ``$ref`` part of :func:`schema_fault`, for a schema already known to be JSON
    Schema (a fraction of the cost: checking against the metaschema is most of it).

    Walks every subschema that checking a value can reach (following each ``$ref``, but no
    ``$defs`` nobody refers to), then looks for a cycle among the same-value edges."""
    root = dict(schema)
    resource = referencing.jsonschema.DRAFT202012.create_resource(root)
    resolver = _REGISTRY.resolver_with_root(resource)
    # per subschema (by identity): the subschemas applied to the same value, with how
    same_value: dict[int, list[tuple[int, str]]] = {}
    dynamic_refs: list[tuple[int, str]] = []  # (subschema, anchor name)
    dynamic_anchors: dict[str, list[int]] = {}
    kept: list[Any] = []  # keeps each walked subschema alive, so ids stay unique
    todo: list[tuple[Any, Any]] = [(root, resolver)]  # (subschema, its referencing.Resolver)
    while todo:
        node, resolver = todo.pop()
        key = id(node)
        if key in same_value:
            continue
        same_value[key] = edges = []
        kept.append(node)
        if not isinstance(node, Mapping):
            continue  # true, false, or something check_schema let pass
        if node is not root:
            # as jsonschema descends: a subschema with an $id changes the base of its refs
            sub = referencing.jsonschema.DRAFT202012.create_resource(node)
            resolver = resolver.in_subresource(sub)
        anchor = node.get("$dynamicAnchor")
        if isinstance(anchor, str):
            dynamic_anchors.setdefault(anchor, []).append(key)
        for keyword in _REFS:
            ref = node.get(keyword)
            if not isinstance(ref, str):
                continue
            try:
                resolved = resolver.lookup(ref)
            except referencing.exceptions.Unresolvable as exc:
                return _unresolvable(keyword, ref, exc)
            edges.append((id(resolved.contents), f"{keyword} {ref!r}"))
            todo.append((resolved.contents, resolved.resolver))
            if keyword == "$dynamicRef" and ref.startswith("#"):
                dynamic_refs.append((key, ref[1:]))
        for sub_schema, how in _applied(node, _SAME_VALUE_ONE, _SAME_VALUE_MANY, _SAME_VALUE_MAP):
            edges.append((id(sub_schema), how))
            todo.append((sub_schema, resolver))
        for sub_schema, _ in _applied(node, _INNER_ONE, _INNER_MANY, _INNER_MAP):
            todo.append((sub_schema, resolver))
    for key, name in dynamic_refs:  # a dynamic reference may land on any anchor of its name
        same_value[key].extend(
            (target, f"$dynamicRef '#{name}'") for target in dynamic_anchors.get(name, ())
        )
    cycle = _cycle(same_value)
    if cycle is None:
        return None
    return (
        f"has a $ref cycle ({' -> '.join(cycle)}) that comes back to the same value without "
        "reading into it, so checking arguments would never end; make each loop go through "
        "properties or items"
    )


def _applied(
    schema: Mapping[str, Any],
    one: tuple[str, ...],
    many: tuple[str, ...],
    by_name: tuple[str, ...],
) -> list[tuple[Any, str]]:
    """The subschemas ``schema`` applies through the given keywords, each with its keyword."""
    out: list[tuple[Any, str]] = []
    for keyword in one:
        value = schema.get(keyword)
        if isinstance(value, Mapping | bool):
            out.append((value, keyword))
    for keyword in many:
        value = schema.get(keyword)
        if isinstance(value, list):
            out.extend((v, keyword) for v in value if isinstance(v, Mapping | bool))
    for keyword in by_name:
        value = schema.get(keyword)
        if isinstance(value, Mapping):
            out.extend((v, keyword) for v in value.values() if isinstance(v, Mapping | bool))
    return out


def _unresolvable(keyword: str, ref: str, exc: BaseException) -> str:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, _Refused):
            return (
                f"has a {keyword} to {cause.uri!r}, outside the schema: trackway never fetches "
                "a schema, so put what it refers to under $defs"
            )
        cause = cause.__cause__ or cause.__context__
    return f"has a {keyword} {ref!r} that points at nothing in the schema"


def _cycle(edges: Mapping[int, list[tuple[int, str]]]) -> list[str] | None:
    """The labels of one cycle in ``edges`` (iteratively: a schema may nest deeply), or
    ``None`` when there is none."""
    done: set[int] = set()
    for start in edges:
        if start in done:
            continue
        path: list[tuple[int, str]] = []  # (node, label of the edge into it)
        on_path: dict[int, int] = {}
        stack: list[tuple[int, str, int]] = [(start, "", 0)]  # node, label in, next edge
        while stack:
            node, label, at = stack.pop()
            if at == 0:
                if node in on_path:
                    first = on_path[node]
                    return [how for _, how in path[first + 1 :]] + [label]
                if node in done:
                    continue
                on_path[node] = len(path)
                path.append((node, label))
            out = edges.get(node, [])
            if at < len(out):
                stack.append((node, label, at + 1))
                target, how = out[at]
                stack.append((target, how, 0))
            else:
                done.add(node)
                del on_path[node]
                path.pop()
    return None
