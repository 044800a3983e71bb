"""Time asks over MCP: an ask as an elicitation request (``message`` and a flat
``requestedSchema``, as the MCP ``elicitation/create`` request carries them; a range is two
``date-time`` properties), and the elicitation's content back as the answer the ask takes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine import ConfigurationError

from ._ask import TIME_FORMATS

__all__ = ["answer_from_elicitation", "elicitation_of"]


def _format_of(ask: Mapping[str, Any]) -> str:
    fmt = ask.get("format")
    if fmt not in TIME_FORMATS:
        raise ConfigurationError(
            f"this ask has format {fmt!r}; elicitation_of carries the time asks "
            f"({', '.join(TIME_FORMATS)}): request_input(format=..., question=...)"
        )
    return str(fmt)


def elicitation_of(ask: Mapping[str, Any]) -> dict[str, Any]:
    """The MCP elicitation request for a time ask (``{"question", "format"}``, as a
    :class:`~trackway.agent.Paused` or a ``request_input`` tool's ``asks`` holds it):
    ``{"message": ..., "requestedSchema": {...}}``. ``labels`` (``{"from": ..., "to": ...}``
    or ``{"instant"| "zone": ...}``) title the properties; ``choices`` of a ``strict`` instant
    or zone ask become an ``enum`` (else a zone's are suggested in its description)."""
    fmt = _format_of(ask)
    labels = dict(ask.get("labels") or {})
    question = str(ask.get("question") or "")
    if fmt == "time-range":
        properties: dict[str, Any] = {
            end: {
                "type": "string",
                "format": "date-time",
                "title": labels.get(end, "Start" if end == "from" else "End"),
                "description": "An ISO 8601 date and time with its offset.",
            }
            for end in ("from", "to")
        }
    elif fmt == "instant":
        instant: dict[str, Any] = {
            "type": "string",
            "format": "date-time",
            "title": labels.get("instant", "Date and time"),
            "description": "An ISO 8601 date and time with its offset.",
        }
        if ask.get("strict") and ask.get("choices"):  # only these: an enum
            instant["enum"] = [str(c) for c in ask["choices"]]
        properties = {"instant": instant}
    else:
        zone: dict[str, Any] = {
            "type": "string",
            "title": labels.get("zone", "Time zone"),
            "description": "An IANA time zone name, such as Europe/London.",
        }
        offered = [str(c) for c in ask.get("choices") or ()]
        if offered and ask.get("strict"):  # only these: an enum
            zone["enum"] = offered
        elif offered:  # free entry stays open: the choices are suggested
            zone["description"] += f" For example: {', '.join(offered)}."
        properties = {"zone": zone}
    return {
        "message": question,
        "requestedSchema": {
            "type": "object",
            "properties": properties,
            "required": list(properties),
        },
    }


def answer_from_elicitation(ask: Mapping[str, Any], content: Mapping[str, Any]) -> Any:
    """The answer a time ask takes from an accepted elicitation's ``content`` (a range as
    ``{"from", "to"}``, an instant or a zone as its str), to pass to ``agent.resume``
    (which still checks it). Missing properties are refused, naming them."""
    fmt = _format_of(ask)
    if not isinstance(content, Mapping):
        raise ConfigurationError(
            f"answer_from_elicitation takes the elicitation result's content (a dict), "
            f"not {content!r}"
        )
    wanted = ("from", "to") if fmt == "time-range" else (fmt,)
    missing = [k for k in wanted if k not in content]
    if missing:
        raise ConfigurationError(
            f"the elicitation's content has no {', '.join(missing)}: a {fmt} ask's content "
            f"holds {', '.join(wanted)} (was the elicitation declined or cancelled?)"
        )
    if fmt == "time-range":
        return {"from": content["from"], "to": content["to"]}
    return content[fmt]
