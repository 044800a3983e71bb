"""The provider-neutral request and response: what the agent sends and what comes back.

``LLMRequest.canonical_json()`` is the request's identity: sorted keys, UTF-8, no NaN, unset
fields left out. Its SHA-256 (``.hash``) is what receipts record and what ``served_at``
must reproduce.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from trackway.engine.core._values import exact_bytes

__all__ = [
    "LLMRequest",
    "LLMResponse",
    "Message",
    "StreamDelta",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "canonical_json",
    "is_said_by_person",
    "sha256",
]


def canonical_json(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, UTF-8, no NaN or infinity (refused). Copied to
    their exact size: a request keeps its messages' bytes for the run's life."""
    return exact_bytes(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def canonical_json(self) -> bytes:
        return canonical_json(self.model_dump(mode="json", exclude_none=True))

    @property
    def hash(self) -> str:
        """SHA-256 of :meth:`canonical_json`."""
        return sha256(self.canonical_json())


class ToolCall(_Frozen):
    """A call the model asked for: ``name`` with JSON ``args``; ``id`` pairs the result."""

    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ThinkingBlock(_Frozen):
    """Reasoning a model returned, normalised across vendors.

    ``kind`` is ``"thinking"`` (Anthropic, with its ``signature``), ``"redacted_thinking"``
    (Anthropic, encrypted ``data``) or ``"reasoning"`` (``reasoning_content`` from an
    OpenAI-compatible server, unsigned). Signed blocks are sent back byte-exact.
    """

    kind: Literal["thinking", "redacted_thinking", "reasoning"]
    text: str | None = None
    signature: str | None = None
    data: str | None = None


class Message(_Frozen):
    """One message of the conversation sent to the model."""

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] | None = None
    """On assistant messages that asked for tools."""
    tool_call_id: str | None = None
    """On tool messages: the call this is the result of."""
    name: str | None = None
    """On tool messages: the tool's name."""
    thinking: tuple[ThinkingBlock, ...] | None = None
    """On assistant messages: the reasoning the model returned with that turn (sent back on
    tool-use turns, as Anthropic requires for signed blocks)."""
    origin: Literal["library"] | None = None
    """``"library"`` on messages trackway wrote (the wrap-up prompt, an output-retry
    correction): kept in the record, never sent as such (see :func:`is_said_by_person`)."""


def is_said_by_person(message: Message | Mapping[str, Any]) -> bool:
    """Whether ``message`` (a :class:`Message` or a history entry) is a user message the
    person wrote, not one trackway wrote."""
    if isinstance(message, Message):
        return message.role == "user" and message.origin is None
    return message.get("role") == "user" and message.get("origin") is None


class ToolSpec(_Frozen):
    """A tool as offered to the model: name, description, JSON Schema of its arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]


class LLMRequest(_Frozen):
    """Everything a provider needs for one call, and nothing else.

    The sampling and tool options are the agent's ``settings`` (``Agent.create`` or
    ``configure()``); each is left out of the request, and so of its hash, when unset.
    ``tool_choice`` is sent only with ``tools``.
    """

    model: str
    system: str | None = None
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: str | None = None
    """``"auto"``, ``"required"``, ``"none"`` or the name of one tool the model must call."""
    seed: int | None = None
    top_p: float | None = None
    stop: tuple[str, ...] | None = None
    """Sequences that end the answer when the model writes them."""
    response_format: dict[str, Any] | None = None
    """The vendor's answer format, as its API spells it (e.g. ``{"type": "json_object"}``)."""
    extra_body: dict[str, Any] | None = None
    """Vendor options sent as top-level body fields as given (an escape hatch)."""
    thinking_budget: int | str | None = None
    """Reasoning asked for: tokens (Anthropic ``budget_tokens``) or an effort word
    (``"low"``, ``"medium"``, ``"high"``: OpenAI ``reasoning_effort``); each vendor maps the
    other form (``agent/providers/_thinking.py``)."""
    cache: tuple[str, ...] | None = None
    """The prompt-cache breakpoints the call asks for (``"tools"``, ``"system"``,
    ``"messages"``); ``None`` when caching is not configured."""


class Usage(_Frozen):
    """Token counts as the provider reported them (``None`` when it did not)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None


class LLMResponse(_Frozen):
    """What the model answered: text, tool calls, usage and why it stopped."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    stop_reason: str | None = None
    model: str | None = None
    thinking: tuple[ThinkingBlock, ...] | None = None
    """The reasoning the model returned, in order (``None``: none)."""


class StreamDelta(_Frozen):
    """A piece of streamed text (providers that stream yield these, then the response)."""

    text: str
