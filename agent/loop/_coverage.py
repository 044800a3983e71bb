"""What the tools of a run declared they covered, as the run records it, and the limits that
travel with the answer.

Every ``absent`` / ``coverage`` / ``described_result`` statement becomes a row of the
append-only ``coverage_declared`` key (tool, call id, iteration, the lists, the period and its
verdict) whether or not the limits travel. With ``.limits_travel_with_the_answer()``, the
``final`` stage composes the answer's limits from those rows and the arguments a tool's rule
filled: a prose answer gets the block appended, a typed answer stays pure JSON and the same
value is committed as ``answer_coverage``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine import Scope, thaw
from trackway.tools.results._limits import answer_coverage, limits_block
from trackway.tools.results._period import period_verdict

from ..context._config import emit as _emit

__all__ = ["ROW_KEYS", "answer_limits", "coverage_row", "period_said", "statement_of"]

ROW_KEYS = ("tool", "id", "iteration", "verdict")
"""The keys a ``coverage_declared`` row adds to the statement the tool made."""


def coverage_row(
    call: Mapping[str, Any], iteration: int, statement: Mapping[str, Any]
) -> dict[str, Any]:
    """One ``coverage_declared`` row: who said it, then what was said, then the period's
    verdict when a period was declared."""
    row: dict[str, Any] = {
        "tool": call["name"],
        "id": call["id"],
        "iteration": iteration,
        **thaw(statement),
    }
    if row.get("period") is not None:
        row["verdict"] = period_verdict(row["period"])
    return row


def period_said(
    scope: Scope,
    call: Mapping[str, Any],
    iteration: int,
    row: Mapping[str, Any] | None,
    flags: Mapping[str, Any] | None,
) -> None:
    """``findings.period``: the verdict of the period a call's result declared (its
    ``coverage_declared`` row's), or ``"undeclared"`` when its tool owes one and it said
    none; the verdict word only, never an instant. Nothing for a call without a period."""
    verdict = None if row is None else row.get("verdict")
    if verdict is None and flags and flags.get("period") == "undeclared":
        verdict = "undeclared"
    if verdict is not None:
        event = {"id": call["id"], "name": call["name"], "iteration": iteration}
        _emit(scope, "findings.period", {**event, "verdict": verdict})


def statement_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """The statement a recorded row holds (for a replay, which serves it again)."""
    return {k: v for k, v in thaw(row).items() if k not in ROW_KEYS}


def answer_limits(scope: Scope) -> dict[str, Any] | None:
    """The limits of this turn's answer: every coverage statement of the run, and every
    argument a tool's rule filled (``None`` when there are neither)."""
    rows = thaw(scope.get("coverage_declared", []))
    assumed = [
        {"tool": r["name"], "id": r["id"], **a}
        for r in thaw(scope.get("tool_results", []))
        for a in r.get("assumed", ())
        if "proposed" not in a
    ]
    return answer_coverage(rows, assumed)


def with_limits(answer: str, limits: Mapping[str, Any], zone: str | None = None) -> str:
    """A prose answer with its limits block appended (period lines in ``zone``, the
    person's under ``.time()``)."""
    return f"{answer}\n\n{limits_block(limits, zone)}"
