"""The names of the tools a model call was offered, read once per committed value.

The ``offer`` stage writes the served tools when they change; it and the ``tool-calls``
stage (which runs only what was offered) ask for their names every call. Committed values
are immutable, so the names of one value are read once per run and mount."""

from __future__ import annotations

from typing import Any

from trackway.engine import StagePath
from trackway.engine.run._scope import TrackedScope

__all__ = ["Offered", "offered_now"]


class Offered:
    """The ``tools`` value last read (by identity) and the names it holds."""

    __slots__ = ("names", "tools")

    def __init__(self) -> None:
        self.tools: Any = None
        self.names: list[str] = []


def offered_now(scope: TrackedScope, owner: int) -> tuple[Any, list[str], Offered]:
    """The committed ``tools``, their names, and the memo that holds them (``owner``: the
    agent's configuration, by id)."""
    committed = scope.get("tools")
    seen = scope.run_local(("agent-offer", owner, StagePath.parent_of(scope.stage_path)), Offered)
    if committed is None:
        return None, [], seen
    if committed is not seen.tools:
        seen.tools, seen.names = committed, [s["name"] for s in committed]
    return committed, seen.names, seen
