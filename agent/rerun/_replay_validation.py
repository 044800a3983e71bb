"""Answer validation in a replay: the same checks (from the agent, or from the ``settings``
the recording committed: claims are data), run again on the replayed answer; time is read
from the recorded report, never measured (the cut where the time limit cut, the seconds
it took)."""

from __future__ import annotations

from typing import Any

from trackway.engine import Snapshot, thaw

from ..grounding._validation import REPORT_KEY, AnswerValidation, RecordedReports

__all__ = ["replay_validation"]


def replay_validation(builder: Any, snap: Snapshot, declared: AnswerValidation | None) -> None:
    """Configure ``builder`` (an ``AgentBuilder``) to validate answers as the recorded run
    did: with ``declared`` (the agent's), else as its settings say; nothing when neither."""
    state = snap.state
    if declared is None:
        data = thaw(state.get("settings", {})).get("answer_validation")
        if data is None:
            return
        declared = AnswerValidation.from_record(data)
    builder.answer_validation(claims=declared.claims, limits=declared.limits)
    writes = [
        op.value
        for c in snap.history()
        if c.frame == ""
        for op in c.ops
        if op.key == REPORT_KEY and op.kind == "set"
    ]
    builder._validation_replay = RecordedReports(writes)
