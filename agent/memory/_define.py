"""``define_memory``: one memory of an agent, as data plus the code it runs at write time.

Three kinds, after the seeds' memory types:

- ``"recent"`` (``turns=N``): the last N turns of the scope (the person's message and the
  answer handed back), served oldest first;
- ``"summary"`` (``summarize=fn``): a running summary, ``fn(previous, turn) -> str`` (sync or
  async; it may call a model), run when a turn is written; recall serves the latest;
- ``"facts"`` (``extract=fn``): ``fn(turn) -> {key: value}`` (sync or async), kept per key
  (the latest write wins); recall serves the ``max_facts`` latest and says when it left
  some out.

``max_chars`` bounds one memory's piece; a cut is recorded on its recall row.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from trackway.engine import MemoryRows
from trackway.engine.core._keywords import checked_keywords

from ..messages._errors import AgentBuildError

__all__ = ["KINDS", "MemoryDefinition", "MemoryTurn", "define_memory"]

KINDS = ("recent", "summary", "facts")
"""The kinds of memory ``define_memory`` makes."""
_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
_OWN = {"turns": "recent", "summarize": "summary", "extract": "facts", "max_facts": "facts"}


@dataclass(frozen=True)
class MemoryTurn:
    """One turn as memory keeps it: the person's message and the answer handed back (with
    any limits block), each as stored (the redaction marker where the run's policy hides
    it). What ``summarize`` and ``extract`` are given."""

    user: str
    answer: str


Summarize = Callable[[str | None, MemoryTurn], str | Awaitable[str]]
Extract = Callable[[MemoryTurn], Mapping[str, str] | Awaitable[Mapping[str, str]]]


@dataclass(frozen=True)
class MemoryDefinition:
    """One memory of an agent (made by :func:`define_memory`)."""

    kind: str
    id: str
    turns: int | None = None
    summarize: Summarize | None = None
    extract: Extract | None = None
    max_facts: int | None = None
    max_chars: int | None = None
    store: MemoryRows | None = None
    """Where it is kept; ``None``: the agent's run store (``Agent.create(store=...)``)."""

    def record(self) -> dict[str, Any]:
        """What the run's ``settings`` say of this memory (plain JSON, no code): enough for
        a replay to declare it again."""
        out: dict[str, Any] = {"id": self.id, "kind": self.kind}
        for name in ("turns", "max_facts", "max_chars"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> MemoryDefinition:
        """The memory a recording's ``settings`` declare, without its code (a replay reads
        what it recalled and wrote instead)."""
        return cls(
            kind=str(record["kind"]),
            id=str(record["id"]),
            turns=record.get("turns"),
            max_facts=record.get("max_facts"),
            max_chars=record.get("max_chars"),
        )


@checked_keywords
def define_memory(
    kind: str,
    *,
    id: str | None = None,
    turns: int | None = None,
    summarize: Summarize | None = None,
    extract: Extract | None = None,
    max_facts: int | None = None,
    max_chars: int | None = None,
    store: MemoryRows | None = None,
) -> MemoryDefinition:
    """A memory for ``AgentBuilder.memory(...)``: ``kind`` is ``"recent"`` (``turns=``, default
    10), ``"summary"`` (``summarize=fn(previous, turn)``) or ``"facts"`` (``extract=fn(turn)``,
    ``max_facts=`` default 50). ``id`` names it (default: the kind); two agents that name
    the same id on the same store share it. ``max_chars`` bounds what it serves a call.
    ``store`` defaults to the agent's run store."""
    if kind not in KINDS:
        raise AgentBuildError(
            f"define_memory({kind!r}): the kinds are {', '.join(map(repr, KINDS))} (the last "
            "turns, a running summary, facts by key)"
        )
    name = kind if id is None else id
    if not isinstance(name, str) or not _ID.fullmatch(name):
        raise AgentBuildError(
            f"define_memory({kind!r}, id={name!r}): an id starts with a letter and holds "
            "letters, digits, '_' or '-' (at most 64)"
        )
    given = {"turns": turns, "summarize": summarize, "extract": extract, "max_facts": max_facts}
    for option, value in given.items():
        if value is not None and _OWN[option] != kind:
            raise AgentBuildError(
                f"define_memory({kind!r}, {option}=...): {option} belongs to kind "
                f"{_OWN[option]!r}; drop it, or use define_memory({_OWN[option]!r}, ...)"
            )
    if kind == "recent":
        turns = (
            10 if turns is None else _positive(f"define_memory('recent', turns={turns!r})", turns)
        )
    if kind == "summary" and not callable(summarize):
        raise AgentBuildError(
            "define_memory('summary') needs summarize=fn(previous, turn) returning the new "
            "summary (a str; previous is None the first time)"
        )
    if kind == "facts":
        if not callable(extract):
            raise AgentBuildError(
                "define_memory('facts') needs extract=fn(turn) returning {key: value} (str to "
                "str; an empty dict keeps nothing)"
            )
        max_facts = (
            50
            if max_facts is None
            else _positive(f"define_memory('facts', max_facts={max_facts!r})", max_facts)
        )
    if max_chars is not None:
        max_chars = _positive(f"define_memory({kind!r}, max_chars={max_chars!r})", max_chars)
    if store is not None and not isinstance(store, MemoryRows):
        raise AgentBuildError(
            f"define_memory({kind!r}, store={store!r}): use a store that keeps memory "
            "(SqliteStore, PostgresStore or MemoryStore), or leave store= out to use the "
            "agent's run store"
        )
    return MemoryDefinition(kind, name, turns, summarize, extract, max_facts, max_chars, store)


def _positive(what: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise AgentBuildError(f"{what}: use a whole number >= 1")
    return value
