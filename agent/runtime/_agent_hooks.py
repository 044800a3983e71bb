"""An agent's runtime hooks: listeners, attached recorders, custom events, the tool
sessions its tools opened, and ``shutdown``. A part of :class:`~._agent.Agent`."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from trackway.engine import EmitEvent, TrackwayWarning, run_sync
from trackway.engine.run._recorder import check_recorder

from ..context._config import CURRENT_SCOPE, AgentConfig
from ..messages._errors import AgentNotRunError, RunInFlightError
from ._agent_record import LiveLog
from ._events import EventBus, Listener

__all__ = ["Hooks"]


class Hooks:
    """Listeners, recorders, events and tool sessions (mixed into ``Agent``)."""

    _cfg: AgentConfig
    _events: EventBus
    _live: LiveLog
    _attached: list[object]
    _running: bool

    def on(self, pattern: str, fn: Listener) -> Callable[[], None]:
        """Listen to agent events: an exact name, ``"domain.*"`` or ``"*"``."""
        return self._events.on(pattern, fn)

    def once(self, pattern: str, fn: Listener) -> Callable[[], None]:
        return self._events.once(pattern, fn)

    def off(self, pattern: str, fn: Listener | None = None) -> None:
        self._events.off(pattern, fn)

    def _refuse_if_busy(self) -> None:
        if self._running:
            raise RunInFlightError(
                f"agent {self._cfg.name!r} is already running a turn; await it first (or use "
                "another Agent instance for concurrent turns)"
            )

    def attach(self, recorder: object) -> Callable[[], None]:
        """Attach a recorder to every later run; returns the function that detaches it.
        Not idempotent: attaching the same recorder twice attaches it twice."""
        check_recorder(recorder)
        if self._running:
            raise RunInFlightError(
                f"agent {self._cfg.name!r} is running a turn; attach recorders between runs"
            )
        self._attached.append(recorder)

        def detach() -> None:
            if recorder in self._attached:
                self._attached.remove(recorder)

        return detach

    def emit(self, name: str, payload: Any = None) -> None:
        """Emit a custom event from inside a run (a tool, ``configure()``): it is recorded
        in the running stage's commit like any emit, and listeners hear it. Outside a run
        there is nothing to record it in: :class:`AgentNotRunError`."""
        scope = CURRENT_SCOPE.get()
        if scope is None or not self._running:
            raise AgentNotRunError(
                f"agent.emit({name!r}) records into a run: call it from a tool or from "
                "configure() while run(...) is in progress"
            )
        scope.emit(name, payload)

    def _heard(self, name: str, payload: dict[str, Any], run_id: str | None = None) -> None:
        """An event from outside any stage (a run has ended): listeners hear it; no run's
        log holds it. A listener that raises is reported as a warning: the run is over."""
        try:
            rid = self._live.run_id if run_id is None else run_id
            self._events.on_emit(EmitEvent(rid, "", -1, name, payload))
        except Exception as exc:
            warnings.warn(
                f"a listener of {name} raised {type(exc).__name__}: {exc}",
                TrackwayWarning,
                stacklevel=2,
            )

    async def close_tool_sessions(self, *, session_id: str | None = None) -> int:
        """Close the tool sessions of one caller's session (``session_id=``), or every live
        one; returns how many closed cleanly. Call it when your host knows a conversation
        is over: nothing in a request says so. A teardown that fails is reported as a
        ``tools.session_close_failed`` event, never raised."""
        self._refuse_if_busy()
        sessions = self._cfg.sessions
        return await sessions.close(sessions.of_session(session_id), "closed", self._heard)

    def close_tool_sessions_sync(self, *, session_id: str | None = None) -> int:
        """Sync twin of :meth:`close_tool_sessions`."""
        return run_sync(
            functools.partial(self.close_tool_sessions, session_id=session_id),
            name="Agent.close_tool_sessions_sync",
            twin="await agent.close_tool_sessions(...)",
        )

    def listener_count(self, pattern: str | None = None) -> int:
        """How many listeners are on ``pattern`` (on every pattern when ``None``)."""
        return self._events.listener_count(pattern)

    def remove_all_listeners(self) -> None:
        """Remove every listener (attached recorders stay: they detach themselves)."""
        self._events.remove_all()

    def shutdown(self) -> None:
        """Release what this agent holds between runs: every live tool session is closed,
        every attached recorder with a ``close()`` is closed, and all are detached (with
        live tool sessions, call it outside an event loop or ``await
        agent.close_tool_sessions()`` first). The agent stays usable; listeners stay.
        Refused while a run is in flight (:class:`RunInFlightError`)."""
        if self._running:
            raise RunInFlightError(
                f"agent {self._cfg.name!r} is running a turn; shut it down after the run ends"
            )
        if len(self._cfg.sessions):  # opened by this agent's tools: nobody else can close them
            self.close_tool_sessions_sync()
        attached, self._attached = self._attached, []
        for recorder in attached:
            close = getattr(recorder, "close", None)
            if callable(close):
                close()
