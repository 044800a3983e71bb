"""The limits of an answer, composed from what its tools declared rather than from the model.

:func:`answer_coverage` folds the run's recorded statements into one value (the data form, for
typed answers); :func:`limits_block` renders that value as the text appended to a prose answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from trackway.tools.results._coverage_items import plain_copy
from trackway.tools.results._period import PERIOD_WIRE, period_verdict
from trackway.tools.time._clock import instant_in_zone, span_in_zone

__all__ = [
    "ASSUMED_LABEL",
    "CANNOT_COVER_LABEL",
    "CHECKED_LABEL",
    "COVERAGE_BLOCK_HEADING",
    "IN_PROGRESS_SECTION_LABEL",
    "NOT_CHECKED_LABEL",
    "PERIOD_LABEL",
    "answer_coverage",
    "limits_block",
]

COVERAGE_BLOCK_HEADING = (
    "Limits of this answer, declared by the tools it rests on — not written by the model:"
)
"""The first line of the appended block, for anything that has to find or strip it."""
CHECKED_LABEL = "Checked:"
NOT_CHECKED_LABEL = "Not checked:"
CANNOT_COVER_LABEL = "Cannot cover:"
IN_PROGRESS_SECTION_LABEL = "In progress (outcome not known yet):"
PERIOD_LABEL = "Period:"
ASSUMED_LABEL = "Assumed (a tool's rule, not your words):"

_FOLDED = ("checked", "not_checked", "cannot_cover", "in_progress")
_SEPARATOR = "---"


def _fold(rows: Sequence[Mapping[str, Any]], name: str) -> list[dict[str, Any]]:
    """Every item of list ``name`` across ``rows``, each ``what`` + ``why`` said once."""
    seen: set[tuple[Any, Any]] = set()
    out: list[dict[str, Any]] = []
    for row in rows:
        for item in row.get(name) or ():
            key = (item.get("what"), item.get("why"))
            if key not in seen:
                seen.add(key)
                out.append(dict(item))
    return out


def _period_row(row: Mapping[str, Any]) -> dict[str, Any]:
    period = row[PERIOD_WIRE["key"]]
    out: dict[str, Any] = {
        "tool": row.get("tool"),
        "id": row.get("id"),
        PERIOD_WIRE["queried"]: plain_copy(period[PERIOD_WIRE["queried"]]),
        PERIOD_WIRE["held"]: plain_copy(period[PERIOD_WIRE["held"]]),
    }
    if PERIOD_WIRE["read_at"] in period:
        out[PERIOD_WIRE["read_at"]] = period[PERIOD_WIRE["read_at"]]
    out["verdict"] = period_verdict(period)
    return out


def answer_coverage(
    rows: Sequence[Mapping[str, Any]], assumed: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any] | None:
    """The limits of one answer as data: the recorded statements' lists folded (duplicates said
    once, first seen first), each declared period with its verdict, and the values a tool's
    rule assumed. None when no tool declared a limit and nothing was assumed."""
    out: dict[str, Any] = {name: _fold(rows, name) for name in _FOLDED}
    if not out["in_progress"]:
        del out["in_progress"]
    periods = [_period_row(r) for r in rows if r.get(PERIOD_WIRE["key"]) is not None]
    if periods:
        out["periods"] = periods
    if assumed:
        out["assumed"] = [plain_copy(a) for a in assumed]
    if not any(out.values()):
        return None
    return out


def _item_line(item: Mapping[str, Any]) -> str:
    line = f"- {item['what']}"
    if "count" in item:
        line += f" ({item['count']})"
    if item.get("why"):
        line += f" — {item['why']}"
    return line


def _period_line(row: Mapping[str, Any], zone: str | None = None) -> str:
    start, end = PERIOD_WIRE["from"], PERIOD_WIRE["to"]
    queried = row[PERIOD_WIRE["queried"]]
    held = row[PERIOD_WIRE["held"]]

    def span(ends: Mapping[str, str]) -> str:  # in the person's zone under .time()
        if zone is None:
            return f"{ends[start]} to {ends[end]}"
        return span_in_zone(ends[start], ends[end], zone)

    line = f"- {row.get('tool')} queried {span(queried)}; "
    if held == PERIOD_WIRE["unknown"]:
        line += "what the store holds is unknown"
    else:
        line += f"the store holds {span(held)}"
    read_at = row.get(PERIOD_WIRE["read_at"])
    if read_at:
        line += f" (read at {read_at if zone is None else instant_in_zone(read_at, zone)})"
    return line


def _assumed_line(row: Mapping[str, Any]) -> str:
    value = orjson.dumps(row.get("value"), default=str).decode()
    return f"- {row.get('tool')}: {row.get('argument')} = {value}"


def limits_block(coverage: Mapping[str, Any], zone: str | None = None) -> str:
    """The text appended to a prose answer (as ``answer + "\\n\\n" + block``): a rule, the
    heading, then one labelled section per non-empty list; no trailing newline. With
    ``zone`` (the person's, under ``.time()``) period lines are shown in it, the zone
    named."""
    sections = (
        (CHECKED_LABEL, [_item_line(i) for i in coverage.get("checked") or ()]),
        (NOT_CHECKED_LABEL, [_item_line(i) for i in coverage.get("not_checked") or ()]),
        (CANNOT_COVER_LABEL, [_item_line(i) for i in coverage.get("cannot_cover") or ()]),
        (IN_PROGRESS_SECTION_LABEL, [_item_line(i) for i in coverage.get("in_progress") or ()]),
        (PERIOD_LABEL, [_period_line(r, zone) for r in coverage.get("periods") or ()]),
        (ASSUMED_LABEL, [_assumed_line(r) for r in coverage.get("assumed") or ()]),
    )
    lines = [_SEPARATOR, "", COVERAGE_BLOCK_HEADING]
    for label, body in sections:
        if body:
            lines += ["", label, *body]
    return "\n".join(lines)
