"""Crash recovery: a run whose process died continues from its log, at any depth.

The log is the truth. Recovery walks the chart again from the start with the run's
committed commits at hand (``RunContext.replay``, by stage path): a stage, merge or subflow
mapping the log holds is *taken* from it — its writes, its decision, its break — and never
runs again; the first one it does not hold runs, and from there the run goes on as usual.
Execution indices come out the same because the walk is the same, so paths stay stable.
Parallel branches, for-each items, selectors and subflows need nothing special: branches
that committed are taken, branches that were in flight run again, and a merge that was
never committed is made from them. A pause the log holds pauses again (its checkpoint is
made anew if the crash lost it), or is resumed with the answer a claim recorded but never
used.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

from ..core._commit import Commit
from ..core._errors import RecoveryError
from ..core._snapshot import Snapshot
from ..run._context import Replay
from ..stores._store import RunStore

__all__ = ["RECOVERABLE_FAILURES", "Pending", "recovery_plan", "replay_index"]

RECOVERABLE_FAILURES = frozenset({"StoreWriteError", "StoreError", "Cancelled"})
"""Failures that stopped a run from outside (its store, a cancellation), not by a rule: a
run that failed this way continues like a crashed one."""


class Pending(NamedTuple):
    """An answer a resume claimed and recorded but never used: the paused stage and value."""

    paused_at: str
    value: Any


def recovery_plan(store: RunStore, snapshot: Snapshot, *, opened: bool = False) -> Pending | None:
    """Check that the run can be recovered, and find an answer its crash left unused.

    Refused (:class:`RecoveryError`): runs that ended by themselves (``done``, ``broken``,
    ``failed`` by anything but their store or a cancellation), and paused runs whose
    checkpoint is still waiting to be resumed. ``opened``: under a redaction policy, the
    answer a claim kept is the real one the store's seal opens.
    """
    run_id = snapshot.run_id
    status = snapshot.status
    if status in ("done", "broken"):
        raise RecoveryError(f"run {run_id!r} already ended ({status}); nothing to recover")
    if status == "failed":
        kind = None if snapshot.error is None else snapshot.error.type
        if kind not in RECOVERABLE_FAILURES:
            message = snapshot.error.message if snapshot.error is not None else ""
            raise RecoveryError(
                f"run {run_id!r} ended failed by {kind}: {message}. A run that a rule ended (a "
                "failing stage, a loop limit, a timeout, a schema) is not a crash: recover() "
                "continues only runs whose process died, or that their store or a "
                "cancellation stopped"
            )
    checkpoint_id = f"{run_id}@{len(snapshot)}"
    claim = store.checkpoint_claim(checkpoint_id)
    if claim is None:
        return None
    if not claim.claimed:
        raise RecoveryError(
            f"run {run_id!r} is paused and its checkpoint {checkpoint_id} is waiting: resume it "
            f"(store.load_checkpoint({checkpoint_id!r})) instead of recovering"
        )
    answer = claim.answer
    if opened:  # under a redaction policy the real answer is the sealed one
        answer = store._opened_answer(checkpoint_id) or answer  # type: ignore[attr-defined]
    if answer is None:
        return None
    return Pending(claim.paused_at, orjson.loads(answer))


def replay_index(commits: tuple[Commit, ...]) -> Replay:
    """The log by stage path: what recovery takes instead of running again."""
    return Replay(commits)
