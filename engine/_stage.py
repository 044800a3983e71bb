"""Running one stage function and turning what it did into exactly one commit.

A stage commits on every way out: return (``ok``), raise (``error``), ``scope.pause``
(``paused``, then :class:`Paused` travels up the walker) and cancellation (``cancelled``).
With a retry policy only the final attempt commits, recording the failed ones.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from time import time
from typing import Any

import anyio

from ._chart import ResumeFn, is_async_callable
from ._commit import CommitKind, ErrorInfo, Outcome, Write
from ._context import Frame, RunContext, Strand, error_info
from ._cursor import ControlRef, StageCursor
from ._detail import FailedAttempt
from ._errors import RunError, StageContractError, StageError
from ._paths import join, resumed
from ._recorder import (
    DecisionEvent,
    ErrorEvent,
    PauseEvent,
    ResumeEvent,
    StageEndEvent,
    StageStartEvent,
)
from ._retry import Retry
from ._scope import PauseSignal, Scope
from ._values import thaw, to_bytes

__all__ = ["Interpret", "Paused", "resume_stage", "run_stage", "validate_writes"]

Interpret = Callable[[Any], tuple[list[str], Any, RunError | None]]
"""How a decider or selector reads its function's result: (chosen keys, detail, problem)."""


class Paused(Exception):
    """Internal: a pause travelling up the walker; each level wraps ``cursor`` in its own."""

    def __init__(self, cursor: Any, payload: bytes, path: str) -> None:
        super().__init__(path)
        self.cursor = cursor
        self.payload = payload
        self.path = path


def _commit_scope(
    frame: Frame,
    scope: Scope,
    name: str,
    kind: CommitKind,
    started: float,
    outcome: Outcome,
    error: ErrorInfo | None = None,
    detail: Any = None,
    attempt: int = 1,
) -> None:
    frame.record(
        scope.stage_path,
        scope.stage_id,
        name,
        kind,
        started,
        tuple(scope._ops),
        tuple(scope._reads),
        outcome,
        error,
        detail,
        tuple(scope._events),
        attempt,
    )


def _stage_end(run: RunContext, path: str, outcome: str, started: float) -> None:
    if run.recorders.stage_hooks:
        run.recorders.fire(
            "on_stage_end", StageEndEvent(run.run_id, path, len(run.log), outcome, time() - started)
        )


async def run_stage(
    strand: Strand,
    stage_id: str,
    name: str,
    fn: Callable[[Scope], Any] | None,
    is_async: bool,
    kind: CommitKind,
    retry: Retry | None,
    interpret: Interpret | None = None,
    *,
    path: str | None = None,
    leaf: StageCursor | None = None,
    detail: Any = None,
) -> tuple[list[str], Scope]:
    """Run one stage function and commit its writes (on return, raise, pause or cancel).

    ``path`` and ``leaf`` are given when resuming: the resume commit's path and the cursor a
    new pause from ``on_resume`` continues from.
    """
    assert fn is not None
    run = strand.run
    rec = run.recorders
    frame = strand.frame
    if path is None:
        path = join(strand.prefix, stage_id, strand.next_index())
    strand.last = path
    if rec.stage_hooks:
        rec.fire(
            "on_stage_start", StageStartEvent(run.run_id, path, len(run.log), stage_id, name, kind)
        )
    started = time()
    attempt = 1
    failed: list[FailedAttempt] = []
    if strand.control is not None:
        detail = {**(detail or {}), "control": strand.control}
    while True:
        scope = Scope(strand, path, stage_id)
        try:
            result = fn(scope)
            if is_async or (result is not None and inspect.isawaitable(result)):
                result = await result
            chosen: list[str] = []
            problem: RunError | None = None
            if interpret is not None:
                chosen, detail, problem = interpret(result)
            break
        except PauseSignal as sig:
            if interpret is not None:
                exc = StageContractError(
                    f"{kind} {name!r} cannot pause; pause in a stage before it"
                )
                _commit_scope(
                    frame, scope, name, kind, started, "error", error_info(exc), None, attempt
                )
                raise StageError(str(exc), stage_path=path) from None
            control = strand.control
            cursor = StageCursor(
                path=path if leaf is None else leaf.path,
                resumes=0 if leaf is None else leaf.resumes,
                payload=thaw(sig.payload),
                # the decision that chose this branch, kept for the resume commit
                control=None if control is None else ControlRef(**control),
                pending_break=scope._broke,
            )
            _commit_scope(
                frame,
                scope,
                name,
                kind,
                started,
                "paused",
                None,
                {**(detail or {}), "pause": sig.payload},
                attempt,
            )
            if rec.any:
                rec.fire("on_pause", PauseEvent(run.run_id, path, len(run.log), sig.payload))
            _stage_end(run, path, "paused", started)
            raise Paused(cursor, sig.data, path) from None
        except run.cancelled_exc:
            info = ErrorInfo("Cancelled", "cancelled")
            _commit_scope(frame, scope, name, kind, started, "cancelled", info, detail, attempt)
            _stage_end(run, path, "cancelled", started)
            raise
        except Exception as exc:
            if retry is not None and attempt < retry.attempts and isinstance(exc, retry.on):
                failed.append({"type": type(exc).__name__, "message": str(exc)})
                await anyio.sleep(retry.delay(attempt))
                attempt += 1
                continue
            info = error_info(exc)
            extra = {**(detail or {}), "failed_attempts": failed} if failed else detail
            _commit_scope(frame, scope, name, kind, started, "error", info, extra, attempt)
            if rec.stage_hooks:
                rec.fire("on_error", ErrorEvent(run.run_id, path, len(run.log), info))
            _stage_end(run, path, "error", started)
            err = StageError(
                f"stage {name!r} ({path}) raised {info.type}: {info.message}", stage_path=path
            )
            raise err from exc
        except BaseException as exc:  # KeyboardInterrupt and the like: record, then let go
            info = error_info(exc)
            _commit_scope(frame, scope, name, kind, started, "error", info, detail, attempt)
            raise
    if failed:
        detail = {**(detail or {}), "failed_attempts": failed}
    if scope._broke is not None:
        detail = {**(detail or {}), "break": scope._broke}
    outcome: Outcome = "ok" if problem is None else "error"
    error = None if problem is None else error_info(problem)
    _commit_scope(frame, scope, name, kind, started, outcome, error, detail, attempt)
    if interpret is not None and rec.stage_hooks:
        evidence = detail.get("decision") if isinstance(detail, dict) else None
        rec.fire("on_decision", DecisionEvent(run.run_id, path, len(run.log), chosen, evidence))
    if problem is not None:
        if rec.stage_hooks:
            rec.fire("on_error", ErrorEvent(run.run_id, path, len(run.log), error_info(problem)))
        _stage_end(run, path, "error", started)
        problem.stage_path = path
        raise problem
    if scope._broke is not None:
        strand.broken = scope._broke
    _stage_end(run, path, "ok", started)
    return chosen, scope


async def resume_stage(
    strand: Strand,
    stage_id: str,
    name: str,
    on_resume: ResumeFn | None,
    at: StageCursor,
) -> None:
    """Continue a paused stage: ``on_resume(scope, value)`` runs as a ``resume`` commit."""
    run = strand.run
    if not run.take_resume(at.path):
        # Another paused branch took this resume's value; this one stays paused as it was.
        raise Paused(at, to_bytes(at.payload), at.path)
    value = run.resume_value
    resumes = at.resumes + 1
    path = resumed(at.path, resumes)
    if run.recorders.any:
        run.recorders.fire("on_resume", ResumeEvent(run.run_id, path, len(run.log), value))

    def call(scope: Scope) -> Any:
        return None if on_resume is None else on_resume(scope, value)

    leaf = StageCursor(path=at.path, resumes=resumes)
    is_async = on_resume is not None and is_async_callable(on_resume)
    await run_stage(
        strand,
        stage_id,
        name,
        call,
        is_async,
        "resume",
        None,
        path=path,
        leaf=leaf,
        detail={"resume": {"value": thaw(value)}},
    )
    if at.pending_break is not None and strand.broken is None:
        strand.broken = at.pending_break


def validate_writes(strand: Strand, ops: Sequence[Write], where: str) -> None:
    """Engine-made writes (merges, results) meet the state model like a stage's writes."""
    validator = strand.validator
    if validator is None:
        return
    for kind, key, data, _ in ops:
        if kind == "set":
            validator.check_set(key, data, where)
        elif kind == "append":
            validator.check_append(key, data, where)
        elif kind == "delete":
            validator.check_delete(key, where)
