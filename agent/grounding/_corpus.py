"""The evidence corpus: what the tools wrote in the current turn, indexed by the value rule's
normal forms, with the ids of the results that carried each value.

The current turn is the messages after the person's last message in ``history`` (so an
earlier turn of a continued conversation is not evidence, and a ``resume_on_error`` run
keeps the results its failed attempt read). Of each tool message there, only the tool's own
words count:

- a result the library wrote is not evidence: a ``failure`` (it echoes the arguments), a
  ``denied``, ``invalid`` or ``pending`` one (a gate, a link, a refusal, a question), and
  what the skills' doors (``read_skill``, ``list_skills``...) return: the app's words;
- text the library appended after the tool's own (a note on filled arguments, the
  repeated-call nudge, a cap's line) is cut off at the row's ``tool_chars``;
- in a declared result, the library's ``note`` and an absence's markers are left out, and
  an absence's ``looked_for`` (which quotes what the model asked for) is indexed apart: a
  value found only in an absence is grounded *by an absence*, which the verdict says.

A JSON result is read as its keys and values (so an escape never glues two words); any
other text as it is. Results are taken whole, in call order, while the corpus stays within
``max_tokens`` (estimated as characters / 4); the first that would pass it ends the corpus,
which is then ``truncated``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from trackway.tools.results._declared import ABSENCE_MARKER, COVERAGE_MARKER

from ..messages._messages import is_said_by_person
from ._values import AnswerValue, normal_phrase, token_keys

__all__ = ["CHARS_PER_TOKEN", "MAX_CARRIERS", "NOT_EVIDENCE", "EvidenceCorpus", "Grounding"]

MAX_CARRIERS = 8
"""How many carrier ids a value keeps; past that it is marked ``truncated``."""

CHARS_PER_TOKEN = 4
"""The corpus's token estimate: characters / 4."""

NOT_EVIDENCE = frozenset({"failure", "denied", "invalid", "pending"})
"""The statuses whose results the library wrote: never evidence."""
_ABSENCE_LIBRARY = frozenset({ABSENCE_MARKER, "outcome", "retry_returns_the_same", "note"})
_JOIN = " \x00 "  # between a result's words: a phrase never spans two of them


@dataclass(frozen=True)
class Grounding:
    """Where a value was found: the ids of the results that carried it (at most
    ``MAX_CARRIERS``, ``truncated`` past that), and whether every one was an absence
    (``by_absence``) — then ``looked_for_only`` when only an absence's ``looked_for`` had it."""

    carriers: tuple[str, ...]
    truncated: bool = False
    by_absence: bool = False
    looked_for_only: bool = False


@dataclass
class EvidenceCorpus:
    """The current turn's tool results, indexed. Build with :meth:`of`."""

    max_tokens: int | None = None
    results: int = 0
    """How many results were indexed."""
    chars: int = 0
    truncated: bool = False
    """The token ceiling ended the corpus: a later result was not indexed."""
    cut_by: str | None = None
    """What ended it: ``"max_corpus_tokens"``, or the answer-validation limit."""
    _index: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _over: set[str] = field(default_factory=set, repr=False)
    _facts: set[str] = field(default_factory=set, repr=False)
    _looked: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _texts: list[tuple[str, str, bool]] = field(default_factory=list, repr=False)
    _looked_texts: list[tuple[str, str]] = field(default_factory=list, repr=False)

    @property
    def tokens(self) -> int:
        """The corpus's size in estimated tokens."""
        return math.ceil(self.chars / CHARS_PER_TOKEN)

    @classmethod
    def of(
        cls,
        history: Sequence[Mapping[str, Any]],
        rows: Sequence[Mapping[str, Any]] = (),
        max_tokens: int | None = None,
        library: frozenset[str] = frozenset(),
        admit: Callable[[str], str | None] | None = None,
    ) -> EvidenceCorpus:
        """The corpus of the turn ``history`` ends with (``rows``: the run's
        ``tool_results``, which say each result's status and where the tool's text ends;
        ``library``: the names of the library's own tools, the skills' doors; ``admit``:
        answer validation's limits, asked before each result is read — the limit that
        refuses it ends the corpus, as the token ceiling does, and is its ``cut_by``)."""
        corpus = cls(max_tokens)
        by_id = {row["id"]: row for row in rows}
        for message in _turn_results(history):
            if message.get("name") in library:
                continue
            row = by_id.get(message.get("tool_call_id"))
            if row is not None and row.get("status") in NOT_EVIDENCE:
                continue
            text = str(message.get("content") or "")
            if row is not None and "tool_chars" in row:
                text = text[: int(row["tool_chars"])]
            if not corpus._fits(len(text)):
                corpus.truncated, corpus.cut_by = True, "max_corpus_tokens"
                break
            refused = None if admit is None else admit(text)
            if refused is not None:
                corpus.truncated, corpus.cut_by = True, refused
                break
            corpus.add(str(message.get("tool_call_id")), text, row)
        return corpus

    def _fits(self, chars: int) -> bool:
        if self.max_tokens is None:
            return True
        return math.ceil((self.chars + chars) / CHARS_PER_TOKEN) <= self.max_tokens

    def add(self, carrier: str, text: str, row: Mapping[str, Any] | None) -> None:
        """Index one result's ``text`` (the tool's own words) as carried by ``carrier``."""
        self.results += 1
        self.chars += len(text)
        parsed = _json(text)
        absence = (row is not None and row.get("status") == "absent") or (
            isinstance(parsed, dict) and parsed.get(ABSENCE_MARKER) is True
        )
        looked_for: list[str] = []
        words = [text] if parsed is _NOT_JSON else list(_words(parsed, absence, looked_for))
        joined = _JOIN.join(words)
        keys = token_keys(joined)
        for key in keys:
            kept = self._index.setdefault(key, [])
            if len(kept) < MAX_CARRIERS:
                kept.append(carrier)
            else:
                self._over.add(key)
        if not absence:
            self._facts.update(keys)
        self._texts.append((carrier, normal_phrase(joined), absence))
        if looked_for:
            said = _JOIN.join(looked_for)
            for key in token_keys(said) - keys:
                self._looked.setdefault(key, []).append(carrier)
            self._looked_texts.append((carrier, normal_phrase(said)))

    def find(self, value: AnswerValue) -> Grounding | None:
        """Where ``value`` was found, or ``None`` when no result of the turn has it."""
        if value.phrase:
            return self._find_phrase(value.value)
        carriers = self._index.get(value.value)
        if carriers:
            fact = value.value in self._facts
            return Grounding(tuple(carriers), value.value in self._over, by_absence=not fact)
        looked = self._looked.get(value.value)
        if looked:
            return _only_looked_for(looked)
        return None

    def _find_phrase(self, phrase: str) -> Grounding | None:
        pattern = re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")
        carriers = [(c, absence) for c, text, absence in self._texts if pattern.search(text)]
        if carriers:
            kept = tuple(c for c, _ in carriers[:MAX_CARRIERS])
            fact = any(not absence for _, absence in carriers)
            return Grounding(kept, len(carriers) > MAX_CARRIERS, by_absence=not fact)
        looked = [c for c, text in self._looked_texts if pattern.search(text)]
        return _only_looked_for(looked) if looked else None


def _only_looked_for(carriers: list[str]) -> Grounding:
    kept = tuple(carriers[:MAX_CARRIERS])
    return Grounding(kept, len(carriers) > MAX_CARRIERS, by_absence=True, looked_for_only=True)


def _turn_results(history: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The tool messages after the person's last message, in order."""
    out: list[Mapping[str, Any]] = []
    for at in range(len(history) - 1, -1, -1):
        message = history[at]
        if is_said_by_person(message):
            break
        if message.get("role") == "tool":
            out.append(message)
    out.reverse()
    return out


_NOT_JSON: Any = object()


def _json(text: str) -> Any:
    """``text`` parsed when it is a JSON object or array, else ``_NOT_JSON``."""
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return _NOT_JSON
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _NOT_JSON


def _words(value: Any, absence: bool, looked_for: list[str]) -> Iterator[str]:
    """The words a parsed result says: its keys and scalar values, but the library's parts
    of a declared result (an absence's ``looked_for`` goes to ``looked_for``)."""
    if isinstance(value, dict):
        described = "facts" in value and isinstance(value.get("note"), str)
        for key, item in value.items():
            if absence and key in _ABSENCE_LIBRARY:
                continue
            if absence and key == "looked_for":
                looked_for.extend(_words(item, False, []))
                continue
            if described and key == "note":
                continue
            if key == COVERAGE_MARKER and isinstance(item, dict):
                item = {k: v for k, v in item.items() if k != "note"}
            else:
                yield str(key)
            yield from _words(item, False, looked_for)
    elif isinstance(value, list):
        for item in value:
            yield from _words(item, False, looked_for)
    elif isinstance(value, str):
        yield value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)
