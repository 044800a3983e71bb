"""A person in the loop: which calls wait for a person, what is asked, which answers are
taken, and what the model then reads.

A call waits for a person when its tool asks one (``ask_human``, ``request_input``) or when
the agent checks in before it (``.check_in(...)``). The ``tool-calls`` stage pauses at such a
call; ``agent.resume(checkpoint, answer)`` checks the answer here *before* the checkpoint is
claimed, so a refused answer leaves the checkpoint usable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from trackway.tools import Tool
from trackway.tools.define._schema_refs import local_validator

from ..messages._errors import DecisionRequiredError, InvalidAnswerError
from ..time._choice import choice_answer
from ._arguments import answered_arguments
from ._consent import refused_text

__all__ = ["DECISIONS", "answer_value", "outcome_of", "question_for"]

DECISIONS = ("approve", "decline")


def question_for(
    tool: Tool, call: Mapping[str, Any], check_ins: Mapping[str, str | None]
) -> dict[str, Any] | None:
    """What to ask the person before ``call`` runs, or ``None`` when it runs at once."""
    asks = tool.asks
    if asks is not None:
        question = asks.get("question") or str(call.get("args", {}).get("question", ""))
        out: dict[str, Any] = {"kind": asks["kind"], "question": question}
        if asks.get("schema") is not None:
            out["schema"] = dict(asks["schema"])
        for key in ("format", "labels", "choices", "strict"):  # a time ask: checked on resume
            if asks.get(key) is not None:
                out[key] = asks[key]
        return out
    if tool.name in check_ins:
        args = orjson.dumps(call.get("args") or {}).decode()
        question = check_ins[tool.name] or f"May I call {tool.name} with {args}?"
        return {"kind": "check_in", "question": question}
    return None


def answer_value(payload: Mapping[str, Any], answer: Any) -> dict[str, Any]:
    """The resume value for ``answer`` to the question in ``payload``; an answer the
    question cannot take is refused (the checkpoint is not used)."""
    kind = payload.get("kind")
    call = payload.get("call") or {}
    where = f"{call.get('name', 'the call')} ({call.get('id', '?')})"
    if kind in ("check_in", "consent"):
        decision, note = answer, None
        if isinstance(answer, Mapping):
            decision, note = answer.get("decision"), answer.get("note")
            extra = sorted(set(answer) - {"decision", "note"})
            if extra or (note is not None and not isinstance(note, str)):
                decision = None
        if decision not in DECISIONS:
            raise DecisionRequiredError(
                f"the run is waiting for a decision on {where}: answer 'approve' or 'decline' "
                f"(or {{'decision': ..., 'note': '...'}}), not {answer!r}. The checkpoint was "
                "not used: resume it again with a decision"
            )
        out: dict[str, Any] = {"decision": decision}
        if note:
            out["note"] = note
        return {"answer": out}
    if kind == "arguments":
        return {"answer": answered_arguments(payload, answer)}
    if kind == "time_choice":  # a reading of the person's words left open
        return choice_answer(payload, answer)
    if kind == "request_input":
        schema = payload.get("schema") or {}
        errors = sorted(
            local_validator(schema).iter_errors(answer),
            key=lambda e: list(e.absolute_path),
        )
        if errors:
            at = ".".join(str(p) for p in errors[0].absolute_path) or "the answer"
            raise InvalidAnswerError(
                f"the answer to {where} does not match its schema: {at}: {errors[0].message}. "
                "The checkpoint was not used: resume it again with an answer that matches"
            )
        return {"answer": answer}
    if not isinstance(answer, str) or not answer.strip():
        raise InvalidAnswerError(
            f"{where} asked the person a question: answer with a non-empty str, not "
            f"{answer!r}. The checkpoint was not used"
        )
    return {"answer": answer}


def outcome_of(payload: Mapping[str, Any], value: Mapping[str, Any]) -> tuple[str, str | None]:
    """What a resume value means for the waiting call: ``("run", None)`` to run the tool
    now, or ``(status, text)`` for a result the model reads without it running."""
    answer: Any = value.get("answer")
    kind = payload.get("kind")
    if kind in ("check_in", "consent"):
        if answer["decision"] == "approve":
            return "run", None
        note = answer.get("note")
        why = f" They said: {note}" if note else ""
        if kind == "consent":
            tool = str((payload.get("call") or {}).get("name"))
            return "denied", refused_text(tool, str(payload.get("credential")), note)
        return "denied", f"The person declined this call, so it was not run.{why}"
    if kind == "arguments":  # the call runs with the person's values
        return "run", None
    if kind == "request_input":
        return "success", orjson.dumps(answer).decode()
    return "success", str(answer)
