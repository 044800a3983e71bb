"""A tool's artifact declarations, checked where they are written: ``result_kind`` (the kind
a placed result is minted under) and ``wants`` (arguments that take an ``art_…`` ticket of
one kind, redeemed by the agent before the tool runs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._errors import ToolDefinitionError

__all__ = ["check_result_kind", "check_tool_wants", "checked_wants", "result_kind_of"]


def result_kind_of(tool: Any) -> str:
    """The kind a placed result of ``tool`` is minted under: its ``result_kind``, else
    ``tool-result/<name>``."""
    kind = getattr(tool, "result_kind", None)
    return kind if kind is not None else f"tool-result/{tool.name}"


def check_result_kind(name: str, kind: object) -> str | None:
    """``result_kind`` checked: ``None`` (the default kind) or a non-blank str."""
    if kind is None:
        return None
    if not isinstance(kind, str) or not kind.strip() or kind != kind.strip():
        raise ToolDefinitionError(
            f"tool {name!r}: result_kind={kind!r}: name the kind of its results (a non-blank "
            "str without surrounding spaces, e.g. 'dataset/rows'), or leave it out for "
            f"'tool-result/{name}'"
        )
    return kind


def checked_wants(
    name: str, wants: Mapping[str, Any] | None, input_schema: Mapping[str, Any]
) -> dict[str, str] | None:
    """``wants`` checked: each argument exists in the schema as ``type: "string"`` and
    names a non-blank kind. ``None`` or empty: the tool wants nothing."""
    if wants is None:
        return None
    if not isinstance(wants, Mapping):
        raise ToolDefinitionError(
            f"tool {name!r}: wants={wants!r}: give argument names and the artifact kind each "
            "redeems, e.g. wants={'dataset': 'dataset/rows'}"
        )
    if not wants:
        return None
    properties = input_schema.get("properties") or {}
    out: dict[str, str] = {}
    for arg, kind in wants.items():
        if not isinstance(kind, str) or not kind.strip():
            raise ToolDefinitionError(
                f"tool {name!r}: wants[{arg!r}]={kind!r}: name the artifact kind the ticket "
                "must be (a non-blank str, e.g. 'dataset/rows')"
            )
        prop = properties.get(arg) if isinstance(arg, str) else None
        if not isinstance(prop, Mapping):
            raise ToolDefinitionError(
                f"tool {name!r}: wants names {arg!r}, which is not an argument of the tool "
                f"({', '.join(sorted(properties)) or 'none'}); add it to input_schema as "
                '{"type": "string"} (the model passes the art_... ticket there)'
            )
        if prop.get("type") != "string":
            raise ToolDefinitionError(
                f"tool {name!r}: wants argument {arg!r} has type {prop.get('type')!r}; a ticket "
                'is a string: declare it {"type": "string"} (the tool receives the data)'
            )
        out[arg] = kind
    return out


def check_tool_wants(tool: Any) -> None:
    """Check a hand-built ``Tool``'s ``wants`` and ``result_kind`` as ``define_tool`` does
    (raises :class:`ToolDefinitionError` naming the fix)."""
    check_result_kind(tool.name, tool.result_kind)
    checked_wants(tool.name, tool.wants, tool.input_schema)
