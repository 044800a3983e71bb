"""The driver: runs a chart's nodes in a flat loop and turns each stage into one commit.

A *frame* is a state a strand of execution writes to (the run's state, a parallel branch's
view, an isolated subflow's state). A *strand* is one sequential walk through a chart: it
owns the path prefix, the execution-index counter and the break flag. Branch frames buffer
their commits and hand them to the parent in declaration order, so the log never depends
on which branch finished first.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from time import time
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from ._chart import Branch, FlowChart, Node, ResumeFn, is_async_callable
from ._commit import Commit, CommitKind, ErrorInfo, Outcome, Write
from ._decide import Decision, Selection
from ._errors import (
    LoopLimitError,
    ParallelLimitError,
    RunError,
    StageError,
    StoreError,
    UnknownBranchError,
)
from ._merge import BranchResult, merge_ops
from ._recorder import (
    DecisionEvent,
    Dispatch,
    ErrorEvent,
    PauseEvent,
    ResumeEvent,
    StageEndEvent,
    StageStartEvent,
    SubflowEvent,
)
from ._redact import Redactor
from ._retry import Retry
from ._scope import PauseSignal, Scope
from ._state import MISSING, StateStore
from ._typed import StateValidator
from ._values import FrozenList, encode_value, freeze, thaw, to_bytes

__all__ = ["RunContext"]

# A chain of plain ``def`` stages never awaits, so the driver yields to the event loop itself
# (letting timeouts and cancellation in) at least every _YIELD_SECONDS of work.
_YIELD_SECONDS = 0.005

Interpret = Callable[[Any], tuple[list[str], Any, RunError | None]]


class RunContext:
    """Everything one run owns: its id, log, root state, recorders and limits."""

    __slots__ = (
        "cancelled_exc",
        "chart",
        "initial",
        "log",
        "max_iterations",
        "recorders",
        "redactor",
        "resume_taken",
        "resume_target",
        "resume_value",
        "root",
        "run_id",
        "sink",
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
        self.cancelled_exc = anyio.get_cancelled_exc_class()
        self.resume_value: Any = None
        self.resume_taken = True
        self.resume_target = ""  # the paused stage's path, without any ":resumeN"
        self.sink: Callable[[Commit], None] | None = None

    def validator(self, chart: FlowChart) -> StateValidator | None:
        key = id(chart)
        if key not in self.validators:
            model = chart.state_model
            self.validators[key] = None if model is None else StateValidator(model)
        return self.validators[key]

    def take_resume(self, path: str) -> bool:
        """True once per resume, for the paused stage the checkpoint names (``paused_at``)."""
        if self.resume_taken or (self.resume_target and path != self.resume_target):
            return False
        self.resume_taken = True
        return True

    def append(self, commit: Commit) -> None:
        self.log.append(commit)  # the live log keeps real values (resume needs them)
        if self.redactor is not None:
            commit = self.redactor.commit(commit)  # the one funnel to retained surfaces
        if self.sink is not None:
            try:
                self.sink(commit)
            except Exception as exc:
                raise StoreError(
                    f"the store could not take commit {commit.seq} ({commit.stage_path}): "
                    f"{type(exc).__name__}: {exc}",
                    stage_path=commit.stage_path,
                ) from exc
        if self.recorders.on_commit:
            self.recorders.fire("on_commit", commit)


class _Frame:
    __slots__ = ("buffer", "local_seq", "name", "run", "store")

    def __init__(
        self, run: RunContext, name: str, store: StateStore, buffer: list[Commit] | None
    ) -> None:
        self.run = run
        self.name = name
        self.store = store
        self.buffer = buffer
        self.local_seq = 0

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
        commit = Commit(
            seq,
            run.run_id,
            path,
            stage_id,
            stage_name,
            kind,
            self.name,
            started,
            time(),
            ops,
            reads,
            outcome,
            error,
            detail,
            events,
            attempts,
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


class _Strand:
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
        frame: _Frame,
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
        self.base_control: dict[str, str] | None = None  # inherited: the whole strand is in
        self.control: dict[str, str] | None = None  # for the node running now
        self.decision: dict[str, str] | None = None

    def next_index(self) -> int:
        i = self.counter[0]
        self.counter[0] = i + 1
        return i


def _info(exc: BaseException) -> ErrorInfo:
    return ErrorInfo(type(exc).__name__, str(exc))


async def run_root(run: RunContext, cursor: dict[str, Any] | None = None) -> str | None:
    """Run the chart on the run's root state; return the break reason, if it broke.

    With ``cursor`` (from a checkpoint) the walk continues where the run paused. A pause
    raises :class:`Paused` whose cursor starts with the root's execution counter.
    """
    frame = _Frame(run, "", run.root, None)
    counter = [0 if cursor is None else cursor["counter"]]
    strand = _Strand(run, frame, "", counter, run.validator(run.chart))
    try:
        await _run_chain(strand, run.chart, None if cursor is None else cursor["chain"])
    except Paused as p:
        p.cursor = {"counter": counter[0], "chain": p.cursor}
        raise
    return strand.broken


async def _run_chain(
    strand: _Strand, chart: FlowChart, resume: dict[str, Any] | None = None
) -> None:
    """Walk one chart in a flat loop: no recursion per step, so loops never grow the stack."""
    nodes = chart.nodes
    nid: str | None = chart.root
    loops: dict[str, int] = {}
    last_yield = time()
    try:
        if resume is not None:
            nid = resume["node"]
            loops.update(resume["loops"])
            if resume["at"] is not None:  # a paused node: continue it, then move on
                node = nodes[nid]
                strand.control = resume["at"].get("control", strand.base_control)
                await _resume_node(strand, node, resume["at"])
                if strand.broken is not None:
                    return
                nid = _follow(strand, node, node.next, loops)
        while nid is not None:
            node = nodes[nid]
            kind = node.kind
            strand.control = strand.decision if node.branch_of is not None else strand.base_control
            if kind == "stage":
                await _run_stage(
                    strand, node.id, node.name, node.fn, node.is_async, "stage", node.retry
                )
                nxt = node.next
            elif kind == "decider":
                nxt = await _exec_decider(strand, node)
            elif kind == "selector":
                nxt = await _exec_selector(strand, node)
            elif kind == "fork":
                path = f"{strand.prefix}{node.id}#{strand.next_index()}"
                pairs = [(b.key, b) for b in node.parallel]
                await _exec_parallel(strand, node, pairs, path, path)
                nxt = node.next
            elif kind == "subflow":
                await _exec_subflow(strand, node)
                nxt = node.next
            else:
                await _exec_for_each(strand, node)
                nxt = node.next
            if strand.broken is not None:
                return
            nid = _follow(strand, node, nxt, loops) if node.loop else nxt
            now = time()
            if now - last_yield >= _YIELD_SECONDS:
                if strand.run.recorders.queues:
                    strand.run.recorders.flush()
                await anyio.lowlevel.checkpoint()
                last_yield = time()
    except Paused as p:
        p.cursor = {"chart": chart.id, "node": nid, "loops": dict(loops), "at": p.cursor}
        raise


def _follow(strand: _Strand, node: Node, nxt: str | None, loops: dict[str, int]) -> str | None:
    """Take the edge out of ``node``, counting a back edge against ``max_iterations``."""
    if not node.loop or nxt is None or node.kind == "decider":
        return nxt
    limit = strand.run.max_iterations
    count = loops.get(nxt, 0) + 1
    if count > limit:
        raise LoopLimitError(
            f"the loop from {node.name!r} ({node.id}) back to {nxt!r} went round {limit} "
            f"times, the limit set by Executor(max_iterations={limit}); raise max_iterations "
            "if it should run longer, or make a decider route out of the loop or a stage call "
            "scope.break_()",
            stage_path=strand.last or f"{strand.prefix}{node.id}",
        )
    loops[nxt] = count
    return nxt


async def _resume_node(strand: _Strand, node: Node, at: dict[str, Any]) -> None:
    kind = at["kind"]
    if kind == "stage":
        await _resume_stage(strand, node.id, node.name, node.on_resume, at)
    elif kind == "subflow":
        await _exec_subflow(strand, node, at)
    elif node.kind == "for_each":
        await _exec_for_each(strand, node, at)
    else:
        keys = at["keys"]
        pairs = [(b.key, b) for b in node.parallel if b.key in keys]
        await _exec_parallel(strand, node, pairs, at["path"], at["merge_path"], at)


class Paused(Exception):
    """Internal: a pause travelling up the driver; each level wraps ``cursor`` in its own."""

    def __init__(self, cursor: dict[str, Any], payload: bytes, path: str) -> None:
        super().__init__(path)
        self.cursor = cursor
        self.payload = payload
        self.path = path


def _commit_scope(
    frame: _Frame,
    scope: Scope,
    name: str,
    kind: CommitKind,
    started: float,
    outcome: Outcome,
    error: ErrorInfo | None = None,
    detail: Any = None,
    attempt: int = 1,
) -> Commit:
    return frame.record(
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


async def _run_stage(
    strand: _Strand,
    stage_id: str,
    name: str,
    fn: Callable[[Scope], Any] | None,
    is_async: bool,
    kind: CommitKind,
    retry: Retry | None,
    interpret: Interpret | None = None,
    *,
    path: str | None = None,
    leaf: dict[str, Any] | None = None,
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
        path = f"{strand.prefix}{stage_id}#{strand.next_index()}"
    strand.last = path
    if rec.stage_hooks:
        rec.fire(
            "on_stage_start", StageStartEvent(run.run_id, path, len(run.log), stage_id, name, kind)
        )
    started = time()
    attempt = 1
    failed: list[dict[str, str]] = []
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
                exc = TypeError(f"{kind} {name!r} cannot pause; pause in a stage before it")
                _commit_scope(frame, scope, name, kind, started, "error", _info(exc), None, attempt)
                raise StageError(str(exc), stage_path=path) from None
            base = leaf or {"kind": "stage", "path": path, "resumes": 0}
            cursor = {**base, "payload": sig.payload}
            if strand.control is not None:  # the decision that chose this branch, kept
                cursor["control"] = strand.control
            if scope._broke is not None:
                cursor["break"] = scope._broke
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
            info = _info(exc)
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
            _commit_scope(frame, scope, name, kind, started, "error", _info(exc), detail, attempt)
            raise
    if failed:
        detail = {**(detail or {}), "failed_attempts": failed}
    if scope._broke is not None:
        detail = {**(detail or {}), "break": scope._broke}
    outcome: Outcome = "ok" if problem is None else "error"
    error = None if problem is None else _info(problem)
    _commit_scope(frame, scope, name, kind, started, outcome, error, detail, attempt)
    if interpret is not None and rec.stage_hooks:
        evidence = detail.get("decision") if isinstance(detail, dict) else None
        rec.fire("on_decision", DecisionEvent(run.run_id, path, len(run.log), chosen, evidence))
    if problem is not None:
        if rec.stage_hooks:
            rec.fire("on_error", ErrorEvent(run.run_id, path, len(run.log), _info(problem)))
        _stage_end(run, path, "error", started)
        problem.stage_path = path
        raise problem
    if scope._broke is not None:
        strand.broken = scope._broke
    _stage_end(run, path, "ok", started)
    return chosen, scope


async def _resume_stage(
    strand: _Strand,
    stage_id: str,
    name: str,
    on_resume: ResumeFn | None,
    at: dict[str, Any],
) -> None:
    """Continue a paused stage: ``on_resume(scope, value)`` runs as a ``resume`` commit."""
    run = strand.run
    if not run.take_resume(at["path"]):
        # Another paused branch took this resume's value; this one stays paused as it was.
        payload = at.get("payload")
        raise Paused(at, to_bytes(payload), at["path"])
    value = run.resume_value
    resumes = at["resumes"] + 1
    path = f"{at['path']}:resume{resumes}"
    if run.recorders.any:
        run.recorders.fire("on_resume", ResumeEvent(run.run_id, path, len(run.log), value))

    def call(scope: Scope) -> Any:
        return None if on_resume is None else on_resume(scope, value)

    leaf = {"kind": "stage", "path": at["path"], "resumes": resumes}
    is_async = on_resume is not None and is_async_callable(on_resume)
    pending_break = at.get("break")
    await _run_stage(
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
    if pending_break is not None and strand.broken is None:
        strand.broken = pending_break


def _stage_end(run: RunContext, path: str, outcome: str, started: float) -> None:
    if run.recorders.stage_hooks:
        run.recorders.fire(
            "on_stage_end", StageEndEvent(run.run_id, path, len(run.log), outcome, time() - started)
        )


# -- deciders and selectors -------------------------------------------------------------


def _decider_reader(node: Node) -> Interpret:
    def interpret(result: Any) -> tuple[list[str], Any, RunError | None]:
        if isinstance(result, Decision):
            key, evidence = result.branch, {**thaw(result.evidence), "chosen": result.branch}
        elif result is None and node.default is not None:
            key, evidence = node.default, {"chosen": node.default, "default": True}
        elif isinstance(result, str):
            key, evidence = result, {"chosen": result}
        else:
            raise TypeError(
                f"decider {node.name!r} returned {result!r}; return a branch key "
                f"({', '.join(node.branches)}) or decide(scope, rules, default)"
            )
        problem = None
        if key not in node.branches:
            problem = UnknownBranchError(
                f"decider {node.name!r} chose branch {key!r}, which it does not declare; its "
                f"branches are {', '.join(node.branches)}"
            )
        return [key], {"decision": evidence}, problem

    return interpret


def _selector_reader(node: Node) -> Interpret:
    declared = [b.key for b in node.parallel]

    def interpret(result: Any) -> tuple[list[str], Any, RunError | None]:
        if isinstance(result, Selection):
            keys, evidence = list(result.branches), result.evidence
        elif isinstance(result, str):
            keys, evidence = [result], None
        elif isinstance(result, (list, tuple, FrozenList)):
            keys, evidence = list(result), None
        else:
            raise TypeError(
                f"selector {node.name!r} returned {result!r}; return a list of branch keys "
                f"({', '.join(declared)}) or select(scope, rules)"
            )
        unknown = [k for k in keys if k not in declared]
        if evidence is None:
            evidence = {"selected": keys}
        problem = None
        if unknown:
            problem = UnknownBranchError(
                f"selector {node.name!r} chose {', '.join(map(repr, unknown))}, which it does "
                f"not declare; its branches are {', '.join(declared)}"
            )
        return keys, {"decision": evidence}, problem

    return interpret


async def _exec_decider(strand: _Strand, node: Node) -> str | None:
    chosen, scope = await _run_stage(
        strand,
        node.id,
        node.name,
        node.fn,
        node.is_async,
        "decider",
        node.retry,
        _decider_reader(node),
    )
    strand.decision = {"decider": scope.stage_path, "branch": chosen[0]}
    if strand.broken is not None:
        return None
    return node.branches[chosen[0]]


async def _exec_selector(strand: _Strand, node: Node) -> str | None:
    chosen, scope = await _run_stage(
        strand,
        node.id,
        node.name,
        node.fn,
        node.is_async,
        "selector",
        node.retry,
        _selector_reader(node),
    )
    if strand.broken is not None:
        return None
    picked = [(b.key, b) for b in node.parallel if b.key in chosen]
    if picked:
        path = scope.stage_path
        await _exec_parallel(strand, node, picked, path, f"{path}/merge")
    return node.next


# -- parallel branches --------------------------------------------------------------------


def rebuild_frame(
    run: RunContext, name: str, parent: StateStore | None, seed: Mapping[str, Any] | None = None
) -> tuple[StateStore, list[Commit]]:
    """A frame's state and commits, rebuilt from the log (for resuming inside it)."""
    store = StateStore(parent)
    for k, v in (seed or {}).items():
        store.seed(k, v)
    commits = [c for c in run.log if c.frame == name]
    for c in commits:
        if c.writes:
            store.apply(c.seq, c.writes)
    return store, commits


async def _run_parallel(
    strand: _Strand,
    pairs: Sequence[tuple[str, Branch]],
    base_path: str,
    seeds: Sequence[Mapping[str, Any]] | None = None,
    limit: int | None = None,
    resume: dict[str, Any] | None = None,
    chooser: str | None = None,
) -> list[BranchResult]:
    """Run branches concurrently on isolated frames; hand their commits up in order.

    If some branches pause, the others still finish; then :class:`Paused` carries which
    branches are done and where each paused one stands. Resuming rebuilds every branch's
    frame from the log and runs only the paused ones.
    """
    run = strand.run
    frames: list[_Frame] = []
    prior: list[list[Commit]] = []
    before: list[Commit]
    for key, _ in pairs:
        name = f"{base_path}/{key}"
        seed = None if seeds is None else seeds[len(frames)]
        if resume is None:
            store, before = StateStore(parent=strand.frame.store), []
            for k, v in (seed or {}).items():
                store.seed(k, v)
        else:
            store, before = rebuild_frame(run, name, strand.frame.store, seed)
        frame = _Frame(run, name, store, [])
        frame.local_seq = before[-1].seq if before else 0
        frames.append(frame)
        prior.append(before)
    states: dict[str, Any] = {} if resume is None else resume["branches"]
    errors: list[BaseException | None] = [None] * len(pairs)
    paused: dict[str, dict[str, Any]] = {}
    counters = [[states.get(key, {}).get("counter", 0)] for key, _ in pairs]
    limiter = anyio.CapacityLimiter(limit) if limit else None

    gate: AbstractAsyncContextManager[Any] = limiter or contextlib.nullcontext()

    async def one(i: int) -> bool:
        """Run branch ``i`` (unless it is done); True if it failed."""
        key, branch = pairs[i]
        state = states.get(key)
        if state is not None and state.get("done"):
            return False
        at = None if state is None else state["cursor"]
        try:
            async with gate:
                await _run_branch(
                    strand, frames[i], key, branch, base_path, counters[i], at, chooser
                )
        except Paused as p:
            paused[key] = p.cursor
        except Exception as exc:
            errors[i] = exc
            return True
        return False

    try:
        if (
            resume is None
            and limiter is None
            and all(b.fn is not None and not b.is_async for _, b in pairs)
        ):
            # Plain ``def`` branches never yield, so tasks would run them one after another
            # anyway; running them inline gives the same log without the task overhead.
            for i in range(len(pairs)):
                if await one(i):
                    break
        else:
            async with anyio.create_task_group() as tg:

                async def fail_fast(i: int) -> None:
                    if await one(i):
                        tg.cancel_scope.cancel()

                for i in range(len(pairs)):
                    tg.start_soon(fail_fast, i)
    finally:
        for frame in frames:
            assert frame.buffer is not None
            strand.frame.adopt(frame.buffer)
    for failure in errors:
        if failure is not None:
            raise failure
    if paused:
        branches = {
            key: {
                "counter": counters[i][0],
                **({"cursor": paused[key]} if key in paused else {"done": True}),
            }
            for i, (key, _) in enumerate(pairs)
        }
        first = next(key for key, _ in pairs if key in paused)
        leaf = _leaf(paused[first])
        raise Paused(
            {"kind": "parallel", "branches": branches}, to_bytes(leaf.get("payload")), leaf["path"]
        )
    return [
        BranchResult(key, frame.name, frame.store, [*before, *(frame.buffer or [])])
        for (key, _), frame, before in zip(pairs, frames, prior, strict=True)
    ]


def _leaf(cursor: dict[str, Any]) -> dict[str, Any]:
    """The paused stage at the bottom of a cursor (the first one, for parallel levels)."""
    while True:
        if "at" in cursor:
            cursor = cursor["at"]
        elif "chain" in cursor:
            cursor = cursor["chain"]
        elif cursor.get("kind") == "parallel":
            first = next(b for b in cursor["branches"].values() if "cursor" in b)
            cursor = first["cursor"]
        else:
            return cursor


async def _run_branch(
    strand: _Strand,
    frame: _Frame,
    key: str,
    branch: Branch,
    base_path: str,
    counter: list[int],
    resume: dict[str, Any] | None,
    chooser: str | None = None,
) -> None:
    run = strand.run
    # A selector's branch ran because the selector chose it: that is its control dependency.
    control = strand.control if chooser is None else {"decider": chooser, "branch": key}
    if branch.fn is not None:
        sub = _Strand(run, frame, f"{base_path}/", counter, strand.validator)
        sub.base_control = sub.control = control
        if resume is None:
            await _run_stage(sub, key, branch.name, branch.fn, branch.is_async, "stage", None)
        else:
            await _resume_stage(sub, key, branch.name, None, resume)
    else:
        assert branch.chart is not None
        sub = _Strand(run, frame, f"{base_path}/{key}/", counter, run.validator(branch.chart))
        sub.base_control = control
        await _run_chain(sub, branch.chart, resume)


async def _exec_parallel(
    strand: _Strand,
    node: Node,
    pairs: Sequence[tuple[str, Branch]],
    base_path: str,
    merge_path: str,
    resume: dict[str, Any] | None = None,
) -> None:
    started = time() if resume is None else resume["started"]
    try:
        results = await _run_parallel(
            strand,
            pairs,
            base_path,
            resume=resume,
            chooser=base_path if node.kind == "selector" else None,
        )
    except Paused as p:
        keys = [k for k, _ in pairs]
        p.cursor = {
            **p.cursor,
            "path": base_path,
            "merge_path": merge_path,
            "keys": keys,
            "started": started,
        }
        raise
    policy = node.merge if isinstance(node.merge, str) else {"reducers": list(node.merge)}
    detail = {"merge": {"policy": policy, "branches": [k for k, _ in pairs]}}
    try:
        ops = merge_ops(node.merge, results, strand.frame.store, merge_path)
        _validate_writes(strand, ops, merge_path)
    except Exception as exc:
        strand.frame.record(
            merge_path, node.id, node.name, "merge", started, (), (), "error", _info(exc), detail
        )
        if isinstance(exc, RunError):
            raise
        raise StageError(
            f"merging the branches of {node.name!r} ({merge_path}) failed: "
            f"{type(exc).__name__}: {exc}",
            stage_path=merge_path,
        ) from exc
    strand.frame.record(
        merge_path, node.id, node.name, "merge", started, tuple(ops), (), "ok", None, detail
    )


async def _exec_for_each(strand: _Strand, node: Node, resume: dict[str, Any] | None = None) -> None:
    if resume is not None:
        path, started, items = resume["path"], resume["started"], resume["items"]
        total, reads = resume["total"], tuple(resume["reads"])
    else:
        path = f"{strand.prefix}{node.id}#{strand.next_index()}"
        started = time()
        scope = Scope(strand, path, node.id)
        try:
            items = _for_each_items(node, scope)
        except Exception as exc:
            strand.frame.record(
                path,
                node.id,
                node.name,
                "merge",
                started,
                (),
                tuple(scope._reads),
                "error",
                _info(exc),
            )
            raise StageError(
                f"{node.name!r} ({path}) could not get its items: {exc}", stage_path=path
            ) from exc
        total, reads = len(items), tuple(scope._reads)
    limits: dict[str, Any] = {
        "items": total,
        "max_branches": node.max_branches,
        "ran": min(total, node.max_branches),
        "dropped": max(0, total - node.max_branches),
    }
    if total > node.max_branches and node.overflow == "error":
        err = ParallelLimitError(
            f"{node.name!r} ({path}) got {total} items but max_branches={node.max_branches}; "
            "raise max_branches, or pass overflow='truncate' to run the first "
            f"{node.max_branches} and record the drop",
            stage_path=path,
        )
        strand.frame.record(
            path,
            node.id,
            node.name,
            "merge",
            started,
            (),
            reads,
            "error",
            _info(err),
            {"for_each": limits},
        )
        raise err
    if resume is None:
        plain = []
        for item in items[: node.max_branches]:
            _, owned = encode_value(item, "item", path)
            plain.append(owned)
        items = plain
    seeds = [{"item": freeze(item), "index": i} for i, item in enumerate(items)]
    pairs = [(str(i), node.parallel[0]) for i in range(len(items))]
    try:
        results = await _run_parallel(strand, pairs, path, seeds, node.concurrency, resume)
    except Paused as p:
        p.cursor = {
            **p.cursor,
            "path": path,
            "started": started,
            "items": items,
            "total": total,
            "reads": list(reads),
        }
        raise
    values = []
    missing = []
    for r in results:
        v = r.store.get_own(node.result_key)
        if v is MISSING:
            missing.append(int(r.key))
            v = None
        values.append(v)
    limits["missing_results"] = missing
    assert node.into is not None
    op: Write = ("set", node.into, to_bytes(values), values)
    _validate_writes(strand, [op], path)
    strand.frame.record(
        path, node.id, node.name, "merge", started, (op,), reads, "ok", None, {"for_each": limits}
    )


def _validate_writes(strand: _Strand, ops: Sequence[Write], where: str) -> None:
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


def _for_each_items(node: Node, scope: Scope) -> list[Any]:
    source = node.items
    if isinstance(source, str):
        value = scope[source]
    else:
        assert source is not None
        try:
            value = source(scope)
        except PauseSignal:
            raise TypeError(
                "the items= function cannot pause; pause in a stage before it"
            ) from None
        if scope._ops:
            raise TypeError("the items= function must only read state, not write it")
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple, FrozenList)):
        raise TypeError(f"items must be a list, got {type(value).__name__}")
    return list(value)


# -- subflows -----------------------------------------------------------------------------


async def _exec_subflow(strand: _Strand, node: Node, resume: dict[str, Any] | None = None) -> None:
    run = strand.run
    chart = node.chart
    assert chart is not None
    rec = run.recorders
    if node.input is None and node.output is None:
        mount = f"{strand.prefix}{node.id}"
        # fired on resume too: a resumed run re-enters the subflows it paused inside
        rec.fire("on_subflow_enter", SubflowEvent(run.run_id, mount, len(run.log), chart.id, False))
        # A shared subflow writes the parent's state, so the parent's model (if any) rules.
        validator = strand.validator or run.validator(chart)
        sub = _Strand(run, strand.frame, f"{mount}/", strand.counter, validator)
        sub.base_control = strand.control
        try:
            await _run_chain(sub, chart, None if resume is None else resume["chain"])
        except Paused as p:
            p.cursor = {"kind": "subflow", "mount": mount, "chain": p.cursor}
            raise
        rec.fire("on_subflow_exit", SubflowEvent(run.run_id, mount, len(run.log), chart.id, False))
    else:
        sub = await _run_isolated(strand, node, chart, resume)
    if sub.broken is not None and node.propagate_break:
        strand.broken = sub.broken


async def _run_isolated(
    strand: _Strand, node: Node, chart: FlowChart, resume: dict[str, Any] | None
) -> _Strand:
    run = strand.run
    rec = run.recorders
    if resume is None:
        mount = f"{strand.prefix}{node.id}#{strand.next_index()}"
        child = _Frame(run, mount, StateStore(), strand.frame.buffer)
        rec.fire("on_subflow_enter", SubflowEvent(run.run_id, mount, len(run.log), chart.id, True))
        _seed_isolated(strand, node, chart, child, mount)
    else:
        mount = resume["mount"]
        rec.fire("on_subflow_enter", SubflowEvent(run.run_id, mount, len(run.log), chart.id, True))
        store, before = rebuild_frame(run, mount, None)
        child = _Frame(run, mount, store, strand.frame.buffer)
        child.local_seq = before[-1].seq if before else 0
    sub = _Strand(run, child, f"{mount}/", strand.counter, run.validator(chart))
    sub.base_control = strand.control
    try:
        await _run_chain(sub, chart, None if resume is None else resume["chain"])
    except Paused as p:
        p.cursor = {"kind": "subflow", "mount": mount, "chain": p.cursor}
        raise
    if node.output is not None:
        out_path = f"{mount}/output"
        started = time()
        cscope = Scope(sub, out_path, node.id)
        wscope = Scope(strand, out_path, node.id)
        try:
            for k, v in _map(node.output, cscope).items():
                wscope[k] = v
        except Exception as exc:
            strand.frame.record(
                out_path,
                node.id,
                node.name,
                "subflow-output",
                started,
                (),
                tuple(cscope._reads),
                "error",
                _info(exc),
            )
            raise StageError(
                f"the output= mapping of subflow {node.name!r} ({mount}) failed: "
                f"{type(exc).__name__}: {exc}",
                stage_path=out_path,
            ) from exc
        strand.frame.record(
            out_path,
            node.id,
            node.name,
            "subflow-output",
            started,
            tuple(wscope._ops),
            tuple(cscope._reads),
            "ok",
            None,
            {"subflow": chart.id, "reads_frame": mount},
        )
    rec.fire("on_subflow_exit", SubflowEvent(run.run_id, mount, len(run.log), chart.id, True))
    return sub


def _seed_isolated(
    strand: _Strand, node: Node, chart: FlowChart, child: _Frame, mount: str
) -> None:
    """Map the parent's state into the subflow's own frame: one ``subflow-input`` commit."""
    run = strand.run
    started = time()
    pscope = Scope(strand, mount, node.id)
    try:
        seed = _map(node.input, pscope) if node.input is not None else {}
        ops: list[Write] = []
        validator = run.validator(chart)
        for k, v in seed.items():
            data, owned = encode_value(v, k, mount)
            if validator is not None:
                validator.check_set(k, data, mount)
            ops.append(("set", k, data, owned))
    except Exception as exc:
        strand.frame.record(
            mount,
            node.id,
            node.name,
            "subflow-input",
            started,
            (),
            tuple(pscope._reads),
            "error",
            _info(exc),
        )
        raise StageError(
            f"the input= mapping of subflow {node.name!r} ({mount}) failed: "
            f"{type(exc).__name__}: {exc}",
            stage_path=mount,
        ) from exc
    child.record(
        mount,
        node.id,
        node.name,
        "subflow-input",
        started,
        tuple(ops),
        tuple(pscope._reads),
        "ok",
        None,
        {"subflow": chart.id, "reads_frame": strand.frame.name},
    )


def _map(mapper: Any, scope: Scope) -> Mapping[str, Any]:
    """Apply an input/output mapper: ``{to_key: from_key}`` or a function of the scope."""
    if isinstance(mapper, Mapping):
        return {to: scope[src] for to, src in mapper.items()}
    try:
        result = mapper(scope)
    except PauseSignal:
        raise TypeError("an input=/output= mapping cannot pause; pause in a stage") from None
    if not isinstance(result, Mapping):
        raise TypeError(f"the mapping function must return a dict, got {type(result).__name__}")
    return result
