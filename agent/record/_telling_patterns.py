"""How the narrative tells the patterns' own stages (``swarm``, ``map_reduce``,
``tree_of_thoughts``): a handoff made or refused, the items split, a reduction, each level's
beam. Their structure (the route, the slots, the for-each merges) says nothing; their members
tell themselves. Read by ``_telling``'s composition teller."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from trackway.engine import Commit, thaw, write_value
from trackway.recorders import Teller, Telling, register_teller

__all__ = ["PATTERN_KINDS", "PATTERN_STAGES", "tell_pattern"]

PATTERN_KINDS = {"swarm-": "Swarm", "mapreduce-": "MapReduce", "tot-": "TreeOfThoughts"}
"""The patterns' chart-id prefixes and the names the narrative gives them."""

PATTERN_STAGES = frozenset(
    {"_start", "_route", "_handoff", "_split", "_map", "_level", "_propose", "_ask"}
    | {"_evaluate", "_beam", "_depth", "_slot"}
)
"""The patterns' own stages (besides the compositions' ``_seed``, ``_gather``, ``_final``)."""


def _events(commit: Commit, name: str) -> list[dict[str, Any]]:
    found = (thaw(e.payload) for e in commit.events if e.name == name)
    return [p for p in found if isinstance(p, dict)]


def _start(commit: Commit) -> list[str]:
    for w in commit.writes:
        key, value = w[1], thaw(write_value(w))
        if key == "swarm" and isinstance(value, dict):
            return [f"Starting with {value.get('entry')} (at most {value.get('max_hops')} hops)"]
        if key == "tot" and isinstance(value, dict):
            levels = "1 level" if value.get("depth") == 1 else f"{value.get('depth')} levels"
            return [
                f"Searching {levels}: {value.get('k')} thoughts per path, "
                f"keeping the best {value.get('beam')}"
            ]
    return []


_WHY = {
    "unknown_member": "no member has that name",
    "not_declared": "the declared handoffs do not allow it",
    "max_hops": "hops ran out",
}


def _handoff(commit: Commit) -> list[str]:
    lines = [
        f"{e.get('from')} handed the conversation to {e.get('to')} (hop {e.get('hop')})"
        for e in _events(commit, "composition.handoff")
    ]
    for e in _events(commit, "composition.handoff_refused"):
        why = _WHY.get(str(e.get("reason")), str(e.get("reason")))
        lines.append(f"{e.get('from')}'s handoff was refused: {why} (hop {e.get('hop')})")
    return lines


def _split(commit: Commit) -> list[str]:
    lines = []
    for e in _events(commit, "composition.split"):
        dropped = (
            f", dropped {e.get('dropped')} past {e.get('max_items')}" if e.get("dropped") else ""
        )
        lines.append(
            f"Split into {e.get('items')} items by {e.get('by')}: ran {e.get('ran')}{dropped}"
        )
    return lines


def _beam(commit: Commit) -> list[str]:
    lines = []
    for e in _events(commit, "composition.beam"):
        unscored = f" ({e.get('unscored')} unscored)" if e.get("unscored") else ""
        best = "" if e.get("best") is None else f"; best: thought {e.get('best')}"
        score = "" if e.get("best_score") is None else f" at {e.get('best_score')}"
        lines.append(
            f"Level {e.get('level')}: kept {e.get('kept')} of {e.get('candidates')} "
            f"thoughts{unscored}{best}{score}"
        )
    return lines


_TELLS: dict[str, Callable[[Commit], list[str]]] = {
    "_start": _start,
    "_handoff": _handoff,
    "_split": _split,
    "_beam": _beam,
}


def tell_pattern(commit: Commit, telling: Telling) -> Sequence[str]:
    """A pattern stage's lines (none for its structure)."""
    tell = _TELLS.get(commit.stage_id)
    return (
        []
        if tell is None or (commit.kind != "stage" and commit.kind != "decider")
        else tell(commit)
    )


SLOTS_TELLER = Teller(
    "pattern-slots",
    lambda chart_id: chart_id.startswith(
        ("_slots_", *(f"_member_{prefix}" for prefix in PATTERN_KINDS))
    ),
    frozenset({"_take", "_slot"}),
    lambda commit, telling: [],
)
"""The charts a pattern mounts its members in (a slot's pick, a member's wrapping): structure
that says nothing; the members tell themselves."""

register_teller(SLOTS_TELLER)
