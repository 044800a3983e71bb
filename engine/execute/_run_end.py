"""How a run's end is told: the error of a run past its timeout, and the snapshot a run
under a redaction policy keeps."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core._errors import RunTimeoutError
from ..core._snapshot import Snapshot

if TYPE_CHECKING:
    from ..observe._redact import Redactor
    from ..run._context import RunContext

__all__ = ["redacted_snapshot", "timed_out"]


def timed_out(run: RunContext, timeout: float) -> RunTimeoutError:
    """The error of a run that went past ``timeout=``: where it stopped, and why a sync
    stage could only be stopped when it returned."""
    last = run.log[-1] if run.log else None
    where = (
        f"the stage in flight, {last.stage_path}, was cancelled and committed as 'cancelled'"
        if last is not None and last.outcome == "cancelled"
        else "it was stopped between stages"
        + (
            f", after {last.stage_path} (a sync stage cannot be cancelled while it runs: one "
            "that overruns ends the run when it returns; make it async to be cancelled)"
            if last is not None
            else ""
        )
    )
    return RunTimeoutError(
        f"the run did not finish within timeout={timeout}s; {where}",
        stage_path=last.stage_path if last is not None else None,
    )


def redacted_snapshot(live: Snapshot, redactor: Redactor) -> Snapshot:
    """The retained snapshot: every commit through the funnel, its own time-travel index."""
    return Snapshot.from_commits(
        run_id=live.run_id,
        chart_id=live.chart_id,
        status=live.status,
        initial=redactor.initial(live._initial),
        commits=[redactor.commit(c) for c in live._commits],
        break_reason=live.break_reason,
        error=live.error,
        recorder_failures=live.recorder_failures,
        observer_stats=live.observer_stats,
    )
