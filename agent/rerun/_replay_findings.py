"""``.findings()`` on a replay: the options the recording's run constant holds
(``settings["findings"]``), and the judge replaced by what it answered
(:class:`RecordedJudge`, read off the ledger's judgment rows): a replay calls no judge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine import Snapshot, thaw

from ..classify._port import ClassifierError, ClassifyAnswer, ClassifyRequest
from ..context._findings_plan import FindingsPlan
from ..messages._errors import ReplayDivergence

__all__ = ["RecordedJudge", "replay_findings"]


class RecordedJudge:
    """The judge's answers of a recorded run (its ``judgment`` and ``judgment-error`` rows),
    in the order they were filed."""

    def __init__(self, snap: Snapshot, name: str) -> None:
        self.name = name
        self._rows = [
            r
            for r in thaw(snap.state.get("findings", []))
            if r.get("kind") in ("judgment", "judgment-error")
        ]

    async def classify(self, request: ClassifyRequest) -> ClassifyAnswer:
        if not self._rows:
            raise ReplayDivergence(
                "the replay asked the findings judge more often than the recording did",
                stage_path="offer",
                key="findings",
            )
        row = self._rows.pop(0)
        if row["kind"] == "judgment-error":
            raise ClassifierError(row.get("message", ""), status=row.get("status"), retryable=False)
        return ClassifyAnswer.from_record(row["answer"])


def replay_findings(builder: Any, recorded: Any, snap: Snapshot) -> None:
    """Arm ``builder`` with ``.findings()`` as the recording ran it: ``True`` is a
    recording made before the ledger piece (served without it)."""
    if not recorded:
        return
    builder._findings = True
    if not isinstance(recorded, Mapping):
        builder._findings_plan = FindingsPlan(piece=False)
        return
    judge = recorded.get("judge")
    builder._findings_plan = FindingsPlan(
        serve=recorded.get("serve", "ledger-and-facts"),
        answer_ask=recorded.get("answer_ask", "none"),
        judge=None if judge is None else RecordedJudge(snap, judge),
    )
