"""The memory stages: ``memory-recall`` after ``seed`` (once per turn, before the loop) and
``memory-write`` after ``final``. Mounted only when the agent has a memory.

State keys: ``memory_recall`` (one row per memory: ``id``, ``kind``, ``entries`` (how many
were read), ``text`` (what each call is served, after the system prompt), ``scope``
(``"identity"``, or ``"run"`` when the run had no identity), ``cut`` when ``max_facts`` or
``max_chars`` left something out, ``error`` when the store failed) and ``memory_written``
(one row per memory: ``id``, ``kind``, ``turn`` (its number in the scope), ``stored`` (what
was kept, as kept: redacted), ``scope``, or ``error``). A memory that fails to recall serves
nothing and one that fails to write loses nothing else: the turn's answer stands, and the
row says what failed. Events: ``memory.recalled`` and ``memory.written`` (ids, kinds and
counts; never what was said).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from trackway.engine import Scope

from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ._define import MemoryDefinition
from ._scope import scope_of
from ._store_io import MemoryIO
from ._stored import stored_turn

__all__ = ["memory_stages"]

_log = logging.getLogger("trackway.agent")


def memory_stages(cfg: AgentConfig) -> dict[str, Callable[..., Any]]:
    """The ``memory-recall`` and ``memory-write`` stage functions of one agent."""
    memories: tuple[MemoryDefinition, ...] = tuple(cfg.memories)
    io: MemoryIO = cfg.memory_io

    async def memory_recall(scope: Scope) -> None:
        where = scope_of(scope.get("identity"), scope.run_id)
        rows: list[dict[str, Any]] = []
        for memory in memories:
            try:
                row = await io.recall(memory, where.key)
            except Exception as exc:  # the turn goes on with nothing from this memory
                _log.warning("memory %r could not be recalled: %s", memory.id, type(exc).__name__)
                row = {"id": memory.id, "kind": memory.kind, "entries": 0, "text": ""}
                row["error"] = _error(exc)
            rows.append({**row, "scope": where.basis})
        scope["memory_recall"] = rows
        _emit(scope, "memory.recalled", {"scope": where.basis, "memories": _said(rows)})

    async def memory_write(scope: Scope) -> None:
        where = scope_of(scope.get("identity"), scope.run_id)
        unquoted = getattr(scope, "unquoted", None)  # the engine's scope masks marked texts
        turn = stored_turn(scope.redaction, scope["user_message"], scope["final_answer"], unquoted)
        rows: list[dict[str, Any]] = []
        for memory in memories:
            try:
                row = await io.write(memory, where.key, turn)
            except Exception as exc:  # the answer stands; the row says what was not kept
                _log.warning("memory %r could not be written: %s", memory.id, type(exc).__name__)
                row = {"id": memory.id, "kind": memory.kind, "error": _error(exc)}
            rows.append({**row, "scope": where.basis})
        scope["memory_written"] = rows
        _emit(scope, "memory.written", {"scope": where.basis, "memories": _said(rows)})

    return {"memory-recall": memory_recall, "memory-write": memory_write}


def _error(exc: BaseException) -> dict[str, str]:
    """A failure as a row keeps it (its message is hidden under ``errors=True``)."""
    return {"type": type(exc).__name__, "message": str(exc)}


def _said(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What an event says of the rows: ids, kinds, counts and failures by type only."""
    out = []
    for row in rows:
        told: dict[str, Any] = {"id": row["id"], "kind": row["kind"]}
        for name in ("entries", "turn"):
            if name in row:
                told[name] = row[name]
        if "cut" in row:
            told["cut"] = True
        if "error" in row:
            told["failed"] = row["error"]["type"]
        out.append(told)
    return out
