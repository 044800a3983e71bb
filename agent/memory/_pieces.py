"""The text each memory serves a model call (a system piece after the system prompt), made
from what its store returned; and the bound ``max_chars`` puts on it, recorded when it cuts.
Pure: the same entries always make the same text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._define import MemoryDefinition

__all__ = ["facts_text", "recall_row", "recent_text", "summary_text"]


def recent_text(memory: MemoryDefinition, turns: Sequence[tuple[int, Any]]) -> str:
    """The last turns, oldest first (``turns``: ``(number, {"user", "answer"})``)."""
    if not turns:
        return ""
    n = len(turns)
    lines = [
        f'[memory "{memory.id}": the {"turn" if n == 1 else f"{n} turns"} before this one, '
        "oldest first]"
    ]
    for number, entry in turns:
        lines.append(f"Turn {number}, the person: {entry.get('user', '')}")
        lines.append(f"Turn {number}, the answer: {entry.get('answer', '')}")
    return "\n".join(lines)


def summary_text(memory: MemoryDefinition, summary: str | None) -> str:
    if not summary:
        return ""
    return f'[memory "{memory.id}": a summary of the earlier turns]\n{summary}'


def facts_text(memory: MemoryDefinition, facts: Sequence[Any], more: bool) -> str:
    """The facts, sorted by key; ``more``: the store holds more than were read."""
    if not facts:
        return ""
    kept = sorted(facts, key=lambda f: str(f.get("key", "")))
    head = (
        f'[memory "{memory.id}": the {len(kept)} latest facts; older ones are kept but not shown]'
        if more
        else f'[memory "{memory.id}": what is known]'
    )
    return "\n".join([head, *(f"- {f.get('key', '')}: {f.get('value', '')}" for f in kept)])


def recall_row(
    memory: MemoryDefinition, entries: int, text: str, cut: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A ``memory_recall`` row, with ``max_chars`` applied (a cut says so: it is data)."""
    cut = dict(cut or {})
    if memory.max_chars is not None and len(text) > memory.max_chars:
        cut.update(max_chars=memory.max_chars, chars=len(text))
        text = text[: memory.max_chars]
    row: dict[str, Any] = {"id": memory.id, "kind": memory.kind, "entries": entries, "text": text}
    if cut:
        row["cut"] = cut
    return row
