"""Gates: a function that decides, per call, whether a tool runs, is refused, or waits for
a person. ``define_tool(..., gate=fn)`` guards one tool; ``AgentBuilder.gate(fn)`` every call.

``fn(call, ctx)`` gets the call (``id``, ``name``, ``args``) and its :class:`ToolContext`,
may be ``def`` or ``async def``, and returns ``allow()`` (or ``"allow"``), ``deny(reason)``
(the model reads a ``denied`` result with the reason) or ``ask(question)`` (the run pauses
for a person's ``"approve"`` or ``"decline"``, as a check-in).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ._errors import ToolDefinitionError

__all__ = ["GateDecision", "allow", "ask", "deny", "gate_decision"]


@dataclass(frozen=True)
class GateDecision:
    """What a gate decided about one call."""

    kind: Literal["allow", "deny", "ask"]
    text: str = ""


def allow() -> GateDecision:
    """The call runs."""
    return GateDecision("allow")


def deny(reason: str) -> GateDecision:
    """The call does not run; the model reads ``reason`` in a ``denied`` result."""
    if not isinstance(reason, str) or not reason.strip():
        raise ToolDefinitionError("deny(reason): say why, in a sentence the model can act on")
    return GateDecision("deny", reason)


def ask(question: str) -> GateDecision:
    """The run pauses with ``question``; a person approves or declines the call."""
    if not isinstance(question, str) or not question.strip():
        raise ToolDefinitionError("ask(question): give the question the person will read")
    return GateDecision("ask", question)


def gate_decision(value: Any, where: str) -> GateDecision:
    """A gate's return value as a decision; anything else is refused, naming the gate."""
    if isinstance(value, GateDecision):
        return value
    if value == "allow" or value is True:
        return GateDecision("allow")
    raise ToolDefinitionError(
        f"{where} returned {value!r}; return allow(), deny(reason) or ask(question) "
        "(from trackway.tools)"
    )
