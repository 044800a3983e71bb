"""How a "no data" answer is measured: ``score_absence`` scores one turn off the record and the
declaration alone (nothing fuzzier than declared strings: ids and aliases, whole words, ``_``
standing for a space, a plural allowed); ``summarize_absence`` tallies k of n per check."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._spec import Ontology, OntologyError

__all__ = [
    "AbsenceExpectation",
    "AbsenceScore",
    "AbsenceSummary",
    "AbsenceTurn",
    "score_absence",
    "summarize_absence",
]

_MAP_WORDS = re.compile(r"(?<![\w-])(ontolog(?:y|ies|ical)|maps?)(?![\w-])", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class AbsenceTurn:
    """One turn as the record holds it: the ``answer``, the ``tools_called`` (names, in order)
    and ``unsupported_values`` (the evidence gate's count, when the record carries one)."""

    answer: str
    tools_called: Sequence[str] = ()
    unsupported_values: int | None = None


@dataclass(frozen=True, slots=True)
class AbsenceExpectation:
    """What the bench author declared, before the run, the question turns on: ``gap``, a node
    id or a source id of the map."""

    gap: str


@dataclass(frozen=True, slots=True)
class AbsenceScore:
    """One turn's score. ``named_gap``: the answer named the gap (its id or an alias);
    ``named_neighbour``: it named a declared neighbour (a holding source, a reading tool, a
    term one relation away; ``None`` when the map declares none) and ``neighbours`` which;
    ``tool_calls`` and ``unsupported_values`` as the turn says; ``map_words``: the words for
    the map itself (ontology and its forms, map/maps) the answer used on the person."""

    gap: str
    named_gap: bool
    named_neighbour: bool | None
    neighbours: tuple[str, ...]
    tool_calls: int
    unsupported_values: int | None
    map_words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AbsenceSummary:
    """k of n per check, each over the turns that had it: ``named_gap`` and ``spoke_of_map``
    over every turn, ``named_neighbour`` over the turns whose gap has a neighbour,
    ``no_unsupported_values`` over the turns that carried a count; ``tool_calls`` in all."""

    turns: int
    named_gap: tuple[int, int]
    named_neighbour: tuple[int, int]
    spoke_of_map: tuple[int, int]
    no_unsupported_values: tuple[int, int]
    tool_calls: int


def _phrase(text: str) -> re.Pattern[str]:
    """A declared string as a whole-word pattern: case-insensitive, ``_`` and space alike, a
    plural ``s``/``es`` allowed."""
    words = re.split(r"[ _]+", text.strip())
    body = r"[ _]+".join(re.escape(w) for w in words if w)
    return re.compile(rf"(?<![\w-]){body}(?:e?s)?(?![\w-])", re.IGNORECASE)


def _said(answer: str, names: Iterable[str]) -> bool:
    return any(_phrase(name).search(answer) for name in names)


def _names(spec: Mapping[str, Any], kind: str, key: str) -> list[str]:
    entry = spec[kind][key]
    return [key, *entry.get("aliases", ())]


def score_absence(
    spec: Ontology | Mapping[str, Any],
    turn: AbsenceTurn,
    expected: AbsenceExpectation | str,
) -> AbsenceScore:
    """Score one turn against the map: did the answer name the gap, a declared neighbour of
    it, or the map itself? A gap the map does not declare is refused
    (:class:`OntologyError`)."""
    plain = spec.spec() if isinstance(spec, Ontology) else spec
    gap = expected.gap if isinstance(expected, AbsenceExpectation) else expected
    nodes: Mapping[str, Any] = plain["nodes"]
    sources: Mapping[str, Any] = plain.get("sources") or {}
    neighbours: dict[str, list[str]] = {}  # neighbour id -> the strings that name it
    if gap in nodes:
        gap_names = _names(plain, "nodes", gap)
        for held in nodes[gap].get("sources", ()):
            neighbours[held["source"]] = _names(plain, "sources", held["source"])
            for tool in held.get("via", ()):
                neighbours[tool] = [tool]
        for edge in plain.get("edges") or ():
            for a, b in ((edge["from"], edge["to"]), (edge["to"], edge["from"])):
                if a == gap and b != gap:
                    neighbours[b] = _names(plain, "nodes", b)
    elif gap in sources:
        gap_names = _names(plain, "sources", gap)
        for nid, node in nodes.items():
            for held in node.get("sources", ()):
                if held["source"] == gap:
                    neighbours[nid] = _names(plain, "nodes", nid)
                    for tool in held.get("via", ()):
                        neighbours[tool] = [tool]
    else:
        raise OntologyError(
            str(plain.get("id")),
            "expected.gap",
            f"names {gap!r}, which the map does not declare; name one of its nodes "
            f"({', '.join(sorted(nodes))}) or sources ({', '.join(sorted(sources)) or 'none'})",
        )
    answer = turn.answer
    named = tuple(n for n, said_as in neighbours.items() if _said(answer, said_as))
    words: dict[str, None] = {}
    for m in _MAP_WORDS.finditer(answer):
        words[m.group(1).lower()] = None
    return AbsenceScore(
        gap=gap,
        named_gap=_said(answer, gap_names),
        named_neighbour=bool(named) if neighbours else None,
        neighbours=named,
        tool_calls=len(turn.tools_called),
        unsupported_values=turn.unsupported_values,
        map_words=tuple(words),
    )


def summarize_absence(scores: Iterable[AbsenceScore]) -> AbsenceSummary:
    """Tally scored turns: k of n per check, over the turns that had it."""
    rows = list(scores)
    with_neighbours = [s for s in rows if s.named_neighbour is not None]
    counted = [s for s in rows if s.unsupported_values is not None]
    return AbsenceSummary(
        turns=len(rows),
        named_gap=(sum(s.named_gap for s in rows), len(rows)),
        named_neighbour=(
            sum(bool(s.named_neighbour) for s in with_neighbours),
            len(with_neighbours),
        ),
        spoke_of_map=(sum(bool(s.map_words) for s in rows), len(rows)),
        no_unsupported_values=(sum(s.unsupported_values == 0 for s in counted), len(counted)),
        tool_calls=sum(s.tool_calls for s in rows),
    )
