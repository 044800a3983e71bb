"""Answer validation: the checks run on a terminal answer (the claim contracts), bounded by
resource limits — tool results read, bytes read, checks run, seconds — and the report of what
ran, what it found, what it spent and which limit stopped it.

The report is committed as ``answer_validation`` by the ``final`` stage, so it is part of the
record: a replay runs the checks again and must write the same report. The one thing a replay
cannot measure again is time, so it reads it from the recording: the seconds spent, and, for
a run the time limit cut, the exact point where it was cut (which check, after how many
reads), where the replay cuts too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trackway.engine import Scope, thaw

from ..context._config import emit as _emit
from ..messages._errors import AgentBuildError
from ._claims import DeclaredClaim, carries, normal, stated_values
from ._reading import TurnResult, turn_results

__all__ = [
    "LIMITS",
    "REPORT_KEY",
    "AnswerValidation",
    "AnswerValidationLimits",
    "Budget",
    "validate_answer",
]

REPORT_KEY = "answer_validation"
"""The state key of the last answer's validation report."""

LIMITS = ("max_reads", "max_bytes", "max_checks", "max_seconds")
"""The limits, in the order the report names them."""

CLAIM_READS = ("success", "partial")
"""The statuses of results a claim reads (an absence carries nothing found)."""


@dataclass(frozen=True)
class AnswerValidationLimits:
    """Resource bounds on answer validation (``None``: unbounded). ``max_reads``: tool
    results read; ``max_bytes``: bytes of them read (UTF-8); ``max_checks``: checks run;
    ``max_seconds``: time spent checking."""

    max_reads: int | None = None
    max_bytes: int | None = None
    max_checks: int | None = None
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_reads", "max_bytes", "max_checks"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise AgentBuildError(
                    f"AnswerValidationLimits({name}={value!r}): use a whole number ≥ 0, or None "
                    "for no bound"
                )
            if value is not None and value < 0:
                raise AgentBuildError(
                    f"AnswerValidationLimits({name}={value!r}): use a whole number ≥ 0 (0 runs "
                    "nothing and says so), or None for no bound"
                )
        seconds = self.max_seconds
        if seconds is not None and (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not math.isfinite(seconds)
            or seconds <= 0
        ):
            raise AgentBuildError(
                f"AnswerValidationLimits(max_seconds={seconds!r}): use a positive number of "
                "seconds, or None for no bound"
            )

    def record(self) -> dict[str, Any]:
        """The limits that are set, as data."""
        return {name: getattr(self, name) for name in LIMITS if getattr(self, name) is not None}


@dataclass(frozen=True)
class AnswerValidation:
    """``.answer_validation(...)``: the checks and their limits. In a replay, ``recorded`` is
    the report the recording holds (its time is read from there, never measured)."""

    claims: tuple[DeclaredClaim, ...] = ()
    limits: AnswerValidationLimits = field(default_factory=AnswerValidationLimits)
    recorded: Mapping[str, Any] | None = None

    def record(self) -> dict[str, Any]:
        """What ``settings`` keeps: enough to run the same checks without code."""
        out: dict[str, Any] = {}
        if self.claims:
            out["claims"] = [c.record() for c in self.claims]
        limits = self.limits.record()
        if limits:
            out["limits"] = limits
        return out

    @classmethod
    def from_record(
        cls, data: Mapping[str, Any], recorded: Mapping[str, Any] | None = None
    ) -> AnswerValidation:
        return cls(
            tuple(DeclaredClaim.from_record(c) for c in data.get("claims", ())),
            AnswerValidationLimits(**dict(data.get("limits", {}))),
            recorded,
        )


class Budget:
    """What the checks may still spend, and what they spent. Each read and each check asks
    first; the answer is the limit that stops it (``None``: go on). Once stopped, every later
    ask is refused with the same limit."""

    def __init__(self, limits: AnswerValidationLimits, clock: _Clock) -> None:
        self.limits = limits
        self.reads = self.bytes = self.checks = 0
        self.stopped_by: str | None = None
        self._clock = clock

    def check(self, index: int) -> str | None:
        """May check ``index`` start? (Counts it when it may.)"""
        if self.stopped_by is None:
            cap = self.limits.max_checks
            if cap is not None and self.checks >= cap:
                self.stopped_by = "max_checks"
            elif self._clock.expired(index, 0):
                self.stopped_by = "max_seconds"
            else:
                self.checks += 1
        return self.stopped_by

    def read(self, index: int, done: int, size: int) -> str | None:
        """May check ``index``, after ``done`` reads of its own, read ``size`` bytes more?"""
        if self.stopped_by is None:
            if self.limits.max_reads is not None and self.reads + 1 > self.limits.max_reads:
                self.stopped_by = "max_reads"
            elif self.limits.max_bytes is not None and self.bytes + size > self.limits.max_bytes:
                self.stopped_by = "max_bytes"
            elif done and self._clock.expired(index, done):
                self.stopped_by = "max_seconds"
            else:
                self.reads += 1
                self.bytes += size
        return self.stopped_by

    def spent(self) -> dict[str, Any]:
        return {
            "reads": self.reads,
            "bytes": self.bytes,
            "checks": self.checks,
            "seconds": self._clock.seconds(),
        }


class _Clock:
    """The time limit, measured (a live run)."""

    def __init__(self, max_seconds: float | None, now: Callable[[], float]) -> None:
        self._max = max_seconds
        self._now = now
        self._start = now()

    def expired(self, index: int, done: int) -> bool:
        return self._max is not None and self._now() - self._start >= self._max

    def seconds(self) -> float:
        return round(self._now() - self._start, 6)


class _RecordedClock(_Clock):
    """The time limit as the recording says it went: the cut where it was, the seconds it
    took (a replay runs at another speed, and must write the same report)."""

    def __init__(self, recorded: Mapping[str, Any]) -> None:
        self._seconds = float(thaw(recorded).get("spent", {}).get("seconds", 0.0))
        self._cut: tuple[int, int] | None = None
        if recorded.get("stopped_by") == "max_seconds":
            for index, check in enumerate(recorded.get("checks", ())):
                if check.get("skipped_by") == "max_seconds":
                    self._cut = (index, int(check.get("reads", 0)))
                    break

    def expired(self, index: int, done: int) -> bool:
        return self._cut is not None and (index, done) >= self._cut

    def seconds(self) -> float:
        return self._seconds


def validate_answer(validation: AnswerValidation, scope: Scope, answer: str) -> dict[str, Any]:
    """Run the answer checks on ``answer`` under the limits; commit and return the report."""
    state = {k: scope.get(k) for k in ("tool_results", "history", "prior_history", "settings")}
    results = turn_results({k: v for k, v in state.items() if v is not None})
    recorded = validation.recorded
    clock = (
        _RecordedClock(recorded)
        if recorded is not None
        else _Clock(validation.limits.max_seconds, time.perf_counter)
    )
    budget = Budget(validation.limits, clock)
    checks = [
        _claim_check(index, item, answer, results, budget)
        for index, item in enumerate(validation.claims)
    ]
    report: dict[str, Any] = {"checks": checks, "spent": budget.spent()}
    limits = validation.limits.record()
    if limits:
        report["limits"] = limits
    if budget.stopped_by is not None:
        report["stopped_by"] = budget.stopped_by
    report["complete"] = all(c["outcome"] != "skipped" for c in checks)
    scope[REPORT_KEY] = report
    _emit(
        scope,
        "agent.answer_validated",
        {
            "checks": len(checks),
            "fired": sum(c["outcome"] == "fired" for c in checks),
            "skipped": sum(c["outcome"] == "skipped" for c in checks),
            "complete": report["complete"],
            **({"stopped_by": budget.stopped_by} if budget.stopped_by else {}),
        },
    )
    return report


def _claim_check(
    index: int,
    item: DeclaredClaim,
    answer: str,
    results: Sequence[TurnResult],
    budget: Budget,
) -> dict[str, Any]:
    """One claim contract on the answer: each value it states, and the first result of its
    tools (this turn) that carries it."""
    entry: dict[str, Any] = {"check": "claim", "id": item.id}
    stopped = budget.check(index)
    if stopped is not None:
        return {**entry, "outcome": "skipped", "skipped_by": stopped, "reads": 0, "bytes": 0}
    stated = stated_values(item, answer)
    found: dict[str, str] = {}
    reads = size_read = 0
    cut = None
    pending = list(stated)
    for result in results:
        if not pending:
            break
        if result.name not in item.from_tools or result.row.get("status") not in CLAIM_READS:
            continue
        text = result.own
        size = len(text.encode())
        cut = budget.read(index, reads, size)
        if cut is not None:
            break
        reads += 1
        size_read += size
        read = normal(text)
        for value in list(pending):
            if carries(read, value):
                found[value] = result.id
                pending.remove(value)
    values = [{"value": v, "carried_by": found[v]} if v in found else {"value": v} for v in stated]
    if cut is not None and pending:
        outcome: dict[str, Any] = {"outcome": "skipped", "skipped_by": cut}
    else:
        outcome = {"outcome": "fired" if pending else "passed"}
    return {**entry, **outcome, "values": values, "reads": reads, "bytes": size_read}
