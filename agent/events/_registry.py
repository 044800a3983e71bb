"""The registry: every event name trackway emits, with its payload's TypedDict and a summary.

Registration is a table read by docs and tests only: nothing on the emit path consults it
(``scope.emit`` stays a name and a payload), so an agent that emits costs the same with or
without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from trackway.engine import ConfigurationError

__all__ = [
    "EVENTS",
    "MEMBER_KEY",
    "EventSpec",
    "event",
    "event_catalogue",
    "payload_problems",
]

MEMBER_KEY = "member"
"""The key listeners also hear on an event a composition member emitted (its path): added by
``agent.on`` to any payload, never stored in the commit."""


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One registered event: its ``name``, its ``domain`` (the part before the first dot),
    the TypedDict of its ``payload``, a one-line ``summary`` and, when the payload also
    carries keys of a record it quotes (a tool's statement, a pending question), ``extra``
    saying whose keys they are."""

    name: str
    domain: str
    payload: type
    summary: str
    extra: str | None = None

    @property
    def required(self) -> frozenset[str]:
        """The keys every payload of this event has."""
        return frozenset(getattr(self.payload, "__required_keys__", ()))

    @property
    def optional(self) -> frozenset[str]:
        """The keys a payload of this event may have."""
        return frozenset(getattr(self.payload, "__optional_keys__", ()))


_EVENTS: dict[str, EventSpec] = {}

EVENTS: Mapping[str, EventSpec] = MappingProxyType(_EVENTS)
"""Every event trackway emits, by name (read-only)."""


def event(name: str, payload: type, summary: str, *, extra: str | None = None) -> EventSpec:
    """Register the event ``name`` (``"domain.what"``) with its payload's TypedDict and a
    one-line summary; returns its :class:`EventSpec`. A name registered twice is refused."""
    domain, dot, rest = name.partition(".")
    if not dot or not domain or not rest:
        raise ConfigurationError(
            f"event name {name!r} has no domain: name it 'domain.what' (e.g. 'tools.gate')"
        )
    required = getattr(payload, "__required_keys__", None)
    if not isinstance(required, frozenset):
        raise ConfigurationError(
            f"event {name!r}: its payload must be a TypedDict class, not {payload!r}"
        )
    unmarked = [
        key
        for key, hint in getattr(payload, "__annotations__", {}).items()
        if "NotRequired[" in str(getattr(hint, "__forward_arg__", hint)) and key in required
    ]
    if unmarked:  # a string annotation hides NotRequired from TypedDict (Python 3.11)
        raise ConfigurationError(
            f"event {name!r}: {payload.__name__} reads NotRequired keys {unmarked} as required "
            "because its annotations are strings: define it in a module without `from "
            "__future__ import annotations`"
        )
    if not summary.strip():
        raise ConfigurationError(f"event {name!r}: give it a one-line summary")
    if name in _EVENTS:
        raise ConfigurationError(
            f"event {name!r} is registered twice: keep one registration (in "
            f"{_EVENTS[name].payload.__module__})"
        )
    spec = _EVENTS[name] = EventSpec(name, domain, payload, summary.strip(), extra)
    return spec


def event_catalogue() -> tuple[EventSpec, ...]:
    """Every registered event, by domain then name."""
    return tuple(sorted(_EVENTS.values(), key=lambda s: (s.domain, s.name)))


def payload_problems(name: str, payload: Any) -> list[str]:
    """What is wrong with an event called ``name`` carrying ``payload`` as the catalogue
    sees it: an unregistered name, a payload that is not a mapping, a required key missing,
    a key the TypedDict does not name (unless the event carries a record's ``extra`` keys).
    Empty when it fits. ``member`` (see :data:`MEMBER_KEY`) always fits."""
    spec = _EVENTS.get(name)
    if spec is None:
        return [f"{name}: not registered in trackway.agent.EVENTS"]
    if not isinstance(payload, Mapping):
        return [f"{name}: the payload is a {type(payload).__name__}, not a mapping"]
    keys = set(payload) - {MEMBER_KEY}
    problems = [f"{name}: required key {k!r} is missing" for k in sorted(spec.required - keys)]
    if spec.extra is None:
        unknown = keys - spec.required - spec.optional
        problems += [
            f"{name}: key {k!r} is not in {spec.payload.__name__}" for k in sorted(unknown)
        ]
    return problems
