"""Whether a checkpoint is the one its run made, and which log a resume continues from.

With a store, the store is the proof: it keeps a digest of every checkpoint it saved (ids,
cursor, payload, position, and the log the checkpoint carries), and only that checkpoint,
unchanged, for a run still paused at that position, resumes. Without a store, checkpoints
are signed (HMAC-SHA256) with the executor's key; one signed otherwise, or not at all, is
refused unless the executor allows unsigned ones. Every check runs before the claim.
"""

from __future__ import annotations

import secrets

from ..core._errors import (
    CheckpointClaimedError,
    CheckpointError,
    ForgedCheckpointError,
    UnknownRunError,
)
from ..core._snapshot import Snapshot
from ..stores._checkpoint import Checkpoint, core_digest, position, signed_by
from ..stores._paused import checkpoint_in_store, is_reference
from ..stores._store import RunStore
from ._session import StoreSession

__all__ = ["PROCESS_KEY", "as_checkpoint", "trusted_log"]

PROCESS_KEY = secrets.token_bytes(32)
"""Signs checkpoints of executors given no checkpoint_key: good for this process only."""


def as_checkpoint(
    checkpoint: Checkpoint | str | bytes, store: RunStore | None = None, *, opened: bool = False
) -> Checkpoint:
    """A checkpoint given as an object, as its JSON, or by id: a run id or a checkpoint id
    (a str that is not a JSON object), looked up in ``store`` (``opened``: for a resume under
    a redaction policy, the real copy a store with a seal keeps sealed)."""
    if isinstance(checkpoint, Checkpoint):
        return checkpoint
    if isinstance(checkpoint, str) and is_reference(checkpoint):
        return checkpoint_in_store(store, checkpoint, opened=opened)
    if isinstance(checkpoint, (str, bytes)):
        return Checkpoint.from_json(checkpoint)
    raise CheckpointError(
        f"resume() takes a Checkpoint, its JSON, or a paused run's id (or checkpoint id), got "
        f"{type(checkpoint).__name__}"
    )


def trusted_log(
    cp: Checkpoint, session: StoreSession | None, key: bytes, allow_unsigned: bool
) -> Snapshot:
    """The log a resume of ``cp`` continues from, once ``cp`` is known to be the run's own.

    A checkpoint the store saved is checked against its digest there, and its log is the
    store's (or, under a redaction policy, the real log it carries, which the digest covers).
    A checkpoint the store never saw — one made by an executor without a store, carrying its
    log — must be signed with ``key``, and its run must not be in the store.
    """
    stored = None if session is None else session.call(
        lambda s: _stored_checkpoint(s, cp.checkpoint_id), "load the stored checkpoint"
    )  # fmt: skip
    if stored is not None:
        assert session is not None
        return _held_log(cp, stored, session, allow_unsigned)
    if cp.snapshot is None:
        if session is not None:
            raise ForgedCheckpointError(
                f"the store holds no checkpoint {cp.checkpoint_id}: an executor with a store "
                "resumes only the checkpoints it saved (this one was edited, or comes from "
                "another store)"
            )
        raise CheckpointError(
            f"checkpoint {cp.checkpoint_id} keeps its commit log in a store, and this executor "
            "has none; resume it with Executor(chart, store=<that store>)"
        )
    if not signed_by(cp, key) and not (allow_unsigned and cp.signature is None):
        raise ForgedCheckpointError(_unsigned(cp))
    if session is not None and session.call(lambda s: _holds_run(s, cp.run_id), "look the run up"):
        raise ForgedCheckpointError(
            f"the store holds run {cp.run_id!r} but no checkpoint {cp.checkpoint_id}: an "
            "executor with a store resumes only the checkpoints it saved"
        )
    return cp.snapshot.copy()  # the resumed run grows its own copy of the index


def _held_log(
    cp: Checkpoint, stored: Checkpoint, session: StoreSession, allow_unsigned: bool
) -> Snapshot:
    expected = stored.digest
    if expected is None and stored.cursor is not None:  # saved before digests were kept
        expected = core_digest(stored)
    unverifiable = expected is None and allow_unsigned
    if not unverifiable and expected != core_digest(cp):
        raise ForgedCheckpointError(
            f"checkpoint {cp.checkpoint_id} is not the one the store saved for this run: its "
            "ids, cursor, payload, position or carried log differ. Resume with the checkpoint "
            f"as the run returned it, or as store.load_checkpoint({cp.checkpoint_id!r}) gives it."
        )
    log = session.call(lambda s: s.load(cp.run_id), f"load run {cp.run_id!r}")
    if log.status != "paused" or len(log) != position(cp):
        raise CheckpointClaimedError(
            f"checkpoint {cp.checkpoint_id} was already resumed: run {cp.run_id!r} is "
            f"{log.status} with {len(log)} commits, no longer paused where the checkpoint was "
            "made. A checkpoint resumes once; if the run paused again, resume its newer "
            "checkpoint."
        )
    # under a redaction policy the store's log is redacted: the checkpoint carries the real
    # one, and the digest just checked covers it
    return log if cp.snapshot is None else cp.snapshot.copy()


def _unsigned(cp: Checkpoint) -> str:
    why = "carries no signature" if cp.signature is None else "is not signed with this key"
    return (
        f"checkpoint {cp.checkpoint_id} {why}: it was edited, or made by an executor with "
        "another checkpoint_key (without one, each process signs with a key of its own). Give "
        "every executor that pauses or resumes this chart the same "
        "Executor(..., checkpoint_key=<a shared secret>), or keep runs in a store; "
        "allow_unsigned_checkpoints=True accepts checkpoints with no signature at all."
    )


def _stored_checkpoint(store: RunStore, checkpoint_id: str) -> Checkpoint | None:
    try:
        return store.load_checkpoint(checkpoint_id)
    except UnknownRunError:
        return None


def _holds_run(store: RunStore, run_id: str) -> bool:
    try:
        store.history(run_id)
    except UnknownRunError:
        return False
    return True
