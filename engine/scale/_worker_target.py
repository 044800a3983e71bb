"""What a worker drives: a registered chart (here) or agent (``trackway.agent``), seen
through one small interface — start a run under a given id, resume it with an answer,
recover it from its log — each reporting how the run went as an :class:`WorkOutcome`."""

from __future__ import annotations

import logging
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ..chart._chart import FlowChart
from ..core._errors import ConfigurationError
from ..execute._executor import Executor, RunResult
from ..execute._recovery import RECOVERABLE_FAILURES
from ..stores._store import Durability, RunStore

__all__ = [
    "ChartTarget",
    "WorkOutcome",
    "WorkTarget",
    "WorkerReport",
    "bind_target",
    "log_line",
]

log = logging.getLogger("trackway.worker")


class WorkOutcome(NamedTuple):
    """How one drive of a run went: ``status`` is ``done``, ``broken``, ``failed`` or
    ``paused`` (``checkpoint_id`` says on what); ``retry`` marks a failure from outside the
    run (its store, a cancellation) that another attempt continues from the log."""

    status: str
    checkpoint_id: str | None = None
    error: str | None = None
    retry: bool = False

    @classmethod
    def of(cls, result: RunResult) -> WorkOutcome:
        """An engine result as an outcome."""
        if result.status == "paused":
            assert result.checkpoint is not None
            return cls("paused", result.checkpoint.checkpoint_id)
        if result.error is not None:
            kind = type(result.error).__name__
            # what the record kept of the error: under a redaction policy that hides error
            # text, its masked form (the live exception still says everything)
            kept = result.snapshot.error
            text = f"{kind}: {result.error}" if kept is None else f"{kept.type}: {kept.message}"
            return cls("failed", None, text, kind in RECOVERABLE_FAILURES)
        return cls(result.status)


@runtime_checkable
class WorkTarget(Protocol):
    """A chart or agent a worker runs by name (``Agent.work_target(store)`` makes one)."""

    chart_id: str

    async def start(self, run_id: str, input: Any) -> WorkOutcome: ...
    async def resume(self, checkpoint_id: str, answer: Any) -> WorkOutcome: ...
    async def recover(self, run_id: str) -> WorkOutcome: ...


class ChartTarget:
    """A chart driven by a worker: an :class:`Executor` on the worker's store."""

    def __init__(self, chart: FlowChart, store: RunStore, durability: Durability = "sync"):
        self.chart_id = chart.id
        self._executor = Executor(chart, store=store, durability=durability)

    async def start(self, run_id: str, input: Any) -> WorkOutcome:
        result = await self._executor.run(input, run_id=run_id, raise_on_error=False)
        return WorkOutcome.of(result)

    async def resume(self, checkpoint_id: str, answer: Any) -> WorkOutcome:
        result = await self._executor.resume(checkpoint_id, answer, raise_on_error=False)
        return WorkOutcome.of(result)

    async def recover(self, run_id: str) -> WorkOutcome:
        result = await self._executor.recover(run_id, raise_on_error=False)
        return WorkOutcome.of(result)


def bind_target(name: str, chart: Any, store: Any, durability: Durability) -> WorkTarget:
    """What a worker registered under ``name`` drives: a chart, or an agent bound to the
    worker's store."""
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"Worker charts: names are non-empty str, got {name!r}")
    if isinstance(chart, FlowChart):
        return ChartTarget(chart, store, durability)
    bind = getattr(chart, "work_target", None)
    if callable(bind):
        target = bind(store)
        if isinstance(target, WorkTarget):
            return target
    raise ConfigurationError(
        f"Worker charts[{name!r}] is {type(chart).__name__}: give a built chart "
        "(builder.build()) or an agent (Agent.create(...).build())"
    )


class WorkerReport(NamedTuple):
    """What one worker did between ``run()`` and its return."""

    worker_id: str
    claimed: int
    done: int
    failed: int
    broken: int
    paused: int
    released: int
    seconds: float


def log_line(level: int, event: str, message: str, worker: Any, **fields: Any) -> None:
    """One structured log line: ``event`` and ``fields`` ride on the record (``trackway
    worker --log-format json`` prints them as one JSON object per line)."""
    exc_info = fields.pop("exc_info", None)
    log.log(
        level,
        message,
        exc_info=exc_info,
        extra={"event": event, "worker": worker.worker_id, "fields": fields},
    )
