"""Recall and write through a store (:class:`~trackway.engine.MemoryRows`): what the live
memory stages do. A replay hands the stages the recorded rows instead
(``trackway.agent.rerun``), so it needs no store and runs no ``summarize`` or ``extract``."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Protocol

import orjson

from trackway.engine import MemoryRows

from ._define import MemoryDefinition, MemoryTurn
from ._pieces import facts_text, recall_row, recent_text, summary_text

__all__ = ["MemoryIO", "StoreMemory"]


class MemoryIO(Protocol):
    """Where the memory stages get their rows: a store (live) or a recording (replay)."""

    async def recall(self, memory: MemoryDefinition, scope: str) -> dict[str, Any]:
        """The ``memory_recall`` row of ``memory`` for the scope ``scope``."""
        ...

    async def write(self, memory: MemoryDefinition, scope: str, turn: MemoryTurn) -> dict[str, Any]:
        """Keep ``turn`` (as stored); the ``memory_written`` row."""
        ...


class StoreMemory:
    """:class:`MemoryIO` on the stores each memory is kept in (by memory id)."""

    def __init__(self, stores: Mapping[str, MemoryRows]) -> None:
        self._stores = dict(stores)

    async def recall(self, memory: MemoryDefinition, scope: str) -> dict[str, Any]:
        store = self._stores[memory.id]
        if memory.kind == "recent":
            rows = store.memory_recent(scope, memory.id, memory.turns or 0)
            turns = [(seq, orjson.loads(doc)) for seq, doc in reversed(rows)]
            return recall_row(memory, len(turns), recent_text(memory, turns))
        if memory.kind == "summary":
            rows = store.memory_recent(scope, memory.id, 1)
            summary = orjson.loads(rows[0][1]).get("summary") if rows else None
            return recall_row(memory, len(rows), summary_text(memory, summary))
        limit = memory.max_facts or 0
        found = store.memory_facts(scope, memory.id, limit + 1)
        facts = [orjson.loads(doc) for _, doc in found[:limit]]
        more = len(found) > limit
        cut = {"max_facts": limit} if more else None
        return recall_row(memory, len(facts), facts_text(memory, facts, more), cut)

    async def write(self, memory: MemoryDefinition, scope: str, turn: MemoryTurn) -> dict[str, Any]:
        store = self._stores[memory.id]
        row: dict[str, Any] = {"id": memory.id, "kind": memory.kind}
        if memory.kind == "recent":
            stored = {"user": turn.user, "answer": turn.answer}
            row["turn"] = store.memory_append(scope, memory.id, "turn", orjson.dumps(stored))
            row["stored"] = stored
            return row
        if memory.kind == "summary":
            assert memory.summarize is not None
            rows = store.memory_recent(scope, memory.id, 1)
            previous = orjson.loads(rows[0][1]).get("summary") if rows else None
            summary = await _called(memory.summarize, previous, turn)
            if not isinstance(summary, str):
                raise TypeError(
                    f"memory {memory.id!r}: summarize returned {type(summary).__name__}; "
                    "return the new summary as a str"
                )
            stored = {"summary": summary}
            row["turn"] = store.memory_append(scope, memory.id, "summary", orjson.dumps(stored))
            row["stored"] = stored
            return row
        assert memory.extract is not None
        facts = await _called(memory.extract, turn)
        if not isinstance(facts, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in facts.items()
        ):
            raise TypeError(
                f"memory {memory.id!r}: extract returned {type(facts).__name__}; return a "
                "dict of str keys to str values ({} keeps nothing)"
            )
        kept = dict(facts)
        if kept:
            docs = [(k, orjson.dumps({"key": k, "value": v})) for k, v in kept.items()]
            row["turn"] = store.memory_put_facts(scope, memory.id, docs)
        row["stored"] = {"facts": kept}
        return row


async def _called(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, awaited when it is async."""
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result
