"""Request assembly: the one pure function from committed state to the model request.

``call-llm`` and ``served_at`` both use :func:`assemble`, so a request rebuilt from the log
is the request that was sent. Canonical bytes are built from per-message pieces (cached by
history position during a run), so a call costs O(new messages) of Python work plus one
C-speed pass to hash the bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from trackway.engine import thaw

from ._messages import LLMRequest, Message, ToolSpec, canonical_json, sha256

__all__ = ["Assembled", "MessageCache", "assemble", "receipt_for"]


class MessageCache:
    """Per-run memo of history entries as (Message, canonical bytes), by position."""

    __slots__ = ("bytes", "messages")

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.bytes: list[bytes] = []

    def extend_to(self, history: Sequence[Any]) -> None:
        for entry in history[len(self.messages) :] if len(history) > len(self.messages) else ():
            plain = thaw(entry)
            self.messages.append(Message.model_validate(plain))
            self.bytes.append(canonical_json(plain))


class Assembled(NamedTuple):
    request: LLMRequest
    canonical: bytes
    messages_bytes: bytes
    tools_bytes: bytes | None
    tool_bytes: list[tuple[str, bytes]]


def assemble(state: Mapping[str, Any], cache: MessageCache | None = None) -> Assembled:
    """The request for the next model call, from state alone (pure: no clock, no config)."""
    cache = cache if cache is not None else MessageCache()
    history = state["history"]
    cache.extend_to(history)
    n = len(history)
    messages = tuple(cache.messages[:n])
    messages_bytes = b"[" + b",".join(cache.bytes[:n]) + b"]"
    settings = thaw(state["settings"])
    system = state.get("system_prompt")
    tools_state = None if state.get("wrap_up_asked") else state.get("tools")
    tool_bytes: list[tuple[str, bytes]] = []
    tools: tuple[ToolSpec, ...] | None = None
    tools_bytes = None
    if tools_state:
        plain_tools = thaw(tools_state)
        tools = tuple(ToolSpec.model_validate(t) for t in plain_tools)
        tool_bytes = [(t["name"], canonical_json(t)) for t in plain_tools]
        tools_bytes = b"[" + b",".join(b for _, b in tool_bytes) + b"]"
    fields: dict[str, bytes] = {}
    if settings.get("max_tokens") is not None:
        fields["max_tokens"] = canonical_json(settings["max_tokens"])
    fields["messages"] = messages_bytes
    fields["model"] = canonical_json(settings["model"])
    if system is not None:
        fields["system"] = canonical_json(system)
    if settings.get("temperature") is not None:
        fields["temperature"] = canonical_json(settings["temperature"])
    if tools_bytes is not None:
        fields["tools"] = tools_bytes
    canonical = b"{" + b",".join(b'"' + k.encode() + b'":' + v for k, v in fields.items()) + b"}"
    request = LLMRequest.model_construct(
        model=settings["model"],
        system=system,
        messages=messages,
        tools=tools,
        temperature=settings.get("temperature"),
        max_tokens=settings.get("max_tokens"),
    )
    return Assembled(request, canonical, messages_bytes, tools_bytes, tool_bytes)


def receipt_for(
    k: int, assembled: Assembled, usage: Any, stop_reason: str | None
) -> dict[str, Any]:
    """What ``call-llm`` commits about call ``k``: hashes of what was sent, usage reported."""
    request = assembled.request
    return {
        "k": k,
        "request_hash": sha256(assembled.canonical),
        "system_hash": None if request.system is None else sha256(canonical_json(request.system)),
        "messages_hash": sha256(assembled.messages_bytes),
        "tools_hash": None if assembled.tools_bytes is None else sha256(assembled.tools_bytes),
        "tool_schema_hashes": {name: sha256(b) for name, b in assembled.tool_bytes},
        "model": request.model,
        "usage": usage,
        "stop_reason": stop_reason,
    }
