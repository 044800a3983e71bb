"""Tool sessions: something a tool holds across calls (a sandbox, a browser, a leased
connection), keyed so that one caller never gets another's, and closed when its scope ends.

A :class:`~trackway.tools.Tool` is one object shared by every run an agent serves, so a
session kept in its closure is shared too. :func:`tool_session_key` derives the key from the
facts of the call (never invented ones) and ``ctx.on_teardown(fn, scope=...)`` hands the
cleanup to the agent, which runs it when the scope ends: after the call (``"call"``), when
the run ends in any way but a pause (``"run"``: done, failed, timed out, cancelled by its
caller, let go by a worker), or when the host says the
session is over (``"session"``: ``agent.close_tool_sessions(session_id=...)``). Sessions
nobody closes idle out on a lazy sweep (no timers) and the coldest is evicted past a
bounded live count.
"""

from __future__ import annotations

import hashlib
import inspect
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from trackway.engine.run._release import Released

from ._errors import ToolError

if TYPE_CHECKING:
    from ._define import ToolContext

__all__ = [
    "SESSION_SCOPES",
    "SessionScope",
    "ToolSessionError",
    "ToolSessions",
    "key_hash",
    "tool_session_key",
]

SessionScope = Literal["session", "run", "call"]
SESSION_SCOPES: tuple[str, ...] = ("session", "run", "call")

Emit = Callable[[str, dict[str, Any]], None]
"""Where session events go: the running stage's commit, or the agent's listeners."""


class ToolSessionError(ToolError, ValueError):
    """A tool session was asked for wrongly: an unknown scope, or a scope whose facts the
    call does not have (the message names them and the fix)."""


def tool_session_key(ctx: ToolContext, scope: str) -> str | None:
    """The isolation key of a tool session in ``scope``, or ``None`` when the call lacks
    the facts that scope needs (refuse then; never widen or narrow the scope):

    - ``"session"``: ``t=<tenant|_>/p=<principal|_>/s=<session_id>`` (needs ``session_id``)
    - ``"run"``: ``t=<tenant|_>/p=<principal|_>/r=<run_id>`` (needs a run id)
    - ``"call"``: ``c=<call_id>`` (always available)

    A ``session_id`` alone never keys a session: it is caller data anyone can repeat, so
    the tenant and principal of the identity are in the key whenever they exist.
    """
    if scope not in SESSION_SCOPES:
        raise ToolSessionError(
            f"tool_session_key(ctx, {scope!r}): the scope is one of {', '.join(SESSION_SCOPES)}"
        )
    if scope == "call":
        return f"c={ctx.call_id}" if ctx.call_id else None
    identity = ctx.identity
    tenant = (identity.tenant if identity is not None else None) or "_"
    principal = (identity.principal if identity is not None else None) or "_"
    if scope == "session":
        return None if not ctx.session_id else f"t={tenant}/p={principal}/s={ctx.session_id}"
    return None if not ctx.run_id else f"t={tenant}/p={principal}/r={ctx.run_id}"


def run_end_reason(exc: BaseException) -> str:
    """The ``reason`` a run's sessions close with when the run ends by an exception rather
    than a result: ``run_released`` (a worker let it go, to be continued elsewhere),
    ``run_error`` (an error outside any stage), or ``run_cancelled`` (the caller cancelled
    it: a cancel scope, ``task.cancel()``, a stream left early, an interrupt)."""
    if isinstance(exc, Released):
        return "run_released"
    return "run_error" if isinstance(exc, Exception) else "run_cancelled"


def key_hash(key: str) -> str:
    """What events say instead of a key: the key composes tenant, principal and session id,
    and publishing it would put a user identifier into every exporter."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass
class _Live:
    key: str
    scope: str
    tool: str
    teardown: Callable[[], Any]
    run_id: str
    session_id: str | None
    last_used: float
    calls: int = 1
    call_id: str = ""


@dataclass
class ToolSessions:
    """The live tool sessions of one agent: registered by tools, closed when their scope
    ends. ``idle_seconds`` closes a session unused that long (checked lazily, at the next
    call); ``max_live`` evicts the least recently used past that many."""

    idle_seconds: float = 900.0
    max_live: int = 64
    clock: Callable[[], float] = time.monotonic
    _live: dict[str, _Live] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self._live)

    def keys(self) -> list[str]:
        """The live keys (for a test or an inspector; events carry only their hashes)."""
        return list(self._live)

    def register(
        self,
        ctx: ToolContext,
        fn: Callable[[], Any],
        scope: str,
        key: str | None,
        emit: Emit,
    ) -> None:
        """Register ``fn`` to close the session ``key``; the first registration holds the
        cleanup and each repeat marks the session used (so registering on every call is
        the intended shape)."""
        if scope not in SESSION_SCOPES:
            raise ToolSessionError(
                f"ctx.on_teardown(fn, scope={scope!r}): the scope is one of "
                f"{', '.join(SESSION_SCOPES)}"
            )
        if not callable(fn):
            raise ToolSessionError("ctx.on_teardown(fn, ...): fn must be a function")
        if key is None:
            key = tool_session_key(ctx, scope)
        if key is None:
            needs = "a session_id (pass session_id= to run)" if scope == "session" else "a run"
            raise ToolSessionError(
                f"{ctx.tool_name}: a {scope!r}-scoped session needs {needs}; this call has "
                "none, so there is nothing safe to key it on. Use scope='call', or pass the "
                "missing fact"
            )
        now = self.clock()
        live = self._live.get(key)
        event = {"key_hash": key_hash(key), "scope": scope, "tool": ctx.tool_name}
        if live is not None:
            live.last_used = now
            if live.call_id != ctx.call_id:
                live.calls += 1
                live.call_id = ctx.call_id
            emit("tools.session_reused", {**event, "calls": live.calls})
            return
        self._live[key] = _Live(
            key, scope, ctx.tool_name, fn, ctx.run_id, ctx.session_id, now, call_id=ctx.call_id
        )
        emit("tools.session_started", event)

    def due(self, *, call_id: str | None = None) -> list[tuple[str, str]]:
        """``(key, reason)`` for the sessions to close now: idle ones, the coldest past
        ``max_live``, and (with ``call_id``) the call-scoped ones of that call."""
        now = self.clock()
        out: list[tuple[str, str]] = []
        for key, live in self._live.items():
            if call_id is not None and live.scope == "call" and live.call_id == call_id:
                out.append((key, "call_end"))
            elif now - live.last_used > self.idle_seconds:
                out.append((key, "idle"))
        over = len(self._live) - len(out) - self.max_live
        if over > 0:
            chosen = {k for k, _ in out}
            coldest = sorted(
                (live for k, live in self._live.items() if k not in chosen),
                key=lambda live: live.last_used,
            )
            out.extend((live.key, "evicted") for live in coldest[:over])
        return out

    def of_run(self, run_id: str) -> list[str]:
        """The run- and call-scoped sessions a finished run leaves."""
        return [k for k, v in self._live.items() if v.scope != "session" and v.run_id == run_id]

    def of_session(self, session_id: str | None) -> list[str]:
        """The sessions of one caller's session (every session when ``None``)."""
        if session_id is None:
            return list(self._live)
        return [k for k, v in self._live.items() if v.session_id == session_id]

    async def close(self, keys: Iterable[str | tuple[str, str]], reason: str, emit: Emit) -> int:
        """Run the teardowns of ``keys`` (an awaitable result is awaited). A teardown that
        fails never raises into the run: ``tools.session_close_failed`` says so, with the
        error's class. Returns how many sessions were closed cleanly."""
        closed = 0
        for item in list(keys):
            key, why = item if isinstance(item, tuple) else (item, reason)
            live = self._live.pop(key, None)
            if live is None:
                continue
            event: dict[str, Any] = {
                "key_hash": key_hash(key),
                "scope": live.scope,
                "tool": live.tool,
                "reason": why,
                "calls": live.calls,
            }
            try:
                done = live.teardown()
                if inspect.isawaitable(done):
                    await done
            except Exception as exc:
                emit("tools.session_close_failed", {**event, "error_class": type(exc).__name__})
                continue
            closed += 1
            emit("tools.session_closed", event)
        return closed
