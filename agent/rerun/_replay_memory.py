"""Memory in a replay: the memories declared again (from the agent, or from what the
recording's ``settings`` say of them), their stages handed the rows the recording committed.
No store is opened and no ``summarize`` or ``extract`` runs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trackway.engine import Snapshot, thaw

from ..memory._define import MemoryDefinition, MemoryTurn
from ..messages._errors import ReplayDivergence

__all__ = ["RecordedMemory", "recorded_memories", "replay_memory"]


class RecordedMemory:
    """The memory stages' rows as the recording committed them, in order (a replay runs one
    turn: one recall and one write per memory)."""

    def __init__(self, snap: Snapshot) -> None:
        self._recalled = [_row(r) for r in thaw(snap.state.get("memory_recall", []))]
        self._written = [_row(r) for r in thaw(snap.state.get("memory_written", []))]

    async def recall(self, memory: MemoryDefinition, scope: str) -> dict[str, Any]:
        return _next(self._recalled, memory, "memory_recall", "memory-recall")

    async def write(self, memory: MemoryDefinition, scope: str, turn: MemoryTurn) -> dict[str, Any]:
        return _next(self._written, memory, "memory_written", "memory-write")


def _row(row: Any) -> dict[str, Any]:
    """A recorded row without its scope (the stage adds the replay's own)."""
    return {k: v for k, v in dict(row).items() if k != "scope"}


def _next(
    rows: list[dict[str, Any]], memory: MemoryDefinition, key: str, stage: str
) -> dict[str, Any]:
    if not rows or rows[0].get("id") != memory.id:
        raise ReplayDivergence(
            f"the replay asked memory {memory.id!r} at {stage}, where the recording's "
            f"{key} has {rows[0].get('id')!r}"
            if rows
            else f"the replay asked memory {memory.id!r} at {stage} more often than the "
            "recording did",
            stage_path=stage,
            key=key,
        )
    return rows.pop(0)


def replay_memory(builder: Any, memories: Iterable[MemoryDefinition], snap: Snapshot) -> None:
    """Declare ``memories`` on a replay's builder, reading the recorded rows."""
    declared = list(memories)
    if declared:
        builder._memory_io = RecordedMemory(snap)
        builder.memory(*declared)


def recorded_memories(settings: Any) -> list[MemoryDefinition]:
    """The memories a recording's ``settings`` declare (none before memory existed)."""
    return [MemoryDefinition.from_record(r) for r in (settings or {}).get("memory") or ()]
