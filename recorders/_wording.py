"""How the narrative words things: values in short, decisions and merges in a phrase.

Shared by the narrative recorder and anything else that tells a run (the JSONL recorder
marks absent reads with :func:`is_absent`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from trackway.engine import Commit, CommitDetail, FrozenDict, FrozenList

__all__ = ["decision_text", "is_absent", "merge_text", "summarize"]

_JSON_TYPES = (str, int, float, bool, type(None), FrozenList, FrozenDict, list, dict)
_DICT_KEYS_SHOWN = 4


def is_absent(value: Any) -> bool:
    """True for the engine's marker of an absent key (a read value that is not JSON)."""
    return not isinstance(value, _JSON_TYPES)


def summarize(value: Any, max_chars: int = 40) -> str:
    """A short rendering of a state value.

    Strings are quoted (and cut after ``max_chars`` characters, marked ``...``), numbers and
    booleans are printed raw (JSON spelling). A list or a dict is shown with its values —
    ``["a", "b"]``, ``{city: "Paris"}``, nested the same way, the strings inside cut
    shorter when that makes it fit — in three times ``max_chars``; otherwise as
    ``(N items)`` or ``{a, b, ... (N keys)}``.
    """
    if isinstance(value, (FrozenList, list, Mapping)) and value:
        # values first; strings inside cut shorter if that makes it fit; else counts and keys
        for cut in dict.fromkeys((max_chars, max(max_chars // 2, 8), max(max_chars // 4, 8))):
            inline = _inline(value, cut, 3 * max_chars)
            if inline is not None:
                return inline
    return _short(value, max_chars)


def _short(value: Any, max_chars: int) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= max_chars else value[:max_chars] + "..."
        return orjson.dumps(text).decode()
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (FrozenList, list)):
        n = len(value)
        return "[]" if n == 0 else f"({n} item{'' if n == 1 else 's'})"
    if isinstance(value, Mapping):
        keys = [str(k) for k in value]
        if not keys:
            return "{}"
        if len(keys) <= _DICT_KEYS_SHOWN:
            return "{" + ", ".join(keys) + "}"
        shown = ", ".join(keys[:_DICT_KEYS_SHOWN])
        return "{" + f"{shown}, ... ({len(keys)} keys)" + "}"
    if is_absent(value):
        return "(absent)"
    return type(value).__name__  # pragma: no cover - state values are JSON


def _inline(value: Any, max_chars: int, budget: int) -> str | None:
    """``value`` with its values shown, or ``None`` when that takes more than ``budget``."""
    if isinstance(value, Mapping):
        parts = []
        for key, item in value.items():
            shown = _inline(item, max_chars, budget) if _nested(item) else _short(item, max_chars)
            if shown is None:
                return None
            parts.append(f"{key}: {shown}")
            budget -= len(parts[-1]) + 2
            if budget < 2:
                return None
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, (FrozenList, list)):
        items = []
        for item in value:
            shown = _inline(item, max_chars, budget) if _nested(item) else _short(item, max_chars)
            if shown is None:
                return None
            items.append(shown)
            budget -= len(shown) + 2
            if budget < 2:
                return None
        return "[" + ", ".join(items) + "]"
    return _short(value, max_chars)


def _nested(value: Any) -> bool:
    return isinstance(value, (FrozenList, list, Mapping)) and bool(value)


def _rule_name(rule: Mapping[str, Any]) -> str:
    label = rule.get("label")
    return f"'{label}'" if label else f"#{rule.get('rule')}"


def decision_text(
    chosen: Sequence[str], evidence: Any, names: Mapping[str, str] | None = None
) -> str:
    """The plain-English fragment for a decision (``names`` maps branch keys to names)."""
    ev: Mapping[str, Any] = evidence if isinstance(evidence, Mapping) else {}
    rules = ev.get("rules")
    if "selected" in ev:
        keys = [str(k) for k in ev["selected"]]
        listing = ", ".join(keys)
        if rules is None:
            return f"selected {listing}" if keys else "selected no branch"
        matched = [_rule_name(r) for r in rules if r.get("matched")]
        if not matched:
            return "selected no branch; no rule matched"
        which = "rule" if len(matched) == 1 else "rules"
        return f"selected {listing} because {which} {', '.join(matched)} matched"
    key = chosen[0] if chosen else str(ev.get("chosen"))
    name = (names or {}).get(key, key)
    if rules is not None:
        if ev.get("default"):
            return f"chose {name}: no rule matched; default"
        winner = next((r for r in reversed(rules) if r.get("matched")), None)
        if winner is not None:
            return f"chose {name} because rule {_rule_name(winner)} matched"
    if ev.get("default"):
        return f"chose {name} (default)"
    return f"chose {name}"


def merge_text(commit: Commit, detail: CommitDetail) -> str:
    merge = detail.get("merge")
    if merge is not None:
        branches = ", ".join(str(b) for b in merge.get("branches", ()))
        return f"Merged {commit.stage_name}: branches {branches}"
    each = detail.get("for_each")
    if each is not None:
        text = f"Merged {commit.stage_name}: {each.get('ran')} of {each.get('items')} items"
        if each.get("dropped"):
            text += f" ({each['dropped']} dropped)"
        return text
    return f"Merged {commit.stage_name}"
