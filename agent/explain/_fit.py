"""Bounding what a trace tool returns: every result is JSON of at most ``max_chars``
characters, and what was left out to get there is said in the result itself (its
``truncated`` entry), never dropped silently.

The cuts, in order until the text fits: long texts are cut (each saying how many characters
it lost) and long lists shortened, then the list a tool pages through ends early with the
number to ask ``from`` next, then the texts and lists are cut shorter. Pure: the same
payload and bound always give the same text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["MIN_MAX_CHARS", "fitted"]

MIN_MAX_CHARS = 500
"""The smallest ``max_chars`` a trace tool takes (a result must have room for its cuts)."""

_MIN_TEXT = 40
_MIN_LIST = 3
_DEPTH = 12
_NAMED = 5
"""How many places of each kind of cut the ``truncated`` entry names (the rest counted)."""


class _Cuts:
    """The cuts made to one payload: where texts and lists were shortened."""

    __slots__ = ("lists", "texts")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.lists: list[str] = []


def _text(value: str, cap: int, at: str, cuts: _Cuts) -> str:
    if len(value) <= cap:
        return value
    cuts.texts.append(at)
    return f"{value[:cap]}… [{len(value) - cap} more chars]"


def _shrunk(value: Any, cap: int, items: int, at: str, cuts: _Cuts, depth: int) -> Any:
    """``value`` with its texts cut to ``cap`` characters and its lists (and mappings) to
    ``items`` entries; below ``_DEPTH`` levels a value is shown as its JSON text (cut too)."""
    if isinstance(value, str):
        return _text(value, cap, at, cuts)
    if isinstance(value, Mapping):
        if depth >= _DEPTH:
            return _text(_dumps(value), cap, at, cuts)
        keys = list(value)
        if len(keys) > items:
            cuts.lists.append(at or "(the result)")
        out: dict[str, Any] = {
            str(k): _shrunk(value[k], cap, items, f"{at}.{k}" if at else str(k), cuts, depth + 1)
            for k in keys[:items]
        }
        if len(keys) > items:
            out["…"] = f"{len(keys) - items} more entries"
        return out
    if isinstance(value, list | tuple):
        if depth >= _DEPTH:
            return _text(_dumps(value), cap, at, cuts)
        kept = [
            _shrunk(v, cap, items, f"{at}[{i}]", cuts, depth + 1)
            for i, v in enumerate(value[:items])
        ]
        if len(value) > items:
            cuts.lists.append(at or "(the result)")
            kept.append(f"… {len(value) - items} more items")
        return kept
    return value


def _dumps(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def _named(places: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"count": len(places), "at": places[:_NAMED]}
    return out


def fitted(
    payload: Mapping[str, Any],
    max_chars: int,
    page: str | None = None,
    start: int = 1,
) -> str:
    """``payload`` as JSON of at most ``max_chars`` characters. ``page`` names the list the
    tool pages through (its first item is number ``start``): it is shortened by whole items
    first and the ``truncated`` entry says which were shown and the number to ask ``from``
    next. Every other cut (a text, another list) is named there too."""
    whole = _dumps(payload)
    if len(whole) <= max_chars:  # what fits is given whole: no text is cut to its share
        return whole
    items_all: list[Any] = list(payload.get(page) or ()) if page is not None else []
    shown = len(items_all)
    cap = max(_MIN_TEXT, max_chars // 4)
    lengths = 50
    while True:
        cuts = _Cuts()
        body: dict[str, Any] = {}
        for key, value in payload.items():
            if key == page:  # paged by whole items, each item shrunk
                body[key] = [
                    _shrunk(v, cap, lengths, f"{key}[{i}]", cuts, 1)
                    for i, v in enumerate(items_all[:shown])
                ]
            else:
                body[key] = _shrunk(value, cap, lengths, key, cuts, 1)
        note: dict[str, Any] = {}
        if page is not None and shown < len(items_all):
            note["items"] = {
                "shown": [start, start + shown - 1] if shown else [],
                "of": start + len(items_all) - 1,
                "next_from": start + shown,
            }
        if cuts.texts:
            note["texts"] = _named(cuts.texts)
        if cuts.lists:
            note["lists"] = _named(cuts.lists)
        if note:
            body["truncated"] = {"max_chars": max_chars, **note}
        text = _dumps(body)
        if len(text) <= max_chars:
            return text
        if shown > 1:  # whole items first: the rest is one call away
            shown = max(1, min(shown - 1, shown * max_chars // len(text)))
        elif cap > _MIN_TEXT or lengths > _MIN_LIST:
            cap, lengths = max(_MIN_TEXT, cap // 2), max(_MIN_LIST, lengths // 2)
        elif shown == 1:
            shown = 0
        else:  # cannot be shown in the bound even cut: say so, as data
            return _dumps(
                {
                    "truncated": {
                        "max_chars": max_chars,
                        "note": "this result cannot be shown within max_chars even cut; "
                        "ask for less (a later 'from', one step with trace_commit)",
                        "chars": len(text),
                    }
                }
            )
