"""The executor: runs a chart, isolated per run, and returns a result with its snapshot."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

import anyio
import orjson

from ._chart import FlowChart
from ._checkpoint import Checkpoint, chart_structure, check_chart
from ._commit import Commit, ErrorInfo
from ._contract import validate
from ._errors import (
    CheckpointClaimedError,
    CheckpointError,
    ExecutorUsageError,
    InputValidationError,
    OutputValidationError,
    RunError,
    RunTimeoutError,
    StateValueError,
    StoreError,
    TrackwayError,
    UnknownRunError,
)
from ._recorder import ErrorEvent, RunEndEvent, RunStartEvent
from ._redact import RedactionPolicy, Redactor
from ._run import Paused, RunContext, run_root
from ._snapshot import Snapshot
from ._store import Durability, RunStore, Sink, make_sink
from ._values import FrozenDict, encode_value, freeze, thaw, to_bytes

__all__ = ["Executor", "RunResult", "RunStatus"]

RunStatus = Literal["done", "broken", "failed", "paused"]
_T = TypeVar("_T")

# Checkpoints resumed by executors without a store: a checkpoint resumes once per process.
_claimed_here: set[str] = set()
_claim_lock = threading.Lock()


def new_run_id() -> str:
    """A run id that sorts by start time: ``run-<ns since epoch, hex>-<random>``."""
    return f"run-{time.time_ns():016x}-{secrets.token_hex(3)}"


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


class Executor:
    """Runs one chart. Each ``run`` is isolated, so one executor may serve many at once.

    ``recorders`` observe every run; ``max_iterations`` bounds how many times any one loop
    may go round in a run (a runaway loop fails with :class:`LoopLimitError`). With a
    ``store``, every commit is written there under ``durability`` ("sync", "batch" or
    "exit"), checkpoints are kept there and claimed atomically on resume.
    """

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
        self.chart = chart
        self.recorders = tuple(recorders)
        self.max_iterations = max_iterations
        self.store = store
        self.durability: Durability = durability
        self.queue_size = queue_size
        if redact is not None and not isinstance(redact, RedactionPolicy):
            raise ExecutorUsageError(f"redact= takes a RedactionPolicy(...), got {redact!r}")
        self.redact = redact

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
    ) -> RunResult:
        """Run the chart from ``input`` (the initial state) to its end or a pause.

        A failure raises a :class:`RunError` subclass carrying ``.snapshot`` (``StageError``
        chains the stage's exception as ``__cause__``), or with ``raise_on_error=False`` comes
        back as ``status="failed"`` with ``.error``. ``timeout`` (seconds) cancels the stage in
        flight, which commits as ``cancelled``, and fails the run with ``RunTimeoutError``.
        """
        self._check_input(input)
        run = self._context(new_run_id())
        self._seed(run, input)
        if self.store is not None:
            self._begin_in_store(run)
        return await self._drive(run, None, timeout, raise_on_error)

    async def resume(
        self,
        checkpoint: Checkpoint | str | bytes,
        value: Any = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
    ) -> RunResult:
        """Continue a paused run: the paused stage's ``on_resume(scope, value)`` runs first.

        The run keeps its id, its commit log and its counters; nothing that committed runs
        again. A checkpoint resumes once: a second resume raises
        :class:`CheckpointClaimedError` (with a store, the claim is atomic across processes).
        """
        cp = self._as_checkpoint(checkpoint)
        if cp.redacted:
            raise CheckpointError(
                f"checkpoint {cp.checkpoint_id} is a masked copy (a store keeps masked "
                "checkpoints under a redaction policy, and redact_checkpoints=True masks the "
                "returned one too), so it holds no real values to resume with; resume with "
                "the RunResult.checkpoint of the run that paused"
            )
        check_chart(cp, self.chart)
        data = encode_value(value, "resume value", cp.paused_at)[1]
        snapshot = self._checkpoint_log(cp)
        self._claim(cp)
        run = self._continued(cp.run_id, snapshot)
        run.resume_value = freeze(data)
        run.resume_taken = False
        run.resume_target = cp.paused_at.split(":resume")[0]
        if self.store is not None:
            self._adopt_run(run, embedded=cp.snapshot is not None)
        return await self._drive(run, cp.cursor, timeout, raise_on_error)

    async def recover(
        self, run_id: str, *, timeout: float | None = None, raise_on_error: bool = True
    ) -> RunResult:
        """Continue a run that stopped without a checkpoint (its process died).

        The store's log is the truth: the run continues after its last committed stage, and
        the stage that was in flight (it never committed) runs again. Supported when the run
        stopped between stages of the top-level chart; a run whose last commit is inside a
        subflow or a parallel branch, or that paused or failed, is refused with the reason.
        """
        if self.store is None:
            raise ExecutorUsageError("recover() needs the run's store: Executor(chart, store=...)")
        if self.redact is not None:
            raise ExecutorUsageError(
                "recover() cannot continue a run under a redaction policy: the store holds its "
                "redacted values only. Pause-and-resume keeps real values in the checkpoint."
            )
        snapshot = self._call_store(lambda s: s.load(run_id), f"load run {run_id!r}")
        if snapshot.chart_id != self.chart.id:
            raise CheckpointError(
                f"run {run_id!r} was made by chart {snapshot.chart_id!r}, not {self.chart.id!r}"
            )
        if snapshot.status in ("done", "broken"):
            raise CheckpointError(
                f"run {run_id!r} already ended ({snapshot.status}); nothing to recover"
            )
        cursor = _recovery_cursor(self.chart, snapshot.commits)
        run = self._continued(run_id, snapshot)
        self._begin_in_store(run)
        # cursor None: the last commit ended the chart, only the ending is missing
        return await self._drive(run, cursor or {"done": True}, timeout, raise_on_error)

    def run_sync(
        self,
        input: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
    ) -> RunResult:
        """``run`` for callers without an event loop (it starts one)."""
        return _sync(
            functools.partial(self.run, input, timeout=timeout, raise_on_error=raise_on_error)
        )

    def resume_sync(
        self,
        checkpoint: Checkpoint | str | bytes,
        value: Any = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
    ) -> RunResult:
        """``resume`` for callers without an event loop."""
        return _sync(
            functools.partial(
                self.resume, checkpoint, value, timeout=timeout, raise_on_error=raise_on_error
            )
        )

    def recover_sync(
        self, run_id: str, *, timeout: float | None = None, raise_on_error: bool = True
    ) -> RunResult:
        """``recover`` for callers without an event loop."""
        return _sync(
            functools.partial(self.recover, run_id, timeout=timeout, raise_on_error=raise_on_error)
        )

    # -- internals -----------------------------------------------------------------------

    def _adopt_run(self, run: RunContext, *, embedded: bool) -> None:
        """Reopen the run in the store; a run it has never seen gets the log so far first."""
        known = True
        if embedded:
            try:
                self._call_store(lambda s: s.history(run.run_id), "look the run up")
            except UnknownRunError:
                known = False
        self._begin_in_store(run, with_log=not known)

    def _begin_in_store(self, run: RunContext, *, with_log: bool = False) -> None:
        """Open (or reopen) the run in the store, through the redaction funnel like every
        other retained write; ``with_log`` also stores the commits it already has."""
        redactor = run.redactor
        initial = run.initial
        if redactor is not None:
            initial = {k: to_bytes(v) for k, v in redactor.initial(run.initial).items()}
        self._call_store(lambda s: s.begin_run(run.run_id, self.chart.id, initial), "open the run")
        if with_log and run.log:
            log = run.log if redactor is None else [redactor.commit(c) for c in run.log]
            self._call_store(lambda s: s.append(run.run_id, log), "store the log so far")

    def _context(self, run_id: str) -> RunContext:
        redactor = Redactor(self.redact) if self.redact is not None else None
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
        cursor: dict[str, Any] | None,
        timeout: float | None,
        raise_on_error: bool,
    ) -> RunResult:
        sink: Sink | None = None
        if self.store is not None:
            sink = make_sink(self.store, run.run_id, self.durability, self.queue_size)
            run.sink = sink
        rec = run.recorders
        rec.fire(
            "on_run_start",
            RunStartEvent(run.run_id, self.chart.id, len(run.log), run.root.current()),
        )
        error: RunError | None = None
        broke: str | None = None
        paused: Paused | None = None
        try:
            with anyio.fail_after(timeout) if timeout is not None else _no_timeout():
                if cursor is None or "done" not in cursor:
                    broke = await run_root(run, cursor)
                else:
                    broke = cursor.get("break")
        except RunError as exc:
            error = exc
        except Paused as exc:
            paused = exc
        except TimeoutError:
            if timeout is None:
                raise
            last = run.log[-1] if run.log else None
            where = (
                f"the stage in flight, {last.stage_path}, was cancelled and committed as "
                "'cancelled'"
                if last is not None and last.outcome == "cancelled"
                else "it was stopped between stages"
                + (f", after {last.stage_path}" if last is not None else "")
            )
            error = RunTimeoutError(
                f"the run did not finish within timeout={timeout}s; {where}",
                stage_path=last.stage_path if last is not None else None,
            )
        except BaseException:
            # Cancelled from outside (or KeyboardInterrupt): what committed still reaches the
            # store, the run is marked failed, and the cancellation goes on up.
            with contextlib.suppress(Exception):
                cancelled = ErrorInfo("Cancelled", "the run was cancelled from outside")
                self._close_store(run, sink, "failed", cancelled, None, None)
            raise
        if error is None and paused is None:
            error = self._check_output(run)
        status: RunStatus = (
            "failed"
            if error is not None
            else "paused"
            if paused is not None
            else "broken"
            if broke is not None
            else "done"
        )
        info = None if error is None else ErrorInfo(type(error).__name__, str(error))
        checkpoint = None
        if paused is not None:
            checkpoint = self._make_checkpoint(run, paused)
        try:
            self._close_store(run, sink, status, info, checkpoint, broke)
        except StoreError as exc:
            if error is None:
                error, status = exc, "failed"
                info = ErrorInfo(type(exc).__name__, str(exc))
        if info is not None and rec.any:
            at = error.stage_path if error is not None else None
            rec.fire("on_error", ErrorEvent(run.run_id, at, len(run.log), info))
        rec.fire("on_run_end", RunEndEvent(run.run_id, len(run.log), status, info, broke))
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
            observer_stats=rec.stats(),
        )
        snapshot = live if run.redactor is None else _redacted(live, run.redactor)
        if checkpoint is not None:
            checkpoint = self._finish_checkpoint(checkpoint, live, snapshot)
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
            checkpoint=checkpoint,
        )

    def _close_store(
        self,
        run: RunContext,
        sink: Sink | None,
        status: str,
        info: ErrorInfo | None,
        checkpoint: Checkpoint | None,
        broke: str | None,
    ) -> None:
        if sink is None:
            return
        try:
            sink.flush()
        except TrackwayError:
            raise
        except Exception as exc:
            # Still record how the run ended, then report the lost writes.
            with contextlib.suppress(Exception):
                self.store.finish_run(run.run_id, "failed", {"error": list(_info(exc))})  # type: ignore[union-attr]
            raise StoreError(
                f"{type(self.store).__name__} could not write the run's last commits: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        finally:
            closer: Callable[[], None] | None = getattr(sink, "close", None)
            if closer is not None:
                closer()
        if checkpoint is not None:
            kept = checkpoint
            if run.redactor is not None:
                # Store rows are always redacted: the store keeps a masked copy, which cannot
                # be resumed; RunResult.checkpoint keeps the real values for the caller.
                retained = run.redactor
                kept = replace(
                    checkpoint,
                    state=thaw(retained.state(run.root.current())),
                    snapshot=None,
                    redacted=True,
                    cursor=_masked_cursor(checkpoint.cursor),
                )
            self._call_store(lambda s: s.save_checkpoint(kept), "save the checkpoint")
        outcome = {
            "error": None if info is None else list(info),
            "break_reason": broke,
            "recorder_failures": [
                {"recorder": f.recorder, "hook": f.hook, "error": list(f.error)}
                for f in run.recorders.failures
            ],
        }
        self._call_store(lambda s: s.finish_run(run.run_id, status, outcome), "finish the run")

    def _finish_checkpoint(
        self, checkpoint: Checkpoint, live: Snapshot, retained: Snapshot
    ) -> Checkpoint:
        """Embed the log a resume needs: real values, unless checkpoints are redacted too."""
        policy = self.redact
        if policy is not None and policy.redact_checkpoints:
            state = thaw(retained.state)
            return replace(checkpoint, snapshot=orjson.loads(retained.to_json()), state=state,
                           redacted=True, cursor=_masked_cursor(checkpoint.cursor))  # fmt: skip
        if self.store is None or policy is not None:
            # Without a store the log must travel with the checkpoint; with redaction the
            # store holds a redacted log, so the checkpoint carries the real one.
            return replace(checkpoint, snapshot=orjson.loads(live.to_json()))
        return checkpoint

    def _make_checkpoint(self, run: RunContext, paused: Paused) -> Checkpoint:
        payload = orjson.loads(paused.payload)
        return Checkpoint(
            checkpoint_id=f"{run.run_id}@{len(run.log)}",
            run_id=run.run_id,
            chart_id=self.chart.id,
            fingerprint=self.chart.fingerprint,
            structure=chart_structure(self.chart),
            cursor=thaw(paused.cursor),
            payload=payload,
            paused_at=paused.path,
            state=orjson.loads(to_bytes(run.root.current())),
            snapshot=None,
        )

    def _checkpoint_log(self, cp: Checkpoint) -> Snapshot:
        if cp.snapshot is not None:
            try:
                return Snapshot.from_json(orjson.dumps(cp.snapshot))
            except (ValueError, KeyError, TypeError) as exc:
                raise CheckpointError(
                    f"corrupt checkpoint: its commit log is unreadable ({exc})"
                ) from None
        if self.store is None:
            raise CheckpointError(
                f"checkpoint {cp.checkpoint_id} keeps its commit log in a store; resume it with "
                "Executor(chart, store=<that store>)"
            )
        return self._call_store(lambda s: s.load(cp.run_id), f"load run {cp.run_id!r}")

    def _claim(self, cp: Checkpoint) -> None:
        if self.store is not None:
            won = self._call_store(
                lambda s: s.claim_checkpoint(cp.checkpoint_id), "claim the checkpoint"
            )
        else:
            with _claim_lock:
                won = cp.checkpoint_id not in _claimed_here
                _claimed_here.add(cp.checkpoint_id)
        if not won:
            raise CheckpointClaimedError(
                f"checkpoint {cp.checkpoint_id} was already resumed; a checkpoint resumes once. "
                "If the run paused again, resume its newer checkpoint (RunResult.checkpoint)."
            )

    def _as_checkpoint(self, checkpoint: Checkpoint | str | bytes) -> Checkpoint:
        if isinstance(checkpoint, Checkpoint):
            return checkpoint
        if isinstance(checkpoint, (str, bytes)):
            return Checkpoint.from_json(checkpoint)
        raise CheckpointError(
            f"resume() takes a Checkpoint or its JSON, got {type(checkpoint).__name__}"
        )

    def _call_store(self, action: Callable[[RunStore], _T], what: str) -> _T:
        assert self.store is not None
        try:
            return action(self.store)
        except TrackwayError:
            raise
        except Exception as exc:
            raise StoreError(
                f"{type(self.store).__name__} could not {what}: {type(exc).__name__}: {exc}"
            ) from exc

    def _check_input(self, input: Mapping[str, Any] | None) -> None:
        schema = self.chart.input_schema
        if schema is None:
            return
        try:
            value = thaw(input) if input is not None else {}
        except TypeError as exc:
            raise StateValueError(
                f"the run input is not JSON ({exc}); state keys are str and values JSON",
                key="<input>",
                stage_path=None,
            ) from None
        issues = validate(schema, value)
        if issues:
            listed = "; ".join(f"{i['path']}: {i['message']}" for i in issues[:5])
            raise InputValidationError(
                f"the input to chart {self.chart.id!r} fails its input schema: {listed}",
                issues=issues,
            )

    def _check_output(self, run: RunContext) -> OutputValidationError | None:
        schema = self.chart.output_schema
        if schema is None:
            return None
        issues = validate(schema, thaw(run.root.current()))
        if not issues:
            return None
        listed = "; ".join(f"{i['path']}: {i['message']}" for i in issues[:5])
        return OutputValidationError(
            f"the final state of chart {self.chart.id!r} fails its output schema: {listed}",
            issues=issues,
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


class _no_timeout:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _redacted(live: Snapshot, redactor: Redactor) -> Snapshot:
    """The retained snapshot: every commit through the funnel, its own time-travel index."""
    return Snapshot.from_commits(
        run_id=live.run_id,
        chart_id=live.chart_id,
        status=live.status,
        initial=redactor.initial(live._initial),
        commits=[redactor.commit(c) for c in live._commits],
        break_reason=live.break_reason,
        error=live.error,
        recorder_failures=live.recorder_failures,
        observer_stats=live.observer_stats,
    )


def _sync(call: Callable[[], Awaitable[_T]]) -> _T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no loop running: the normal case
    else:
        raise ExecutorUsageError(
            "a *_sync() method was called inside a running event loop; await the async "
            "method there instead (e.g. `await executor.run(...)`)"
        )
    return anyio.run(call)


_INDEX = re.compile(r"#(\d+)")


def _recovery_cursor(chart: FlowChart, commits: Sequence[Commit]) -> dict[str, Any] | None:
    """Where a crashed run continues: after its last top-level commit (None: chart ended)."""
    if not commits:
        return {
            "counter": 0,
            "chain": {"chart": chart.id, "node": chart.root, "loops": {}, "at": None},
        }
    last = commits[-1]
    top_level = "/" not in last.stage_path
    if top_level and last.frame == "" and last.outcome == "ok" and "break" in (last.detail or {}):
        return {"done": True, "break": last.detail["break"]}
    if last.frame != "" or last.outcome not in ("ok",):
        raise CheckpointError(
            f"run {last.run_id!r} stopped at {last.stage_path!r} "
            f"({'inside ' + last.frame if last.frame else last.outcome}); recover() continues "
            "only runs that stopped between top-level stages"
        )
    top = last.stage_path.split("/", 1)[0]
    node_id = top.split("#", 1)[0]
    if "/" in last.stage_path and last.kind not in ("merge", "subflow-output"):
        raise CheckpointError(
            f"run {last.run_id!r} stopped inside subflow {node_id!r} at {last.stage_path!r}; "
            "recover() continues only runs that stopped between top-level stages"
        )
    node = chart.nodes.get(node_id)
    if node is None:
        raise CheckpointError(f"the log's last stage {node_id!r} is not in chart {chart.id!r}")
    if node.kind == "decider":
        chosen = last.detail["decision"]["chosen"]
        nxt: str | None = node.branches[chosen]
    else:
        nxt = node.next
    counter = 1 + max((_root_index(chart, c.stage_path) for c in commits), default=-1)
    loops: dict[str, int] = {}
    for source in chart.nodes.values():
        if source.loop and source.next is not None:
            # one execution = one plain "<id>#<n>" commit (not ":resumeN", not "/merge")
            own = re.compile(rf"{re.escape(source.id)}#\d+")
            runs = sum(1 for c in commits if c.frame == "" and own.fullmatch(c.stage_path))
            loops[source.next] = loops.get(source.next, 0) + runs
    if nxt is None:
        return None
    return {
        "counter": counter,
        "chain": {"chart": chart.id, "node": nxt, "loops": loops, "at": None},
    }


def _info(exc: BaseException) -> ErrorInfo:
    return ErrorInfo(type(exc).__name__, str(exc))


def _masked_cursor(cursor: dict[str, Any]) -> dict[str, Any]:
    """A masked checkpoint cannot resume: its cursor (which can hold items) is dropped."""
    return {"counter": cursor["counter"], "chain": "[REDACTED]"}


def _root_index(chart: FlowChart, path: str) -> int:
    """The largest execution index the run's own counter gave out in ``path``.

    Subflows share the counter; inside a parallel branch a counter of its own starts, so
    the walk stops at a fork, selector or for_each segment.
    """
    best = -1
    current: FlowChart | None = chart
    for segment in path.split("/"):
        if current is None:
            break
        node_id, _, rest = segment.partition("#")
        index = _INDEX.match("#" + rest) if rest else None
        if index:
            best = max(best, int(index.group(1)))
        node = current.nodes.get(node_id)
        if node is None or node.kind in ("fork", "selector", "for_each"):
            break
        current = node.chart if node.kind == "subflow" else None
    return best
