"""A standing agent: one agent hosting many conversations over time, one per session.

``StandingAgent(agent)`` keeps each session's conversation and continues it turn after turn
(``send``); turns of one session run one at a time, turns of different sessions at once.
A session ends when the host says so (``close``), when it idled past ``idle_seconds``
(closed on a lazy sweep: no timer, no task), or at ``shutdown()``; each end fires the
``on_close`` hooks and closes the agent's tool sessions for it. No HTTP here: the served app
calls these methods.
"""

from __future__ import annotations

import inspect
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol, Self

import anyio
import anyio.abc

from trackway.agent import (
    Agent,
    Conversation,
    Paused,
    PendingQuestionError,
    RunInFlightError,
    Turn,
)
from trackway.engine import run_sync
from trackway.tools import Identity

from ._auth import ServeError, same_caller

__all__ = [
    "CloseHook",
    "SessionClosedError",
    "SessionLifecycle",
    "SessionOwnerError",
    "StandingAgent",
]

_log = logging.getLogger("trackway")

CloseHook = Callable[[str, str], "Awaitable[Any] | Any"]
"""``on_close(session_id, reason)``: sync or async; ``reason`` is what ``close`` was given,
``"idle"`` or ``"shutdown"``."""


class SessionLifecycle(Protocol):
    """Where a standing agent keeps conversations beyond its process: ``hydrate`` a session
    it does not hold, as ``(owner, conversation)`` (None: a new session), and ``persist``
    each turn's conversation with the session's owner (the identity of its first turn). The
    owner travels with it so a session taken up again after a restart is still refused to
    every other identity."""

    def hydrate(self, session_id: str) -> tuple[Identity | None, Conversation] | None: ...

    def persist(
        self, session_id: str, owner: Identity | None, conversation: Conversation
    ) -> None: ...


class SessionOwnerError(ServeError):
    """A session asked for by another identity than the one it belongs to (the tenant and
    principal of its first turn): nothing of it is read, answered or closed."""


class SessionClosedError(ServeError):
    """A turn asked of a standing agent that is shutting down (or shut down)."""


@dataclass
class _Session:
    session_id: str
    owner: Identity | None
    conversation: Conversation | None
    last_used: float
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    busy: int = 0
    pending: Paused | None = None
    turns: int = 0
    ended: bool = False  # closed while a turn waited on the lock


class StandingAgent:
    """Hosts ``agent`` for many sessions over time (the seed's standing agent).

    ``sessions``: a :class:`SessionLifecycle` keeping conversations past this process
    (none: in memory; with a store on the agent every turn is a stored run either way).
    ``idle_seconds``: a session untouched this long is closed (reason ``"idle"``) by the
    next ``send``, ``resume`` or :meth:`sweep`; never by a timer. ``max_sessions``: past this
    many open, the least recently used idle ones close (reason ``"evicted"``). ``on_close``: hooks
    called with ``(session_id, reason)`` as each session ends; one that raises is logged and
    kept on :attr:`hook_failures`, and the others still run. ``shutdown_on``: signals (e.g.
    ``signal.SIGTERM``) that shut it down while it is entered with ``async with``; none by
    default (a library does not take a process's signals unasked).
    """

    def __init__(
        self,
        agent: Agent,
        *,
        sessions: SessionLifecycle | None = None,
        idle_seconds: float | None = None,
        max_sessions: int | None = None,
        on_close: CloseHook | Iterable[CloseHook] = (),
        shutdown_on: Iterable[signal.Signals] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"StandingAgent(agent=...): an Agent, got {agent!r}")
        if idle_seconds is not None and (
            isinstance(idle_seconds, bool)
            or not isinstance(idle_seconds, (int, float))
            or idle_seconds <= 0
        ):
            raise ValueError(f"idle_seconds={idle_seconds!r}: use a positive number or None")
        if max_sessions is not None and (
            isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1
        ):
            raise ValueError(f"max_sessions={max_sessions!r}: use a whole number >= 1 or None")
        self.agent = agent
        self._max = max_sessions
        self._lifecycle = sessions
        self._idle = idle_seconds
        self._hooks: list[CloseHook] = [on_close] if callable(on_close) else list(on_close)
        self._signals = tuple(shutdown_on)
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._closing = False
        self._tool_closes: set[str] = set()  # deferred while another session's turn ran
        self._listener: anyio.abc.TaskGroup | None = None
        self._done: anyio.Event | None = None  # made in the event loop that waits on it
        self.hook_failures: list[tuple[str, str, BaseException]] = []
        """``(session_id, hook name, exception)`` for each ``on_close`` hook that raised."""
        self.closed: list[tuple[str, str]] = []
        """``(session_id, reason)`` of every session closed, in order."""

    # -- turns -------------------------------------------------------------------------------

    @property
    def session_ids(self) -> list[str]:
        """The sessions open now."""
        return list(self._sessions)

    def conversation(self, session_id: str) -> Conversation | None:
        """The conversation ``session_id`` continues next (None before its first answer)."""
        held = self._sessions.get(session_id)
        return None if held is None else held.conversation

    async def send(
        self,
        session_id: str,
        message: str,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """Run a turn in ``session_id``'s conversation: continued from its last answer, or a
        new conversation for a new session. Returns the answer, or :class:`Paused` when it
        waits for a person (answer with :meth:`resume`). Turns of one session wait for each
        other; a failed turn raises and leaves the session as it was before it."""
        session = await self._enter(session_id, identity)
        try:
            async with session.lock:
                self._refuse_ended(session)
                if session.pending is not None:
                    raise PendingQuestionError(
                        f"session {session_id!r} waits for an answer to "
                        f"{session.pending.question!r}: resume(session_id, answer) first"
                    )
                turn = await self.agent.turn(
                    message,
                    continue_from=session.conversation,
                    identity=session.owner,
                    session_id=session_id,
                    timeout=timeout,
                )
                return self._took(session, turn)
        finally:
            await self._leave(session)

    async def resume(
        self,
        session_id: str,
        answer: Any,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """Answer the question ``session_id``'s last turn waits on, and finish that turn."""
        session = await self._enter(session_id, identity, create=False)
        try:
            async with session.lock:
                self._refuse_ended(session)
                pending = session.pending
                if pending is None:
                    raise PendingQuestionError(
                        f"session {session_id!r} waits for no answer: send it a message"
                    )
                turn = await self.agent.resume_turn(
                    pending.checkpoint,
                    answer,
                    identity=session.owner,
                    session_id=session_id,
                    timeout=timeout,
                )
                session.pending = None
                return self._took(session, turn)
        finally:
            await self._leave(session)

    @staticmethod
    def _refuse_ended(session: _Session) -> None:
        if session.ended:
            raise SessionClosedError(
                f"session {session.session_id!r} was closed while this turn waited for the "
                "one before it: send again to start a new session"
            )

    def _took(self, session: _Session, turn: Turn) -> str | Paused:
        session.turns += 1
        if isinstance(turn.outcome, Paused):
            session.pending = turn.outcome
        elif turn.conversation is not None:
            session.conversation = turn.conversation
            if self._lifecycle is not None:
                self._lifecycle.persist(session.session_id, session.owner, turn.conversation)
        return turn.outcome

    async def _enter(
        self, session_id: str, identity: Identity | Mapping[str, Any] | None, create: bool = True
    ) -> _Session:
        if self._closing:
            raise SessionClosedError(
                f"this standing agent is shutting down: session {session_id!r} takes no turn"
            )
        if not isinstance(session_id, str) or not session_id:
            raise ValueError(f"session_id={session_id!r}: use a non-empty str")
        caller = None if identity is None else Identity.model_validate(identity)
        await self.sweep()
        session = self._sessions.get(session_id)
        if session is None:
            if not create:
                raise SessionOwnerError(f"no open session {session_id!r}")
            kept = None if self._lifecycle is None else self._lifecycle.hydrate(session_id)
            if kept is not None and not self._same(kept[0], caller):
                raise SessionOwnerError(
                    f"session {session_id!r} belongs to another identity: it is not "
                    "continued for this caller"
                )
            owner, conversation = (caller, None) if kept is None else kept
            session = _Session(session_id, owner, conversation, self._clock())
            self._sessions[session_id] = session
            await self._evict()
        elif not self._same(session.owner, caller):
            raise SessionOwnerError(
                f"session {session_id!r} belongs to another identity: it is not continued, "
                "answered or closed for this caller"
            )
        session.busy += 1
        session.last_used = self._clock()
        return session

    async def _leave(self, session: _Session) -> None:
        session.busy -= 1
        session.last_used = self._clock()
        await self._close_tool_sessions(())  # what waited for the agent to be idle

    @staticmethod
    def _same(owner: Identity | None, caller: Identity | None) -> bool:
        if owner is None or caller is None:
            return owner is None and caller is None
        return same_caller(owner, caller)

    # -- ends --------------------------------------------------------------------------------

    async def close(
        self,
        session_id: str,
        reason: str = "closed",
        *,
        identity: Identity | Mapping[str, Any] | None = None,
    ) -> bool:
        """End ``session_id`` (after its turn in flight, if any): the ``on_close`` hooks run
        and the agent's tool sessions for it close. False when no such session is open."""
        session = self._sessions.get(session_id)
        if session is None:
            return False
        caller = None if identity is None else Identity.model_validate(identity)
        if not self._same(session.owner, caller):
            raise SessionOwnerError(f"session {session_id!r} belongs to another identity")
        async with session.lock:
            if self._sessions.get(session_id) is not session:
                return False  # closed meanwhile
            del self._sessions[session_id]
            session.ended = True
        self.closed.append((session_id, reason))
        for hook in self._hooks:
            try:
                done = hook(session_id, reason)
                if inspect.isawaitable(done):
                    await done
            except Exception as exc:  # the other hooks and the tool sessions still close
                name = getattr(hook, "__qualname__", repr(hook))
                self.hook_failures.append((session_id, name, exc))
                _log.warning("on_close hook %s failed for session %r: %r", name, session_id, exc)
        await self._close_tool_sessions((session_id,))
        return True

    async def _close_tool_sessions(self, session_ids: Iterable[str]) -> None:
        """Close the agent's tool sessions of these sessions (and of those deferred): the
        agent refuses while any turn runs, so they wait for the next moment it is idle."""
        self._tool_closes.update(session_ids)
        for session_id in sorted(self._tool_closes):
            try:
                await self.agent.close_tool_sessions(session_id=session_id)
            except RunInFlightError:
                return  # another session's turn is running: the next turn's end retries
            self._tool_closes.discard(session_id)

    async def sweep(self) -> list[str]:
        """Close every session idle more than ``idle_seconds`` (reason ``"idle"``); the ids
        closed. Called by each ``send`` and ``resume``; call it yourself to sweep between."""
        if self._idle is None:
            return []
        now = self._clock()
        idle = [
            s.session_id
            for s in list(self._sessions.values())
            if s.busy == 0 and now - s.last_used > self._idle
        ]
        return [sid for sid in idle if await self.close(sid, "idle", identity=self._owner(sid))]

    async def _evict(self) -> None:
        """Past ``max_sessions`` open, close the coldest idle ones (reason ``"evicted"``)."""
        if self._max is None:
            return
        idle = sorted(
            (s for s in self._sessions.values() if s.busy == 0 and s.turns > 0),
            key=lambda s: s.last_used,
        )
        for cold in idle[: max(0, len(self._sessions) - self._max)]:
            await self.close(cold.session_id, "evicted", identity=cold.owner)

    def _owner(self, session_id: str) -> Identity | None:
        held = self._sessions.get(session_id)
        return None if held is None else held.owner

    async def shutdown(self, mode: Literal["flush"] = "flush") -> None:
        """Take no new turn, wait for the turns in flight, then close every session
        (reason ``"shutdown"``). Only ``"flush"`` exists: a turn is never cut short (cancel
        the caller's own scope for that). The agent itself stays usable."""
        if mode != "flush":
            raise ValueError(f"shutdown(mode={mode!r}): only 'flush' is supported")
        self._closing = True
        for session_id in list(self._sessions):
            await self.close(session_id, "shutdown", identity=self._owner(session_id))
        await self._close_tool_sessions(())
        if self._done is not None:
            self._done.set()
        if self._listener is not None:
            self._listener.cancel_scope.cancel()

    async def wait_closed(self) -> None:
        """Return once :meth:`shutdown` has run (by a call, a ``shutdown_on`` signal or the
        end of ``async with``): what a process serving until SIGTERM awaits."""
        if self._closing and not self._sessions:
            return
        if self._done is None:
            self._done = anyio.Event()
        await self._done.wait()

    def shutdown_sync(self, mode: Literal["flush"] = "flush") -> None:
        """Sync twin of :meth:`shutdown`."""
        run_sync(
            lambda: self.shutdown(mode),
            name="StandingAgent.shutdown_sync",
            twin="await standing.shutdown()",
        )

    def send_sync(
        self,
        session_id: str,
        message: str,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """Sync twin of :meth:`send`."""
        return run_sync(
            lambda: self.send(session_id, message, identity=identity, timeout=timeout),
            name="StandingAgent.send_sync",
            twin="await standing.send(...)",
        )

    def resume_sync(
        self,
        session_id: str,
        answer: Any,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """Sync twin of :meth:`resume`."""
        return run_sync(
            lambda: self.resume(session_id, answer, identity=identity, timeout=timeout),
            name="StandingAgent.resume_sync",
            twin="await standing.resume(...)",
        )

    def close_sync(
        self,
        session_id: str,
        reason: str = "closed",
        *,
        identity: Identity | Mapping[str, Any] | None = None,
    ) -> bool:
        """Sync twin of :meth:`close`."""
        return run_sync(
            lambda: self.close(session_id, reason, identity=identity),
            name="StandingAgent.close_sync",
            twin="await standing.close(...)",
        )

    # -- shutdown_on -------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._signals:
            self._listener = await anyio.create_task_group().__aenter__()
            self._listener.start_soon(self._wait_for_signal)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.shutdown()
        if self._listener is not None:
            listener, self._listener = self._listener, None
            listener.cancel_scope.cancel()
            await listener.__aexit__(None, None, None)

    async def _wait_for_signal(self) -> None:
        with anyio.open_signal_receiver(*self._signals) as received:
            async for signum in received:
                _log.info("standing agent: signal %s, shutting down", signum)
                await self.shutdown()
                return
