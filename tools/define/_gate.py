"""Decisions: what a gate or a middleware link says about one call, message or result.

``define_tool(..., gate=fn)`` guards one tool; ``AgentBuilder.gate(fn)`` every call. A gate
``fn(call, ctx)`` gets the call (``id``, ``name``, ``args``) and its :class:`ToolContext`,
may be ``def`` or ``async def``, and returns ``allow()`` (or ``"allow"``), ``deny(reason)``
(the model reads a ``denied`` result with the reason) or ``ask(question)`` (the run pauses
for a person's ``"approve"`` or ``"decline"``, as a check-in).

Middleware links (``AgentBuilder.tool_middleware``, ``act(...)``) take the same decisions
and more: ``allow(new_value, reason, from_=...)`` rewrites what passes (arguments, a
message, the answer), and after a tool ran ``withhold(reason)`` keeps its result from the
model and ``scrub(fn)`` rewrites the words the model reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._errors import ToolDefinitionError

__all__ = [
    "UNCHANGED",
    "GateDecision",
    "allow",
    "ask",
    "deny",
    "gate_decision",
    "scrub",
    "withhold",
]


class _Unchanged:
    """What ``allow()`` passes on when it rewrites nothing."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED: Any = _Unchanged()
"""``allow()`` without a new value: what was given passes on as it was."""


@dataclass(frozen=True)
class GateDecision:
    """What a gate or a middleware link decided about one call, message or result."""

    kind: Literal["allow", "deny", "ask", "withhold", "scrub"]
    text: str = ""
    """The reason (``deny``, ``withhold``, a rewriting ``allow``) or the question (``ask``)."""
    value: Any = UNCHANGED
    """``allow(value)``: the rewritten arguments, message or answer."""
    source: Mapping[str, str] = field(default_factory=dict)
    """``allow(..., from_={"arg": "person"})``: where each rewritten argument came from."""
    fn: Callable[[str], str] | None = None
    """``scrub(fn)``: what the model reads instead of the result's words."""

    @property
    def rewrites(self) -> bool:
        """Whether this decision changes what passes (a new value, or scrubbed words)."""
        return self.value is not UNCHANGED or self.fn is not None


def allow(
    value: Any = UNCHANGED, reason: str | None = None, *, from_: Mapping[str, str] | None = None
) -> GateDecision:
    """What was given passes on; with ``value``, rewritten to it (a middleware link only).

    ``reason`` says why it was rewritten (recorded). ``from_``: where each rewritten tool
    argument came from (``{"window": "person"}``); a rewritten argument that does not say
    reads as assumed in the answer's limits."""
    if reason is not None and not isinstance(reason, str):
        raise ToolDefinitionError(f"allow(value, reason): reason must be a str, not {reason!r}")
    source: dict[str, str] = {}
    if from_ is not None:
        if value is UNCHANGED or not isinstance(value, Mapping):
            raise ToolDefinitionError(
                "allow(args, reason, from_=...): from_ says where rewritten tool arguments "
                "came from, so give the new arguments as a dict first"
            )
        for arg, where in from_.items():
            if not isinstance(arg, str) or not isinstance(where, str) or not where.strip():
                raise ToolDefinitionError(
                    f"allow(..., from_={dict(from_)!r}): map each argument name to where its "
                    "value came from, e.g. from_={'window': 'person'}"
                )
            if arg not in value:
                raise ToolDefinitionError(
                    f"allow(..., from_=...): {arg!r} is not among the new arguments "
                    f"{sorted(value)}; name only arguments you rewrote"
                )
            source[arg] = where
    return GateDecision("allow", reason or "", value, source)


def deny(reason: str) -> GateDecision:
    """The call (or message) does not pass; the model reads ``reason`` in a ``denied``
    result."""
    if not isinstance(reason, str) or not reason.strip():
        raise ToolDefinitionError("deny(reason): say why, in a sentence the model can act on")
    return GateDecision("deny", reason)


def ask(question: str) -> GateDecision:
    """The run pauses with ``question``; a person approves or declines the call."""
    if not isinstance(question, str) or not question.strip():
        raise ToolDefinitionError("ask(question): give the question the person will read")
    return GateDecision("ask", question)


def withhold(reason: str) -> GateDecision:
    """After a tool ran: the model does not read its result, only that it was withheld and
    ``reason``."""
    if not isinstance(reason, str) or not reason.strip():
        raise ToolDefinitionError(
            "withhold(reason): say why the result is withheld, in a sentence the model can act on"
        )
    return GateDecision("withhold", reason)


def scrub(fn: Callable[[str], str], reason: str | None = None) -> GateDecision:
    """After a tool ran: the model reads ``fn(result)`` instead of the result's words (the
    words scrubbed away are never recorded)."""
    if not callable(fn):
        raise ToolDefinitionError(
            f"scrub(fn): give a function from the result's text to the text the model reads, "
            f"not {fn!r}"
        )
    if reason is not None and not isinstance(reason, str):
        raise ToolDefinitionError(f"scrub(fn, reason): reason must be a str, not {reason!r}")
    return GateDecision("scrub", reason or "", fn=fn)


def gate_decision(value: Any, where: str) -> GateDecision:
    """A gate's return value as a decision; anything else is refused, naming the gate."""
    if isinstance(value, GateDecision) and value.kind in ("allow", "deny", "ask"):
        if value.rewrites:
            raise ToolDefinitionError(
                f"{where} returned allow(...) with new arguments; a gate decides, it does not "
                "rewrite: rewrite arguments in a .tool_middleware(fn) link instead"
            )
        return value
    if value == "allow" or value is True:
        return GateDecision("allow")
    raise ToolDefinitionError(
        f"{where} returned {value!r}; return allow(), deny(reason) or ask(question) "
        "(from trackway.tools)"
    )
