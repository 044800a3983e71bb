"""Tools that ask a person: the run pauses at the call and the person's answer is the result.

``ask_human()`` lets the model ask a question in its own words; ``request_input(schema=...)``
asks for data of a given shape. Neither runs code: an agent pauses before the call, and
``agent.resume(checkpoint, answer)`` gives the answer to the model as the call's result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.tools.time._ask import TIME_FORMATS, check_time_answer, format_schema

from ._define import Tool, ToolContext
from ._errors import ToolDefinitionError
from ._schema_refs import schema_fault

__all__ = ["ask_human", "request_input"]


def _never(args: dict[str, Any], ctx: ToolContext) -> Any:
    raise ToolDefinitionError(
        f"{ctx.tool_name} asks a person and runs no code: it is answered with "
        "agent.resume(checkpoint, answer), and only an Agent can offer it"
    )


def ask_human(
    *,
    question: str | None = None,
    name: str = "ask_human",
    description: str | None = None,
) -> Tool:
    """A tool the model calls to ask the person something; the run pauses until
    ``agent.resume(checkpoint, "the answer")``.

    Without ``question`` the model writes the question (the tool's one argument). With it,
    the question is fixed and the call takes no arguments.
    """
    if question is not None and (not isinstance(question, str) or not question.strip()):
        raise ToolDefinitionError(f"ask_human(question={question!r}): use a non-empty str")
    if question is None:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"question": {"type": "string", "description": "What to ask."}},
            "required": ["question"],
        }
    else:
        schema = {"type": "object", "properties": {}}
    return Tool(
        name=name,
        description=description
        or "Ask the person a question and wait for the answer. Use it when you need "
        "something only they know.",
        input_schema=schema,
        execute=_never,
        asks={"kind": "ask_human", "question": question, "schema": None},
    )


def request_input(
    *,
    question: str,
    schema: Mapping[str, Any] | None = None,
    format: str | None = None,
    labels: Mapping[str, str] | None = None,
    choices: list[Any] | None = None,
    strict: bool = False,
    name: str = "request_input",
    description: str | None = None,
) -> Tool:
    """A tool the model calls to get data from the person: the run pauses with
    ``question``, and the answer must match ``schema`` (JSON Schema, draft 2020-12) before
    it is accepted. ``format="instant" | "time-range" | "zone"`` asks for a time instead
    (the schema is the format's): an answer out of order, without an offset or zone, or
    (under ``.time()``) at a wall time the clocks skip comes back as the same ask with
    ``refused`` and ``repeat`` (docs/guide/time.md). ``labels`` title a time ask's parts;
    ``choices`` offers answers (each checked here), free entry staying open unless
    ``strict``."""
    if not isinstance(question, str) or not question.strip():
        raise ToolDefinitionError(f"request_input(question={question!r}): use a non-empty str")
    if format is not None:
        if schema is not None:
            raise ToolDefinitionError(
                "request_input takes schema= or format=, not both: a time format's schema is "
                "its own"
            )
        if format not in TIME_FORMATS:
            raise ToolDefinitionError(
                f"request_input(format={format!r}): use one of {', '.join(TIME_FORMATS)}"
            )
        asks: dict[str, Any] = {
            "kind": "request_input",
            "question": question,
            "schema": format_schema(format),
            "format": format,
        }
        if labels:
            asks["labels"] = {str(k): str(v) for k, v in labels.items()}
        if choices is not None:
            for choice in choices:
                wrong = check_time_answer(format, choice)
                if wrong is not None:
                    raise ToolDefinitionError(
                        f"request_input(choices=...): {choice!r} is not a {format} answer: "
                        f"{wrong['reason']}"
                    )
            asks["choices"] = list(choices)
        if strict:
            if not choices:
                raise ToolDefinitionError("request_input(strict=True) needs choices=[...]")
            asks["strict"] = True
        return Tool(
            name=name,
            description=description or f"Ask the person for a time ({format}): {question}",
            input_schema={"type": "object", "properties": {}},
            execute=_never,
            asks=asks,
        )
    if not isinstance(schema, Mapping):
        raise ToolDefinitionError("request_input(schema=...) takes a JSON Schema (a dict)")
    fault = schema_fault(schema)  # the answer is checked against it: it must be able to
    if fault is not None:
        raise ToolDefinitionError(f"request_input(schema=...) {fault}")
    return Tool(
        name=name,
        description=description or f"Ask the person for input: {question}",
        input_schema={"type": "object", "properties": {}},
        execute=_never,
        asks={"kind": "request_input", "question": question, "schema": dict(schema)},
    )
