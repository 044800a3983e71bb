"""The narrative's entries and how they read: the entry type, the order a stage's facts are
told in, and a line rendered from its entries (and wrapped to a terminal's width)."""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["HEADERS", "EntryType", "NarrativeEntry", "render", "wrap"]

EntryType = Literal[
    "stage",
    "read",
    "write",
    "decision",
    "subflow",
    "merge",
    "pause",
    "resume",
    "error",
    "emit",
    "break",
    "fork",
    "step",
]

HEADERS = frozenset({"stage", "subflow", "merge", "fork", "step"})
_ORDER: dict[str, int] = {
    "resume": 0,
    "read": 1,
    "emit": 2,
    "write": 3,
    "decision": 4,
    "break": 5,
    "error": 6,
    "pause": 7,
    # headers never join a line; listed so every type has a place
    "stage": 8,
    "subflow": 8,
    "merge": 8,
    "fork": 8,
    "step": 8,
}


class NarrativeEntry(NamedTuple):
    """One fact of the narrative.

    ``type`` is what happened; ``depth`` how deep in subflows and parallel branches it
    happened (the number of ``/`` in the stage path); ``text`` the plain-English fragment.
    ``step`` is the stage number on ``stage`` entries; ``key`` the state key on ``read`` and
    ``write`` entries. A ``step`` entry is a whole line a teller told (a model call, a tool
    call, an answer).
    """

    type: EntryType
    depth: int
    stage_path: str
    text: str
    step: int | None = None
    key: str | None = None


def wrap(line: str, width: int) -> list[str]:
    """One narrative line cut to ``width`` columns: after "; " or ", " where it can, else at
    a space, else anywhere; continuations indented four past the line's own indent."""
    body = line.lstrip(" ")
    indent = " " * (len(line) - len(body) + 4)
    out: list[str] = []
    rest = line
    room = max(width, len(indent) + 20)
    while len(rest) > room:
        cut = max(rest.rfind("; ", 0, room), rest.rfind(", ", 0, room))
        cut = cut + 2 if cut > len(indent) else rest.rfind(" ", len(indent), room) + 1
        if cut <= len(indent):
            cut = room
        out.append(rest[:cut].rstrip())
        rest = indent + rest[cut:].lstrip()
    out.append(rest)
    return out


def render(head: NarrativeEntry, parts: list[NarrativeEntry]) -> str:
    """One line: ``head`` indented two spaces per depth, then the entries that joined it
    (a read or write following one of its own verb shares that verb)."""
    line = "  " * head.depth + head.text
    if not parts:
        return line
    pieces: list[str] = []
    verb = ""
    # A stage's facts in one order, however late its commit arrived (parallel branches).
    for part in sorted(parts, key=lambda p: _ORDER[p.type]):
        word = part.text.split(" ", 1)[0]
        same = part.type in ("read", "write") and word in ("read", "wrote", "input", "output")
        if same and pieces and word == verb:
            pieces[-1] += ", " + part.text[len(word) + 1 :]
        else:
            pieces.append(part.text)
        verb = word if same else ""
    return line + " — " + "; ".join(pieces)
