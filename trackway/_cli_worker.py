"""``trackway worker``, ``workers``, ``submit`` and ``answer``: the run queue on PostgreSQL
from the command line.

``worker`` imports the charts and agents it drives the way ``resume`` does
(``--charts module:attr``, repeatable: a ``FlowChart`` registered under its id, an ``Agent``
under its name, or a dict of names to either) and claims their submitted runs until SIGTERM
(finish the stages in flight, let the runs go; a second signal cancels) or, with
``--idle-exit``, until nothing is left to do. It logs one line per event on stderr, as text or
(``--log-format json``) one JSON object per line.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

from trackway.engine import (
    SERVING_YOUNG_THRESHOLD,
    FlowChart,
    PostgresStore,
    TrackwayError,
    Worker,
    serving_gc,
)

from ._cli_out import EXIT_USAGE, CommandFailed, Out, when
from ._cli_resume import load_chart
from ._cli_store import open_store

__all__ = ["answer_run", "list_workers", "run_worker", "submit_run"]


def _queue_store(where: str) -> None:
    if not where.startswith(("postgresql://", "postgres://")):
        raise CommandFailed(
            f"--store {where}: the run queue lives in PostgreSQL; pass a postgresql:// URL",
            EXIT_USAGE,
        )


def registered(specs: tuple[str, ...]) -> dict[str, Any]:
    """The charts and agents ``--charts`` names, by the name runs are submitted under."""
    charts: dict[str, Any] = {}
    for spec in specs:
        target = load_chart(spec)
        if isinstance(target, dict):
            found = dict(target)
        elif isinstance(target, FlowChart):
            found = {target.id: target}
        elif callable(getattr(target, "work_target", None)):
            found = {str(getattr(target, "name", spec)): target}
        else:
            raise CommandFailed(
                f"--charts {spec!r} is {type(target).__name__}: name a FlowChart, an Agent, or "
                "a dict of names to either",
                EXIT_USAGE,
            )
        for name in found:
            if name in charts:
                raise CommandFailed(f"--charts: {name!r} is registered twice", EXIT_USAGE)
        charts.update(found)
    return charts


class JsonLines(logging.Formatter):
    """A log record as one JSON object: time, level, event, worker, message and fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "event": getattr(record, "event", None),
            "worker": getattr(record, "worker", None),
            "message": record.getMessage(),
        }
        doc.update(getattr(record, "fields", {}))
        if record.exc_info:
            doc["traceback"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def run_worker(
    out: Out,
    where: str,
    specs: tuple[str, ...],
    *,
    lease: float,
    max_runs: int,
    idle_exit: bool,
    poll: float,
    log_format: str,
    max_attempts: int = 5,
    listen: bool = True,
    gc_freeze: bool = True,
    gc_young: int = SERVING_YOUNG_THRESHOLD,
) -> int:
    """Claim and drive runs until a signal (or idle, with ``idle_exit``)."""
    _queue_store(where)
    charts = registered(specs)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonLines() if log_format == "json" else logging.Formatter("%(asctime)s %(message)s")
    )
    logger = logging.getLogger("trackway.worker")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with open_store(where, read_only=False) as store:
            assert isinstance(store, PostgresStore)
            try:
                worker = Worker(
                    store,
                    charts,
                    lease_seconds=lease,
                    max_concurrent_runs=max_runs,
                    poll_interval=poll,
                    max_attempts=max_attempts,
                    listen=listen,
                )
            except TrackwayError as exc:
                raise CommandFailed(str(exc), EXIT_USAGE) from None
            with serving_gc(freeze=gc_freeze, young=gc_young or None):
                report = worker.run_sync(idle_exit=idle_exit, handle_signals=True)
    finally:
        logger.removeHandler(handler)
    out.line(
        f"worker {report.worker_id}: {report.claimed} claimed, {report.done} done, "
        f"{report.failed} failed, {report.paused} paused, {report.released} let go "
        f"in {report.seconds:.1f} s"
    )
    return 0


def list_workers(out: Out, where: str, *, include_gone: bool, as_json: bool) -> int:
    """The workers on a store and the leases they hold, with the queue's counts."""
    _queue_store(where)
    with open_store(where, read_only=True) as store:
        assert isinstance(store, PostgresStore)
        workers = store.workers(include_gone=include_gone)
        counts = store.queue_counts()
    if as_json:
        out.json({"workers": [w._asdict() for w in workers], "queue": counts})
        return 0
    now = time.time()
    out.table(
        [
            ("worker", "left"),
            ("state", "left"),
            ("runs", "right"),
            ("max", "right"),
            ("last beat", "right"),
            ("lease", "right"),
            ("started", "left"),
            ("charts", "left"),
        ],
        [
            (
                w.worker_id,
                w.state if w.live else f"{w.state} (gone)",
                len(w.held),
                w.max_runs,
                f"{now - w.beat_at:.1f} s ago",
                f"{w.lease_seconds:g} s",
                when(w.started_at),
                ", ".join(w.charts),
            )
            for w in workers
        ],
    )
    for w in workers:
        for run_id in w.held:
            out.line(f"  {w.worker_id} holds {run_id}")
    shown = ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "empty"
    out.line(f"queue: {shown}")
    return 0


def submit_run(out: Out, where: str, name: str, value: Any) -> int:
    _queue_store(where)
    with open_store(where, read_only=False) as store:
        assert isinstance(store, PostgresStore)
        run_id = store.submit(name, value)
    out.line(run_id)
    return 0


def answer_run(out: Out, where: str, checkpoint_id: str, value: Any) -> int:
    _queue_store(where)
    with open_store(where, read_only=False) as store:
        assert isinstance(store, PostgresStore)
        store.answer(checkpoint_id, value)
    out.line(f"answered {checkpoint_id}; a worker resumes the run")
    return 0
