"""A middleware link: a name and the doors it stands at (``act(...)``), and what a link's
return value means at each door."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from trackway.tools.define._gate import GateDecision

from ..messages._errors import AgentBuildError, MiddlewareError, MiddlewareFailedError

__all__ = ["DOORS", "Door", "Middleware", "act", "decide", "decide_now", "is_async", "link_name"]

Door = Literal["input", "before_tool", "after_tool", "output"]

DOORS: dict[Door, tuple[str, ...]] = {
    "input": ("allow", "deny"),
    "before_tool": ("allow", "deny", "ask"),
    "after_tool": ("allow", "withhold", "scrub"),
    "output": ("allow", "deny"),
}
"""Each door and the decisions a link may return there (``None`` is ``allow()``)."""

_RETURNS = {
    "allow": "allow(...)",
    "deny": "deny(reason)",
    "ask": "ask(question)",
    "withhold": "withhold(reason)",
    "scrub": "scrub(fn)",
}


@dataclass(frozen=True)
class Middleware:
    """One named link and the doors it stands at: ``input`` (each new turn's message),
    ``before_tool`` (each call, after its arguments are checked), ``after_tool`` (each
    result, before the model reads it) and ``output`` (the final answer)."""

    name: str
    input: Callable[..., Any] | None = None
    before_tool: Callable[..., Any] | None = None
    after_tool: Callable[..., Any] | None = None
    output: Callable[..., Any] | None = None

    def at(self, door: Door) -> Callable[..., Any] | None:
        """The link's function at ``door``, or ``None`` when it does not stand there."""
        fn: Callable[..., Any] | None = getattr(self, door)
        return fn


def act(
    *,
    name: str | None = None,
    input: Callable[..., Any] | None = None,
    before_tool: Callable[..., Any] | None = None,
    after_tool: Callable[..., Any] | None = None,
    output: Callable[..., Any] | None = None,
) -> Middleware:
    """One middleware link at the doors given (``.middleware(act(output=rule))``). Each
    function may be ``def`` or ``async def`` and returns a decision from
    :mod:`trackway.tools` (``allow``, ``deny``, ``ask``, ``withhold``, ``scrub``) or
    ``None`` (``allow()``). ``name`` defaults to the first function's name; it is what the
    record says decided."""
    doors = {"input": input, "before_tool": before_tool, "after_tool": after_tool}
    doors["output"] = output
    given = {door: fn for door, fn in doors.items() if fn is not None}
    if not given:
        raise AgentBuildError(
            "act(...) was given no door: pass at least one of input=, before_tool=, "
            "after_tool= or output= (a function returning a decision)"
        )
    for door, fn in given.items():
        if not callable(fn):
            raise AgentBuildError(f"act({door}={fn!r}): give a function returning a decision")
    door, fn = next(iter(given.items()))
    chosen = name if name is not None else link_name(fn, door)
    if not isinstance(chosen, str) or not chosen.strip():
        raise AgentBuildError(f"act(name={name!r}): name the link with a non-empty str")
    return Middleware(chosen, input, before_tool, after_tool, output)


def link_name(fn: Callable[..., Any], door: str) -> str:
    """The name a link's function goes by in the record: its own, or (a lambda, a callable
    object) the door's."""
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else door


def is_async(link: Middleware, door: Door) -> bool:
    """Whether ``link``'s function at ``door`` must be awaited (an ``async def``, or an
    object whose ``__call__`` is one)."""
    fn = link.at(door)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


async def decide(link: Middleware, door: Door, *args: Any) -> GateDecision:
    """What ``link`` decides at ``door`` (awaited when it is async); a return value the door
    cannot take raises :class:`MiddlewareError`, naming the link and what it may return, and
    a link that raises, :class:`MiddlewareFailedError` naming it (its exception the
    cause)."""
    fn = link.at(door)
    assert fn is not None
    try:
        value = fn(*args)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        raise _failed(link, door, exc) from exc
    return _decision(link, door, value)


def decide_now(link: Middleware, door: Door, *args: Any) -> GateDecision:
    """:func:`decide` for a link that is not async (:func:`is_async`), without a coroutine
    (a door all of whose links are plain functions costs no await); one that returns an
    awaitable all the same is refused, naming the fix."""
    fn = link.at(door)
    assert fn is not None
    try:
        value = fn(*args)
    except Exception as exc:
        raise _failed(link, door, exc) from exc
    if inspect.isawaitable(value):
        close = getattr(value, "close", None)
        if callable(close):
            close()  # never awaited: said, not warned about
        raise MiddlewareError(
            f"middleware {link.name!r} at the {door} door returned an awaitable from a "
            "function that is not async def: declare it async def (it is then awaited)"
        )
    return _decision(link, door, value)


def _failed(link: Middleware, door: Door, exc: Exception) -> MiddlewareFailedError:
    said = str(exc)
    refuse = "withhold(reason)" if door == "after_tool" else "deny(reason)"
    return MiddlewareFailedError(
        f"middleware {link.name!r} at the {door} door raised {type(exc).__name__}: "
        f"{said}; a link decides by returning a decision: fix it, or catch what it "
        f"raises and return {refuse}",
        middleware=link.name,
        door=door,
        quoted=said,
    )


def _decision(link: Middleware, door: Door, value: Any) -> GateDecision:
    """``value`` as the decision of ``link`` at ``door``, or :class:`MiddlewareError`."""
    if value is None:
        return GateDecision("allow")
    allowed = DOORS[door]
    if isinstance(value, GateDecision) and value.kind in allowed:
        return value
    returns = ", ".join(_RETURNS[k] for k in allowed)
    raise MiddlewareError(
        f"middleware {link.name!r} at the {door} door returned {value!r}; return one of "
        f"{returns} (from trackway.tools) or None"
    )
