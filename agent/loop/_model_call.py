"""Asking the model, for the stages: the committed state as ``assemble`` and tool providers
read it (tracked reads), one call streamed or not (notes held back from the token stream
under ``.findings()``), and an answer judged against the output schema."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import aclosing
from typing import Any

from pydantic import BaseModel

from trackway.engine import Scope, thaw
from trackway.engine.run._scope import TrackedScope

from ..context._config import AgentConfig
from ..context._findings import AnswerHoldback
from ..context._state_view import PROVIDER_KEYS, REQUEST_KEYS, StateView
from ..messages._messages import LLMResponse, StreamDelta, ToolCall, Usage
from ..output._judged import judged
from ..providers._caching import CacheCall, decide_cache
from ..providers._provider import ProviderResponseError

__all__ = [
    "PROVIDER_KEYS",
    "REQUEST_KEYS",
    "StateView",
    "answer_record",
    "cache_decision",
    "output_error",
    "stream_model",
    "streams",
]


def cache_decision(cfg: AgentConfig, scope: TrackedScope) -> tuple[tuple[str, ...], str] | None:
    """Call ``k``'s breakpoints and what the ``system_prompt_cache_policy`` function said
    (None without one): the run's ``cache``, less ``"system"`` when it said ``"never"``."""
    if cfg.cache_policy is None:
        return None
    settings = scope["settings"]
    system = scope.get("system_prompt")
    call = CacheCall(
        k=len(scope.get("receipts", [])) + 1,
        iteration=scope["iteration"],
        model=settings["model"],
        wrap_up=bool(scope.get("wrap_up_asked")),
        system_prompt=None if system is None else str(system),
        messages=len(scope["history"]),
    )
    said = decide_cache(cfg.cache_policy, call)
    cache = settings.get("cache") or ()
    return tuple(b for b in cache if said == "always" or b != "system"), said


def streams(cfg: AgentConfig) -> bool:
    """Whether a call is streamed: the agent asks for it and the provider can."""
    return cfg.stream and getattr(cfg.provider, "stream", None) is not None


async def stream_model(cfg: AgentConfig, scope: TrackedScope, request: Any) -> LLMResponse:
    """The provider's answer to ``request``, streamed (:func:`streams`): the tokens are
    emitted as they come, notes held back from them under ``.findings()``. A call that
    is not streamed is ``await cfg.provider.complete(request)``."""
    final: LLMResponse | None = None
    stream: Any = getattr(cfg.provider, "stream", None)  # there is one: see streams()
    pieces = stream(request)
    held = AnswerHoldback() if cfg.findings else None  # notes never reach the stream
    # closed here if the run stops mid-stream; ``async with``, not an ``await`` in a
    # ``finally``, which the compiled build gets wrong (a handled cancellation is raised
    # again there: tests/agent/test_runtime.py, a tool cancelling its own call)
    async with aclosing(pieces):
        async for piece in pieces:
            if isinstance(piece, StreamDelta):
                text = piece.text if held is None or not piece.text else held.feed(piece.text)
                if text:
                    scope.emit("stream.token", {"text": text})
            else:
                final = piece
    if held is not None and (tail := held.finish()):
        scope.emit("stream.token", {"text": tail})
    if final is None:
        name = getattr(cfg.provider, "name", type(cfg.provider).__name__)
        raise ProviderResponseError(
            f"provider {name!r} ended a stream without its final response; the stream was "
            "cut short (the server or the connection dropped it): retry the call",
            quoted=(),
        )
    return final


def output_error(scope: Scope, model: type[BaseModel], content: str) -> str | None:
    """The schema's first issue with ``content`` as ``"loc: msg"`` (``None``: it matches),
    the verdict committed (``output_judged``)."""
    found = judged(scope, model, content)
    return None if found is None else found.error


def answer_record(response: LLMResponse) -> dict[str, Any]:
    """``response.model_dump(mode="json", exclude_none=True)``, what ``call-llm`` commits,
    built directly when every call's arguments are str, int, bool or None (a float or a
    nested value takes pydantic's JSON-mode dump, which writes NaN as null)."""
    if type(response) is not LLMResponse:
        return response.model_dump(mode="json", exclude_none=True)
    fields = response.__dict__
    calls = []
    for call in fields["tool_calls"]:
        args = call.__dict__["args"]
        if type(call) is not ToolCall or not _scalar_args(args):
            return response.model_dump(mode="json", exclude_none=True)
        calls.append({"id": call.id, "name": call.name, "args": dict(args)})
    out: dict[str, Any] = {"content": fields["content"], "tool_calls": calls}
    usage = fields["usage"]
    if usage is not None:
        if type(usage) is not Usage:
            return response.model_dump(mode="json", exclude_none=True)
        out["usage"] = {k: v for k, v in usage.__dict__.items() if v is not None}
    if fields["stop_reason"] is not None:
        out["stop_reason"] = fields["stop_reason"]
    if fields["model"] is not None:
        out["model"] = fields["model"]
    if fields["thinking"] is not None:
        out["thinking"] = [b.model_dump(mode="json", exclude_none=True) for b in fields["thinking"]]
    return out


def _scalar_args(args: dict[str, Any]) -> bool:
    for value in args.values():
        kind = type(value)
        if kind is not str and kind is not int and kind is not bool and value is not None:
            return False
    return True


def with_thinking(turn: dict[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    """``turn`` (an assistant history entry) with the reasoning ``response`` returned, so the
    next request sends it back (signed blocks must come back on a tool-use turn)."""
    thinking = response.get("thinking")
    if thinking:
        turn["thinking"] = thinking
    return turn


def carried_history(
    state: Mapping[str, Any], history: list[dict[str, Any]], *, redact: bool
) -> list[dict[str, Any]]:
    """``history`` with the final answer appended (with the reasoning that came with it), or,
    under ``redact``, with every turn's reasoning retired: a completed conversation needs none
    of it back, and reasoning left out of a request is never restored."""
    if "final_answer" in state:
        final: dict[str, Any] = {"role": "assistant", "content": state["final_answer"]}
        response = thaw(state["response"]) if "response" in state else None
        history.append(with_thinking(final, response) if isinstance(response, dict) else final)
    if redact:
        history = [{k: v for k, v in m.items() if k != "thinking"} for m in history]
    return without_retired(state, history)


def without_retired(
    state: Mapping[str, Any], history: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``history`` without the reasoning a context window retired in this run (the
    ``thinking_retired`` of its ``window`` rows): once a request left it out, no conversation
    carried on from the run (``checkpoint()``, ``err.checkpoint``) sends it again."""
    retired = {i for row in state.get("window", ()) for i in row.get("thinking_retired", ())}
    for i in retired:
        if i < len(history) and "thinking" in history[i]:
            history[i] = {k: v for k, v in history[i].items() if k != "thinking"}
    return history
