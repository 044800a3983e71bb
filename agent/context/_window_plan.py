"""The removal planner every window strategy shares: which turns may leave the served window,
and which are held, by name.

A turn is one non-tool message and the tool results after it (an assistant turn and its
results are one turn, so removing whole turns never orphans a call or a result). The planner
refuses to drop, by name: the person's current request (the latest message the person said,
known by the library-message mark, not by role), a turn with a call but not all its results
or a result without its call, a paused turn, the latest ``keep_last_tool_results`` results of
each tool, and the most recent turns a strategy keeps. Strategies only choose among what it
allows; none is handed a way around it.

With ``.findings()`` it also reads the ledger (:class:`FactHold`): a turn whose result the model
declared a fact is held beyond the kept turns, newest first, up to a ceiling (reason
``ledger-fact``), only after the current request, and never on a visit that stands down.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..messages._messages import is_said_by_person

__all__ = [
    "DROP_NOTICE_PREFIX",
    "HOLD_REASONS",
    "PINS",
    "FactHold",
    "LedgerFactPin",
    "Removal",
    "Turn",
    "Turns",
    "drop_notice",
    "hold_facts",
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
    "ledger-fact",
)
"""Why the planner holds a turn, in the order it checks."""

PINS = ("last-tool-result", "ledger-fact")
"""The holds that are the library's choice, not the wire's (the stand-down reads these)."""

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


@dataclass(frozen=True)
class LedgerFactPin:
    """A turn the ledger-fact hold can keep: the tool-call ids of its results (``ids``), the
    tool of its (first) fact result, its head message index (``turn``, as the planner's other
    rows name turns) and its exact characters of content."""

    ids: tuple[str, ...]
    tool: str
    turn: int
    chars: int

    def row(self) -> dict[str, Any]:
        """The pin as the window record files it."""
        return {"tool": self.tool, "turn": self.turn, "chars": self.chars}


@dataclass(frozen=True)
class FactHold:
    """The ledger the planner reads: the current standing per tool-call id (the model's
    last declaration), the ceiling (``limit`` turns held beyond the kept ones), and whether
    this visit stands down (every fact pin released)."""

    standings: Mapping[str, str]
    limit: int
    stand_down: bool = False

    def pin(self, turn: Turn) -> LedgerFactPin | None:
        """``turn`` as a pin when one of its results is a declared fact (a turn is the
        removal unit, so one fact result makes the whole turn a fact turn)."""
        facts = [name for cid, name in turn.results if self.standings.get(cid) == "fact"]
        if not facts:
            return None
        return LedgerFactPin(tuple(c for c, _ in turn.results), facts[0], turn.head, turn.chars)


@dataclass
class Removal:
    """What may leave: the heads of removable turns (oldest first), and each held turn with
    why; under a fact hold, the turns it pinned (newest first) and how many fact turns the
    ceiling turned away (``yielded``)."""

    removable: list[int]
    held: list[dict[str, Any]]
    pins: list[LedgerFactPin] = field(default_factory=list)
    yielded: int = 0


def hold_facts(
    kept: Sequence[Turn],
    removal: Removal,
    window: int,
    facts: FactHold | None,
) -> Removal:
    """``removal`` with the ledger-fact hold applied: among the turns it lets leave, those
    after the current request (anchored) and outside the ``window`` most recent turns (a fact
    turn inside them costs nothing) whose result the model declared a fact are held, newest
    first, up to ``facts.limit``; the rest are counted as yielded. O(len(kept))."""
    if facts is None or facts.limit <= 0 or facts.stand_down or not removal.removable:
        return removal
    current = next((t.head for t in reversed(kept) if t.said_by_person), -1)
    recent = {t.head for t in kept[max(0, len(kept) - window) :]} if window > 0 else set()
    free = set(removal.removable)
    pins: list[LedgerFactPin] = []
    yielded = 0
    for turn in reversed(kept):
        if turn.head <= current:
            break  # nothing at or before the current request is pinnable
        if turn.head not in free or turn.head in recent:
            continue
        pin = facts.pin(turn)
        if pin is None:
            continue
        if len(pins) < facts.limit:
            pins.append(pin)
        else:
            yielded += 1
    if not pins:
        return Removal(removal.removable, removal.held, [], yielded)
    pinned = {p.turn for p in pins}
    rows = [{"turn": h, "why": "ledger-fact"} for h in sorted(pinned)]
    held = sorted([*removal.held, *rows], key=lambda row: int(row["turn"]))
    return Removal([h for h in removal.removable if h not in pinned], held, pins, yielded)


def plan_removal(
    kept: Sequence[Turn],
    keep_recent_turns: int,
    keep_last_tool_results: int,
    paused_calls: Iterable[str] = (),
    facts: FactHold | None = None,
) -> Removal:
    """The turns among ``kept`` (the ones still served, oldest first) that may leave, and
    the ones held with their reason (``facts``: the ledger-fact hold, see
    :func:`hold_facts`). Cost: O(len(kept))."""
    base = _plan(kept, keep_recent_turns, keep_last_tool_results, paused_calls)
    return hold_facts(kept, base, keep_recent_turns, facts)


def _plan(
    kept: Sequence[Turn],
    keep_recent_turns: int,
    keep_last_tool_results: int,
    paused_calls: Iterable[str],
) -> Removal:
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
