"""Structured output on the wire (``output_schema(strategy="native")``).

The neutral request asks for it one way, as OpenAI spells it: ``response_format={"type":
"json_schema", "json_schema": {"name", "strict": true, "schema"}}`` (so the receipt hashes
the same request whichever vendor serves it). A provider says how its API honours that with
``native_output``: ``"response_format"`` (sent as it is: OpenAI, the mock) or
``"forced-tool"`` (Anthropic: the schema becomes a tool the model is made to call, and that
call's input is the answer, never a call the loop dispatches). A provider without the
attribute cannot, and the agent refuses the strategy when it is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import orjson

from ..messages._messages import LLMRequest, LLMResponse
from ..messages._payload import UNPARSED_ARGUMENTS
from ._provider import ProviderRequestError

__all__ = [
    "NativeOutput",
    "answer_from_tool",
    "answer_tool",
    "ask_for_answer",
    "json_schema_format",
]

NativeOutput = Literal["response_format", "forced-tool"]
"""How a provider's API honours a ``json_schema`` response format."""

ANSWER_DESCRIPTION = (
    "Give your final answer by calling this tool: its input is the answer, in exactly the "
    "required shape."
)


def json_schema_format(request: LLMRequest) -> Mapping[str, Any] | None:
    """The ``json_schema`` part of the request's response format, when it asks for one."""
    fmt = request.response_format
    if not fmt or fmt.get("type") != "json_schema":
        return None
    inner = fmt.get("json_schema")
    return inner if isinstance(inner, Mapping) and isinstance(inner.get("name"), str) else None


def answer_tool(request: LLMRequest) -> dict[str, Any] | None:
    """The tool a forced-tool API is made to call for ``request``'s answer (name,
    description, input schema), or ``None`` when the request asks for no schema."""
    fmt = json_schema_format(request)
    if fmt is None:
        return None
    return {
        "name": fmt["name"],
        "description": ANSWER_DESCRIPTION,
        "input_schema": dict(fmt.get("schema") or {"type": "object"}),
    }


def answer_from_tool(response: LLMResponse, name: str) -> LLMResponse:
    """``response`` with the call to the answer tool ``name`` read as the answer: its input,
    as JSON (what the model wrote, verbatim when it was not an object), is the content, and
    the call leaves the tool calls. Text the model wrote beside it is not the answer. The
    stop is ``"stop"`` when the answer was the only call (the API says ``tool_use``)."""
    answer = next((c for c in response.tool_calls if c.name == name), None)
    if answer is None:
        return response
    rest = tuple(c for c in response.tool_calls if c is not answer)
    args = answer.args
    raw = args.get(UNPARSED_ARGUMENTS)
    content = raw if len(args) == 1 and isinstance(raw, str) else orjson.dumps(args).decode()
    stop = response.stop_reason
    if stop == "tool_use" and not rest:
        stop = "stop"
    return response.model_copy(update={"content": content, "tool_calls": rest, "stop_reason": stop})


def ask_for_answer(body: dict[str, Any], request: LLMRequest, answer: dict[str, Any]) -> None:
    """Add the answer tool to ``body`` and make the model call it: that one alone, or, beside
    the agent's tools, some tool (the answer ends the turn; another call is a step)."""
    if any(t["name"] == answer["name"] for t in body["tools"]):
        raise ProviderRequestError(
            f"anthropic: the output schema's answer tool is named {answer['name']!r}, like a "
            "tool of the agent; rename the tool or the output model"
        )
    if request.tool_choice not in (None, "required"):
        raise ProviderRequestError(
            f"anthropic: tool_choice={request.tool_choice!r} cannot be sent with a native output "
            "schema (the answer is a forced tool call); drop tool_choice, or use "
            "output_schema(..., strategy='instruct')"
        )
    body["tools"].append(answer)
    forced = {"type": "tool", "name": answer["name"]} if len(body["tools"]) == 1 else None
    body["tool_choice"] = forced or {"type": "any"}
