"""An agent's artifacts as configured (``.artifacts(store, max_inline_chars=...)``), and the
scope a run's tickets are minted and redeemed under."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trackway.engine import thaw
from trackway.engine.run._scope import TrackedScope
from trackway.tools.artifacts import ArtifactScope

__all__ = ["DEFAULT_MAX_INLINE_CHARS", "ArtifactsPlan", "run_scope", "scope_of"]

DEFAULT_MAX_INLINE_CHARS = 4000
"""A result longer than this many characters is placed in the store (``max_inline_chars``)."""


@dataclass(frozen=True)
class ArtifactsPlan:
    """Where results are placed and tickets redeemed (``store``: ``None`` in a replay, which
    serves every placement and redemption as recorded) and the placement threshold."""

    store: Any
    max_inline_chars: int = DEFAULT_MAX_INLINE_CHARS

    def record(self) -> dict[str, Any]:
        """What ``seed`` commits in ``settings["artifacts"]`` (a replay rebuilds it; the
        store itself is never recorded)."""
        return {"max_inline_chars": self.max_inline_chars}


def run_scope(scope: TrackedScope) -> ArtifactScope:
    """The scope this run mints and redeems under: its identity's tenant, principal and
    conversation as the caller gave them; a run without an identity gets its session
    (``session_id``), else the run alone (``run_id``): tickets are never shared between
    callers that said nothing about who they are."""
    return scope_of(scope.get("identity"), scope.get("session_id"), scope.run_id)


def scope_of(identity: Any, session: Any, run_id: str) -> ArtifactScope:
    """:func:`run_scope` of a run's ``identity``, ``session_id`` and ``run_id``."""
    if identity is not None:
        said = thaw(identity)
        return ArtifactScope(said.get("tenant"), said.get("principal"), said.get("conversation_id"))
    return ArtifactScope(None, None, f"session:{session}" if session else f"run:{run_id}")
