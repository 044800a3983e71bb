"""``@tool``: a tool from a typed Python function, its JSON Schema derived by pydantic."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, get_type_hints, overload

import pydantic

from ._define import Tool, ToolContext, define_tool
from ._errors import ToolDefinitionError

__all__ = ["tool"]

_ARGS = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$", re.MULTILINE)
_ARG_LINE = re.compile(r"^\s{2,}(\w+)\s*(?:\([^)]*\))?:\s*(.*)$")


def _docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The description (what comes before ``Args:``) and each argument's sentence."""
    doc = inspect.getdoc(fn) or ""
    found = _ARGS.search(doc)
    head = (doc[: found.start()] if found else doc).strip().split("\n\n", 1)[0]
    params: dict[str, str] = {}
    if found:
        current: str | None = None
        for line in doc[found.end() :].splitlines():
            match = _ARG_LINE.match(line)
            if match:
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current and line.strip() and line.startswith(" " * 4):
                params[current] = f"{params[current]} {line.strip()}".strip()
            elif not line.strip():
                continue
            else:
                break
    return " ".join(head.split()), params


def _strip_titles(schema: Any) -> Any:
    """pydantic's schema without its generated titles (they only repeat the names)."""
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def _build(
    fn: Callable[..., Any],
    name: str | None,
    description: str | None,
    options: Mapping[str, Any] | None = None,
) -> Tool:
    options = dict(options or {})
    known = {"result_ceiling", "gate", "ask_or_assume", "period", "needs", "result_kind", "wants"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ToolDefinitionError(
            "@tool takes name, description, result_ceiling, gate, ask_or_assume, period, "
            f"needs, result_kind and wants, not {unknown}"
        )
    if not callable(fn):
        raise ToolDefinitionError(f"@tool decorates a function, got {fn!r}")
    tool_name: str = name or str(getattr(fn, "__name__", ""))
    summary, arg_docs = _docstring(fn)
    text = description or summary
    if not text:
        raise ToolDefinitionError(
            f"@tool {tool_name!r}: give the function a docstring (its first paragraph is what "
            "the model reads about the tool) or pass @tool(description=...)"
        )
    try:
        hints = get_type_hints(fn)
    except Exception as exc:  # a forward reference that does not resolve, say
        raise ToolDefinitionError(
            f"@tool {tool_name!r}: its type hints cannot be read ({exc})"
        ) from None
    fields: dict[str, Any] = {}
    ctx_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"@tool {tool_name!r}: *{param.name} cannot be described to a model; name "
                "every argument"
            )
        hint = hints.get(param.name)
        if hint is ToolContext or param.name == "ctx":
            ctx_param = param.name
            continue
        if hint is None:
            raise ToolDefinitionError(
                f"@tool {tool_name!r}: annotate {param.name!r} (e.g. {param.name}: str): the "
                "schema the model reads is derived from the type hints"
            )
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (
            hint,
            pydantic.Field(default, description=arg_docs.get(param.name)),
        )
    wants = options.get("wants")
    tickets = {k for k in wants if k in fields} if isinstance(wants, dict) else set()
    # a wants argument is typed for the data it receives; the model passes a ticket (a string)
    for k in tickets:
        fields[k] = (str, fields[k][1])
    model = pydantic.create_model(f"{tool_name}_args", **fields)
    schema = _strip_titles(model.model_json_schema())
    schema.setdefault("properties", {})
    is_async = inspect.iscoroutinefunction(fn)

    def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        held = {k: args[k] for k in tickets if k in args}  # redeemed: the data, as it came
        checked = model.model_validate({**args, **dict.fromkeys(held, "")} if held else args)
        kwargs = {k: held[k] if k in held else getattr(checked, k) for k in fields}
        if ctx_param is not None:
            kwargs[ctx_param] = ctx
        return fn(**kwargs)

    made = define_tool(  # the same checks as any tool: name, description, schema
        name=tool_name, description=text, input_schema=schema, execute=execute, **options
    )
    return dataclasses.replace(made, is_async=is_async)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, **options: Any
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    **options: Any,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a tool of a typed function: its name, its docstring's first paragraph as the
    description, and a JSON Schema of its arguments from their type hints (descriptions from
    the docstring's ``Args:`` section). A parameter typed :class:`ToolContext` (or named
    ``ctx``) gets the call's context. The function may be ``def`` or ``async def``::

        @tool
        def weather(city: str, unit: Literal["C", "F"] = "C") -> str:
            \"\"\"Current weather for a city.

            Args:
                city: The city's name.
            \"\"\"

    ``options`` are :func:`define_tool`'s own (``result_ceiling``, ``gate``,
    ``ask_or_assume``, ``period``, ``needs``, ``result_kind``, ``wants``), checked the same way.
    """
    if fn is not None:
        return _build(fn, name, description, options)
    return lambda f: _build(f, name, description, options)
