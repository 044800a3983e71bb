"""What one run owns while it executes: the run context, its frames and strands, run-locals.

A *frame* is a state a strand of execution writes to (the run's state, a parallel branch's
view, an isolated subflow's state). A *strand* is one sequential walk through a chart: it
owns the path prefix, the execution-index counter and the break flag. Branch frames buffer
their commits and hand them to the parent in declaration order, so the log never depends on
which branch finished first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from time import time
from typing import TYPE_CHECKING, Any, TypeVar

from ..chart._chart import FlowChart
from ..core._commit import (
    Commit,
    CommitKind,
    ErrorInfo,
    Outcome,
    Write,
    error_info,
    log_writes,
)
from ..core._detail import Control
from ..core._errors import RecoveryError, StoreWriteError, caused_by
from ..core._state import StateStore
from ..core._sync import cancelled_exc_class
from ..core._typed import StateValidator
from ..observe._redact import Redactor
from ._recorder import Dispatch
from ._release import current_stop_signal

_new_tuple = tuple.__new__

if TYPE_CHECKING:
    from ._sinks import Sink, StreamTap

__all__ = ["Frame", "RunContext", "RunLocals", "Strand", "error_info"]

_T = TypeVar("_T")


class RunLocals:
    """Data that lives and dies with one run: caches kept between a run's stages.

    Nothing here is committed or recorded, and nothing survives the run: a resumed run starts
    with empty run-locals. Values with a ``close()`` method are closed when the run ends.
    """

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}

    def get(self, key: Hashable, factory: Callable[[], _T]) -> _T:
        """The run's value for ``key``, made by ``factory()`` on first use."""
        try:
            value: _T = self._values[key]
        except KeyError:
            value = self._values[key] = factory()
        return value

    def __len__(self) -> int:
        return len(self._values)

    def close(self) -> None:
        """Drop every value (closing those that can be closed)."""
        values, self._values = self._values, {}
        for value in values.values():
            closer = getattr(value, "close", None)
            if callable(closer):
                closer()


class Replay:
    """The log of a run being recovered, taken by stage path as the walk reaches it."""

    __slots__ = ("_by_path", "_root_left")

    def __init__(self, commits: Sequence[Commit]) -> None:
        self._by_path = {c.stage_path: c for c in commits}
        self._root_left = sum(1 for c in commits if c.frame == "")

    def take(self, path: str) -> Commit | None:
        """The commit the log holds at ``path`` (taken: it is not handed out twice)."""
        commit = self._by_path.pop(path, None)
        if commit is not None and commit.frame == "":
            self._root_left -= 1
        return commit

    def check_live(self, path: str) -> None:
        """Before something runs again at ``path``: the log must hold nothing more of the
        run's own state, else the walk has left the path the run took (another chart)."""
        if self._root_left:
            first = min((c for c in self._by_path.values() if c.frame == ""), key=_seq)
            raise RecoveryError(
                f"recovering, the walk reached {path!r}, which the log does not hold, while "
                f"the log still holds {first.kind} {first.stage_id!r} at {first.stage_path!r} "
                f"(commit {first.seq}): this chart differs from the one that made the run; "
                "recover it with that chart"
            )


def _seq(commit: Commit) -> int:
    return commit.seq


class RunContext:
    """Everything one run owns: its id, log, root state, recorders, limits and run-locals."""

    __slots__ = (
        "cancelled_exc",
        "chart",
        "deadline",
        "initial",
        "locals",
        "log",
        "max_iterations",
        "recorders",
        "redactor",
        "replay",
        "resume_taken",
        "resume_target",
        "resume_value",
        "root",
        "run_id",
        "sink",
        "stop",
        "tap",
        "validators",
    )

    def __init__(
        self,
        run_id: str,
        chart: FlowChart,
        recorders: Sequence[object],
        max_iterations: int,
        redactor: Redactor | None = None,
    ) -> None:
        self.run_id = run_id
        self.redactor = redactor
        self.chart = chart
        self.log: list[Commit] = []
        self.root = StateStore()
        self.initial: dict[str, bytes] = {}
        self.max_iterations = max_iterations
        self.recorders = Dispatch(recorders, run_id, self.log.__len__, redactor)
        self.validators: dict[int, StateValidator | None] = {}
        self.cancelled_exc = cancelled_exc_class()
        self.resume_value: Any = None
        self.resume_taken = True
        self.resume_target = ""  # the paused stage's path, without any ":resumeN"
        self.sink: Sink | None = None
        self.stop = current_stop_signal()
        """A worker's request to let the run go at the next stage boundary (``_release``)."""
        self.tap: StreamTap | None = None
        # time.monotonic() past which a stage that returns ends the run (timeout=): a sync
        # stage cannot be cancelled while it runs, so the deadline is checked when it returns
        self.deadline: float | None = None
        """Streaming (``Executor.stream``): where each commit goes as it is made."""
        self.locals = RunLocals()
        self.replay: Replay | None = None
        """Recovering: the committed commits, taken as the walk reaches them instead of
        running their stages again (see ``_recovery``)."""

    def error_info(self, exc: BaseException) -> ErrorInfo:
        """What a commit keeps of an exception: its type and message, through the redaction
        funnel (a refused write to a hidden key is named, its value never quoted)."""
        info = error_info(exc)
        return info if self.redactor is None else self.redactor.error(info, exc)

    def run_error_info(self, exc: BaseException) -> ErrorInfo:
        """What the run's outcome (``snapshot.error``, the store's run row, the end events)
        keeps of the error the run ended with: its message masked under ``errors=True``."""
        info = error_info(exc)
        return info if self.redactor is None else self.redactor.run_error(info, exc)

    def validator(self, chart: FlowChart) -> StateValidator | None:
        key = id(chart)
        if key not in self.validators:
            model = chart.state_model
            self.validators[key] = None if model is None else StateValidator(model)
        return self.validators[key]

    def take_resume(self, path: str, *, peek: bool = False) -> bool:
        """True once per resume, for the paused stage the checkpoint names (``paused_at``);
        ``peek`` asks without taking it."""
        if self.resume_taken or (self.resume_target and path != self.resume_target):
            return False
        if not peek:
            self.resume_taken = True
        return True

    async def make_room(self) -> None:
        """Wait, without blocking the event loop, until the store's queue takes the commits
        waiting for it (``durability="batch"`` with a full queue), until the group flush
        holding them is durable (``"sync"`` shared by concurrent runs), and until a stream's
        reader has room for the commits waiting for it (``Executor.stream``)."""
        sink = self.sink
        if sink is not None and sink.waiting:
            await sink.room()
        tap = self.tap
        if tap is not None and tap.waiting:
            await tap.make_room()

    def hide_value(self, text: str) -> None:
        """Mask ``text`` on every retained surface of this run from now on (its store rows,
        snapshot, recorders, events); a run without a redaction policy gets an empty one."""
        if self.redactor is None:
            from ..observe._redact import RedactionPolicy

            self.redactor = Redactor(RedactionPolicy())
            self.recorders.redactor = self.redactor
        self.redactor.hide_value(text)

    def append(self, commit: Commit) -> None:
        self.log.append(commit)  # the live log keeps real values (resume needs them)
        stored = commit
        redactor = self.redactor
        if redactor is not None:
            retained = redactor.commit(commit)  # the one funnel to retained surfaces
            # a store with a seal keeps the real commit sealed in the redacted one's row
            stored = retained if retained is commit else redactor.stored(commit, retained)
            commit = retained
        if self.tap is not None:
            self.tap(commit)
        if self.sink is not None:
            try:
                self.sink(stored)
            except Exception as exc:
                failed = StoreWriteError(
                    f"the store could not take commit {commit.seq} ({commit.stage_path}): "
                    f"{type(exc).__name__}: {exc}",
                    stage_path=commit.stage_path,
                )
                raise caused_by(failed, exc) from exc
        if self.recorders.on_commit:
            self.recorders.fire("on_commit", commit)


class Frame:
    """A state a strand writes to; a branch frame buffers its commits until the merge."""

    __slots__ = ("adopted", "buffer", "local_seq", "name", "run", "store")

    def __init__(
        self, run: RunContext, name: str, store: StateStore, buffer: list[Commit] | None
    ) -> None:
        self.run = run
        self.name = name
        self.store = store
        self.buffer = buffer
        self.local_seq = 0
        self.adopted: list[Commit] = []  # commits of the log taken back while recovering

    def take(self, commit: Commit) -> None:
        """Take a commit the log already holds (recovery): its writes reach this frame's
        state, unless this is the run's own state, rebuilt from the log before the walk."""
        if self.store is not self.run.root and commit.writes:
            self.store.apply(commit.seq, commit.writes)
        if self.buffer is not None:
            self.local_seq = commit.seq
            self.adopted.append(commit)  # a branch's merge reads its commits

    def record(
        self,
        path: str,
        stage_id: str,
        stage_name: str,
        kind: CommitKind,
        started: float,
        ops: tuple[Write, ...],
        reads: tuple[str, ...],
        outcome: Outcome,
        error: ErrorInfo | None = None,
        detail: Any = None,
        events: tuple[Any, ...] = (),
        attempts: int = 1,
    ) -> Commit:
        run = self.run
        if self.buffer is None:
            seq = len(run.log) + 1
            if ops:
                self.store.apply(seq, ops)
        else:
            seq = 0  # assigned when the branch is merged into its parent
            self.local_seq += 1
            if ops:
                self.store.apply(self.local_seq, ops)
        commit = _new_tuple(  # Commit(...) without its Python-level __new__: once a stage
            Commit,
            (
                seq,
                run.run_id,
                path,
                stage_id,
                stage_name,
                kind,
                self.name,
                started,
                time(),
                log_writes(ops),  # applied above: the log keeps containers as JSON only
                reads,
                outcome,
                error,
                detail,
                events,
                attempts,
                None,  # sealed: set only on the store's copy (Redactor.stored)
            ),
        )
        if self.buffer is None:
            run.append(commit)
        else:
            self.buffer.append(commit)
        return commit

    def adopt(self, commits: Sequence[Commit]) -> None:
        """Take a finished branch's buffered commits, in order, into this frame's log."""
        if self.buffer is not None:
            self.buffer.extend(commits)
            return
        run = self.run
        for c in commits:
            run.append(c._replace(seq=len(run.log) + 1))


class Strand:
    """One sequential walk through a chart: path prefix, execution counter, break flag."""

    __slots__ = (
        "base_control",
        "broken",
        "control",
        "counter",
        "decision",
        "frame",
        "last",
        "prefix",
        "run",
        "validator",
    )

    def __init__(
        self,
        run: RunContext,
        frame: Frame,
        prefix: str,
        counter: list[int],
        validator: StateValidator | None,
    ) -> None:
        self.run = run
        self.frame = frame
        self.prefix = prefix
        self.counter = counter
        self.validator = validator
        self.broken: str | None = None
        self.last = ""  # path of the last stage this strand ran
        # The decision that chose the branch now running (recorded on its commits), and the
        # last decision this strand made.
        self.base_control: Control | None = None  # inherited: the whole strand is in
        self.control: Control | None = None  # for the node running now
        self.decision: Control | None = None

    def next_index(self) -> int:
        i = self.counter[0]
        self.counter[0] = i + 1
        return i
