"""Answering a paused run from the live viewer: the one path of ``trackway ui`` that writes.

Two ways, chosen per run:

- its chart was given (``trackway ui --chart module:attr``, ``ui_app(charts=...)``): the run
  is resumed in this process, in a thread, on a writable store opened for it (an ``Agent``
  resumes in the store it was built with, which must be this one);
- else, on PostgreSQL, the answer is recorded for the run queue (``store.answer``, what
  ``trackway answer`` does) and a worker (``trackway worker``) resumes it.

A SQLite store has no workers: without its chart, a run there is shown, not answered.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from trackway.engine import (
    Executor,
    FlowChart,
    PostgresStore,
    RunStore,
    Seal,
    SqliteStore,
    TrackwayError,
    UnknownRunError,
)

from ._tail import run_status

__all__ = ["Answerer"]

_log = logging.getLogger("trackway.serve.ui")


def _chart_of(target: Any) -> FlowChart | None:
    if isinstance(target, FlowChart):
        return target
    spec = getattr(target, "spec", None)
    chart = spec() if callable(spec) else None
    return chart if isinstance(chart, FlowChart) else None


def registry(charts: Iterable[Any] | Mapping[str, Any]) -> dict[str, Any]:
    """Charts and agents by the chart id their runs are stored under."""
    found: dict[str, Any] = {}
    for target in charts.values() if isinstance(charts, Mapping) else charts:
        chart = _chart_of(target)
        if chart is None:
            raise TypeError(
                f"charts: {target!r} is not a FlowChart or an Agent (anything whose spec() "
                "is a FlowChart)"
            )
        found[chart.id] = target
    return found


class Answerer:
    """Answers paused runs of the store at ``where`` (see the module's docstring)."""

    def __init__(
        self, where: str, charts: Iterable[Any] | Mapping[str, Any], *, seal: Seal | None
    ) -> None:
        self.where = where
        self.charts = registry(charts)
        self.seal = seal
        self.postgres = where.startswith(("postgresql://", "postgres://"))
        self._lock = threading.Lock()
        self._answered: set[str] = set()
        self._threads: list[threading.Thread] = []

    def chart_of(self, reader: RunStore, run_id: str) -> FlowChart | None:
        """The chart given for ``run_id``'s chart id, if any (to draw the run with)."""
        target = self.charts.get(run_status(reader, run_id).chart_id)
        return None if target is None else _chart_of(target)

    def can_answer(self, reader: RunStore, chart_id: str) -> tuple[bool, str]:
        """Whether a paused run of ``chart_id`` can be answered here, and how (said on the
        page beside the answer button)."""
        if chart_id in self.charts:
            return True, "Answering resumes the run in the ui's process (--chart)."
        if self.postgres:
            return True, "Answering records it for the run queue: a worker resumes the run."
        return False, (
            f"To answer from this page, start trackway ui with --chart module:attr naming "
            f"chart {chart_id!r}: a SQLite store has no workers to resume the run."
        )

    def answer(
        self, reader: RunStore, run_id: str, checkpoint_id: str, value: Any
    ) -> tuple[int, str]:
        """Answer ``run_id``'s pause at ``checkpoint_id``: ``(200, what happens now)`` or an
        HTTP status with the reason it was refused."""
        try:
            standing = run_status(reader, run_id)
        except UnknownRunError:
            return 404, f"no run {run_id!r} in this store"
        pause = standing.pause
        if pause is None or pause.checkpoint_id != checkpoint_id:
            now = "it is not paused" if pause is None else f"it waits on {pause.checkpoint_id}"
            return 409, f"run {run_id} does not wait on {checkpoint_id} ({now}: reload the page)"
        with self._lock:
            if checkpoint_id in self._answered:
                return 409, f"{checkpoint_id} was already answered from this page"
            self._answered.add(checkpoint_id)
        target = self.charts.get(standing.chart_id)
        if target is not None:
            thread = threading.Thread(
                target=self._resume,
                args=(target, run_id, value),
                name=f"trackway-ui-resume-{run_id}",
                daemon=True,
            )
            with self._lock:
                self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()
            return 200, f"answered {checkpoint_id}: the run resumes in this process"
        if self.postgres:
            try:
                store = PostgresStore(self.where, seal=self.seal)
                try:
                    store.answer(checkpoint_id, value)
                finally:
                    store.close()
            except TrackwayError as exc:
                with self._lock:
                    self._answered.discard(checkpoint_id)
                return 409, f"{exc} (a run a worker does not drive resumes with --chart)"
            return 200, f"answered {checkpoint_id}; a worker resumes the run"
        with self._lock:
            self._answered.discard(checkpoint_id)
        return 409, self.can_answer(reader, standing.chart_id)[1]

    def _resume(self, target: Any, run_id: str, value: Any) -> None:
        """Resume in this thread: a chart on a writable store opened for it; an agent in its
        own store. A failure is the run's (recorded in it) or logged, never raised here."""
        try:
            if isinstance(target, FlowChart):
                store: RunStore = (
                    PostgresStore(self.where, seal=self.seal)
                    if self.postgres
                    else SqliteStore(self.where, seal=self.seal)
                )
                try:
                    Executor(target, store=store).resume_sync(run_id, value, raise_on_error=False)
                finally:
                    store.close()
            else:
                target.resume_sync(run_id, value)
        except Exception:  # a resume that could not start: said in the log
            _log.exception("trackway ui: resuming %s failed", run_id)

    def close(self, timeout: float = 10.0) -> None:
        """Wait (a bounded time) for the resumes this process started."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
