"""Answer validation on the builder and on the agent: ``.answer_validation(claims=...,
limits=...)``, checked at ``build()`` against the agent's tools and the other options
(limits that travel with the answer are refused beside it); and the readers of the last
answer's record, ``agent.assessment()`` and ``agent.answer_validation()`` (one module for
the feature's two mixins: the runtime folder is full)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Self

from trackway.engine import Snapshot, thaw
from trackway.engine.core._keywords import checked_keywords

from ..grounding._assess import AnswerAssessment, fold
from ..grounding._claims import DeclaredClaim
from ..grounding._gate import EvidenceGate
from ..grounding._validation import (
    REPORT_KEY,
    AnswerValidation,
    AnswerValidationLimits,
    RecordedReports,
)
from ..messages._errors import AgentBuildError

__all__ = ["AnswerRecord", "ValidationBuilding"]


class ValidationBuilding:
    """``.answer_validation(...)``."""

    _validation: AnswerValidation | None
    _validation_replay: RecordedReports | None
    _limits_travel: bool
    _evidence: EvidenceGate | None  # GroundingBuilding's: the evidence gate, the first check

    def _take_validation_options(self) -> None:
        self._validation = None
        self._validation_replay = None  # a replay's: the reports the recording wrote

    @checked_keywords
    def answer_validation(
        self,
        *,
        claims: Iterable[DeclaredClaim] = (),
        limits: AnswerValidationLimits | None = None,
    ) -> Self:
        """Check the terminal answer before it is handed back, within resource limits.

        ``claims``: claim contracts (``claim(id, pattern=, from_tools=)``) — each value the
        answer states for a claim must be carried by a result of the claim's tools in the same
        turn, else the claim fires. With the evidence gate, the gate is the first check and its
        corpus is read within the limits. ``limits``: an :class:`AnswerValidationLimits`
        bounding the tool results read, the bytes read, the checks run and the seconds spent
        (a check a limit stops is reported as skipped, never as passed).
        ``agent.answer_validation()`` returns the last answer's report;
        ``agent.assessment()`` reads it. Refused together with
        ``.limits_travel_with_the_answer()``. Called once per agent.
        """
        if self._validation is not None:
            raise AgentBuildError(
                "answer_validation(...) was called twice; an agent has one answer validation: "
                "pass every claim and the limits in one call"
            )
        if isinstance(claims, DeclaredClaim):
            claims = (claims,)
        declared = tuple(claims)
        for item in declared:
            if not isinstance(item, DeclaredClaim):
                raise AgentBuildError(
                    f"answer_validation(claims=...) takes claim(...) declarations, got {item!r}"
                )
        ids = [c.id for c in declared]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise AgentBuildError(
                f"answer_validation: two claims have the id {twice[0]!r}; give each its own id "
                "(the report names claims by id)"
            )
        if limits is None:
            limits = AnswerValidationLimits()
        if not isinstance(limits, AnswerValidationLimits):
            raise AgentBuildError(
                "answer_validation(limits=...) takes AnswerValidationLimits(max_reads=, "
                f"max_bytes=, max_checks=, max_seconds=), got {limits!r}"
            )
        self._validation = AnswerValidation(declared, limits)
        return self

    def _validation_plan(self, tools: Collection[str]) -> AnswerValidation | None:
        """The checked validation for an agent with ``tools`` (``None`` when not asked for)."""
        validation = self._validation
        if validation is None:
            return None
        if self._limits_travel:
            raise AgentBuildError(
                "answer_validation() cannot stand beside limits_travel_with_the_answer(): the "
                "limits block is composed from the tools' own declarations and appended to the "
                "answer, so a check of the answer would read the tools' words as the answer's "
                "and pass what the model never said. Keep one: drop "
                "limits_travel_with_the_answer() and read agent.answer_coverage(), or drop "
                "answer_validation()"
            )
        if not validation.claims and self._evidence is None:
            raise AgentBuildError(
                "answer_validation() has nothing to check: declare the claims it runs, "
                "answer_validation(claims=[claim('id', pattern=r'(\\d+) ...', "
                "from_tools=('tool',))]), or give the agent the evidence gate, "
                ".names_and_numbers_from_evidence(...), whose corpus it then bounds"
            )
        if self._validation_replay is not None:  # checked when the recorded agent was built
            return AnswerValidation(validation.claims, validation.limits, self._validation_replay)
        for item in validation.claims:
            unknown = [t for t in item.from_tools if t not in tools]
            if unknown:
                raise AgentBuildError(
                    f"claim {item.id!r} reads from_tools {unknown}, which are not tools of this "
                    f"agent (tools: {', '.join(sorted(tools)) or 'none'}); add them with "
                    ".tool(...) or name the tools whose results carry the value"
                )
        return validation


class AnswerRecord:
    """The readers of the last answer's standing (mixed into ``Agent``)."""

    _running: bool
    _last: Snapshot | None
    _last_state: Mapping[str, Any] | None

    def _settled(self) -> tuple[Mapping[str, Any], str] | None:
        """The last run's state (real values, even when the record is redacted) and status;
        ``None`` before the first run and while one is in flight."""
        last = self._last
        if self._running or last is None:
            return None
        return (last.state if self._last_state is None else self._last_state), last.status

    def assessment(self) -> AnswerAssessment | None:
        """How far the last run's answer stands, folded from its committed record (never
        from how sure the model sounded): ``known``, ``consistent`` (checks ran, none fired —
        never "verified"), ``not-sure`` (with its ``reasons``), ``ask`` (the run waits on a
        person) or ``not-assessed``. The same fold as ``assess_answer(snapshot)``, so a
        recording read in another process folds the same. ``None`` before the first run,
        while a run is in flight, and after a run that failed or whose answer a rule
        refused."""
        settled = self._settled()
        return None if settled is None else fold(*settled)

    def answer_validation(self) -> dict[str, Any] | None:
        """The last answer's validation report (``.answer_validation(...)``): each check
        with its outcome (``passed``, ``fired``, ``skipped``), what was spent, the limits,
        which limit stopped the checks (``stopped_by``) and whether every check ran
        (``complete``). ``None`` when no terminal validation ran — never an implicit pass."""
        settled = self._settled()
        report = None if settled is None else settled[0].get(REPORT_KEY)
        return None if report is None else dict(thaw(report))
