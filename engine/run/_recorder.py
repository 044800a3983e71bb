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

import difflib
import inspect
import logging
import types
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import orjson

from ..core._commit import Commit, Emitted, ErrorInfo, Op, error_info
from ..core._errors import ConfigurationError
from ..core._snapshot import ObserverStats, RecorderFailure
from ..core._values import freeze

if TYPE_CHECKING:
    from ..chart._scope_api import Scope
    from ..observe._redact import Redactor

__all__ = [
    "DecisionEvent",
    "Deferred",
    "EmitEvent",
    "ErrorEvent",
    "PauseEvent",
    "ReadEvent",
    "Recorder",
    "ResumeEvent",
    "RunEndEvent",
    "RunStartEvent",
    "StageEndEvent",
    "StageStartEvent",
    "SubflowEvent",
    "WriteEvent",
    "deferred",
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
    break_reason: str | None = None


class Recorder:
    """Optional base class: every hook is a no-op; override the ones you need.

    A recorder with ``on_emit`` may also define ``wants_emit(name) -> bool``: when every
    recorder that hears emits says no for an event's name, the engine builds no
    :class:`EmitEvent` for it (the event is still in its commit, as every event is).
    """

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


class Deferred:
    """A recorder whose events are queued on the hot path and delivered at checkpoints.

    Build it with :func:`deferred`. The queue is per run and bounded by ``max_queue``; when
    full, ``overflow="drop_oldest"`` drops the oldest event (counted), ``"block"`` delivers
    the backlog right away (counted as an inline flush), so nothing is lost. Everything left
    is delivered before ``run`` returns or pauses.
    """

    def __init__(
        self,
        recorder: object,
        *,
        max_queue: int = 10_000,
        overflow: Literal["drop_oldest", "block"] = "drop_oldest",
    ) -> None:
        if isinstance(recorder, Deferred):
            raise ConfigurationError("this recorder is already deferred")
        if not isinstance(max_queue, int) or max_queue < 1:
            raise ConfigurationError(f"max_queue must be a positive int, got {max_queue!r}")
        if overflow not in ("drop_oldest", "block"):
            raise ConfigurationError(f"overflow must be 'drop_oldest' or 'block', got {overflow!r}")
        self.recorder = recorder
        self.max_queue = max_queue
        self.overflow = overflow
        self.name = str(getattr(recorder, "name", None) or type(recorder).__name__)

    def __repr__(self) -> str:
        return f"deferred({self.name}, max_queue={self.max_queue}, overflow={self.overflow!r})"


def deferred(
    recorder: object,
    *,
    max_queue: int = 10_000,
    overflow: Literal["drop_oldest", "block"] = "drop_oldest",
) -> Deferred:
    """Deliver ``recorder``'s events off the hot path (see :class:`Deferred`)."""
    return Deferred(recorder, max_queue=max_queue, overflow=overflow)


class _RunQueue:
    """One run's queue for one deferred recorder."""

    __slots__ = ("delivered", "dispatch", "dropped", "inline", "items", "max_depth", "spec")

    def __init__(self, spec: Deferred, dispatch: Dispatch) -> None:
        self.spec = spec
        self.dispatch = dispatch
        self.items: deque[tuple[str, Any]] = deque()
        self.delivered = self.dropped = self.inline = self.max_depth = 0

    def push(self, hook: str, event: Any) -> None:
        items = self.items
        items.append((hook, event))
        if len(items) > self.spec.max_queue:
            if self.spec.overflow == "drop_oldest":
                items.popleft()
                self.dropped += 1
            else:
                self.inline += 1
                self.flush()

    def flush(self) -> None:
        items = self.items
        if len(items) > self.max_depth:
            self.max_depth = min(len(items), self.spec.max_queue)
        rec = self.spec.recorder
        while items:
            hook, event = items.popleft()
            self.dispatch.call(self.spec.name, hook, getattr(rec, hook), event)
            self.delivered += 1

    def stats(self) -> ObserverStats:
        return ObserverStats(
            self.spec.name, self.delivered, self.dropped, self.inline, self.max_depth
        )


_CHECKED: set[type] = set()  # recorder classes whose methods passed (an agent checks per run)


def check_recorder(recorder: object) -> None:
    """Refuse, when a recorder is attached, the hooks that would fail silently: an
    ``async def`` hook (hooks are called, never awaited) and an ``on_...`` method whose name
    is not a hook (a misspelling is never called). A class is checked once; what an instance
    holds of its own (a hook set on it) each time."""
    target = recorder.recorder if isinstance(recorder, Deferred) else recorder
    own = getattr(target, "__dict__", {})
    if type(target) in _CHECKED and not any(k.startswith("on_") for k in own):
        return
    label = getattr(target, "name", None) or type(target).__name__
    for attr in dir(target):
        if not attr.startswith("on_") or attr in HOOKS:
            continue
        if not callable(getattr(target, attr, None)):
            continue
        close = difflib.get_close_matches(attr, HOOKS, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ConfigurationError(
            f"recorder {label!r} has {attr}(), which is not a recorder hook and would never "
            f"be called; {hint}the hooks are {', '.join(HOOKS)}"
        )
    for hook in HOOKS:
        fn = getattr(target, hook, None)
        if fn is not None and inspect.iscoroutinefunction(fn):
            raise ConfigurationError(
                f"recorder {label!r}: {hook} is async def, but hooks are called on the run's "
                "path and never awaited, so its body would never run; make it a plain def "
                "(hand slow work to a thread or a queue, or wrap the recorder in "
                "deferred(...))"
            )
    if not any(k.startswith("on_") for k in own):
        _CHECKED.add(type(target))


_CLASS_HOOKS: dict[type, tuple[tuple[str, ...], bool]] = {}
_HOOK_NAMES = frozenset(HOOKS)


def _hooks_of(target: object) -> tuple[tuple[str, ...], bool]:
    """The hooks ``target`` may define (its class's, worked out once per class, or its
    own), and whether they are sure: each a plain function of its class, heard as its bound
    method with nothing to check per run (not so for a class making hooks on demand,
    ``__getattr__``, nor for hooks set on the instance)."""
    cls = type(target)
    known = _CLASS_HOOKS.get(cls)
    if known is None:
        if hasattr(cls, "__getattr__"):  # every hook, asked per run
            known = (HOOKS, False)
        else:
            own_of = [(h, getattr(cls, h, None)) for h in HOOKS]
            defined = [h for h, fn in own_of if fn is not None and fn is not getattr(Recorder, h)]
            sure = all(isinstance(getattr(cls, h), types.FunctionType) for h in defined)
            known = (tuple(defined), sure)
        _CLASS_HOOKS[cls] = known
    own = getattr(target, "__dict__", None)
    return (HOOKS, False) if own and not _HOOK_NAMES.isdisjoint(own) else known


_NO_PAYLOAD: Any = object()
"""``Dispatch.emit`` without the decoded payload: the event decodes its bytes."""


_new_tuple = tuple.__new__


class Dispatch:
    """Fans events out to the hooks recorders define.

    The hooks are resolved once per run into a table of bound methods (a deferred
    recorder's hook is its run queue), so firing a hook is one dict lookup and, for a hook
    nobody defines, one truth test; the hot hooks (read, write, emit, commit) are checked
    by the callers through the ``on_*`` flags before any event object is made.
    """

    def __init__(
        self,
        recorders: Sequence[object],
        run_id: str,
        log_len: Any,
        redactor: Redactor | None = None,
    ) -> None:
        # () until a recorder fails, or until a deferred recorder queues: most runs have none
        self.failures: list[RecorderFailure] | tuple[()] = ()
        self.redactor = redactor
        self.run_id = run_id
        self._log_len = log_len
        hooks: dict[str, list[tuple[str, Any, bool]]] = {}
        self.queues: list[_RunQueue] | tuple[()] = ()
        for rec in recorders:
            queue = None
            target = rec
            if isinstance(rec, Deferred):
                queue = _RunQueue(rec, self)
                if not isinstance(self.queues, list):
                    self.queues = []
                self.queues.append(queue)
                target = rec.recorder
            label = str(getattr(target, "name", None) or type(target).__name__)
            defined, sure = _hooks_of(target)
            for hook in defined:
                fn = getattr(target, hook, None)
                if sure or (
                    fn is not None and getattr(fn, "__func__", None) is not getattr(Recorder, hook)
                ):
                    # a deferred recorder's hook is its run queue: one append, no call
                    entry = (label, fn, False) if queue is None else (label, queue, True)
                    fns = hooks.get(hook)
                    if fns is None:
                        hooks[hook] = [entry]
                    else:
                        fns.append(entry)
        # every hook has its row (a hook nobody defines: an empty one, shared)
        self._hooks: dict[str, tuple[tuple[str, Any, bool], ...]] = dict.fromkeys(HOOKS, ())
        for hook, fns in hooks.items():
            self._hooks[hook] = tuple(fns)
        h = self._hooks
        # whether an emit may be skipped: each recorder that hears emits says, by name, if it
        # wants one (``wants_emit``); None when one of them wants every emit
        wants: list[Callable[[str], bool] | None] = []
        for rec in recorders:
            target = rec.recorder if isinstance(rec, Deferred) else rec
            fn = getattr(target, "on_emit", None)
            if fn is not None and getattr(fn, "__func__", None) is not Recorder.on_emit:
                wants.append(getattr(target, "wants_emit", None))
        self.emit_wanted: Callable[[str], bool] | None = None  # None: every emit is wanted
        if None not in wants:
            if len(wants) == 1:
                self.emit_wanted = wants[0]
            else:
                filters = [w for w in wants if w is not None]
                self.emit_wanted = lambda name: any(want(name) for want in filters)
        self.on_read = bool(h["on_read"])
        self.on_write = bool(h["on_write"])
        self.on_emit = bool(h["on_emit"])
        self.on_commit = bool(h["on_commit"])
        self.stage_hooks = bool(
            h["on_stage_start"] or h["on_stage_end"] or h["on_decision"] or h["on_error"]
        )
        self.any = bool(hooks)

    def fire(self, hook: str, event: Any) -> None:
        hooks = self._hooks[hook]
        if not hooks:
            return
        if self.redactor is not None:
            event = self.redactor.event(hook, event)
        for label, fn, queued in hooks:
            if queued:
                fn.push(hook, event)
                continue
            try:
                fn(event)
            except Exception as exc:
                self._failed(label, hook, exc)

    def defines(self, hook: str) -> bool:
        """Whether a recorder of the run defines ``hook``."""
        return bool(self._hooks[hook])

    def deliver(self, hook: str, event: Any) -> None:
        """As :meth:`fire`, for an event made and redacted elsewhere (a Ray branch's)."""
        if hook == "on_emit" and self.emit_wanted is not None and not self.emit_wanted(event.name):
            return
        for label, fn, queued in self._hooks[hook]:
            if queued:
                fn.push(hook, event)
            else:
                self.call(label, hook, fn, event)

    def call(self, label: str, hook: str, fn: Any, event: Any) -> None:
        try:
            fn(event)
        except Exception as exc:
            self._failed(label, hook, exc)

    def _failed(self, label: str, hook: str, exc: Exception) -> None:
        info = error_info(exc)
        failures = self.failures
        if not isinstance(failures, list):
            failures = self.failures = []
        failures.append(RecorderFailure(label, hook, info))
        _log.warning("recorder %s failed in %s: %s: %s", label, hook, info[0], info[1])

    def flush(self) -> None:
        """Deliver everything deferred recorders have queued."""
        for queue in self.queues:
            queue.flush()

    def stats(self) -> list[ObserverStats]:
        return [q.stats() for q in self.queues]

    def read(self, scope: Scope, key: str, value: Any) -> None:
        self.fire("on_read", ReadEvent(self.run_id, scope.stage_path, self._log_len(), key, value))

    def write(self, scope: Scope, op: Op) -> None:
        self.fire("on_write", WriteEvent(self.run_id, scope.stage_path, self._log_len(), op))

    def emit(self, scope: Scope, event: Emitted, owned: Any = _NO_PAYLOAD) -> None:
        """Tell the recorders about an emit the scope found wanted (``emit_wanted``).
        ``owned``: the payload as decoded when it was encoded (engine-owned), handed out
        read-only instead of decoding ``event`` again."""
        name, data = event
        payload = freeze(orjson.loads(data) if owned is _NO_PAYLOAD else owned)
        heard = _new_tuple(  # EmitEvent(...) without its Python-level __new__: once per emit
            EmitEvent, (self.run_id, scope.stage_path, self._log_len(), name, payload)
        )
        if self.redactor is not None:
            heard = self.redactor.event("on_emit", heard)
        for label, fn, queued in self._hooks["on_emit"]:
            if queued:
                fn.push("on_emit", heard)
                continue
            try:
                fn(heard)
            except Exception as exc:
                self._failed(label, "on_emit", exc)
