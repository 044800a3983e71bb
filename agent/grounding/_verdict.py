"""The gate's verdict on one answer: which of the values it states the turn's tool results
carry, which only an absence carries, and which none does.

What is judged is the model's own answer: its text with the findings notes taken out (never
the library's limits block or an output link's rewrite: a revision ask must name values the
model wrote). A typed answer (an output schema) is judged field by field: each string read
as prose, each number as a number; its keys are the schema's words and are not judged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ._corpus import EvidenceCorpus, Grounding
from ._values import AnswerValue, answer_values

__all__ = ["MAX_LISTED", "Judged", "judge", "judged_values", "text_leaves"]

MAX_LISTED = 32
"""How many values a verdict lists; the rest are counted (``values_omitted``)."""


@dataclass
class Judged:
    """Each distinct value of an answer, by normal form, with its spellings and where the
    corpus found it (``None``: nowhere)."""

    values: dict[str, tuple[AnswerValue, list[str], Grounding | None]] = field(default_factory=dict)

    @property
    def candidates(self) -> int:
        return len(self.values)

    @property
    def unsupported(self) -> list[tuple[AnswerValue, list[str]]]:
        return [(v, s) for v, s, found in self.values.values() if found is None]

    @property
    def by_absence(self) -> list[tuple[AnswerValue, list[str], Grounding]]:
        return [(v, s, f) for v, s, f in self.values.values() if f is not None and f.by_absence]


def judged_values(content: str, typed: bool) -> list[AnswerValue]:
    """The values of an answer: prose, or with ``typed`` a JSON answer's fields (an answer
    that is not JSON is read as prose)."""
    if typed:
        try:
            parsed = orjson.loads(content)
        except orjson.JSONDecodeError:
            parsed = content
        if not isinstance(parsed, str):
            return [v for text in text_leaves(parsed) for v in answer_values(text)]
    return answer_values(content)


def text_leaves(value: Any) -> Iterator[str]:
    """The strings and numbers (as text) of a JSON-like value, depth first: where values are
    looked for in a structured answer or a call's arguments."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from text_leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from text_leaves(item)
    elif isinstance(value, str):
        yield value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)


def judge(corpus: EvidenceCorpus, values: list[AnswerValue]) -> Judged:
    """Each distinct value looked up once; its spellings in the order the answer used them."""
    judged = Judged()
    for value in values:
        known = judged.values.get(value.value)
        if known is not None:
            if value.spelling not in known[1]:
                known[1].append(value.spelling)
            continue
        judged.values[value.value] = (value, [value.spelling], corpus.find(value))
    return judged


def listed(
    judged: Judged, unquoted: Callable[[str], str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """The verdict's ``values`` and ``by_absence`` entries (at most ``MAX_LISTED`` values:
    the count left out is the third item). A value a tool hid (``ctx.redact``) is listed
    masked: ``unquoted`` masks every hidden text."""
    values = []
    for value, spellings in judged.unsupported[:MAX_LISTED]:
        values.append(_entry(value, spellings, unquoted))
    absent = []
    for value, spellings, found in judged.by_absence:
        entry = _entry(value, spellings, unquoted)
        entry["carriers"] = list(found.carriers)
        if found.truncated:
            entry["truncated"] = True
        if found.looked_for_only:
            entry["looked_for_only"] = True
        absent.append(entry)
    return values, absent, max(0, len(judged.unsupported) - MAX_LISTED)


def _entry(
    value: AnswerValue, spellings: list[str], unquoted: Callable[[str], str]
) -> dict[str, Any]:
    masked = [unquoted(s) for s in spellings]
    hidden = masked != spellings or unquoted(value.value) != value.value
    entry: dict[str, Any] = {"value": masked[0] if hidden else value.value, "kind": value.kind}
    if hidden or masked != [value.value]:
        entry["spellings"] = masked
    return entry
