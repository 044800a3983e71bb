"""The executor: runs a chart, isolated per run, and returns a result with its snapshot.

This module is the public face (``run``, ``stream``, ``fork_from``; ``resume`` and
``recover`` in ``_executor_continue``, the ``_sync`` twins in ``_executor_sync``) and the
drive loop they share; the store session (``_session``), checkpoints (``_checkpoint``),
checkpoint trust (``_trust``), recovery (``_recovery``) and contracts (``_contract``) live
apart. It is over 400 lines because the drive loop is the one place every way a run ends
(done, broken, paused, failed, timed out, cancelled from outside) is turned into a result,
and splitting it would scatter that one decision.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import anyio
import anyio.to_thread

from ..chart._chart import FlowChart
from ..chart._contract import check_input, check_output
from ..core._commit import Commit
from ..core._errors import ExecutorUsageError, RunError, StateValueError, StoreWriteError
from ..core._keywords import checked_keywords
from ..core._paths import new_run_id
from ..core._snapshot import Snapshot
from ..core._values import FrozenDict, encode_entries, freeze, thaw
from ..observe._redact import RedactionPolicy, Redactor
from ..observe._seal import Seal
from ..run._context import RunContext
from ..run._cursor import RootCursor
from ..run._recorder import ErrorEvent, RunEndEvent, RunStartEvent, check_recorder
from ..run._release import Released
from ..run._sinks import Sink
from ..run._stage import Paused
from ..run._walker import run_root
from ..stores._checkpoint import Checkpoint, make_checkpoint, masked, sign
from ..stores._store import Durability, RunStore
from ._executor_continue import ContinuingRuns
from ._executor_sync import SyncTwins
from ._fork import fork_run
from ._run_end import redacted_snapshot, timed_out
from ._session import RunEnding, StoreSession
from ._stream import CommitTap, RunStream
from ._trust import PROCESS_KEY

__all__ = ["Executor", "RunResult", "RunStatus"]

RunStatus = Literal["done", "broken", "failed", "paused"]


@dataclass(frozen=True)
class RunResult:
    """How a run ended. ``state`` is read-only; ``snapshot`` holds the whole commit log.

    ``checkpoint`` is set when ``status == "paused"``: resume it with
    ``Executor(chart).resume(checkpoint, value)``, in this process or another.
    """

    run_id: str
    status: RunStatus
    state: FrozenDict
    snapshot: Snapshot
    error: RunError | None = None
    break_reason: str | None = None
    checkpoint: Checkpoint | None = None


def _result(
    run_id: str,
    status: RunStatus,
    state: FrozenDict,
    snapshot: Snapshot,
    error: RunError | None,
    break_reason: str | None,
    checkpoint: Checkpoint | None,
) -> RunResult:
    """``RunResult(...)`` without the frozen dataclass's ``object.__setattr__`` per field
    (once per run); ``test_executor`` checks it sets every field the class has."""
    result = object.__new__(RunResult)
    d = result.__dict__
    d["run_id"] = run_id
    d["status"] = status
    d["state"] = state
    d["snapshot"] = snapshot
    d["error"] = error
    d["break_reason"] = break_reason
    d["checkpoint"] = checkpoint
    return result


class Executor(ContinuingRuns, SyncTwins):
    """Runs one chart. Each ``run`` is isolated, so one executor may serve many at once.

    ``recorders`` observe every run; ``max_iterations`` bounds how many times any one loop
    may go round in a run (a runaway loop fails with :class:`LoopLimitError`). With a
    ``store``, every commit is written there under ``durability`` ("sync", "batch" or
    "exit"), checkpoints are kept there and claimed atomically on resume, and only a
    checkpoint the store holds, unchanged, for a run still paused there, is resumed.
    Without a store, checkpoints are signed (HMAC-SHA256) with ``checkpoint_key`` — by
    default a key made for this process, so give every process that resumes the same key —
    and a checkpoint not signed with it is refused, unless ``allow_unsigned_checkpoints``.
    """

    @checked_keywords
    def __init__(
        self,
        chart: FlowChart,
        *,
        recorders: Sequence[object] = (),
        max_iterations: int = 10_000,
        store: RunStore | None = None,
        durability: Durability = "sync",
        queue_size: int = 1024,
        redact: RedactionPolicy | None = None,
        checkpoint_key: bytes | str | None = None,
        allow_unsigned_checkpoints: bool = False,
    ) -> None:
        if not isinstance(chart, FlowChart):
            raise ExecutorUsageError(
                f"Executor needs a built FlowChart, got {type(chart).__name__}; call .build() "
                "on the builder first"
            )
        bad_limit = isinstance(max_iterations, bool) or not isinstance(max_iterations, int)
        if bad_limit or max_iterations < 1:
            raise ExecutorUsageError(
                f"max_iterations must be a positive int, got {max_iterations!r}"
            )
        if durability not in ("sync", "batch", "exit"):
            raise ExecutorUsageError(
                f"durability={durability!r}: use 'sync' (each commit durable before the next "
                "stage), 'batch' (group commit from a bounded queue) or 'exit' (on pause or end)"
            )
        if queue_size < 1:
            raise ExecutorUsageError("queue_size must be >= 1")
        if redact is not None and not isinstance(redact, RedactionPolicy):
            raise ExecutorUsageError(f"redact= takes a RedactionPolicy(...), got {redact!r}")
        self.chart = chart
        for recorder in recorders:
            check_recorder(recorder)
        self.recorders = tuple(recorders)
        self.max_iterations = max_iterations
        self.store = store
        self.durability: Durability = durability
        self.queue_size = queue_size
        self.redact = redact
        if checkpoint_key is not None and not isinstance(checkpoint_key, (bytes, str)):
            raise ExecutorUsageError("checkpoint_key= takes bytes or a str (a shared secret)")
        if isinstance(checkpoint_key, str):
            checkpoint_key = checkpoint_key.encode()
        if checkpoint_key is not None and len(checkpoint_key) < 16:
            raise ExecutorUsageError(
                "checkpoint_key= must be at least 16 bytes; use e.g. secrets.token_hex(32)"
            )
        self._key = PROCESS_KEY if checkpoint_key is None else checkpoint_key
        self.allow_unsigned_checkpoints = allow_unsigned_checkpoints
        self._session = (
            None if store is None else StoreSession(store, chart.id, durability, queue_size)
        )
        seal = getattr(store, "seal", None)
        self._seal: Seal | None = seal if isinstance(seal, Seal) else None
        """The store's seal: under a policy, real values are kept sealed beside redacted
        ones, so runs resume by id and recover (``_seal``)."""

    def _with_recorders(self, recorders: Sequence[object], *, checked: int = 0) -> Executor:
        """This executor with other recorders: what the constructor checked of everything
        else holds, so an agent, which needs an executor per run (a live log of its own),
        pays only for checking the recorders; the first ``checked`` are its own, known
        good."""
        for recorder in recorders[checked:]:
            check_recorder(recorder)
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.recorders = tuple(recorders)
        return clone

    def __repr__(self) -> str:
        store = type(self.store).__name__ if self.store is not None else None
        return f"<Executor chart={self.chart.id!r} store={store} durability={self.durability}>"

    # -- running -------------------------------------------------------------------------

    async def run(
        self,
        input: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
        run_id: str | None = None,
    ) -> RunResult:
        """Run the chart from ``input`` (the initial state) to its end or a pause.

        A failure raises a :class:`RunError` subclass carrying ``.snapshot`` (``StageError``
        chains the stage's exception as ``__cause__``), or with ``raise_on_error=False`` comes
        back as ``status="failed"`` with ``.error``. ``timeout`` (seconds) cancels the stage in
        flight, which commits as ``cancelled``, and fails the run with ``RunTimeoutError``.
        ``run_id`` names the run (default: a new id that sorts by start time); a worker
        starts a submitted run under the id ``store.submit`` returned.
        """
        if run_id is not None and (not isinstance(run_id, str) or not run_id):
            raise ExecutorUsageError(f"run_id= takes a non-empty str, got {run_id!r}")
        run = self._prepared(input, run_id)
        if self._session is not None:
            await self._session.opened(run)
        return await self._drive(run, None, timeout, raise_on_error)

    def stream(
        self,
        input: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
        buffer: int = 16,
    ) -> RunStream:
        """``run``, with each commit handed to an ``async for`` as it is made::

            async with executor.stream(input) as commits:
                async for commit in commits:
                    ...
            result = commits.result  # the RunResult, once the run ended

        At most ``buffer`` commits wait unread; a slower reader makes the run wait before
        its next stage. Leaving the block before the run ends cancels the run. The run
        starts when the block is entered, which raises a refused input before anything
        runs. See :class:`RunStream`.
        """
        if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
            raise ExecutorUsageError(f"stream(buffer=...) must be an int >= 1, got {buffer!r}")
        run_id = new_run_id()

        def open_run() -> Callable[[CommitTap], Awaitable[RunResult]]:
            run = self._prepared(input, run_id)

            async def start(tap: CommitTap) -> RunResult:
                run.tap = tap
                if self._session is not None:
                    await self._session.opened(run)
                return await self._drive(run, None, timeout, raise_on_error=False)

            return start

        return RunStream(run_id, open_run, buffer=buffer, raise_on_error=raise_on_error)

    async def fork_from(
        self,
        run: Snapshot | str,
        k: int,
        changes: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
    ) -> RunResult:
        """Start a new run from the state after commit ``k`` of an earlier one.

        ``run`` is that run's :class:`Snapshot`, or its id in this executor's store.
        The new run (a new id) copies the first ``k`` commits, opens with a ``forked-from`` commit
        (``detail={"forked_from": {"run_id": ..., "k": k}}``, ``changes`` as its writes)
        and continues from commit ``k``'s position in the chart: nothing before it runs
        again. The earlier run is not changed. ``k`` must be from 0 to the run's commit
        count (:class:`OutOfRangeError` names the range).
        """
        new, opening = fork_run(self, run, k, changes)
        if self._session is not None:
            await self._session.opened(new, with_log=True)
        return await self._drive(new, None, timeout, raise_on_error, opening=opening)

    # -- internals -----------------------------------------------------------------------

    def _prepared(self, input: Mapping[str, Any] | None, run_id: str | None = None) -> RunContext:
        """A new run's context with its input checked and seeded (nothing stored yet)."""
        run = self._context(run_id or new_run_id())
        check_input(self.chart, input, None if run.redactor is None else run.redactor.hidden_path)
        self._seed(run, input)
        return run

    def _context(self, run_id: str) -> RunContext:
        redactor = Redactor(self.redact, self._seal) if self.redact is not None else None
        return RunContext(run_id, self.chart, self.recorders, self.max_iterations, redactor)

    def _continued(self, run_id: str, snapshot: Snapshot) -> RunContext:
        """A run context that carries on from ``snapshot``: same id, log, state and input."""
        run = self._context(run_id)
        run.log.extend(snapshot.commits)
        run.initial = dict(snapshot._initial)
        run.root = snapshot._store
        return run

    async def _drive(
        self,
        run: RunContext,
        cursor: RootCursor | None,
        timeout: float | None,
        raise_on_error: bool,
        *,
        opening: Commit | None = None,
    ) -> RunResult:
        """Run the walk to its end and turn every way it ends into a result. ``opening``
        (a fork's first commit) lands in the log before the walk, after ``on_run_start``."""
        session = self._session
        sink: Sink | None = None if session is None else session.open_sink(run)
        rec = run.recorders
        if rec.defines("on_run_start"):
            rec.fire(
                "on_run_start",
                RunStartEvent(run.run_id, self.chart.id, len(run.log), run.root.current()),
            )
        error: RunError | None = None
        broke: str | None = None
        paused: Paused | None = None
        run.deadline = None if timeout is None else time.monotonic() + timeout
        try:
            if timeout is None:  # no deadline: no cancel scope around the walk
                _opened(run, opening)
                broke = await run_root(run, cursor)
            else:
                with anyio.fail_after(timeout):
                    _opened(run, opening)
                    broke = await run_root(run, cursor)
        except RunError as exc:
            error = exc
        except Paused as exc:
            paused = exc
        except TimeoutError:
            if timeout is None:
                raise
            error = timed_out(run, timeout)
        except Released:
            # A worker let the run go between stages: every commit reaches the store and the
            # run stays "running" there, for the next worker's recover().
            if session is not None and sink is not None:
                session.release(sink)
            run.locals.close()
            raise
        except BaseException:
            # Cancelled from outside (or KeyboardInterrupt): what committed still reaches the
            # store, the run is marked failed, and the cancellation goes on up.
            if session is not None:
                session.abandon(run, sink)
            run.locals.close()
            raise
        run.locals.close()
        if error is None and paused is None and self.chart.output_schema is not None:
            hidden = None if run.redactor is None else run.redactor.hidden_path
            error = check_output(self.chart, run.root.current(), hidden)
        status: RunStatus = (
            "failed"
            if error is not None
            else "paused"
            if paused is not None
            else "broken"
            if broke is not None
            else "done"
        )
        info = None if error is None else run.run_error_info(error)
        checkpoint = None if paused is None else make_checkpoint(run, self.chart, paused)
        if session is not None and sink is not None:
            try:
                carried = None  # the real log the returned checkpoint carries past a policy
                policy = self.redact
                if checkpoint is not None and policy is not None and not policy.redact_checkpoints:
                    carried = Snapshot(
                        run_id=run.run_id, chart_id=self.chart.id, status="paused",
                        initial=run.initial, commits=run.log, store=run.root,
                    )  # fmt: skip
                ending = RunEnding(status, info, checkpoint, broke, carried)
                await session.closed(run, sink, ending)
            except StoreWriteError as exc:
                if error is None:
                    error, status = exc, "failed"
                    info = run.run_error_info(exc)
        if info is not None and rec.any:
            at = error.stage_path if error is not None else None
            rec.fire("on_error", ErrorEvent(run.run_id, at, len(run.log), info))
        if rec.defines("on_run_end"):
            rec.fire("on_run_end", RunEndEvent(run.run_id, len(run.log), status, info, broke))
        if rec.queues:
            rec.flush()  # deferred recorders hear everything before run() returns or pauses
        live = Snapshot(
            run_id=run.run_id,
            chart_id=self.chart.id,
            status=status,
            initial=run.initial,
            commits=run.log,
            store=run.root,
            break_reason=broke,
            error=info,
            recorder_failures=rec.failures,
            observer_stats=rec.stats() if rec.queues else (),
        )
        snapshot = live if run.redactor is None else redacted_snapshot(live, run.redactor)
        if checkpoint is not None:
            checkpoint = self._finish_checkpoint(checkpoint, live, snapshot)
        if error is not None:
            error.snapshot = snapshot
            if raise_on_error:
                raise error
        return _result(
            run.run_id, status, FrozenDict(run.root.current()), snapshot, error, broke, checkpoint
        )

    def _finish_checkpoint(
        self, checkpoint: Checkpoint, live: Snapshot, retained: Snapshot
    ) -> Checkpoint:
        """Embed the log a resume needs (real values, unless checkpoints are redacted too)
        and sign the checkpoint."""
        policy = self.redact
        if policy is not None and policy.redact_checkpoints:
            copy = masked(checkpoint, thaw(retained.state), retained)
            return replace(copy, payload=policy.marker) if policy.pauses else copy
        if self.store is None or policy is not None:
            # Without a store the log must travel with the checkpoint; with redaction the
            # store holds a redacted log, so the checkpoint carries the real one.
            checkpoint = replace(checkpoint, snapshot=live)
        return sign(checkpoint, self._key)

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
        for key, data, owned in encode_entries(input, "the run input", None):
            if validator is not None:
                validator.check_input(key, data)
            run.initial[key] = data
            run.root.seed(key, freeze(owned))


def _opened(run: RunContext, opening: Commit | None) -> None:
    """Land ``opening`` (a fork's first commit), if any, in the run's log before its walk."""
    if opening is not None:
        if opening.writes:
            run.root.apply(opening.seq, opening.writes)
        run.append(opening)
