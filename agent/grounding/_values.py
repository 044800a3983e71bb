"""The evidence gate's value rule: which tokens of an answer are names and numbers, and the
one normal form an answer's value and a tool result's word are compared in.

Text is read after unicode NFKC. A *token* is a run of letters and digits, joined by
single ``- _ . / @ : '`` between them (``fc1/7``, ``user_id``, ``v2.3.1``, ``O'Brien``), a
trailing ``%`` kept; a number written in groups of three digits with one separator (``1,200``,
``1 200``, ``1_200``, ``1'200``) is one token. A token with a digit is a *number*; a token
without one is a *name* when it has the shape of one: ``_`` or ``@`` inside, a dotted name
with two parts of two letters or more (``config.yaml``, not ``e.g``), a path of three parts
(``var/log/syslog``), all capitals of two letters or more (``AAPL``), a capital after a
small letter (``iPhone``), or a capital first letter not at a sentence's start (``Acme``).
An all-letters word in small letters is never a value, nor is a capitalised word that
starts a sentence, a line, a list item or a table cell, nor one of a few words written
with a capital by convention (``STOP_WORDS``: ``I``, days, months, ``OK``, emphasis words).
Text in double quotes, curly quotes, guillemets or backticks of two tokens or more is one
*phrase* (a name), found in a result as written (case and spacing aside).

The normal form: NFKC, casefold, a possessive ``'s`` dropped, the group separators of a
number removed; a bare number is compared by value (``3.50`` = ``3.5``, ``007`` = ``7``,
``1,200.0`` = ``1200``), an ordinal by its number (``15th`` = ``15``), a version by its
numbers read the same way (``v2.3.1`` = ``2.3.1``, ``v2.10`` = ``2.1``) and a percentage by
its number (``12%`` = ``12``).
Everything here is a pure function of its text: a recording folds the same way anywhere.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "STOP_WORDS",
    "AnswerValue",
    "answer_values",
    "normal_phrase",
    "normal_text",
    "token_keys",
    "value_of",
]

Kind = Literal["name", "number"]

_SEPARATORS = ",  _'’"
_GROUPED = r"(?<![\w.,'’])\d{1,3}(?P<sep>[, _'’])\d{3}(?:(?P=sep)\d{3})*(?:\.\d+)?(?!\w|(?P=sep)\d)"
_WORD = r"[^\W_]+(?:[-_./@:'’][^\W_]+)*"
_TOKEN = re.compile(rf"(?P<grouped>{_GROUPED})%?|(?P<word>{_WORD})%?")
_QUOTED = re.compile(r'"([^"\n]{1,200})"|“([^”\n]{1,200})”|«([^»\n]{1,200})»|`([^`\n]{1,200})`')
_LETTERS = re.compile(r"(?<![^\W_])[^\W\d_]+(?![^\W_])")  # a word of letters, or a part
_COMPOUND = re.compile(  # a token with a digit or a joiner in it
    rf"(?P<grouped>{_GROUPED})%?|(?<![^\W_])(?=[^\W_]*?(?:\d|[-_./@:'][^\W_])){_WORD}%?"
)
_SENTENCE_END = re.compile(r"[.!?:;|\n]")
_DECIMAL = re.compile(r"(\d+)(?:\.(\d+))?")
_ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)")
_VERSION = re.compile(r"v(\d[\d.]*)")
_PARTS = re.compile(r"[-_./@:']")
_SEGMENTS = re.compile(r"[/@:]")

STOP_WORDS = frozenset(
    {
        *("i", "i'm", "i've", "i'll", "i'd"),
        *("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
        *("january", "february", "march", "april", "may", "june", "july"),
        *("august", "september", "october", "november", "december"),
        *("mr", "mrs", "ms", "dr", "prof", "ok", "okay", "am", "pm", "fyi", "asap", "tbd"),
        *("n/a", "tl", "note", "important", "warning", "caution", "not", "no", "yes"),
        *("all", "none", "only", "never", "always", "must", "and", "or", "the", "do"),
    }
)
"""Words with a capital by convention, not because they name something: never values."""


@dataclass(frozen=True)
class AnswerValue:
    """One value an answer states: its normal form (``value``), its ``kind``, and how the
    answer spelled it (``spelling``); ``phrase`` for quoted text matched as written."""

    value: str
    kind: Kind
    spelling: str
    phrase: bool = False


def normal_text(text: str) -> str:
    """``text`` as the rule reads it: NFKC, with ``’`` read as ``'``."""
    return unicodedata.normalize("NFKC", text).replace("’", "'")


def normal_phrase(text: str) -> str:
    """A phrase's normal form: casefolded, runs of white space made one space."""
    return " ".join(normal_text(text).casefold().split())


def _number_key(core: str) -> str:
    """A number token's normal form (``core``: casefolded, no separators, no ``%``)."""
    decimal = _DECIMAL.fullmatch(core)
    if decimal is None:
        ordinal = _ORDINAL.fullmatch(core)
        if ordinal is not None:
            decimal = _DECIMAL.fullmatch(ordinal.group(1))
        else:
            version = _VERSION.fullmatch(core)  # its numbers, read as a bare number is
            return _number_key(version.group(1)) if version is not None else core
    assert decimal is not None
    whole = decimal.group(1).lstrip("0") or "0"
    fraction = (decimal.group(2) or "").rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def _core(token: str) -> str:
    """A token without its ``%`` and possessive ``'s``."""
    core = token.removesuffix("%")
    if len(core) > 2 and core[-2:].lower() == "'s":
        core = core[:-2]
    return core


def _key(core: str, grouped: bool) -> tuple[Kind, str]:
    """The kind and normal form of a token's core."""
    if grouped:
        core = "".join(c for c in core if c not in _SEPARATORS)
    folded = core.casefold()
    if not core.isalpha() and any(map(str.isdigit, core)):
        return "number", _number_key(folded)
    return "name", folded


def _is_name(core: str, at_start: bool) -> bool:
    """Whether a digit-free token has the shape of a name."""
    if core.casefold() in STOP_WORDS:
        return False
    if "_" in core or "@" in core:
        return True
    if "." in core and sum(len(p) >= 2 for p in core.split(".")) >= 2:
        return True
    if core.count("/") >= 2:
        return True
    letters = [c for c in core if c.isalpha()]
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return True
    if any(a.islower() and b.isupper() for a, b in itertools.pairwise(core)):
        return True
    return core[0].isupper() and not at_start


def _quoted(text: str) -> Iterator[tuple[int, int, str]]:
    """The quoted spans of two tokens or more: start, end and the quoted text."""
    for match in _QUOTED.finditer(text):
        inner = next(g for g in match.groups() if g is not None)
        if sum(1 for _ in _TOKEN.finditer(inner)) >= 2:
            yield match.start(), match.end(), inner


def value_of(text: str) -> AnswerValue | None:
    """The one value ``text`` is, whatever its shape (a claim contract's capture: the
    pattern, not the name rule, says it is a value): one token's normal form, or a phrase
    of several; ``None`` when it has no letter or digit."""
    text = normal_text(text).strip()
    tokens = list(_TOKEN.finditer(text))
    if len(tokens) == 1 and tokens[0].group(0) == text:
        kind, value = _key(_core(text), tokens[0].group("grouped") is not None)
        return AnswerValue(value, kind, text)
    if not tokens:
        return None
    return AnswerValue(normal_phrase(text), "name", text, phrase=True)


def answer_values(text: str) -> list[AnswerValue]:
    """Every name and number ``text`` states, in order of first appearance, one entry per
    spelling (two spellings of one value are two entries with one ``value``)."""
    text = normal_text(text)
    spans = list(_quoted(text))
    out: list[AnswerValue] = []
    seen: set[tuple[str, str]] = set()

    def add(value: AnswerValue) -> None:
        if (value.value, value.spelling) not in seen:
            seen.add((value.value, value.spelling))
            out.append(value)

    at = 0  # the next quoted span not yet passed
    said = -1  # the last span whose phrase was added
    last_end: int | None = None
    opens = False  # the token after a list item's number opens a sentence
    for match in _TOKEN.finditer(text):
        start, end = match.span()
        while at < len(spans) and spans[at][1] <= start:
            at += 1
        if at < len(spans) and spans[at][0] <= start:  # inside a quoted phrase
            if said != at:
                said = at
                inner = spans[at][2]
                add(AnswerValue(normal_phrase(inner), "name", inner, phrase=True))
            last_end = end
            continue
        gap = text[last_end:start] if last_end is not None else "\n"
        last_end = end
        at_start = opens or _SENTENCE_END.search(gap) is not None
        opens = False
        token = match.group(0)
        core = _core(token)
        kind, value = _key(core, match.group("grouped") is not None)
        if kind == "number":
            marker = _marker(text, start, end, core, gap)
            if marker is not None:
                opens = marker == "item"
                continue
            add(AnswerValue(value, kind, token))
        elif _is_name(core, at_start):
            add(AnswerValue(value, kind, token))
    return out


def _marker(text: str, start: int, end: int, core: str, gap: str) -> str | None:
    """``"item"`` for a list item's number (``1.`` or ``2)`` opening a line), ``"citation"``
    for a citation (``[3]``), else ``None``."""
    if not core.isdigit():
        return None
    after = text[end : end + 1]
    opening = "\n" in gap and gap.strip(" \t\n#>*-") == ""
    if opening and after in (".", ")") and text[end + 1 : end + 2] in ("", " ", "\t", "\n"):
        return "item"
    if text[start - 1 : start] == "[" and after == "]":
        return "citation"
    return None


def token_keys(text: str) -> set[str]:
    """The normal forms a result's ``text`` can ground: each token's, and for a compound
    token each segment's between ``/ @ :`` (``bob@acme.com``: ``acme.com``) and each part's
    between any joiner (``2024-01-15``: ``2024``, ``1``, ``15``); any word, shaped or not. A
    number grouped by spaces grounds its groups too (``12 345``: ``12345``, ``12``, ``345``).

    Words of letters are gathered in one pass of the regular expression engine; only the
    tokens with a digit or a joiner are worked out one by one, each distinct one once."""
    text = normal_text(text)
    keys = {word.casefold() for word in set(_LETTERS.findall(text))}
    done: set[tuple[str, bool]] = set()
    for match in _COMPOUND.finditer(text):
        token = match.group(0)
        grouped = match.group("grouped") is not None
        if (token, grouped) in done:
            continue
        done.add((token, grouped))
        core = _core(token)
        keys.add(_key(core, grouped)[1])
        if grouped and match.group("sep") == " ":  # "12 345" may be two numbers as well
            keys.update(_key(part, False)[1] for part in core.split(" "))
        if grouped or _DECIMAL.fullmatch(core):
            continue
        for splitter in (_SEGMENTS, _PARTS):
            parts = splitter.split(core)
            if len(parts) > 1:
                keys.update(_key(part, False)[1] for part in parts if part)
    return keys
