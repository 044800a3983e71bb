"""The ``skills`` stage: before each model call, the cursor moves by the law
(:mod:`trackway.agent.skills._law`), the instruction leases are kept or dropped, and the
system pieces this call is served are committed. Mounted only with skills or instructions.

State keys: ``skill_cursor`` (``{"skill", "tenure"}``), ``skill_proposals`` (every proposal
to move it and its verdict), ``skill_entry`` (how a turn's entry was picked),
``instruction_leases``, ``system_pieces``.
"""

from __future__ import annotations

from typing import Any, cast

from trackway.engine import Scope, thaw
from trackway.engine.run._scope import TrackedScope

from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ..skills._declare import EntryRequest
from ..skills._law import evaluate, last_batch
from ..skills._skillset import SkillSet
from ._model_call import StateView

__all__ = ["SKILL_KEYS", "skills_stage"]

SKILL_KEYS = (
    "user_message",
    "history",
    "iteration",
    "tool_results",
    "settings",
    "identity",
    "session_id",
    "skill_cursor",
    "instruction_leases",
)
"""What ``active_when`` and a route's ``when`` may read."""


async def skills_stage(cfg: AgentConfig, given: Scope) -> None:
    scope = cast(TrackedScope, given)  # the engine's scope: native calls
    skills = cast(SkillSet, cfg.skills)
    record = skills.data
    receipts = scope.get("receipts")
    k = 1 if receipts is None else len(receipts) + 1
    committed = scope.get("skill_cursor")
    cursor = {"skill": None, "tenure": 0} if committed is None else thaw(committed)
    view = StateView(scope, SKILL_KEYS)
    entry = None
    batch: list[Any] = []
    if receipts is None:  # the turn's first call: the entry, if the graph names one
        graph = skills.graph
        if cursor["skill"] is None and graph is not None and graph.entry:
            entry = await _entry(skills, scope["user_message"], k)
            scope.append("skill_entry", entry)
    else:
        batch = last_batch(scope.get("tool_results", ()), scope["iteration"] - 1)
    leases = thaw(scope.get("instruction_leases", []))
    done = evaluate(
        record,
        cursor,
        thaw(batch),
        leases,
        k,
        when=lambda i: skills.decisions.when(i, view, k),
        active=skills.decisions.active(view, k) if skills.instructions else (),
        entry=entry,
        doors=frozenset(skills.doors),
    )
    if committed is None or done.cursor != cursor:
        scope["skill_cursor"] = done.cursor
    if done.proposals:
        scope.extend("skill_proposals", done.proposals)
    if done.leases != leases:
        scope["instruction_leases"] = done.leases
    pieces = scope.get("system_pieces")
    if (thaw(pieces) if pieces is not None else None) != (done.pieces or None):
        if done.pieces:
            scope["system_pieces"] = done.pieces
        else:
            del scope["system_pieces"]
    for name, payload in done.events:
        _emit(scope, name, payload)


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
