"""One claimed run, driven by what its queue row says: started (queued), resumed with its
answer (answered), or continued from its log (its last worker stopped without recording how
it went: let go, dead, or frozen past its lease)."""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable

from ..core._errors import CheckpointClaimedError, StoreError, TrackwayError, UnknownRunError
from ..execute._recovery import RECOVERABLE_FAILURES
from ..stores._postgres import PostgresStore
from ..stores.queue._claims import Claim
from ._worker_target import WorkOutcome, WorkTarget

__all__ = ["attempt", "frames", "give_up"]

Said = Callable[[BaseException], str]
"""An error's message as the queue keeps it (masked under a policy hiding error text)."""


async def attempt(
    store: PostgresStore, target: WorkTarget, claim: Claim, said: Said
) -> WorkOutcome:
    """Drive ``claim`` once, as its queue row says; how it went."""
    if claim.was == "queued":
        return await target.start(claim.run_id, store._queue_input(claim))
    if claim.was == "answered":
        return await _resume(store, target, claim, said)
    return await _continue(store, target, claim, said)


async def _resume(
    store: PostgresStore, target: WorkTarget, claim: Claim, said: Said
) -> WorkOutcome:
    """Resume a paused run with its answer; an answer refused before the checkpoint was
    used puts the run back to waiting, with the reason."""
    assert claim.checkpoint_id is not None and claim.answer is not None
    checkpoint_id = claim.checkpoint_id
    try:
        return await target.resume(checkpoint_id, store._queue_answer(claim))
    except CheckpointClaimedError:
        return await _continue(store, target, claim._replace(answer=None), said)
    except TrackwayError as exc:
        if isinstance(exc, StoreError):
            raise
        taken = store.checkpoint_claim(checkpoint_id)
        if taken is not None and taken.claimed:
            raise
        return WorkOutcome("paused", checkpoint_id, f"answer refused: {said(exc)}")


async def _continue(
    store: PostgresStore, target: WorkTarget, claim: Claim, said: Said
) -> WorkOutcome:
    """A run whose last worker stopped without recording how it went: read its log."""
    run_id = claim.run_id
    try:
        snapshot = store.load(run_id)
    except UnknownRunError:
        if claim.checkpoint_id is None:  # its worker died before the run began
            return await target.start(run_id, store._queue_input(claim))
        raise
    status = snapshot.status
    if status in ("done", "broken"):
        return WorkOutcome(status)
    error = snapshot.error
    if status == "failed" and (error is None or error.type not in RECOVERABLE_FAILURES):
        return WorkOutcome(
            "failed", None, None if error is None else f"{error.type}: {error.message}"
        )
    if status == "paused":
        checkpoint_id = f"{run_id}@{len(snapshot)}"
        held = store.checkpoint_claim(checkpoint_id)
        if held is not None and not held.claimed:
            if claim.answer is not None and claim.checkpoint_id == checkpoint_id:
                return await _resume(store, target, claim, said)
            return WorkOutcome("paused", checkpoint_id)
    return await target.recover(run_id)


def give_up(store: PostgresStore, claim: Claim) -> WorkOutcome:
    """Fail a run whose workers died driving it alone ``max_attempts`` times, in the queue
    and in its own record (under this claim's lease), so neither says running."""
    reason = (
        f"gave up after {claim.attempts} attempts: each worker that claimed it alone died "
        "(or lost its lease) before the run ended"
    )
    outcome = {"error": ["UnrecoverableRunError", reason], "break_reason": None}
    # (its workers may have died before the run began: then there is no record to end)
    with contextlib.suppress(UnknownRunError):
        store.finish_run(claim.run_id, "failed", {**outcome, "recorder_failures": []})
    return WorkOutcome("failed", None, reason)


def frames(exc: BaseException) -> list[str]:
    """Where an exception was raised, as ``file:line in function`` (no source lines, which
    can hold a literal a redaction policy hides)."""
    return [f"{f.filename}:{f.lineno} in {f.name}" for f in traceback.extract_tb(exc.__traceback__)]
