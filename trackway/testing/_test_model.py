"""``TestModel``: a provider that calls every tool it is offered, then answers.

For testing an agent's wiring without a model: are the tools registered, do their schemas
admit a valid call, do they run, does their result reach the answer? Like pydantic-ai's
``TestModel``. Turn by turn, from the request alone (so a follow-up or a replay behaves the
same): when nothing has been called since the person last spoke, it calls each offered tool
once, with arguments generated from the tool's JSON Schema (``_schema_values``); once the
results are in, it answers ``final_text`` — by default a JSON object of what each tool
returned.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

import jsonschema

from trackway.agent import (
    LLMRequest,
    LLMResponse,
    Message,
    ProviderRequestError,
    StreamDelta,
    ToolCall,
    ToolSpec,
    is_said_by_person,
)

from ._schema_values import Unsatisfiable, value_for

__all__ = ["TestModel"]


class TestModel:
    """A provider (the interface of ``mock(...)``) that calls every offered tool once with
    generated arguments, then answers.

    ``call_tools``: ``"all"`` (every tool the request offers) or the names of the tools to
    call. ``final_text``: the answer once the tools have run; ``None`` answers a JSON object
    ``{"tool name": "what it returned", ...}`` (``"no tools were called"`` without tools).
    ``model``: the model name the provider gives (``None``: name it in ``Agent.create(model=)``
    or keep the one of the agent under ``agent.override``). ``requests`` keeps every request
    it was handed; ``calls`` every tool call it made.

    A tool whose schema admits no generated value (a ``pattern`` no simple string matches,
    ``not``, contradictory bounds) fails the call with :class:`ProviderRequestError` naming
    the tool and the schema path; give that tool's calls a script with ``mock(...)`` instead.
    """

    __test__ = False  # a provider, not a test class for pytest to collect

    def __init__(
        self,
        *,
        call_tools: Literal["all"] | Sequence[str] = "all",
        final_text: str | None = None,
        model: str | None = None,
        name: str = "test-model",
    ) -> None:
        if isinstance(call_tools, str) and call_tools != "all":
            raise TypeError(
                f"TestModel(call_tools={call_tools!r}): pass 'all' or a list of tool names, "
                f"e.g. [{call_tools!r}]"
            )
        self.call_tools = call_tools
        self.final_text = final_text
        self.model = model
        self.name = name
        self.requests: list[LLMRequest] = []
        self.calls: list[ToolCall] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        turn = _this_turn(request.messages)
        if any(m.role == "tool" for m in turn):
            return self._answer(turn)
        offered = [t for t in request.tools or () if self._chosen(t.name)]
        if not offered or request.tool_choice == "none":
            return self._answer(turn)
        calls = tuple(
            ToolCall(id=f"test_{len(self.requests)}_{i}", name=spec.name, args=_arguments(spec))
            for i, spec in enumerate(offered)
        )
        self.calls.extend(calls)
        return LLMResponse(tool_calls=calls, stop_reason="tool_use", model=self.model)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamDelta | LLMResponse]:
        response = await self.complete(request)
        if response.content:
            yield StreamDelta(text=response.content)
        yield response

    def _chosen(self, name: str) -> bool:
        return self.call_tools == "all" or name in self.call_tools

    def _answer(self, turn: Sequence[Message]) -> LLMResponse:
        text = self.final_text
        if text is None:
            results = {m.name or m.tool_call_id or "?": m.content for m in turn if m.role == "tool"}
            text = json.dumps(results, ensure_ascii=False) if results else "no tools were called"
        return LLMResponse(content=text, stop_reason="stop", model=self.model)


def _this_turn(messages: Sequence[Message]) -> Sequence[Message]:
    """The messages since the person last spoke (trackway's own user messages — a wrap-up
    request, an output correction — are part of the turn, not the start of a new one)."""
    for i in range(len(messages) - 1, -1, -1):
        if is_said_by_person(messages[i]):
            return messages[i + 1 :]
    return messages


def _arguments(spec: ToolSpec) -> dict[str, Any]:
    try:
        args = value_for(spec.input_schema)
    except Unsatisfiable as exc:
        raise ProviderRequestError(
            f"TestModel cannot call tool {spec.name!r}: its argument schema at {exc}; "
            f"leave it out with TestModel(call_tools=[...]) or script its call with mock(...)"
        ) from exc
    if not isinstance(args, dict):
        raise ProviderRequestError(
            f"TestModel cannot call tool {spec.name!r}: its argument schema is not an object "
            f"(it generated {args!r}); a tool takes a JSON object of arguments"
        )
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(spec.input_schema).iter_errors(args)
    )
    if error is not None:
        where = "$" + "".join(f"[{p!r}]" for p in error.absolute_path)
        raise ProviderRequestError(
            f"TestModel cannot call tool {spec.name!r}: the arguments it generated fail the "
            f"schema at {where} ({error.message}); script its call with mock(...) instead"
        )
    return args
