"""Periods: what time a tool's read covered, checked where the tool declares it (and the
provenance time a result was measured at, checked by the same instant rule).

A period is ``{"queried": {"from", "to"}, "held": {"from", "to"} | "unknown", "read_at"?}``;
every instant is an ISO 8601 string with a zone, compared as an instant, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from trackway.tools.results._coverage_items import DeclarationRefused, nonempty_str, refuse_unknown

__all__ = [
    "PERIOD_VERDICTS",
    "PERIOD_WIRE",
    "PeriodVerdict",
    "check_instant",
    "check_period",
    "check_provenance",
    "period_verdict",
]

PERIOD_WIRE: dict[str, str] = {
    "key": "period",
    "queried": "queried",
    "held": "held",
    "read_at": "read_at",
    "from": "from",
    "to": "to",
    "unknown": "unknown",
}
"""Every key a period is written with on the wire, and its one literal (``unknown``)."""

PeriodVerdict = Literal["covered", "partly-held", "not-held", "unknown"]
PERIOD_VERDICTS: tuple[PeriodVerdict, ...] = ("covered", "partly-held", "not-held", "unknown")
"""The verdicts :func:`period_verdict` gives, from best to unknown."""

_KEYS = (PERIOD_WIRE["queried"], PERIOD_WIRE["held"], PERIOD_WIRE["read_at"])
_SPAN_KEYS = (PERIOD_WIRE["from"], PERIOD_WIRE["to"])
_EXAMPLE = "2026-09-26T09:00:00Z"


def _instant(value: Any, field: str) -> datetime:
    if not isinstance(value, str):
        raise DeclarationRefused(
            f"`{field}` must be an ISO 8601 string with a zone, e.g. {_EXAMPLE}, "
            f"not {type(value).__name__}",
            field,
        )
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise DeclarationRefused(
            f"`{field}` is {value!r}, which is not an ISO 8601 instant — write one like {_EXAMPLE}",
            field,
        ) from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise DeclarationRefused(
            f"an instant needs a zone, and {value!r} has none — add one, e.g. {_EXAMPLE} "
            "or 2026-09-26T11:00:00+02:00 (a time with no zone is refused, not guessed)",
            field,
        )
    return moment


def check_instant(value: Any, field: str) -> str:
    """``value`` when it is an ISO 8601 instant with a zone (``Z`` or an offset); refused
    otherwise, because an instant without a zone could only be guessed."""
    _instant(value, field)
    return str(value)


def _span(value: Any, field: str) -> tuple[dict[str, str], datetime, datetime]:
    if not isinstance(value, Mapping):
        raise DeclarationRefused(
            f"`{field}` must be a mapping {{'from': instant, 'to': instant}}", field
        )
    refuse_unknown(value.keys(), _SPAN_KEYS, field)
    start_key, end_key = _SPAN_KEYS
    for key in _SPAN_KEYS:
        if key not in value:
            raise DeclarationRefused(f"`{field}` needs `{key}`", f"{field}.{key}")
    start = _instant(value[start_key], f"{field}.{start_key}")
    end = _instant(value[end_key], f"{field}.{end_key}")
    if start > end:
        raise DeclarationRefused(
            f"`{field}` starts ({value[start_key]}) after it ends ({value[end_key]}) — "
            "swap `from` and `to`",
            field,
        )
    return {start_key: value[start_key], end_key: value[end_key]}, start, end


def check_period(value: Any, field: str = "period") -> dict[str, Any]:
    """The period in its wire form (snake_case keys, each instant exactly as the tool wrote
    it); a period that is malformed, zone-less or backwards is refused."""
    if not isinstance(value, Mapping):
        raise DeclarationRefused(
            f"`{field}` must be a mapping with `queried` and `held`, not {type(value).__name__}",
            field,
        )
    refuse_unknown(value.keys(), _KEYS, field)
    queried_key, held_key, read_at_key = _KEYS
    for key in (queried_key, held_key):
        if key not in value:
            raise DeclarationRefused(
                f"`{field}` needs `{key}`"
                + (
                    f" — write '{PERIOD_WIRE['unknown']}' when the tool cannot vouch for it"
                    if key == held_key
                    else ""
                ),
                f"{field}.{key}",
            )
    out: dict[str, Any] = {queried_key: _span(value[queried_key], f"{field}.{queried_key}")[0]}
    held = value[held_key]
    if isinstance(held, str):
        if held != PERIOD_WIRE["unknown"]:
            raise DeclarationRefused(
                f"`{field}.{held_key}` is either {{'from', 'to'}} or the word "
                f"'{PERIOD_WIRE['unknown']}', not {held!r}",
                f"{field}.{held_key}",
            )
        out[held_key] = held
    else:
        out[held_key] = _span(held, f"{field}.{held_key}")[0]
    if read_at_key in value:
        out[read_at_key] = check_instant(value[read_at_key], f"{field}.{read_at_key}")
    return out


def check_provenance(value: Any) -> dict[str, Any]:
    """Where facts came from and when they were measured: ``{"measured_at": instant with a
    zone, "source": text}``, both required, as ``absent`` and ``described_result`` take it."""
    if not isinstance(value, Mapping):
        raise DeclarationRefused(
            "`provenance` must be a mapping {'measured_at': instant, 'source': text}",
            "provenance",
        )
    refuse_unknown(value.keys(), ("measured_at", "source"), "provenance")
    for key in ("measured_at", "source"):
        if key not in value:
            raise DeclarationRefused(f"`provenance` needs `{key}`", f"provenance.{key}")
    return {
        "measured_at": check_instant(value["measured_at"], "provenance.measured_at"),
        "source": nonempty_str(value["source"], "provenance.source"),
    }


def period_verdict(period: Mapping[str, Any]) -> PeriodVerdict:
    """How much of the queried time the store held, by one rule over the instants (bounds
    inclusive): ``covered``, ``partly-held``, ``not-held``, or ``unknown`` when held is."""
    checked = check_period(period)
    queried_key, held_key, _ = _KEYS
    if checked[held_key] == PERIOD_WIRE["unknown"]:
        return "unknown"
    _, q_from, q_to = _span(checked[queried_key], queried_key)
    _, h_from, h_to = _span(checked[held_key], held_key)
    if h_from <= q_from and q_to <= h_to:
        return "covered"
    if h_from <= q_to and q_from <= h_to:
        return "partly-held"
    return "not-held"
