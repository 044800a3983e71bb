"""Agent events: ``agent.on(name, fn)`` with exact names, ``"domain.*"`` and ``"*"``.

Every event is emitted by a stage through ``scope.emit`` (so it is in that stage's commit
and in any recording); listeners hear it live through an internal recorder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from trackway.engine import ConfigurationError, EmitEvent, Recorder

from ..messages._members import member_of

__all__ = ["EventBus", "Listener"]

Listener = Callable[[EmitEvent], Any]


class EventBus(Recorder):
    """Listeners by pattern; also the recorder that feeds them."""

    name = "agent-events"

    def __init__(self) -> None:
        self._listeners: dict[str, list[Listener]] = {}
        # by event name, worked out on first use; emptied (never replaced) when listeners
        # change, so the engine may hold its lookup
        self._wanted = _Wanted(self._listeners)
        self.wants_emit: Callable[[str], bool] = self._wanted.__getitem__
        """Whether a listener matches events called ``name``: the engine makes no event
        object for one nobody listens to. A dict lookup, not a call into Python, once the
        name was seen."""

    def on(self, pattern: str, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` for events matching ``pattern``; returns an unsubscribe."""
        if not isinstance(pattern, str) or not pattern:
            raise ConfigurationError("an event pattern is a name, 'domain.*' or '*'")
        if not callable(fn):
            raise ConfigurationError("on(pattern, fn): fn must be callable")
        self._listeners.setdefault(pattern, []).append(fn)
        self._wanted.clear()
        return lambda: self.off(pattern, fn)

    def once(self, pattern: str, fn: Listener) -> Callable[[], None]:
        """Like :meth:`on`, but only for the first matching event."""

        def wrapper(event: EmitEvent) -> Any:
            self.off(pattern, wrapper)
            return fn(event)

        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        return self.on(pattern, wrapper)

    def off(self, pattern: str, fn: Listener | None = None) -> None:
        """Remove ``fn`` (or every listener) from ``pattern``."""
        self._wanted.clear()
        if fn is None:
            self._listeners.pop(pattern, None)
            return
        fns = self._listeners.get(pattern, [])
        for listener in list(fns):
            if listener is fn or getattr(listener, "__wrapped__", None) is fn:
                fns.remove(listener)
                return

    def remove_all(self) -> None:
        """Drop every listener on every pattern."""
        self._listeners.clear()
        self._wanted.clear()

    def listener_count(self, pattern: str | None = None) -> int:
        if pattern is None:
            return sum(len(v) for v in self._listeners.values())
        return len(self._listeners.get(pattern, ()))

    def on_emit(self, event: EmitEvent) -> None:
        listeners = self._listeners
        if not listeners:
            return
        name = event.name
        if not self._wanted[name]:
            return  # nobody listens to this event: nothing to build
        if "/" in event.stage_path and isinstance(event.payload, Mapping):
            member = member_of(event.stage_path)  # a composition member's event says whose
            if member:
                event = event._replace(payload={**event.payload, "member": member})
        failure: Exception | None = None
        for pattern in _PATTERNS.get(name) or _patterns_of(name):
            fns = listeners.get(pattern)
            if not fns:
                continue
            for fn in list(fns):  # a listener may add or remove listeners
                try:
                    fn(event)
                except Exception as exc:  # the other listeners still hear the event
                    failure = failure or exc
        if failure is not None:
            raise failure  # the engine keeps it on snapshot.recorder_failures


class _Wanted(dict[str, bool]):
    """Whether a listener matches an event name, by name, filled on first lookup."""

    def __init__(self, listeners: dict[str, list[Listener]]) -> None:
        super().__init__()
        self._listeners = listeners

    def __missing__(self, name: str) -> bool:
        listeners = self._listeners
        wanted = self[name] = any(listeners.get(p) for p in _patterns_of(name))
        return wanted


_PATTERNS: dict[str, tuple[str, str, str]] = {}


def _patterns_of(name: str) -> tuple[str, str, str]:
    """The patterns an event called ``name`` answers to: its own, its domain's, ``*``
    (worked out once per name: they never change)."""
    patterns = _PATTERNS.get(name)
    if patterns is None:
        patterns = _PATTERNS[name] = (name, name.split(".", 1)[0] + ".*", "*")
    return patterns
