"""Answer validation: the checks run on a terminal answer — the evidence gate's corpus (when
the agent has the gate) and the claim contracts — bounded by resource limits (tool results
read, bytes read, checks run, seconds), and the report of what ran, what it found, what it
spent and which limit stopped it.

One answer's checks are one pass. With the gate, ``route`` begins it: the gate is check 0,
its corpus read under the limits, and the report so far is committed (``pending`` names the
claims still to run); ``final`` goes on from it with the claims. Without the gate, ``final``
runs the whole pass. The report is committed as ``answer_validation``, so a replay runs the
checks again and must write the same report. Time is the one thing a replay cannot measure
again, so it reads it from the recording: each write's seconds, and the point where the time
limit cut (which check, after how many reads), where the replay cuts too.
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
from ._claims import DeclaredClaim, stated_values
from ._corpus import EvidenceCorpus
from ._reading import TurnResult, turn_results
from ._verdict import Judged

__all__ = [
    "LIMITS",
    "REPORT_KEY",
    "AnswerValidation",
    "AnswerValidationLimits",
    "Budget",
    "Checking",
    "RecordedReports",
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
    """``.answer_validation(...)``: the checks and their limits. In a replay, ``recorded``
    holds the reports the recording wrote (their time is read from there, never measured)."""

    claims: tuple[DeclaredClaim, ...] = ()
    limits: AnswerValidationLimits = field(default_factory=AnswerValidationLimits)
    recorded: RecordedReports | None = None

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
    def from_record(cls, data: Mapping[str, Any]) -> AnswerValidation:
        return cls(
            tuple(DeclaredClaim.from_record(c) for c in data.get("claims", ())),
            AnswerValidationLimits(**dict(data.get("limits", {}))),
        )


class RecordedReports:
    """The reports a recording wrote, in order: a replay's passes read their time from them,
    one write each (a replay agent replays one run)."""

    def __init__(self, writes: Sequence[Mapping[str, Any]]) -> None:
        self._writes = [dict(thaw(w)) for w in writes]

    def next(self) -> Mapping[str, Any]:
        """The next recorded write (empty once they are used up: the replay has diverged,
        which the comparison of commits names)."""
        return self._writes.pop(0) if self._writes else {}


class Budget:
    """What the checks may still spend, and what they spent. Each check and each read asks
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
    """The time limit, measured (a live run); ``already``: seconds an earlier stage of the
    pass spent."""

    def __init__(self, max_seconds: float | None, already: float = 0.0) -> None:
        self._max = max_seconds
        self._start = time.perf_counter() - already

    def expired(self, index: int, done: int) -> bool:
        return self._max is not None and time.perf_counter() - self._start >= self._max

    def seconds(self) -> float:
        return round(time.perf_counter() - self._start, 6)


class _RecordedClock(_Clock):
    """The time limit as the recording says it went: the cut where it was, the seconds it
    took (a replay runs at another speed, and must write the same report)."""

    def __init__(self, recorded: Mapping[str, Any]) -> None:
        self._seconds = float(recorded.get("spent", {}).get("seconds", 0.0))
        self._cut: tuple[int, int] | None = None
        for index, check in enumerate(recorded.get("checks", ())):
            if check.get("cut_by") == "max_seconds":
                self._cut = (index, int(check.get("reads", 0)))
                break

    def expired(self, index: int, done: int) -> bool:
        return self._cut is not None and (index, done) >= self._cut

    def seconds(self) -> float:
        return self._seconds


class Checking:
    """One answer's pass of checks: its budget and the checks reported so far."""

    def __init__(
        self, validation: AnswerValidation, clock: _Clock, checks: list[dict[str, Any]]
    ) -> None:
        self.validation = validation
        self.budget = Budget(validation.limits, clock)
        self.checks = checks
        self._read = [0, 0]  # the gate's corpus: results and bytes read

    @classmethod
    def begin(cls, validation: AnswerValidation, prior: Any = None) -> Checking:
        """A pass: a new one, or (``prior``, the report the gate committed for this answer)
        the one the gate began, where it left off."""
        recorded = validation.recorded
        going_on = isinstance(prior, Mapping) and "pending" in prior
        spent = thaw(prior["spent"]) if going_on else {}
        if recorded is not None:
            clock: _Clock = _RecordedClock(recorded.next())
        else:
            clock = _Clock(validation.limits.max_seconds, float(spent.get("seconds", 0.0)))
        checking = cls(
            validation, clock, [dict(c) for c in thaw(prior["checks"])] if going_on else []
        )
        if going_on:
            budget = checking.budget
            budget.reads, budget.bytes = int(spent["reads"]), int(spent["bytes"])
            budget.checks, budget.stopped_by = int(spent["checks"]), prior.get("stopped_by")
        return checking

    def gate_reads(self) -> Callable[[str], str | None]:
        """What the evidence gate's corpus asks before each result it reads (check 0)."""
        refused = self.budget.check(0)

        def admit(text: str) -> str | None:
            if refused is not None:
                return refused
            size = len(text.encode())
            stop = self.budget.read(0, self._read[0], size)
            if stop is None:
                self._read[0] += 1
                self._read[1] += size
            return stop

        return admit

    def gate_judged(self, scope: Scope, corpus: EvidenceCorpus, judged: Judged) -> None:
        """The gate's check in the report, committed with the claims still pending."""
        unsupported = len(judged.unsupported)
        entry: dict[str, Any] = {"check": "evidence"}
        cut = corpus.cut_by if corpus.truncated else None
        started = self.budget.checks > 0
        if not started or (unsupported and cut is not None):
            entry["outcome"] = "skipped"  # values it could not look for are not passed
        else:
            entry["outcome"] = "fired" if unsupported else "passed"
        entry.update(candidates=judged.candidates, unsupported=unsupported)
        entry.update(reads=self._read[0], bytes=self._read[1])
        if not started:
            cut = self.budget.stopped_by
        if cut is not None:
            entry["cut_by"] = cut
        self.checks = [entry]
        self.write(scope, pending=[c.id for c in self.validation.claims])

    def write(self, scope: Scope, pending: list[str] | None = None) -> dict[str, Any]:
        """Commit the report so far (``pending``: the claims ``final`` still runs)."""
        report: dict[str, Any] = {"checks": self.checks, "spent": self.budget.spent()}
        limits = self.validation.limits.record()
        if limits:
            report["limits"] = limits
        if self.budget.stopped_by is not None:
            report["stopped_by"] = self.budget.stopped_by
        report["complete"] = not pending and all(c["outcome"] != "skipped" for c in self.checks)
        if pending is not None:
            report["pending"] = pending
        scope[REPORT_KEY] = report
        return report


def validate_answer(validation: AnswerValidation, scope: Scope, answer: str) -> dict[str, Any]:
    """Run the claims on ``answer`` under the limits, going on from the gate's check when it
    began the pass; commit and return the report."""
    checking = Checking.begin(validation, scope.get(REPORT_KEY))
    state = {k: scope.get(k) for k in ("tool_results", "history", "prior_history", "settings")}
    results = turn_results({k: v for k, v in state.items() if v is not None})
    first = len(checking.checks)
    indexed: dict[int, EvidenceCorpus] = {}  # each result indexed once, whichever claims read it
    for index, item in enumerate(validation.claims, start=first):
        check = _claim_check(index, item, answer, results, checking.budget, indexed)
        checking.checks.append(check)
    report = checking.write(scope)
    checks = report["checks"]
    _emit(
        scope,
        "agent.answer_validated",
        {
            "checks": len(checks),
            "fired": sum(c["outcome"] == "fired" for c in checks),
            "skipped": sum(c["outcome"] == "skipped" for c in checks),
            "complete": report["complete"],
            **({"stopped_by": report["stopped_by"]} if "stopped_by" in report else {}),
        },
    )
    return report


def _claim_check(
    index: int,
    item: DeclaredClaim,
    answer: str,
    results: Sequence[TurnResult],
    budget: Budget,
    indexed: dict[int, EvidenceCorpus],
) -> dict[str, Any]:
    """One claim contract on the answer: each value it states, and the first result of its
    tools (this turn) that carries it (a read is counted each time a check reads a result;
    ``indexed`` keeps the work of reading it once)."""
    entry: dict[str, Any] = {"check": "claim", "id": item.id}
    stopped = budget.check(index)
    if stopped is not None:  # kept from starting: nothing read, nothing stated
        return {**entry, "outcome": "skipped", "reads": 0, "bytes": 0, "cut_by": stopped}
    stated = stated_values(item, answer)
    found: dict[str, str] = {}
    reads = size_read = 0
    cut = None
    pending = list(stated)
    for at, result in enumerate(results):
        if not pending:
            break
        if result.name not in item.from_tools or result.row.get("status") not in CLAIM_READS:
            continue
        size = len(result.own.encode())
        cut = budget.read(index, reads, size)
        if cut is not None:
            break
        reads += 1
        size_read += size
        corpus = indexed.get(at)
        if corpus is None:
            corpus = indexed[at] = EvidenceCorpus()
            corpus.add(result.id, result.own, result.row)
        for value in list(pending):
            if corpus.find(value) is not None:
                found[value.value] = result.id
                pending.remove(value)
    values = [
        {"value": v.spelling, "carried_by": found[v.value]}
        if v.value in found
        else {"value": v.spelling}
        for v in stated
    ]
    if cut is not None and pending:
        outcome: dict[str, Any] = {"outcome": "skipped", "cut_by": cut}
    else:
        outcome = {"outcome": "fired" if pending else "passed"}
    return {**entry, **outcome, "values": values, "reads": reads, "bytes": size_read}
