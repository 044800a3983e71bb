"""Reading an Anthropic Messages answer: the streamed events assembled into one
:class:`LLMResponse` (text, tool calls, thinking blocks with their signatures, usage, stop
reason), and the stop reasons and usage of a whole answer in the neutral vocabulary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ...messages._messages import LLMResponse, ThinkingBlock, ToolCall, Usage
from ...messages._payload import (
    MalformedPayload,
    optional_int,
    optional_object,
    optional_str,
    parse_arguments,
    required_object,
    required_str,
    shared_id_arguments,
)
from .._thinking import anthropic_thinking

__all__ = ["AnthropicStream", "anthropic_stop_reason", "anthropic_usage"]


_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


def anthropic_stop_reason(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return _STOP_REASONS.get(value, value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Block:
    """One content block being assembled from stream events."""

    def __init__(self, kind: str, call_id: str = "", name: str = "") -> None:
        self.kind = kind
        self.id = call_id
        self.name = name
        self.pieces: list[str] = []
        self.input: dict[str, Any] = {}
        self.signature: str | None = None
        self.data: str | None = None


def anthropic_usage(data: Any, usage: Usage | None = None) -> Usage | None:
    """``usage`` updated with what ``data`` reports (stream events report in parts)."""
    if not isinstance(data, Mapping):
        return usage
    reported = {
        "input_tokens": _int(data.get("input_tokens")),
        "output_tokens": _int(data.get("output_tokens")),
        "cache_read_tokens": _int(data.get("cache_read_input_tokens")),
        "cache_write_tokens": _int(data.get("cache_creation_input_tokens")),
    }
    base = usage or Usage()
    return base.model_copy(update={k: v for k, v in reported.items() if v is not None})


class AnthropicStream:
    """A streamed message being assembled from its events.

    An event of the wrong shape (a ``delta`` or ``content_block`` that is not an object, a
    ``tool_use`` block without a name, text that is not a string, ...) raises
    :class:`MalformedPayload`.
    """

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.usage: Usage | None = None
        self.stop_reason: str | None = None
        self.model: str | None = None
        self.stopped = False

    def feed(self, event: str, data: dict[str, Any]) -> str:
        """Take one event in; the text it adds (maybe empty)."""
        kind = optional_str(data.get("type"), "type") or event
        if kind == "message_start":
            message = optional_object(data.get("message"), "message")
            if message is not None:
                if isinstance(message.get("model"), str):
                    self.model = message["model"]
                usage = optional_object(message.get("usage"), "message.usage")
                self.usage = anthropic_usage(usage, self.usage)
        elif kind == "content_block_start":
            return self._start(data)
        elif kind == "content_block_delta":
            return self._delta(data)
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "message_delta":
            delta = optional_object(data.get("delta"), "delta")
            if delta is not None:
                self.stop_reason = (
                    anthropic_stop_reason(delta.get("stop_reason")) or self.stop_reason
                )
            self.usage = anthropic_usage(optional_object(data.get("usage"), "usage"), self.usage)
        return ""

    def _delta(self, data: dict[str, Any]) -> str:
        delta = required_object(data.get("delta"), "delta")
        delta_type = optional_str(delta.get("type"), "delta.type")
        if delta_type == "text_delta":
            piece = required_str(delta.get("text"), "delta.text")
        elif delta_type == "input_json_delta":
            piece = required_str(delta.get("partial_json"), "delta.partial_json")
        elif delta_type in ("thinking_delta", "signature_delta"):
            field = "thinking" if delta_type == "thinking_delta" else "signature"
            piece = required_str(delta.get(field), f"delta.{field}")
            block = self.blocks.setdefault(_index(data, len(self.blocks)), _Block("thinking"))
            if field == "thinking":
                block.pieces.append(piece)
            else:
                block.signature = (block.signature or "") + piece
            return ""
        else:
            return ""  # citations: not carried
        json_delta = delta_type == "input_json_delta"
        target = self.blocks.setdefault(
            _index(data, len(self.blocks)), _Block("tool_use" if json_delta else "text")
        )
        target.pieces.append(piece)
        return "" if json_delta else piece

    def _start(self, data: dict[str, Any]) -> str:
        block = required_object(data.get("content_block"), "content_block")
        kind = optional_str(block.get("type"), "content_block.type") or ""
        call_id = optional_str(block.get("id"), "content_block.id") or ""
        name = optional_str(block.get("name"), "content_block.name") or ""
        if kind == "tool_use" and not name:
            raise MalformedPayload("content_block.name is missing: a tool_use block needs one")
        started = _Block(kind, call_id, name)
        if isinstance(block.get("input"), dict):
            started.input = block["input"]
        thought = anthropic_thinking(block, "content_block")
        if thought is not None:
            started.pieces.extend([thought.text] if thought.text else [])
            started.signature, started.data = thought.signature, thought.data
        self.blocks[_index(data, len(self.blocks))] = started
        text = optional_str(block.get("text"), "content_block.text") if kind == "text" else None
        if text:
            started.pieces.append(text)
            return text
        return ""

    def finished(self, saw_done: bool) -> bool:
        """A stream is whole once it sent ``message_stop`` or said why the message stopped."""
        return self.stopped or self.stop_reason is not None

    def response(self) -> LLMResponse:
        text: list[str] = []
        calls: list[ToolCall] = []
        thinking: list[ThinkingBlock] = []
        ids = Counter(b.id for b in self.blocks.values() if b.kind == "tool_use" and b.id)
        for index, block in sorted(self.blocks.items()):
            if block.kind == "text":
                text.extend(block.pieces)
            elif block.kind == "thinking":
                thought = "".join(block.pieces)
                thinking.append(
                    ThinkingBlock(kind="thinking", text=thought, signature=block.signature)
                )
            elif block.kind == "redacted_thinking":
                thinking.append(ThinkingBlock(kind="redacted_thinking", data=block.data or ""))
            elif block.kind == "tool_use":
                if not block.name:
                    raise MalformedPayload(
                        f"tool_use block {index} came without a name (no content_block_start)"
                    )
                raw = "".join(block.pieces)
                if ids[block.id] > 1:  # a piece of a split call: joined by the agent
                    args = shared_id_arguments(raw) if raw else block.input
                else:
                    args = parse_arguments(raw) if raw else block.input
                calls.append(ToolCall(id=block.id or f"call_{index}", name=block.name, args=args))
        return LLMResponse(
            content="".join(text),
            tool_calls=tuple(calls),
            usage=self.usage,
            stop_reason=self.stop_reason,
            model=self.model,
            thinking=tuple(thinking) or None,
        )


def _index(data: Mapping[str, Any], default: int) -> int:
    index = optional_int(data.get("index"), "index")
    return default if index is None else index
