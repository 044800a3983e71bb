"""Thinking on the wire: the budget each vendor is asked for, and the reasoning each returns,
normalised to :class:`ThinkingBlock` (the ``thinking_handler`` of the providers).

- Anthropic: ``thinking: {"type": "enabled", "budget_tokens": n}`` (``max_tokens`` raised
  above the budget, as the API requires); ``thinking`` blocks (text and ``signature``) and
  ``redacted_thinking`` blocks (``data``) are read, streamed or not, and sent back first in
  their assistant turn, byte-exact, so a tool-use turn keeps its signed reasoning.
- OpenAI and compatible servers: ``reasoning_effort`` (``"low"``, ``"medium"``,
  ``"high"``); ``reasoning_content`` (llama.cpp, vLLM, DeepSeek) is read as an unsigned
  ``"reasoning"`` block and never sent back (those servers refuse it in input messages).
"""

from __future__ import annotations

from typing import Any

from ..messages._messages import LLMResponse, ThinkingBlock
from ..messages._payload import MalformedPayload, optional_str
from ._provider import ProviderRequestError

__all__ = [
    "EFFORTS",
    "THINKING_HANDLERS",
    "anthropic_budget",
    "anthropic_thinking",
    "effort_of",
    "reasoning",
    "split_think_tags",
    "thinking_wire",
]

EFFORTS: dict[str, int] = {"low": 2048, "medium": 8192, "high": 24576}
"""Each effort word and the token budget it stands for on Anthropic."""

ANTHROPIC_MIN_BUDGET = 1024
"""The smallest ``budget_tokens`` the Messages API accepts."""


def anthropic_budget(budget: int | str) -> int:
    """``budget`` as Anthropic ``budget_tokens`` (an effort word is mapped by
    :data:`EFFORTS`); a budget under the API's minimum is refused rather than sent."""
    tokens = EFFORTS[budget] if isinstance(budget, str) else budget
    if tokens < ANTHROPIC_MIN_BUDGET:
        raise ProviderRequestError(
            f"anthropic: thinking_budget={budget!r} is below the Messages API's minimum of "
            f"{ANTHROPIC_MIN_BUDGET} tokens; use thinking(budget={ANTHROPIC_MIN_BUDGET}) or more"
        )
    return tokens


def effort_of(budget: int | str) -> str:
    """``budget`` as OpenAI ``reasoning_effort``: the word itself, or the smallest effort whose
    budget covers the tokens asked for (``"high"`` above all of them)."""
    if isinstance(budget, str):
        return budget
    for word, tokens in EFFORTS.items():
        if budget <= tokens:
            return word
    return "high"


def anthropic_thinking(block: dict[str, Any], where: str) -> ThinkingBlock | None:
    """A Messages API content block as a :class:`ThinkingBlock` (``None``: not reasoning).
    A thinking block whose text or signature is not a string is a :class:`MalformedPayload`."""
    kind = block.get("type")
    if kind == "thinking":
        return ThinkingBlock(
            kind="thinking",
            text=optional_str(block.get("thinking"), f"{where}.thinking") or "",
            signature=optional_str(block.get("signature"), f"{where}.signature"),
        )
    if kind == "redacted_thinking":
        data = optional_str(block.get("data"), f"{where}.data")
        if data is None:
            raise MalformedPayload(f"{where}.data is missing: a redacted_thinking block needs it")
        return ThinkingBlock(kind="redacted_thinking", data=data)
    return None


def reasoning(text: str | None) -> tuple[ThinkingBlock, ...] | None:
    """``reasoning_content`` as one unsigned block (``None`` when the server sent none)."""
    return (ThinkingBlock(kind="reasoning", text=text),) if text else None


THINKING_HANDLERS = ("reasoning_content", "think-tags")
"""How an OpenAI-compatible server's reasoning is read: its ``reasoning_content`` field, or
also a leading ``<think>...</think>`` in the answer (a server run without a reasoning
format, e.g. llama.cpp serving Qwen3 with ``--reasoning-format none``)."""


def split_think_tags(response: LLMResponse) -> LLMResponse:
    """``response`` with a leading ``<think>...</think>`` moved out of its text into a
    ``reasoning`` block (after any ``reasoning_content``); an unclosed tag is left as text,
    since the answer may have been cut inside it."""
    text = response.content.lstrip()
    end = text.find("</think>")
    if not text.startswith("<think>") or end < 0:
        return response
    thought = text[len("<think>") : end].strip()
    blocks = (*(response.thinking or ()), *(reasoning(thought) or ()))
    return response.model_copy(
        update={"content": text[end + len("</think>") :].lstrip(), "thinking": blocks or None}
    )


def thinking_wire(blocks: tuple[ThinkingBlock, ...] | None) -> list[dict[str, Any]]:
    """The Messages API blocks that send ``blocks`` back, in order; unsigned ``reasoning``
    (from another vendor) cannot be sent and is left out."""
    wire: list[dict[str, Any]] = []
    for block in blocks or ():
        if block.kind == "thinking":
            sent: dict[str, Any] = {"type": "thinking", "thinking": block.text or ""}
            if block.signature is not None:
                sent["signature"] = block.signature
            wire.append(sent)
        elif block.kind == "redacted_thinking":
            wire.append({"type": "redacted_thinking", "data": block.data or ""})
    return wire
