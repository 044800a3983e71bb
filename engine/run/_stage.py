"""Running one stage function and turning what it did into exactly one commit.

A stage commits on every way out: return (``ok``), raise (``error``), ``scope.pause``
(``paused``, then :class:`Paused` travels up the walker) and cancellation (``cancelled``).
With a retry policy only the final attempt commits, recording the failed ones.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from time import monotonic, time
from typing import Any

import anyio

from ..chart._chart import ResumeFn, StageFn, is_async_callable
from ..chart._scope_api import Scope
from ..core._commit import Commit, CommitKind, ErrorInfo, Outcome, Write
from ..core._detail import FailedAttempt, as_detail
from ..core._errors import RecoveryError, RunError, StageContractError, StageError, caused_by
from ..core._paths import join, resumed
from ..core._retry import Retry
from ..core._values import thaw, to_bytes
from ._context import Frame, RunContext, Strand
from ._cursor import ControlRef, StageCursor
from ._decide import Decision, Selection
from ._recorder import (
    DecisionEvent,
    ErrorEvent,
    PauseEvent,
    ResumeEvent,
    StageEndEvent,
    StageStartEvent,
)
from ._scope import PauseSignal, TrackedScope

__all__ = ["Interpret", "Paused", "resume_stage", "run_stage", "validate_writes"]

Interpret = Callable[[Any], tuple[list[str], Any, RunError | None]]
"""How a decider or selector reads its function's result: (chosen keys, detail, problem)."""


_NEVER_AWAITED = frozenset((str, dict, list, tuple, int, float, bool, Decision, Selection))
"""Exact types a stage function returns that are never awaitable: no ABC check for them."""


class Paused(Exception):
    """Internal: a pause travelling up the walker; each level wraps ``cursor`` in its own."""

    def __init__(self, cursor: Any, payload: bytes, path: str) -> None:
        super().__init__(path)
        self.cursor = cursor
        self.payload = payload
        self.path = path


def _commit_scope(
    frame: Frame,
    scope: TrackedScope,
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
    fn: StageFn | None,
    is_async: bool,
    kind: CommitKind,
    retry: Retry | None,
    interpret: Interpret | None = None,
    *,
    path: str | None = None,
    leaf: StageCursor | None = None,
    detail: Any = None,
    on_resume: ResumeFn | None = None,
) -> tuple[list[str], TrackedScope]:
    """Run one stage function and commit its writes (on return, raise, pause or cancel).

    ``path`` and ``leaf`` are given when resuming: the resume commit's path and the cursor a
    new pause from ``on_resume`` continues from. While recovering, a stage the log already
    holds is taken from it instead (``on_resume`` continues it if its answer is pending).
    """
    assert fn is not None
    run = strand.run
    rec = run.recorders
    frame = strand.frame
    if path is None:
        counter = strand.counter  # strand.next_index() and join(), inlined: once a stage
        index = counter[0]
        counter[0] = index + 1
        path = f"{strand.prefix}{stage_id}#{index}"
        replay = run.replay
        if replay is not None:
            committed = replay.take(path)
            while committed is not None and committed.outcome == "cancelled":
                # it was in flight when the run was stopped: it runs again, at a new index
                path = join(strand.prefix, stage_id, strand.next_index())
                committed = replay.take(path)
            if committed is not None:
                return await _recovered(strand, committed, stage_id, name, kind, on_resume)
            replay.check_live(path)
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
        scope = TrackedScope(strand, path, stage_id)
        try:
            result = fn(scope)
            if is_async or (
                result is not None
                and type(result) not in _NEVER_AWAITED
                and inspect.isawaitable(result)
            ):
                result = await result
            chosen: list[str] = []
            problem: RunError | None = None
            if interpret is not None:
                chosen, detail, problem = interpret(result)
            elif result is not None:
                apply_returned(scope, result, name)
            break
        except PauseSignal as sig:
            if interpret is not None:
                exc = StageContractError(
                    f"{kind} {name!r} cannot pause; pause in a stage before it"
                )
                _commit_scope(
                    frame, scope, name, kind, started, "error", run.error_info(exc), None, attempt
                )
                raise caused_by(StageError(str(exc), stage_path=path), None) from None
            control = strand.control
            cursor = StageCursor(
                path=path if leaf is None else leaf.path,
                resumes=0 if leaf is None else leaf.resumes,
                payload=thaw(sig.payload),
                # the decision that chose this branch, kept for the resume commit
                control=None if control is None else ControlRef(**control),
                pending_break=scope._broke,
            )
            paused_detail = {**(detail or {}), "pause": sig.payload}
            if scope._broke is not None:  # it holds once resumed: the log says so too
                paused_detail["break"] = scope._broke
            _commit_scope(frame, scope, name, kind, started, "paused", None, paused_detail, attempt)
            if rec.any:
                heard = (
                    sig.payload if run.redactor is None else run.redactor.pause_value(sig.payload)
                )
                rec.fire("on_pause", PauseEvent(run.run_id, path, len(run.log), heard))
            _stage_end(run, path, "paused", started)
            raise caused_by(Paused(cursor, sig.data, path), None) from None
        except run.cancelled_exc:
            info = ErrorInfo("Cancelled", "cancelled")
            _commit_scope(frame, scope, name, kind, started, "cancelled", info, detail, attempt)
            _stage_end(run, path, "cancelled", started)
            raise
        except Exception as exc:
            if retry is not None and attempt < retry.attempts and isinstance(exc, retry.on):
                kept = run.error_info(exc)
                failed.append({"type": kept.type, "message": kept.message})
                await anyio.sleep(retry.delay(attempt))
                attempt += 1
                continue
            info = run.error_info(exc)
            extra = {**(detail or {}), "failed_attempts": failed} if failed else detail
            _commit_scope(frame, scope, name, kind, started, "error", info, extra, attempt)
            if rec.stage_hooks:
                rec.fire("on_error", ErrorEvent(run.run_id, path, len(run.log), info))
            _stage_end(run, path, "error", started)
            err = StageError(
                f"stage {name!r} ({path}) raised {info.type}: {info.message}", stage_path=path
            )
            if run.redactor is not None and run.redactor.errors:
                err.quoted = ()  # told from what the commit keeps: the masked message
            raise caused_by(err, exc) from exc
        except BaseException as exc:  # KeyboardInterrupt and the like: record, then let go
            info = run.error_info(exc)
            _commit_scope(frame, scope, name, kind, started, "error", info, detail, attempt)
            raise
    if failed:
        detail = {**(detail or {}), "failed_attempts": failed}
    if scope._broke is not None:
        detail = {**(detail or {}), "break": scope._broke}
    frame.record(  # _commit_scope, inlined on the path every stage takes
        path,
        stage_id,
        name,
        kind,
        started,
        tuple(scope._ops),
        tuple(scope._reads),
        "ok" if problem is None else "error",
        None if problem is None else run.error_info(problem),
        detail,
        tuple(scope._events),
        attempt,
    )
    if interpret is not None and rec.stage_hooks:
        evidence = detail.get("decision") if isinstance(detail, dict) else None
        rec.fire("on_decision", DecisionEvent(run.run_id, path, len(run.log), chosen, evidence))
    if problem is not None:
        if rec.stage_hooks:
            info = run.error_info(problem)
            rec.fire("on_error", ErrorEvent(run.run_id, path, len(run.log), info))
        _stage_end(run, path, "error", started)
        problem.stage_path = path
        raise problem
    if scope._broke is not None:
        strand.broken = scope._broke
    if rec.stage_hooks:
        _stage_end(run, path, "ok", started)
    if run.deadline is not None and monotonic() > run.deadline:
        # It ran past timeout= without yielding (a sync stage cannot be cancelled): its
        # commit stands, and the run ends here as timed out rather than going on.
        raise TimeoutError
    return chosen, scope


def apply_returned(scope: TrackedScope, result: Any, name: str) -> None:
    """A plain stage that returns a mapping (LangGraph's habit) writes it: each key is set
    through the scope, in the same commit and with the same tracking as ``scope[key] = v``.
    Any other returned value is a mistake worth a signal, not silence."""
    if isinstance(result, Mapping):
        for key, value in result.items():
            if not isinstance(key, str):
                raise StageContractError(
                    f"stage {name!r} returned a mapping with the key {key!r}; state keys are "
                    "strings: return {'name': value, ...}"
                )
            scope[key] = value
        return
    raise StageContractError(
        f"stage {name!r} returned {type(result).__name__} {_short(result)}; a stage writes "
        "state with scope[key] = value, or returns a mapping of the keys to write "
        "(return {'key': value}); return None otherwise. Deciders and selectors return "
        "decide(...)/select(...) and are declared with .decider()/.selector()"
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
        heard = value if run.redactor is None else run.redactor.pause_value(value)
        run.recorders.fire("on_resume", ResumeEvent(run.run_id, path, len(run.log), heard))

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


async def _recovered(
    strand: Strand,
    committed: Commit,
    stage_id: str,
    name: str,
    kind: CommitKind,
    on_resume: ResumeFn | None,
) -> tuple[list[str], TrackedScope]:
    """Take a stage the log holds (recovering a run): its writes, its choice, its break; a
    pause is paused again, or resumed when the run's answer was claimed but not yet used."""
    run = strand.run
    path = committed.stage_path
    strand.last = path
    if committed.stage_id != stage_id or committed.kind != kind:
        raise RecoveryError(
            f"the log holds {committed.kind} {committed.stage_id!r} at {path!r}, but the chart "
            f"runs {kind} {stage_id!r} there: recover the run with the chart that made it"
        )
    steps = [committed]  # the stage, then its resumes
    replay = run.replay
    assert replay is not None
    while steps[-1].outcome in ("paused", "cancelled") and (
        nxt := replay.take(resumed(path, len(steps)))
    ):
        steps.append(nxt)
    for step in steps:
        strand.frame.take(step)
    last = steps[-1]
    if last.outcome == "error":
        raise RecoveryError(
            f"the stage at {last.stage_path!r} failed ({last.error and last.error.type}): the run "
            "ended failed there, which is not a crash to recover from"
        )
    pending = next((d["break"] for s in steps if "break" in (d := as_detail(s.detail))), None)
    detail = as_detail(last.detail)
    if last.outcome != "ok":  # paused (or its resume was stopped): it waits again
        paused = next(s for s in steps[::-1] if s.outcome == "paused")
        payload = as_detail(paused.detail).get("pause")
        control = as_detail(committed.detail).get("control")
        at = StageCursor(
            path=path,
            resumes=len(steps) - 1,
            payload=payload,
            control=None if control is None else ControlRef(**control),
            pending_break=pending,
        )
        if run.take_resume(path, peek=True):  # its answer was claimed, never used: use it
            await resume_stage(strand, stage_id, name, on_resume, at)
            return [], TrackedScope(strand, path, stage_id)
        raise Paused(at, to_bytes(payload), path)
    if pending is not None and strand.broken is None:
        strand.broken = pending
    decision = detail.get("decision") or {}
    if kind == "decider":
        chosen = [decision["chosen"]]
    elif kind == "selector":
        chosen = list(decision.get("selected", ()))
    else:
        chosen = []
    return chosen, TrackedScope(strand, path, stage_id)


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
