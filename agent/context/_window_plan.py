"""The removal planner every window strategy shares: which turns may leave the served window,
and which are held, by name.

A turn is one non-tool message and the tool results after it (an assistant turn and its
results are one turn, so removing whole turns never orphans a call or a result). The planner
refuses to drop, by name: the person's current request (the latest message the person said,
known by the library-message mark, not by role), a turn with a call but not all its results
or a result without its call, a paused turn, the latest ``keep_last_tool_results`` results of
each tool, and the most recent turns a strategy keeps. Strategies only choose among what it
allows; none is handed a way around it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..messages._messages import is_said_by_person

__all__ = [
    "DROP_NOTICE_PREFIX",
    "HOLD_REASONS",
    "Removal",
    "Turn",
    "Turns",
    "drop_notice",
    "merge_ranges",
    "plan_removal",
]

HOLD_REASONS = (
    "current-request",
    "unresolved-tool-call",
    "orphan-result",
    "paused-turn",
    "inside-keep-window",
    "last-tool-result",
)
"""Why the planner holds a turn, in the order it checks."""

DROP_NOTICE_PREFIX = "[Left out of this request to fit the context window:"


@dataclass
class Turn:
    """One turn of the history: messages ``head`` to ``end`` (exclusive)."""

    head: int
    end: int
    role: str
    said_by_person: bool
    calls: tuple[str, ...] = ()
    results: list[tuple[str, str]] = field(default_factory=list)  # (call id, tool name)
    chars: int = 0

    @property
    def count(self) -> int:
        return self.end - self.head

    def unresolved(self) -> bool:
        answered = {cid for cid, _ in self.results}
        return any(c not in answered for c in self.calls)

    def orphaned(self) -> bool:
        return any(cid not in self.calls for cid, _ in self.results)


class Turns:
    """The history's turns, extended as messages are appended (a run-local memo: each visit
    reads only the messages added since the last)."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.seen = 0
        self.backing: int | None = None

    def advance(self, history: Sequence[Any]) -> list[Turn]:
        backing = id(getattr(history, "_backing", history))
        if backing != self.backing or len(history) < self.seen:
            self.__init__()  # type: ignore[misc]
            self.backing = backing
        for index in range(self.seen, len(history)):
            message = history[index]
            role = message["role"]
            content = message.get("content") or ""
            if role == "tool" and self.turns:
                turn = self.turns[-1]
                turn.end = index + 1
                turn.results.append((message.get("tool_call_id", ""), message.get("name", "")))
                turn.chars += len(content)
                continue
            calls = tuple(c["id"] for c in (message.get("tool_calls") or ()))
            self.turns.append(
                Turn(index, index + 1, role, is_said_by_person(message), calls, [], len(content))
            )
        self.seen = len(history)
        return self.turns


@dataclass
class Removal:
    """What may leave: the heads of removable turns (oldest first), and each held turn with
    why."""

    removable: list[int]
    held: list[dict[str, Any]]


def plan_removal(
    kept: Sequence[Turn],
    keep_recent_turns: int,
    keep_last_tool_results: int,
    paused_calls: Iterable[str] = (),
) -> Removal:
    """The turns among ``kept`` (the ones still served, oldest first) that may leave, and
    the ones held with their reason. Cost: O(len(kept))."""
    paused = set(paused_calls)
    current = next((t.head for t in reversed(kept) if t.said_by_person), None)
    pinned: set[int] = set()
    if keep_last_tool_results > 0:
        per_tool: dict[str, int] = {}
        for turn in reversed(kept):
            names = {name for _, name in turn.results}
            if any(per_tool.get(n, 0) < keep_last_tool_results for n in names):
                pinned.add(turn.head)
            for n in names:
                per_tool[n] = per_tool.get(n, 0) + 1
    recent = {t.head for t in kept[max(0, len(kept) - keep_recent_turns) :]}
    removable: list[int] = []
    held: list[dict[str, Any]] = []
    for turn in kept:
        reason = None
        if turn.head == current:
            reason = "current-request"
        elif turn.unresolved():
            reason = "unresolved-tool-call"
        elif turn.orphaned():
            reason = "orphan-result"
        elif paused & set(turn.calls):
            reason = "paused-turn"
        elif turn.head in recent:
            reason = "inside-keep-window"
        elif turn.head in pinned:
            reason = "last-tool-result"
        if reason is None:
            removable.append(turn.head)
        elif reason != "inside-keep-window":  # the window itself needs no row per turn
            held.append({"turn": turn.head, "why": reason})
    return Removal(removable, held)


def merge_ranges(ranges: Iterable[Sequence[int]]) -> list[list[int]]:
    """Sorted, non-overlapping ``[start, end)`` ranges (adjacent ones joined)."""
    out: list[list[int]] = []
    for start, end in sorted((int(a), int(b)) for a, b in ranges):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def drop_notice(messages: int, tools: Mapping[str, int]) -> str:
    """The library message that tells the model what left: counts and tool names, never
    content."""
    text = f"{DROP_NOTICE_PREFIX} {messages} earlier message{'s' if messages != 1 else ''}"
    if tools:
        named = ", ".join(f"{name} ×{n}" for name, n in sorted(tools.items()))
        text += f", including results of {named}"
    return text + ".]"
