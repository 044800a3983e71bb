"""A worker's leases: renewed from a thread of their own while runs are driven, and given
back when the worker leaves."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from ._worker_target import log_line

if TYPE_CHECKING:
    from ._worker import Worker

__all__ = ["leave", "renew_leases"]


def leave(worker: Worker) -> None:
    """Give up every lease still held (a cancelled worker) and sign off."""
    with worker._lock:
        left = {run_id: worker._tokens[run_id] for run_id in worker._active}
    for run_id, token in left.items():
        try:
            worker.store._queue_settle(run_id, token, "running", error=None)
        except Exception as exc:  # the lease expires on its own
            log_line(
                logging.WARNING,
                "release_failed",
                f"could not release {run_id}: {exc}",
                worker,
                run_id=run_id,
            )
    try:
        worker.store._worker_state(worker.worker_id, "stopped")
    except Exception as exc:
        log_line(logging.WARNING, "sign_off_failed", f"could not sign off: {exc}", worker)


def renew_leases(worker: Worker, done: threading.Event) -> None:
    """Renew this worker's leases every third of a lease; a run whose lease was lost
    (renewal came too late and another worker took it) is let go at once."""
    while not done.wait(worker.lease_seconds / 3):
        with worker._lock:
            held = dict(worker._active)
            tokens = {run_id: worker._tokens[run_id] for run_id in held}
        try:
            kept = worker.store._queue_renew(worker.worker_id, tokens, worker.lease_seconds)
        except Exception as exc:
            log_line(logging.WARNING, "renew_failed", f"lease renewal failed: {exc}", worker)
            continue
        for run_id, sig in held.items():
            if run_id not in kept and not sig.requested:
                log_line(
                    logging.ERROR,
                    "lease_lost",
                    f"lost the lease of {run_id}: letting it go",
                    worker,
                    run_id=run_id,
                )
                sig.request("its lease was lost")
