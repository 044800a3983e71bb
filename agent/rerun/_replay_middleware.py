"""Middleware in a replay: the recorded decisions, handed back by stand-in links at the
doors the run's settings name (no link's code runs)."""

from __future__ import annotations

from typing import Any

from trackway.engine import Snapshot, thaw

from ..middleware._ledger import DECISIONS_KEY, recorded_middleware

__all__ = ["replay_middleware"]


def replay_middleware(builder: Any, snap: Snapshot) -> None:
    """Stand the recorded links on ``builder`` when the run had any."""
    settings = _settings(snap)
    declared = settings.get("middleware")
    if not declared:
        return
    rows = thaw(snap.state.get(DECISIONS_KEY, []))
    builder.middleware(*recorded_middleware(declared, rows))


def _settings(snap: Snapshot) -> dict[str, Any]:
    for c in snap.history():
        if c.frame == "" and c.stage_id == "seed":
            for op in c.ops:
                if op.key == "settings":
                    value: dict[str, Any] = thaw(op.value)
                    return value
    return {}
