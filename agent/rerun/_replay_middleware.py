"""Middleware in a replay: the recorded decisions, handed back by stand-in links at the
doors the run's settings name (no link's code runs)."""

from __future__ import annotations

from typing import Any

from trackway.engine import Snapshot, thaw

from ..middleware._ledger import DECISIONS_KEY, recorded_middleware

__all__ = ["replay_middleware"]


def replay_middleware(builder: Any, snap: Snapshot) -> None:
    """Stand the recorded links on ``builder`` when the run had any (a run whose message
    an input link refused chose no settings: its rows name the links that decided)."""
    declared = _settings(snap).get("middleware") or []
    rows = thaw(snap.state.get(DECISIONS_KEY, []))
    if not declared and not rows:
        return
    builder.middleware(*recorded_middleware(declared, rows))


def _settings(snap: Snapshot) -> dict[str, Any]:
    for c in snap.history():
        if c.frame == "" and c.stage_id == "seed":
            for op in c.ops:
                if op.key == "settings":
                    value: dict[str, Any] = thaw(op.value)
                    return value
    return {}
