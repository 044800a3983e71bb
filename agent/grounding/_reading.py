"""What the answer checks read of a committed record: this turn's tool results (each call's
``tool_results`` row, the text the model read, that text cut back to the tool's own words,
and the arguments the model sent), and the person's words.

A library note appended to a tool's text (a filled argument's note, the repeated-call
nudge, a cut result's last line) is never read as the tool's words: a row that says how
long the tool's own text was (``tool_chars``) is cut there, and an older row is cut at the
notes its flags say were appended. A result the library wrote in the tool's place (an error,
a refusal, a denial, a withheld result) has no own words at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from trackway.engine import thaw

__all__ = ["TOOL_WORDS", "TurnResult", "own_text", "person_words", "turn_results"]

TOOL_WORDS = ("success", "partial", "absent")
"""The statuses whose text the tool wrote (the others are the library's words about a call:
an error, a refused argument, a denial, a call that never ran)."""

_NUDGE = " (You called {name} with these same arguments earlier in this turn and got this"
_TRUNCATED = "\n[truncated: the first "


@dataclass(frozen=True)
class TurnResult:
    """One call of this turn as the record holds it."""

    row: Mapping[str, Any]
    """Its ``tool_results`` row (id, name, iteration, status, flags)."""
    content: str
    """What the model read."""
    own: str
    """The tool's own words: ``content`` without the library's notes ("" when the library
    wrote the whole text)."""
    args: Mapping[str, Any] | None
    """The arguments the model sent (``None`` when the record has no call for the row)."""

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def name(self) -> str:
        return str(self.row["name"])


def turn_results(state: Mapping[str, Any]) -> list[TurnResult]:
    """This run's tool calls, in the order their rows were written (a continued
    conversation's earlier turns are not this run: their messages came in ``prior_history``)."""
    rows = [dict(r) for r in thaw(state.get("tool_results", ()))]
    if not rows:
        return []
    history = state.get("history", ())
    prior = len(state.get("prior_history", ()))
    findings = bool(thaw(state.get("settings", {})).get("findings"))
    served: dict[str, list[str]] = {}
    args: dict[str, Mapping[str, Any]] = {}
    for message in _this_turn(history, prior):
        for call in message.get("tool_calls") or ():
            given = thaw(call.get("args") or {})
            if findings and isinstance(given, dict):  # as dispatch saw them: peeled
                given = {k: v for k, v in given.items() if k != "_findings"}
            args[str(call.get("id"))] = given if isinstance(given, Mapping) else {}
        if message.get("role") == "tool":
            served.setdefault(str(message.get("tool_call_id")), []).append(
                str(message.get("content", ""))
            )
    settings = thaw(state.get("settings", {}))
    out = []
    for row in rows:
        texts = served.get(str(row["id"]))
        content = texts.pop(0) if texts else ""
        own = own_text(content, row, settings)
        out.append(TurnResult(row, content, own, args.get(str(row["id"]))))
    return out


def _this_turn(history: Any, prior: int) -> Iterator[Mapping[str, Any]]:
    """The messages of this run (a slice: O(this run), whatever came before)."""
    for message in history[prior:]:
        if isinstance(message, Mapping):
            yield message


def own_text(content: str, row: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """The tool's own words in ``content`` (what the model read of the call ``row`` files)."""
    if row.get("status") not in TOOL_WORDS or row.get("refused") or row.get("withheld"):
        return ""
    told = row.get("tool_chars")
    if isinstance(told, int) and not isinstance(told, bool):
        return content[:told]
    filled = [
        a
        for a in row.get("assumed", ())
        if isinstance(a, Mapping) and a.get("source") == "default" and "proposed" not in a
    ]
    if filled:  # the note on filled arguments, after everything else
        at = content.rfind(f"\n[{filled[0].get('argument')} was not in this {row.get('name')} call")
        if at >= 0:
            content = content[:at]
    if row.get("nudged"):
        at = content.rfind(_NUDGE.format(name=row.get("name")))
        if at >= 0:
            content = content[:at]
    if row.get("truncated"):
        cap = settings.get("max_tool_result_chars")
        at = content.rfind(_TRUNCATED)
        if isinstance(cap, int) and at >= 0:
            content = content[: min(cap, at)]
    return content


def person_words(state: Mapping[str, Any]) -> list[str]:
    """What the person said in the conversation so far (their messages, never the
    library's), the latest first."""
    said = [
        str(m.get("content", ""))
        for m in state.get("history", ())
        if isinstance(m, Mapping) and m.get("role") == "user" and m.get("origin") is None
    ]
    return said[::-1]
