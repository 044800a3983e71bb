"""The ``offer`` stage, with skills: before each model call, the cursor moves by the law
(:mod:`trackway.agent.skills._law`), the instruction leases are kept or dropped, and the
system pieces this call is served are committed. Mounted only with skills or instructions.

State keys: ``skill_cursor`` (``{"skill", "tenure"}``), ``skill_proposals`` (every proposal
to move it and its verdict), ``skill_entry`` (how a turn's entry was picked),
``instruction_leases``, ``system_pieces``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from trackway.engine import StagePath, thaw
from trackway.engine.run._scope import TrackedScope

from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ..context._state_view import PROVIDER_KEYS, StateView
from ..skills._declare import EntryRequest
from ..skills._law import evaluate, last_batch
from ..skills._skillset import SkillSet

__all__ = ["SKILL_KEYS", "serve_skills"]

SKILL_KEYS = (*PROVIDER_KEYS, "skill_cursor", "instruction_leases")
"""What ``active_when`` and a route's ``when`` may read."""


class _Seen:
    """What the last visit of this run and mount read and left unchanged: the committed
    values (by identity, as committed values are immutable) and their plain forms, so a
    visit with nothing to judge reads, compares and writes nothing more (O(1) per call)."""

    __slots__ = ("active", "cursor", "cursor_obj", "leases", "leases_obj", "pieces_obj", "quiet")

    def __init__(self) -> None:
        self.cursor_obj: Any = _UNSEEN
        self.cursor: dict[str, Any] = {}
        self.leases_obj: Any = _UNSEEN
        self.leases: list[dict[str, Any]] = []
        self.pieces_obj: Any = _UNSEEN
        self.active: list[str] = []
        self.quiet = False


_UNSEEN = object()


async def serve_skills(cfg: AgentConfig, scope: TrackedScope, k: int) -> None:
    """Move the cursor for model call ``k``: judge the last batch by the law, keep or drop
    the leases, and commit the call's system pieces (written only when they change)."""
    skills = cast(SkillSet, cfg.skills)
    mount = StagePath.parent_of(scope.stage_path)
    seen = scope.run_local(("agent-skills", id(cfg), mount), _Seen)
    committed = scope.get("skill_cursor")
    leases_obj = scope.get("instruction_leases")
    pieces_obj = scope.get("system_pieces")
    known = (
        committed is seen.cursor_obj
        and leases_obj is seen.leases_obj
        and pieces_obj is seen.pieces_obj
    )
    if known:
        cursor, leases = seen.cursor, seen.leases
    else:
        cursor = {"skill": None, "tenure": 0} if committed is None else thaw(committed)
        leases = [] if leases_obj is None else thaw(leases_obj)
    view = StateView(scope, SKILL_KEYS)
    active = skills.decisions.active(view, k) if skills.instructions else []
    entry = None
    batch: Sequence[Any] = ()
    if k == 1:  # the turn's first call: the entry, if the graph names one
        graph = skills.graph
        if cursor["skill"] is None and graph is not None and graph.entry:
            entry = await _entry(skills, scope["user_message"], k)
            scope.append("skill_entry", entry)
            picked = {key: entry.get(key) for key in ("k", "scorer", "chosen")}
            if entry.get("cold_start"):
                picked["cold_start"] = True
            if skills.skills[entry["chosen"]].hidden:  # said as such, never by its id
                picked.update(chosen=None, chosen_hidden=True)
            _emit(scope, "skill.entry", picked)
    else:
        batch = last_batch(scope.get("tool_results", ()), scope["iteration"] - 1)
    quiet = known and seen.quiet and entry is None and active == seen.active
    if quiet and not _judged(skills, cursor["skill"], batch):
        return  # nothing to judge: the cursor, the leases and the pieces stand
    done = evaluate(
        skills.data,
        cursor,
        batch,
        leases,
        k,
        when=lambda i: skills.decisions.when(i, view, k),
        active=active,
        entry=entry,
        doors=frozenset(skills.doors),
    )
    wrote = False
    if committed is None or done.cursor != cursor:
        scope["skill_cursor"] = done.cursor
        wrote = True
    if done.proposals:
        scope.extend("skill_proposals", done.proposals)
    if done.leases != leases:
        scope["instruction_leases"] = done.leases
        wrote = True
    if (thaw(pieces_obj) if pieces_obj is not None else None) != (done.pieces or None):
        if done.pieces:
            scope["system_pieces"] = done.pieces
        else:
            del scope["system_pieces"]
        wrote = True
    for name, payload in done.events:
        _emit(scope, name, payload)
    # what this visit leaves: known by identity at the next visit, unless it wrote
    seen.cursor_obj = _UNSEEN if wrote else committed
    seen.leases_obj, seen.pieces_obj = leases_obj, pieces_obj
    seen.cursor, seen.leases, seen.active = done.cursor, done.leases, list(active)
    seen.quiet = not any(p["source"] == "note" for p in done.pieces) and not any(
        lease["lease"] == "next-call" for lease in done.leases
    )


def _judged(skills: SkillSet, skill: str | None, batch: Sequence[Any]) -> bool:
    """Whether the batch holds anything the law judges: a door's pick, a declared effect,
    or a result a route from the active skill may fire on."""
    if not batch:
        return False
    doors = skills.doors
    if any(row["name"] in doors or "effects" in row for row in batch):
        return True
    conditions = skills.conditions_from(skill)
    if conditions is None:
        return False
    if conditions.when:  # code decides: ask it
        return True
    return any(
        (row["name"], row.get("status")) in conditions.pairs
        or row["name"] in conditions.tools
        or row.get("status") in conditions.statuses
        for row in batch
    )


async def _entry(skills: SkillSet, message: str, k: int) -> dict[str, Any]:
    """How the turn's entry skill is picked: the scorer's top entry, or the cold start (the
    first entry) when there is no scorer or it ranked nothing it may pick."""
    graph = skills.graph
    assert graph is not None
    entries = tuple((sid, skills.skills[sid].title) for sid in graph.entry)
    scoring = await skills.decisions.entry(EntryRequest(message, entries), k)
    row: dict[str, Any] = {"k": k, "scorer": None if scoring is None else scoring.scorer}
    if scoring is not None:
        row["ranking"] = [{"id": sid, "score": score} for sid, score in scoring.ranking]
        ranked = [sid for sid, _ in scoring.ranking if sid in graph.entry]
        pick = scoring.chosen if scoring.chosen in graph.entry else (ranked[0] if ranked else None)
        if pick is not None:
            row["chosen"] = pick
            return row
    row["chosen"] = graph.entry[0]
    row["cold_start"] = True
    return row
