"""The executor: runs a chart, isolated per run, and returns a result with its snapshot."""

from __future__ import annotations

import asyncio
import functools
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from ._chart import FlowChart
from ._commit import ErrorInfo
from ._errors import ExecutorUsageError, RunError, RunTimeoutError, StateValueError
from ._recorder import ErrorEvent, RunEndEvent, RunStartEvent
from ._run import RunContext, run_root
from ._snapshot import Snapshot
from ._values import FrozenDict, encode_value, freeze

__all__ = ["Executor", "RunResult", "RunStatus"]

RunStatus = Literal["done", "broken", "failed"]


def new_run_id() -> str:
    """A run id that sorts by start time: ``run-<ns since epoch, hex>-<random>``."""
    return f"run-{time.time_ns():016x}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class RunResult:
    """How a run ended. ``state`` is read-only; ``snapshot`` holds the whole commit log."""

    run_id: str
    status: RunStatus
    state: FrozenDict
    snapshot: Snapshot
    error: RunError | None = None
    break_reason: str | None = None


class Executor:
    """Runs one chart. Each ``run`` is isolated, so one executor may serve many at once.

    ``recorders`` observe every run; ``max_iterations`` bounds how many times any one loop
    may go round in a run (a runaway loop fails with :class:`LoopLimitError`).
    """

    def __init__(
        self,
        chart: FlowChart,
        *,
        recorders: Sequence[object] = (),
        max_iterations: int = 10_000,
    ) -> None:
        if not isinstance(chart, FlowChart):
            raise ExecutorUsageError(
                f"Executor needs a built FlowChart, got {type(chart).__name__}; call .build() "
                "on the builder first"
            )
        if (
            isinstance(max_iterations, bool)
            or not isinstance(max_iterations, int)
            or (max_iterations < 1)
        ):
            raise ExecutorUsageError(
                f"max_iterations must be a positive int, got {max_iterations!r}"
            )
        self.chart = chart
        self.recorders = tuple(recorders)
        self.max_iterations = max_iterations

    def __repr__(self) -> str:
        return f"<Executor chart={self.chart.id!r} recorders={len(self.recorders)}>"

    async def run(
        self,
        input: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
    ) -> RunResult:
        """Run the chart from ``input`` (the initial state) to its end.

        A failure raises a :class:`RunError` subclass carrying ``.snapshot`` (``StageError``
        chains the stage's exception as ``__cause__``), or with ``raise_on_error=False`` comes
        back as ``status="failed"`` with ``.error``. ``timeout`` (seconds) cancels the stage in
        flight, which commits as ``cancelled``, and fails the run with ``RunTimeoutError``.
        """
        run = RunContext(new_run_id(), self.chart, self.recorders, self.max_iterations)
        self._seed(run, input)
        rec = run.recorders
        rec.fire("on_run_start", RunStartEvent(run.run_id, self.chart.id, 0, run.root.current()))
        error: RunError | None = None
        broke: str | None = None
        try:
            if timeout is None:
                broke = await run_root(run)
            else:
                with anyio.fail_after(timeout):
                    broke = await run_root(run)
        except RunError as exc:
            error = exc
        except TimeoutError:
            if timeout is None:
                raise
            error = RunTimeoutError(
                f"the run did not finish within timeout={timeout}s; the stage in flight was "
                "cancelled and committed as 'cancelled'",
                stage_path=run.log[-1].stage_path if run.log else None,
            )
        status: RunStatus = (
            "failed" if error is not None else "broken" if broke is not None else "done"
        )
        info = None if error is None else ErrorInfo(type(error).__name__, str(error))
        if info is not None and rec.any:
            rec.fire(
                "on_error",
                ErrorEvent(run.run_id, error.stage_path if error else None, len(run.log), info),
            )
        rec.fire("on_run_end", RunEndEvent(run.run_id, len(run.log), status, info))
        snapshot = Snapshot(
            run_id=run.run_id,
            chart_id=self.chart.id,
            status=status,
            initial=run.initial,
            commits=run.log,
            store=run.root,
            break_reason=broke,
            error=info,
            recorder_failures=rec.failures,
        )
        if error is not None:
            error.snapshot = snapshot
            if raise_on_error:
                raise error
        return RunResult(
            run_id=run.run_id,
            status=status,
            state=FrozenDict(run.root.current()),
            snapshot=snapshot,
            error=error,
            break_reason=broke,
        )

    def run_sync(
        self,
        input: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
    ) -> RunResult:
        """``run`` for callers without an event loop (it starts one)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # no loop running: the normal case
        else:
            raise ExecutorUsageError(
                "run_sync() was called inside a running event loop; use "
                "`await executor.run(...)` there instead"
            )
        return anyio.run(
            functools.partial(self.run, input, timeout=timeout, raise_on_error=raise_on_error)
        )

    def _seed(self, run: RunContext, input: Mapping[str, Any] | None) -> None:
        if input is None:
            return
        if not isinstance(input, Mapping):
            raise StateValueError(
                f"the run input must be a dict of state keys, got {type(input).__name__}",
                key="<input>",
                stage_path=None,
            )
        validator = run.validator(self.chart)
        for key, value in input.items():
            if type(key) is not str:
                raise StateValueError(
                    f"the run input has the key {key!r}; state keys are str",
                    key=repr(key),
                    stage_path=None,
                )
            data, owned = encode_value(value, key, None)
            if validator is not None:
                validator.check_input(key, data)
            run.initial[key] = data
            run.root.seed(key, freeze(owned))
