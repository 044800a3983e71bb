"""The message doors: walking the links over the person's message (``input``) or the answer
(``output``), what a link is handed there, and what a denial leaves in the record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from trackway.engine import Scope, thaw
from trackway.tools import Identity
from trackway.tools.define._gate import UNCHANGED, GateDecision

from ..context._config import CURRENT_SCOPE
from ..context._config import emit as _emit
from ..messages._errors import (
    AnswerDeniedError,
    InputRefusedError,
    MessageDeniedError,
    MiddlewareError,
)
from ._ledger import decision_row, record_decisions
from ._links import Middleware, decide, decide_now

__all__ = [
    "DENIED_KEY",
    "MessageContext",
    "Passed",
    "denied_error",
    "message_context",
    "refuse",
    "walk_message",
    "walk_message_now",
]

DENIED_KEY = "message_denied"
"""The state key a denial writes: ``door``, ``middleware``, ``reason``, ``iteration``."""

MessageDoor = Literal["input", "output"]


@dataclass(frozen=True)
class MessageContext:
    """What a link at a message door is handed beside the message: who the run is for
    (``identity``, ``session_id``), which run, agent and door, and the model call's
    iteration (``1`` at the input door)."""

    door: MessageDoor
    run_id: str
    agent: str
    iteration: int
    identity: Identity | None = None
    session_id: str | None = None


def message_context(scope: Scope, agent: str, door: MessageDoor, iteration: int) -> MessageContext:
    """The context of the links at ``door`` in the run ``scope`` belongs to."""
    identity = scope.get("identity")
    return MessageContext(
        door=door,
        run_id=scope.run_id,
        agent=agent,
        iteration=iteration,
        identity=None if identity is None else Identity.model_validate(thaw(identity)),
        session_id=scope.get("session_id"),
    )


class Passed(NamedTuple):
    """What came out of a door: the text that passes on, the rows of every decision, the
    denial (``None``: the text passes) and the link that denied, and each rewrite as
    ``(link, text after it)`` in the order made."""

    text: str
    rows: list[dict[str, Any]]
    denied: GateDecision | None
    by: str
    rewrites: list[tuple[str, str]]


class _Walk:
    """One walk of a door's links over a message: what passed so far, and the rows."""

    __slots__ = ("by", "ctx", "current", "denied", "door", "rewrites", "role", "rows")

    def __init__(self, door: MessageDoor, text: str, ctx: MessageContext) -> None:
        self.door, self.ctx, self.current = door, ctx, text
        self.role = "user" if door == "input" else "assistant"
        self.rows: list[dict[str, Any]] = []
        self.rewrites: list[tuple[str, str]] = []
        self.denied: GateDecision | None = None
        self.by = ""

    def message(self) -> dict[str, Any]:
        """What the next link is handed: the message as the links before it left it."""
        return {"role": self.role, "content": self.current, "door": self.door}

    def took(self, link: Middleware, decision: GateDecision) -> bool:
        """Take ``link``'s decision; whether the walk goes on."""
        changed = False
        if decision.kind == "allow" and decision.value is not UNCHANGED:
            value = _text(link, self.door, decision.value)
            changed = value != self.current
            if changed:
                self.current = value
                self.rewrites.append((link.name, value))
        door, iteration = self.door, self.ctx.iteration
        self.rows.append(decision_row(link.name, door, iteration, decision, changed=changed))
        if decision.kind == "deny":
            self.denied, self.by = decision, link.name
            return False
        return True

    def passed(self, scope: Scope) -> Passed:
        """The rows on the ledger (each announced), and what came out of the door."""
        record_decisions(scope, self.rows, plain=True)  # str texts: plain JSON
        return Passed(self.current, self.rows, self.denied, self.by, self.rewrites)


async def walk_message(
    scope: Scope,
    links: Sequence[Middleware],
    door: MessageDoor,
    text: str,
    ctx: MessageContext,
) -> Passed:
    """Walk ``links`` in order over ``text``: each sees the message as the links before it
    left it (``{"role", "content", "door"}``); a rewriting ``allow(new_text, reason)``
    hands the next link the new text, a ``deny(reason)`` stops the walk. The rows are
    appended to the ledger; each link may call ``agent.emit`` while it decides."""
    walk = _Walk(door, text, ctx)
    token = CURRENT_SCOPE.set(scope)
    try:
        for link in links:
            if not walk.took(link, await decide(link, door, walk.message(), ctx)):
                break
    finally:
        CURRENT_SCOPE.reset(token)
    return walk.passed(scope)


def walk_message_now(
    scope: Scope,
    links: Sequence[Middleware],
    door: MessageDoor,
    text: str,
    ctx: MessageContext,
) -> Passed:
    """:func:`walk_message` over links none of which is async: no coroutine, no await."""
    walk = _Walk(door, text, ctx)
    token = CURRENT_SCOPE.set(scope)
    try:
        for link in links:
            if not walk.took(link, decide_now(link, door, walk.message(), ctx)):
                break
    finally:
        CURRENT_SCOPE.reset(token)
    return walk.passed(scope)


def _text(link: Middleware, door: MessageDoor, value: Any) -> str:
    """A rewritten message: text, and at the input door text with something to answer."""
    what = "message" if door == "input" else "answer"
    if not isinstance(value, str):
        raise MiddlewareError(
            f"middleware {link.name!r} at the {door} door rewrote the {what} to {value!r}; "
            f"a {what} is rewritten to text: return allow(new_text, reason)"
        )
    if door == "input" and not value.strip():
        raise MiddlewareError(
            f"middleware {link.name!r} at the input door rewrote the message to empty text, "
            "which leaves the model nothing to answer: return deny(reason) to refuse it"
        )
    return value


def refuse(scope: Scope, passed: Passed, door: MessageDoor, iteration: int) -> None:
    """A link denied: say so in the record (``message_denied`` and an
    ``agent.message_denied`` event) and end the run here (``scope.break_``)."""
    assert passed.denied is not None
    denied = {
        "door": door,
        "middleware": passed.by,
        "reason": passed.denied.text,
        "iteration": iteration,
    }
    scope[DENIED_KEY] = denied
    _emit(scope, "agent.message_denied", denied)
    scope.break_()


def denied_error(denied: Any, run_id: str) -> MessageDeniedError:
    """The error ``run`` raises for a run a link denied (``denied``: its ``message_denied``)."""
    row = thaw(denied)
    door, name, reason = row["door"], row["middleware"], row["reason"]
    if door == "input":
        return InputRefusedError(
            f"middleware {name!r} refused the message: {reason} (no model was called, and "
            "no conversation was admitted to continue)",
            door=door,
            middleware=name,
            reason=reason,
            run_id=run_id,
        )
    return AnswerDeniedError(
        f"middleware {name!r} denied the answer: {reason} (the answer is withheld; the "
        "record keeps the model's answer)",
        door=door,
        middleware=name,
        reason=reason,
        run_id=run_id,
    )
