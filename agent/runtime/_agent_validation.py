"""How far the last run's answer stands, read back from its record: ``agent.assessment()``
and ``agent.answer_validation()``. A part of :class:`~._agent.Agent`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine import Snapshot, thaw

from ..grounding._assess import AnswerAssessment, fold
from ..grounding._validation import REPORT_KEY

__all__ = ["AnswerRecord"]


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
