"""Time asks: a question whose answer is an ``instant``, a ``time-range`` or a ``zone``,
checked before a run goes on. A refused answer gets a sentence from
:data:`DEFAULT_TIME_ASK_MESSAGES` (reworded with ``.time(messages={...})``; templates take
``{{answer}}``, ``{{from}}``, ``{{to}}`` and ``{{zone}}``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from trackway.engine import ConfigurationError

from ._candidates import wall_instants
from ._clock import InstantError, UnknownZoneError, instant_text, parse_instant, zone_of

__all__ = [
    "DEFAULT_TIME_ASK_MESSAGES",
    "TIME_FORMATS",
    "check_messages",
    "check_time_answer",
    "format_schema",
]

TIME_FORMATS = ("instant", "time-range", "zone")

DEFAULT_TIME_ASK_MESSAGES: dict[str, str] = {
    "answer.not-an-instant": "{{answer}} is not a date and time; write one such as "
    "2026-10-09T08:00:00-07:00.",
    "answer.no-offset": "{{answer}} has no offset, so it names no moment; add one, such as "
    "-07:00 or Z.",
    "answer.not-a-range": "A window has a start and an end: give both, from and to.",
    "answer.out-of-order": "That window ends ({{to}}) before it starts ({{from}}).",
    "answer.skipped-wall-time": "{{answer}} is a time the clocks in {{zone}} skip; choose another.",
    "answer.no-zone": "Name a time zone, such as Europe/London.",
    "answer.not-a-choice": "Choose one of the offered answers.",
    "answer.unknown-zone": "{{answer}} is not a time zone name; use one such as "
    "Europe/London or America/New_York.",
}
"""The sentence for each reason a time ask's answer is not taken, by key."""

_PLACEHOLDER = re.compile(r"\{\{\s*(answer|from|to|zone)\s*\}\}")


def check_messages(messages: Mapping[str, Any] | None) -> dict[str, str]:
    """Rewordings of :data:`DEFAULT_TIME_ASK_MESSAGES` (only the keys given); an unknown key
    or a non-text value is refused, naming the keys."""
    if messages is None:
        return {}
    if not isinstance(messages, Mapping):
        raise ConfigurationError("time messages: give a dict of message key to sentence")
    unknown = sorted(set(messages) - set(DEFAULT_TIME_ASK_MESSAGES))
    if unknown:
        raise ConfigurationError(
            f"time messages has unknown keys {unknown}; the keys are "
            f"{', '.join(DEFAULT_TIME_ASK_MESSAGES)}"
        )
    for key, text in messages.items():
        if not isinstance(text, str) or not text.strip():
            raise ConfigurationError(f"time messages[{key!r}]: give a non-empty sentence")
    return dict(messages)


def _say(key: str, messages: Mapping[str, str], values: Mapping[str, str]) -> str:
    template = messages.get(key, DEFAULT_TIME_ASK_MESSAGES[key])
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), template)


def format_schema(fmt: str) -> dict[str, Any]:
    """The JSON Schema an answer of format ``fmt`` has (its shape; the time rules are
    checked by :func:`check_time_answer`)."""
    if fmt == "time-range":
        return {
            "type": "object",
            "properties": {
                "from": {"type": "string", "format": "date-time"},
                "to": {"type": "string", "format": "date-time"},
            },
            "required": ["from", "to"],
            "additionalProperties": False,
        }
    if fmt in ("instant", "zone"):
        return {"type": "string", **({"format": "date-time"} if fmt == "instant" else {})}
    raise ConfigurationError(
        f"a time ask's format is one of {', '.join(TIME_FORMATS)}, not {fmt!r}"
    )


def _shown(answer: Any) -> str:
    return answer if isinstance(answer, str) else orjson.dumps(answer).decode()


def check_time_answer(
    fmt: str,
    answer: Any,
    *,
    zone: str | None = None,
    messages: Mapping[str, str] | None = None,
    choices: Sequence[Any] | None = None,
) -> dict[str, Any] | None:
    """``None`` when ``answer`` is taken, else ``{"answer", "reason", "key"}``: the answer
    as given, the sentence that says why not, and its message key. ``zone`` (the person's,
    known under ``.time()``) also refuses a wall time its clocks skip; ``choices`` (a strict
    ask's) refuses any answer that is not one of them."""
    said = messages or {}
    if choices is not None and answer not in list(choices):
        text = _say("answer.not-a-choice", said, {"answer": _shown(answer), "zone": zone or ""})
        return {"answer": answer, "reason": text, "key": "answer.not-a-choice"}

    def refused(key: str, part: Any = answer, **values: str) -> dict[str, Any]:
        text = _say(key, said, {"answer": _shown(part), "zone": zone or "", **values})
        return {"answer": answer, "reason": text, "key": key}

    if fmt == "zone":
        if not isinstance(answer, str) or not answer.strip():
            return refused("answer.no-zone")
        try:
            zone_of(answer)
        except UnknownZoneError:
            return refused("answer.unknown-zone")
        return None
    if fmt == "instant":
        key = _instant_fault(answer, zone)
        return None if key is None else refused(key)
    if fmt != "time-range":
        raise ConfigurationError(f"a time ask's format is one of {', '.join(TIME_FORMATS)}")
    ends: tuple[Any, Any]
    if isinstance(answer, str) and answer.count("/") == 1:
        start, end = answer.split("/")
        ends = (start, end)
    elif isinstance(answer, Mapping) and set(answer) == {"from", "to"}:
        ends = (answer["from"], answer["to"])
    else:
        return refused("answer.not-a-range")
    for end in ends:
        key = _instant_fault(end, zone)
        if key is not None:
            return refused(key, end)
    first, last = parse_instant(ends[0]), parse_instant(ends[1])
    if last < first:
        return refused("answer.out-of-order", **{"from": ends[0], "to": ends[1]})
    return None


def _instant_fault(answer: Any, zone: str | None) -> str | None:
    """The message key an instant answer is refused with, or ``None``."""
    if not isinstance(answer, str):
        return "answer.not-an-instant"
    try:
        moment = parse_instant(answer)
    except InstantError as exc:
        return "answer.no-offset" if "no offset" in str(exc) else "answer.not-an-instant"
    if zone is not None:  # a wall time written with the zone's own offset, which it skips
        place = zone_of(zone)
        wall = moment.replace(tzinfo=None)
        if not wall_instants(wall.date(), wall.time(), place)[0]:
            around = {
                datetime.combine(wall.date(), wall.time(), tzinfo=place).replace(fold=f).utcoffset()
                for f in (0, 1)
            }
            if moment.utcoffset() in around:
                return "answer.skipped-wall-time"
    return None


def instant_in(zone: str, answer: str) -> str:
    """``answer`` (an instant) as the clocks in ``zone`` show it, with its offset."""
    return instant_text(parse_instant(answer).astimezone(UTC).astimezone(zone_of(zone)))
