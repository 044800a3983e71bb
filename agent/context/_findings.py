"""The findings ledger: what the model declares about its own calls and their results.

With ``.findings()`` every served tool schema gains one reserved, optional argument,
``_findings``: on a call the model may say why it makes it (``basis``: direct or
exploratory; ``expect``: low, medium, high; ``proposition`` and ``predicts``) and how it now
judges earlier results (``previous``: each named by id from the list the schema offers —
newest first, at most 32 — with a standing: fact, open, noise or ruled-out). The argument is
peeled off before validation, gates and the tool; what was declared is filed on the
``findings`` ledger, never inferred (a result nobody named is undeclared, not open). A
result judged noise or ruled-out is served as a short ticket on later calls
(``findings_tickets``); ``history`` keeps everything. A ``_findings`` the model writes into its
answer is taken off the answer and filed too, so it never reaches the person or a token
stream.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from trackway.engine import Scope, thaw

from ._config import emit as _emit
from ._findings_piece import ledger_index
from ._findings_plan import ticketed_standings
from ._findings_rows import assertions_of, rows_after_standing

__all__ = [
    "FINDINGS_ARGUMENT",
    "STANDINGS",
    "AnswerHoldback",
    "file_declaration",
    "findings_property",
    "offered_ids",
    "peel",
    "served_ids",
    "strip_answer",
]

FINDINGS_ARGUMENT = "_findings"
BASES = ("direct", "exploratory")
EXPECTS = ("low", "medium", "high")
STANDINGS = ("fact", "open", "noise", "ruled-out")
TICKETED = ("noise", "ruled-out")
MAX_OFFERED = 32
_CUT = 240
_DESCRIPTION = (
    "Optional notes for the record (never shown to the person): why you make this call "
    "(basis), how likely it is to help (expect), what it tests (proposition) and what its "
    "result should show if that holds (predicts); and how you now judge earlier results "
    "(previous: fact, open, noise or ruled-out, each by its id). Results you judge noise or "
    "ruled-out are shortened to a ticket on later requests."
)


_ASSERTIONS = {
    "type": "array",
    "maxItems": 8,
    "description": "For a fact: what you stand on, each an assertion about one thing.",
    "items": {
        "type": "object",
        "properties": {"about": {"type": "string"}, "value": {"type": ["string", "number"]}},
        "required": ["about", "value"],
    },
}


_CONTINGENT = (
    " A value taken from a result declared open, noise or ruled-out is recorded as "
    "contingent: re-establish it from a result you stand on, or say the answer is contingent "
    "on it."
)


def findings_property(
    ids: Sequence[str], clipped: bool, assertions: bool = False, contingent: bool = False
) -> dict[str, Any]:
    """The reserved argument's schema, bound to the result ids the model may name now
    (``assertions``: a standing may carry what it stands on — off only for a replay of a
    recording made before they existed; ``contingent``: the evidence gate is armed too, and
    the description says what a contingent value is)."""
    properties: dict[str, Any] = {
        "basis": {"type": "string", "enum": list(BASES)},
        "expect": {"type": "string", "enum": list(EXPECTS)},
        "proposition": {"type": "string", "description": "What this call tests (one line)."},
        "predicts": {"type": "string", "description": "What its result shows if so."},
    }
    if ids:
        described = "The id of an earlier tool result, one of those listed (newest first)."
        if clipped:
            described += f" Only the {MAX_OFFERED} newest are listed."
        item: dict[str, Any] = {
            "id": {"type": "string", "enum": list(ids), "description": described},
            "standing": {"type": "string", "enum": list(STANDINGS)},
            "note": {"type": "string"},
        }
        if assertions:
            item["assertions"] = _ASSERTIONS
        properties["previous"] = {
            "type": "array",
            "maxItems": MAX_OFFERED,
            "items": {
                "type": "object",
                "properties": item,
                "required": ["id", "standing"],
            },
        }
    text = _DESCRIPTION + _CONTINGENT if contingent else _DESCRIPTION  # both doors armed
    return {"type": "object", "description": text, "properties": properties}


def offered_ids(scope: Scope) -> tuple[list[str], bool]:
    """The result ids the model may name at the coming call: results it can still read,
    newest first, at most 32 (not ticketed, not left out by the window); and whether the
    list was clipped. Reads back from the newest message: O(32 + what it skips)."""
    history = scope["history"]
    tickets = {
        k: v for k, v in (scope.get("findings_tickets") or {}).items() if v in TICKETED
    }  # a fact served as a ticket (serve="ledger-only") stays nameable
    drop = [(int(a), int(b)) for a, b in (scope.get("window_view") or {}).get("drop", ())]
    ids: list[str] = []
    i = len(history) - 1
    while i >= 0:
        gap = next(((a, b) for a, b in drop if a <= i < b), None)
        if gap is not None:
            i = gap[0] - 1
            continue
        message = history[i]
        if message["role"] == "tool" and message.get("tool_call_id") not in tickets:
            if len(ids) == MAX_OFFERED:
                return ids, True
            ids.append(message["tool_call_id"])
        i -= 1
    return ids, False


def served_ids(scope: Scope) -> list[str]:
    """The ids the last served schema offered (what the model could name)."""
    for spec in scope.get("tools") or ():
        prop = (spec["input_schema"].get("properties") or {}).get(FINDINGS_ARGUMENT)
        if prop is not None:
            previous = prop.get("properties", {}).get("previous")
            return [] if previous is None else list(previous["items"]["properties"]["id"]["enum"])
    return []


def peel(call: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """``call`` without the reserved argument, and what was declared in it (or ``None``)."""
    args = call.get("args") or {}
    if not isinstance(args, Mapping) or FINDINGS_ARGUMENT not in args:
        return dict(call), None
    rest = {k: v for k, v in args.items() if k != FINDINGS_ARGUMENT}
    return {**call, "args": rest}, thaw(args[FINDINGS_ARGUMENT])


def _cut(text: str) -> str:
    if len(text) <= _CUT:
        return text
    return f"{text[:_CUT]}… [cut from {len(text)} characters]"


def file_declaration(
    scope: Scope,
    declared: Any,
    *,
    by: str,
    iteration: int,
    offered: Sequence[str],
    name: str | None = None,
) -> list[dict[str, Any]]:
    """The ledger rows of one declaration, filed with their events and the tickets they
    make (``by``: the declaring call's id, or ``"answer"``). A part that is not what the
    schema asks for is filed as dropped, with why."""
    rows: list[dict[str, Any]] = []
    dropped: list[str] = []
    if not isinstance(declared, Mapping):
        dropped.append(f"{FINDINGS_ARGUMENT} was not an object")
        declared = {}
    basis: dict[str, Any] = {}
    for key, allowed in (("basis", BASES), ("expect", EXPECTS)):
        value = declared.get(key)
        if value is None:
            continue
        if value in allowed:
            basis[key] = value
        else:
            dropped.append(f"{key} {str(value)[:40]!r} is not one of {', '.join(allowed)}")
    for key in ("proposition", "predicts"):
        value = declared.get(key)
        if isinstance(value, str) and value.strip():
            basis[key] = _cut(value.strip())
        elif value is not None:
            dropped.append(f"{key} was not text")
    if basis and by != "answer":
        row = {"kind": "basis", "id": by, "name": name, "iteration": iteration, **basis}
        rows.append(row)
        event = {"id": by, "name": name, "basis": basis.get("basis")}
        _emit(scope, "findings.declared", {**event, "has_proposition": "proposition" in basis})
    previous = declared.get("previous") or []
    if not isinstance(previous, list):
        dropped.append("previous was not a list")
        previous = []
    tickets = dict(thaw(scope.get("findings_tickets") or {}))
    ticketed = ticketed_standings(scope["settings"].get("findings"))
    with_rows = isinstance(scope["settings"].get("findings"), Mapping)  # not a pre-piece replay
    changed = False
    for item in previous:
        if not isinstance(item, Mapping) or item.get("standing") not in STANDINGS:
            dropped.append("a previous entry without an id and a standing")
            continue
        judged = str(item.get("id", ""))
        row = {
            "kind": "standing",
            "id": judged,
            "standing": item["standing"],
            "declared_by": by,
            "iteration": iteration,
        }
        if isinstance(item.get("note"), str) and item["note"].strip():
            row["note"] = _cut(item["note"].strip())
        stood, bad = assertions_of(item.get("assertions"), _cut) if with_rows else ([], "")
        if stood:
            row["assertions"] = stood
        if bad:
            dropped.append(bad)
        if judged not in offered:  # filed as written, never mapped to anything
            row["unknown_id"] = True
        rows.append(row)
        standing_event = {"id": judged, "standing": item["standing"], "declared_by": by}
        agrees = _agrees(scope, judged, item["standing"])
        if agrees is not None:  # once a judge has read the result
            standing_event["agrees"] = agrees
        _emit(scope, "findings.standing", standing_event)
        if row.get("unknown_id"):
            continue
        rows.extend(rows_after_standing(scope, row, rows, by=by, iteration=iteration))
        if item["standing"] in ticketed:
            changed = changed or tickets.get(judged) != item["standing"]
            tickets[judged] = item["standing"]
        elif judged in tickets:
            changed = True
            del tickets[judged]
    if dropped:
        rows.append({"kind": "dropped", "declared_by": by, "iteration": iteration, "why": dropped})
    if rows:
        scope.extend("findings", rows)
    if changed:
        scope["findings_tickets"] = tickets
    return rows


def _agrees(scope: Scope, judged: str, standing: str) -> bool | None:
    """Whether the judge's reading of result ``judged`` matches ``standing`` (``None``: no
    judge, or no judgment of it yet), from the run's ledger index."""
    recorded = scope["settings"].get("findings")
    if not isinstance(recorded, Mapping) or "judge" not in recorded:
        return None
    theirs = ledger_index(scope).judged(judged)
    return None if theirs is None else theirs == standing


_FENCED = re.compile(r"(?ms)^[ \t]*```[a-zA-Z]*[ \t]*\n(\{.*?\})[ \t]*\n[ \t]*```[ \t]*(\n|\Z)")
_LINE = re.compile(r"(?m)^[ \t]*(\{.*\})[ \t]*(\n|\Z)")


def _declaration_only(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, dict) and set(value) == {FINDINGS_ARGUMENT}:
        return value[FINDINGS_ARGUMENT]
    return None


def strip_answer(text: str) -> tuple[str, Any]:
    """The answer without a ``_findings`` the model wrote into it, and that declaration
    (``None`` when there was none). A whole-JSON answer loses the member and stays JSON; a
    block or line holding only the declaration is taken out; anything else stays data."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            whole = json.loads(stripped)
        except ValueError:
            whole = None
        if isinstance(whole, dict) and FINDINGS_ARGUMENT in whole:
            declared = whole.pop(FINDINGS_ARGUMENT)
            return json.dumps(whole, ensure_ascii=False), declared
    for pattern in (_FENCED, _LINE):
        for match in pattern.finditer(text):
            declared = _declaration_only(match.group(1))
            if declared is not None:
                rest = (text[: match.start()] + text[match.end() :]).rstrip()
                return rest, declared
    return text, None


class AnswerHoldback:
    """Streams an answer's text while holding back anything that may be a declaration
    (from the first ``{`` or backtick, and trailing whitespace), so a token stream never
    shows a ``_findings`` the answer loses; ``finish`` releases the rest, stripped."""

    def __init__(self) -> None:
        self.seen = ""
        self.sent = 0
        self.holding = False

    def feed(self, text: str) -> str:
        self.seen += text
        if self.holding:
            return ""
        cut = min((i for i in (self.seen.find("{"), self.seen.find("`")) if i >= 0), default=-1)
        if cut >= 0:
            self.holding = True
            end = len(self.seen[:cut].rstrip())
        else:
            end = len(self.seen.rstrip())
        out = self.seen[self.sent : end]
        self.sent = max(self.sent, end)
        return out

    def finish(self) -> str:
        answer, _ = strip_answer(self.seen)
        return answer[self.sent :] if answer.startswith(self.seen[: self.sent]) else ""
