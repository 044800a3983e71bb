"""Finding a paused run: what a store lists as waiting, and a checkpoint looked up by id.

A paused run's checkpoint is kept in its store under ``<run id>@<commits at the pause>``,
so a run id is enough to find it: the run's commit count names the one checkpoint that can
still resume it. ``store.paused()`` lists every run waiting like that (with the payload it
waits on); ``checkpoint_in_store`` turns a run id or a checkpoint id into that checkpoint,
so ``resume`` can be given an id instead of the object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ..core._errors import CheckpointClaimedError, ExecutorUsageError, UnknownRunError
from ._checkpoint import Checkpoint

if TYPE_CHECKING:
    from ._store import RunStore

__all__ = ["PausedRun", "checkpoint_in_store", "is_reference", "paused_run"]


class PausedRun(NamedTuple):
    """A run waiting in a store to be resumed (``store.paused()``).

    ``payload`` is what the paused stage passed to ``scope.pause`` (as the store keeps it:
    masked under a redaction policy that covers pauses), ``paused_at`` the stage path of the
    pause, ``since`` when the run paused (seconds since the epoch). Resume it with
    ``executor.resume(paused.run_id, value)`` on an executor with the same store.
    """

    run_id: str
    chart_id: str
    checkpoint_id: str
    paused_at: str
    payload: Any
    since: float


def paused_run(chart_id: str, since: float | None, doc: bytes) -> PausedRun:
    """A :class:`PausedRun` from a stored checkpoint document."""
    cp = Checkpoint.from_json(doc)
    return PausedRun(cp.run_id, chart_id, cp.checkpoint_id, cp.paused_at, cp.payload, since or 0.0)


def is_reference(checkpoint: str | bytes) -> bool:
    """True for a run id or a checkpoint id; False for a checkpoint's JSON (an object)."""
    return isinstance(checkpoint, str) and not checkpoint.lstrip().startswith("{")


def checkpoint_in_store(
    store: RunStore | None, ref: str, *, call: str = "resume", opened: bool = False
) -> Checkpoint:
    """The checkpoint ``ref`` names in ``store``: ``<run id>@<n>`` is a checkpoint id; anything
    else is a run id, resolved to the checkpoint its run waits on now.

    Raises :class:`ExecutorUsageError` without a store, :class:`UnknownRunError` when the
    store holds no such run or checkpoint or the run is not paused, and
    :class:`CheckpointClaimedError` when the run's last checkpoint was already resumed.
    ``opened``: a resume under a redaction policy, which takes the real checkpoint a store
    with a seal keeps sealed beside the masked one.
    """
    if store is None:
        raise ExecutorUsageError(
            f"{call}({ref!r}) looks the paused run up in the executor's store, and this one has "
            f"none: use Executor(chart, store=<the run's store>), or pass the Checkpoint (or its "
            "JSON) instead of an id"
        )
    if "@" in ref:
        try:
            return _kept(store, ref, opened)
        except UnknownRunError:
            raise UnknownRunError(
                f"no checkpoint {ref!r} in {store!r}; store.paused() lists the runs waiting to "
                "be resumed, with their checkpoint ids"
            ) from None
    try:
        count = len(store.history(ref))
    except UnknownRunError:
        raise UnknownRunError(
            f"no run {ref!r} in {store!r}; store.paused() lists the runs waiting to be resumed"
        ) from None
    checkpoint_id = f"{ref}@{count}"
    claim = store.checkpoint_claim(checkpoint_id)
    if claim is None:
        raise UnknownRunError(
            f"run {ref!r} in {store!r} is not paused: no checkpoint waits at its last commit "
            f"({count}). store.paused() lists the runs waiting to be resumed; store.load("
            f"{ref!r}).status says how this one stands"
        )
    if claim.claimed:
        raise CheckpointClaimedError(
            f"run {ref!r} was already resumed from its checkpoint {checkpoint_id}; a checkpoint "
            "resumes once (if the resume's process died, Executor.recover continues the run)"
        )
    return _kept(store, checkpoint_id, opened)


def _kept(store: RunStore, checkpoint_id: str, opened: bool) -> Checkpoint:
    """The store's checkpoint; ``opened``: its sealed real copy when it keeps one."""
    if opened and getattr(store, "seal", None) is not None:
        real: Checkpoint | None = store._opened_checkpoint(checkpoint_id)  # type: ignore[attr-defined]
        if real is not None:
            return real
    return store.load_checkpoint(checkpoint_id)
