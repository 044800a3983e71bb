"""``ask_or_assume`` at dispatch: the arguments a call runs with after the tool's rules, the
question when a ruled argument must come from the person, and what the run files about it.

A filled default is the library's, never the model's or the person's: the model reads one
past-tense note after the tool's own text, the ``tool_results`` row lists it under
``assumed``, and a ``tools.argument_filled`` event names the argument (never its value).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine import Scope, thaw
from trackway.tools import Tool
from trackway.tools.define._assume import Filling, asked_answer, assumed_note, fill
from trackway.tools.results._outcome import unparsed

from ..context._config import emit as _emit
from ..messages._errors import InvalidAnswerError
from ._served import Outcome

__all__ = ["answered_arguments", "arguments_question", "filled", "noted"]


def filled(
    tool: Tool, call: Mapping[str, Any], answered: Mapping[str, Any] | None
) -> Filling | None:
    """The call's arguments after the tool's rules and the person's answers (``None`` when
    the tool has no rules, or its arguments could not be read)."""
    if not tool.ask_or_assume:  # no rules: nothing to fill (and no copy to make)
        return None
    args = thaw(call.get("args") or {})
    if unparsed(args):
        return None
    done = fill(args, tool.ask_or_assume)
    if not answered:
        return done
    asks = [a for a in done.asks if a["argument"] not in answered]
    return Filling({**done.args, **answered}, done.assumed, asks, done.defaults_sent)


def arguments_question(tool: Tool, asks: list[dict[str, Any]]) -> dict[str, Any]:
    """The pause that asks the person for the ruled arguments a call left out; each
    carries its property's schema so an answer is checked before the checkpoint is used."""
    properties = tool.input_schema.get("properties") or {}
    arguments = [{**a, "schema": thaw(properties.get(a["argument"], {}))} for a in asks]
    schema: dict[str, Any] = {  # what an answer looks like, for a UI
        "type": "object",
        "properties": {
            a["argument"]: {**a["schema"], **({"enum": a["choices"]} if "choices" in a else {})}
            for a in arguments
        },
        "required": [a["argument"] for a in arguments],
    }
    return {
        "kind": "arguments",
        "question": " ".join(a["question"] for a in asks),
        "arguments": arguments,
        "schema": schema,
    }


def answered_arguments(payload: Mapping[str, Any], answer: Any) -> dict[str, Any]:
    """The person's values for the asked arguments: a mapping by argument, or one bare
    value when one argument was asked. A value the rule cannot take is refused."""
    asks = list(payload.get("arguments") or ())
    names = [a["argument"] for a in asks]
    if isinstance(answer, Mapping):
        given = dict(answer)
    elif len(asks) == 1:
        given = {names[0]: answer}
    else:
        raise InvalidAnswerError(
            f"the run asked for {', '.join(names)}: answer with a mapping of each to its value. "
            "The checkpoint was not used"
        )
    if sorted(given) != sorted(names):
        raise InvalidAnswerError(
            f"the run asked for {', '.join(names)}, and the answer gives "
            f"{', '.join(sorted(given)) or 'nothing'}: answer each once. The checkpoint was not "
            "used"
        )
    out: dict[str, Any] = {}
    for ask in asks:
        try:
            out[ask["argument"]] = asked_answer(ask, given[ask["argument"]], ask["schema"])
        except ValueError as exc:
            raise InvalidAnswerError(f"{exc}. The checkpoint was not used") from None
    return out


def noted(
    scope: Scope,
    call: Mapping[str, Any],
    filling: Filling,
    answered: Mapping[str, Any] | None,
    done: Outcome,
) -> Outcome:
    """``done`` with the note about filled arguments after the tool's own
    text, and its row listing what was assumed and what the person answered."""
    flags = dict(done.flags or {})
    assumed = [*filling.assumed, *filling.defaults_sent]
    if assumed:
        flags["assumed"] = assumed
    if answered:
        flags["asked"] = [
            {"argument": k, "value": v, "source": "person"} for k, v in answered.items()
        ]
    for row in [*assumed, *flags.get("asked", ())]:
        _emit(
            scope,
            "tools.argument_filled",
            {
                "id": call["id"],
                "name": call["name"],
                "argument": row["argument"],
                "source": row["source"],
            },
        )
    note = assumed_note(call["name"], filling.assumed)
    if note:  # the note is the library's: the row says where the tool's own text ends
        flags.setdefault("tool_chars", len(done.content))
    content = f"{done.content}\n{note}" if note else done.content
    return done._replace(content=content, flags=flags or None)
