"""What the runs of one built agent share: the settings and tools its last run wrote, and the
request frame built from them.

A server runs one agent many times with the same settings and tools. Each run writes them
again (the record of a run is whole on its own), but where their JSON is the last run's, the
write holds the last run's engine-owned value (``TrackedScope._set_reused``), and
``assemble`` then finds the frame it built from that value still good: the tools are
validated, serialized and hashed once per agent, not once per run. A run whose settings or
tools differ (a ``configure`` function, a changed offer) builds its own frame, as before.
"""

from __future__ import annotations

from typing import Any

from trackway.engine import Scope
from trackway.engine.run._scope import TrackedScope

from ._request import MessageCache, _Frame

__all__ = ["AcrossRuns"]


class AcrossRuns:
    """One agent's shelf of values its runs share (one per ``stage_functions``). Each slot
    is one reference, replaced whole, so runs on several threads read a consistent value."""

    __slots__ = ("_kept", "frame")

    def __init__(self) -> None:
        self._kept: dict[str, tuple[bytes, Any]] = {}
        self.frame: _Frame | None = None

    def write(self, scope: Scope, key: str, value: Any) -> None:
        """``scope[key] = value``, sharing the last run's value where the JSON is the same
        (on the scope the engine gives a stage; any other scope is written as it is)."""
        if type(scope) is TrackedScope:
            self._kept[key] = scope._set_reused(key, value, self._kept.get(key))
        else:
            scope[key] = value

    def cache(self) -> MessageCache:
        """A run's message cache, lent the frame the agent's last call built (``assemble``
        checks it against the run's own state before using it)."""
        cache = MessageCache()
        cache._frame = self.frame
        return cache

    def keep(self, cache: MessageCache) -> None:
        """Lend the frame this call was served to the agent's next run, where it can serve
        one: a frame built from the run's own pieces (system pieces, what memory recalled,
        the ontology, the findings piece) could never match another run's, so it is not
        kept, nor anything of the run with it."""
        frame = cache._frame
        if frame is not None and frame.source[3:] == _NO_PIECES:
            self.frame = frame


_NO_PIECES = (None, None, None, None, None)
