"""A reading the policy left open is put to the person: the ``clock`` stage pauses with the
candidates as choices (a question of kind ``time_choice``, answered through
``agent.resume`` like any other), and the answer is a ``time-choice`` row. Nothing of it is
served to the model; the app and its tools read the rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trackway.engine import Scope, thaw
from trackway.tools.time._clock import instant_in_zone, span_in_zone

from ..context._config import emit
from ..messages._errors import InvalidAnswerError

__all__ = ["choice_answer", "choice_question", "chosen_row"]


def _label(candidate: Mapping[str, Any], zone: str) -> str:
    if "to" in candidate:
        return span_in_zone(candidate["from"], candidate["to"], zone)
    return instant_in_zone(candidate["from"], zone)


def choice_question(scope: Scope, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The question for the first reading left open (``None`` when none is): its quote, the
    candidates as ``choices`` (labels in the person's zone) and ``candidates`` as data."""
    for at, row in enumerate(rows):
        if row.get("kind") == "time-reading" and row.get("how") == "ask":
            zone = str(row["zone"])
            question: dict[str, Any] = {
                "kind": "time_choice",
                "question": f"When you wrote “{row['quote']}”, which did you mean?",
                "choices": [_label(c, zone) for c in row["open"]],
                "candidates": list(row["open"]),
                "quote": row["quote"],
                "reading": at,
                "call": {"id": f"time-choice-{at}", "name": "time", "args": {}},
            }
            for key in ("identity", "session_id"):  # so a resume can check the caller
                if scope.get(key) is not None:
                    question[key] = scope[key]
            return question
    return None


def choice_answer(payload: Mapping[str, Any], answer: Any) -> dict[str, Any]:
    """The resume value for a ``time_choice``: the index of a choice, its label, or the
    candidate itself (``{"from", "to"}``); anything else is refused, listing the choices."""
    choices = list(payload.get("choices") or ())
    candidates = list(payload.get("candidates") or ())
    picked: int | None = None
    if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(choices):
        picked = answer
    elif isinstance(answer, str) and answer in choices:
        picked = choices.index(answer)
    elif isinstance(answer, Mapping):
        for i, c in enumerate(candidates):
            if all(answer.get(k) == c.get(k) for k in ("from", "to") if k in c or k in answer):
                picked = i
                break
    if picked is None:
        listed = "; ".join(f"{i}: {c}" for i, c in enumerate(choices))
        raise InvalidAnswerError(
            f"the run asks which time “{payload.get('quote')}” meant: answer with the index "
            f"of a choice, its text, or the candidate {{'from', 'to'}} ({listed}), not "
            f"{answer!r}. The checkpoint was not used"
        )
    return {"answer": {"choice": picked}}


def chosen_row(scope: Scope, payload: Mapping[str, Any], value: Any) -> None:
    """The ``clock`` stage's ``on_resume``: the person's choice as a ``time-choice`` row
    (an abandoned question is a row too, and the turn ends)."""
    value = thaw(value)
    row: dict[str, Any] = {"kind": "time-choice", "quote": payload["quote"]}
    if value.get("abandon"):
        scope.append("time_rows", {**row, "abandoned": True})
        emit(scope, "time.choice", {**row, "abandoned": True})
        scope.break_()
        return
    picked = int(value["answer"]["choice"])
    row.update(reading=payload["reading"], chosen=payload["candidates"][picked], by="person")
    scope.append("time_rows", row)
    emit(scope, "time.choice", row)
