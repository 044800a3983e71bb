"""Recorders: observers of a run, told about every read, write, commit and decision.

A recorder is any object with some of the hook methods below (or a subclass of
:class:`Recorder`, whose hooks do nothing). Per stage the hooks fire in this order::

    on_run_start
      on_subflow_enter                      (before a subflow's first stage)
      on_stage_start
        on_read / on_write / on_emit        (live, as the stage makes them)
      on_commit                             (the stage's commit, with its seq)
      on_decision                           (deciders and selectors)
      on_error                              (the stage failed)
      on_pause                              (the stage paused, after its commit)
      on_stage_end
      on_subflow_exit                       (after a subflow's last stage)
    on_run_end                              (always: done, broken, failed or paused)

A resumed run fires ``on_run_start`` again, then ``on_resume`` before the resume commit.

In parallel branches, ``on_commit`` for the branch commits fires when the branches are merged,
in declaration order (that is when they get their seq); the other hooks fire live. A recorder
that raises is isolated: the run goes on and the failure is kept on
``snapshot.recorder_failures`` and logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ._commit import Commit, EmittedEvent, ErrorInfo, Op

if TYPE_CHECKING:
    from ._scope import Scope

__all__ = [
    "DecisionEvent",
    "EmitEvent",
    "ErrorEvent",
    "PauseEvent",
    "ReadEvent",
    "Recorder",
    "RecorderFailure",
    "ResumeEvent",
    "RunEndEvent",
    "RunStartEvent",
    "StageEndEvent",
    "StageStartEvent",
    "SubflowEvent",
    "WriteEvent",
]

_log = logging.getLogger("trackway")

HOOKS = (
    "on_run_start",
    "on_stage_start",
    "on_read",
    "on_write",
    "on_emit",
    "on_commit",
    "on_decision",
    "on_error",
    "on_stage_end",
    "on_subflow_enter",
    "on_subflow_exit",
    "on_pause",
    "on_resume",
    "on_run_end",
)


class RunStartEvent(NamedTuple):
    run_id: str
    chart_id: str
    seq: int
    input: Any


class StageStartEvent(NamedTuple):
    run_id: str
    stage_path: str
    seq: int
    stage_id: str
    stage_name: str
    kind: str


class ReadEvent(NamedTuple):
    run_id: str
    stage_path: str
    seq: int
    key: str
    value: Any
    """The value read (read-only), or the MISSING sentinel for an absent key."""


class WriteEvent(NamedTuple):
    run_id: str
    stage_path: str
    seq: int
    op: Op


class EmitEvent(NamedTuple):
    run_id: str
    stage_path: str
    seq: int
    name: str
    payload: Any


class DecisionEvent(NamedTuple):
    run_id: str
    stage_path: str
    seq: int
    chosen: list[str]
    evidence: Any


class ErrorEvent(NamedTuple):
    run_id: str
    stage_path: str | None
    seq: int
    error: ErrorInfo


class StageEndEvent(NamedTuple):
    run_id: str
    stage_path: str
    seq: int
    outcome: str
    duration: float


class SubflowEvent(NamedTuple):
    run_id: str
    stage_path: str
    seq: int
    subflow_id: str
    isolated: bool


class PauseEvent(NamedTuple):
    run_id: str
    stage_path: str
    seq: int
    payload: Any


class ResumeEvent(NamedTuple):
    run_id: str
    stage_path: str
    seq: int
    value: Any


class RunEndEvent(NamedTuple):
    run_id: str
    seq: int
    status: str
    error: ErrorInfo | None


class RecorderFailure(NamedTuple):
    """A recorder hook that raised: kept as data, never allowed to break the run."""

    recorder: str
    hook: str
    error: ErrorInfo


class Recorder:
    """Optional base class: every hook is a no-op; override the ones you need."""

    def on_run_start(self, event: RunStartEvent) -> None: ...
    def on_stage_start(self, event: StageStartEvent) -> None: ...
    def on_read(self, event: ReadEvent) -> None: ...
    def on_write(self, event: WriteEvent) -> None: ...
    def on_emit(self, event: EmitEvent) -> None: ...
    def on_commit(self, commit: Commit) -> None: ...
    def on_decision(self, event: DecisionEvent) -> None: ...
    def on_error(self, event: ErrorEvent) -> None: ...
    def on_stage_end(self, event: StageEndEvent) -> None: ...
    def on_subflow_enter(self, event: SubflowEvent) -> None: ...
    def on_subflow_exit(self, event: SubflowEvent) -> None: ...
    def on_pause(self, event: PauseEvent) -> None: ...
    def on_resume(self, event: ResumeEvent) -> None: ...
    def on_run_end(self, event: RunEndEvent) -> None: ...


class Dispatch:
    """Fans events out to the hooks recorders define; empty lists cost one truth test."""

    def __init__(self, recorders: Sequence[object], run_id: str, log_len: Any) -> None:
        self.failures: list[RecorderFailure] = []
        self.run_id = run_id
        self._log_len = log_len
        self._hooks: dict[str, list[tuple[str, Any]]] = {h: [] for h in HOOKS}
        for rec in recorders:
            label = getattr(rec, "name", None) or type(rec).__name__
            for hook in HOOKS:
                fn = getattr(rec, hook, None)
                base = getattr(Recorder, hook)
                if fn is not None and getattr(fn, "__func__", None) is not base:
                    self._hooks[hook].append((str(label), fn))
        h = self._hooks
        self.on_read = bool(h["on_read"])
        self.on_write = bool(h["on_write"])
        self.on_emit = bool(h["on_emit"])
        self.on_commit = bool(h["on_commit"])
        self.stage_hooks = bool(
            h["on_stage_start"] or h["on_stage_end"] or h["on_decision"] or h["on_error"]
        )
        self.any = any(h.values())

    def fire(self, hook: str, event: Any) -> None:
        for label, fn in self._hooks[hook]:
            try:
                fn(event)
            except Exception as exc:
                info = ErrorInfo(type(exc).__name__, str(exc))
                self.failures.append(RecorderFailure(label, hook, info))
                _log.warning("recorder %s failed in %s: %s: %s", label, hook, info[0], info[1])

    def read(self, scope: Scope, key: str, value: Any) -> None:
        self.fire("on_read", ReadEvent(self.run_id, scope.stage_path, self._log_len(), key, value))

    def write(self, scope: Scope, op: Op) -> None:
        self.fire("on_write", WriteEvent(self.run_id, scope.stage_path, self._log_len(), op))

    def emit(self, scope: Scope, event: EmittedEvent) -> None:
        self.fire(
            "on_emit",
            EmitEvent(self.run_id, scope.stage_path, self._log_len(), event.name, event.payload),
        )
