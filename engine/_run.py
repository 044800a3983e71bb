"""The driver: runs a chart's nodes in a flat loop and turns each stage into one commit.

A *frame* is a state a strand of execution writes to (the run's state, a parallel branch's
view, an isolated subflow's state). A *strand* is one sequential walk through a chart: it
owns the path prefix, the execution-index counter and the break flag. Branch frames buffer
their commits and hand them to the parent in declaration order, so the log never depends
on which branch finished first.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from time import time
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from ._chart import Branch, FlowChart, Node
from ._commit import Commit, CommitKind, ErrorInfo, Op, Outcome
from ._decide import Decision, Selection
from ._errors import (
    LoopLimitError,
    MergeConflictError,
    ParallelLimitError,
    RunError,
    StageError,
    TrackwayError,
    UnknownBranchError,
)
from ._merge import BranchResult, merge_ops
from ._recorder import (
    DecisionEvent,
    Dispatch,
    ErrorEvent,
    StageEndEvent,
    StageStartEvent,
    SubflowEvent,
)
from ._retry import Retry
from ._scope import Scope
from ._state import MISSING, StateStore
from ._typed import StateValidator
from ._values import FrozenList, encode_value, freeze, to_bytes

__all__ = ["RunContext"]

_YIELD_EVERY = 64  # stages between forced checkpoints, so timeouts reach sync-only loops

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
        "root",
        "run_id",
        "validators",
    )

    def __init__(
        self, run_id: str, chart: FlowChart, recorders: Sequence[object], max_iterations: int
    ) -> None:
        self.run_id = run_id
        self.chart = chart
        self.log: list[Commit] = []
        self.root = StateStore()
        self.initial: dict[str, bytes] = {}
        self.max_iterations = max_iterations
        self.recorders = Dispatch(recorders, run_id, self.log.__len__)
        self.validators: dict[str, StateValidator | None] = {}
        self.cancelled_exc = anyio.get_cancelled_exc_class()

    def validator(self, chart: FlowChart) -> StateValidator | None:
        v = self.validators.get(chart.id, MISSING)
        if v is MISSING:
            v = None if chart.state_model is None else StateValidator(chart.state_model)
            self.validators[chart.id] = v
        return v  # type: ignore[return-value]

    def append(self, commit: Commit) -> None:
        self.log.append(commit)
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
        ops: tuple[Op, ...],
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
    __slots__ = ("broken", "counter", "frame", "prefix", "run", "validator")

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

    def next_index(self) -> int:
        i = self.counter[0]
        self.counter[0] = i + 1
        return i


def _info(exc: BaseException) -> ErrorInfo:
    return ErrorInfo(type(exc).__name__, str(exc))


async def run_root(run: RunContext) -> str | None:
    """Run the chart on the run's root state; return the break reason, if it broke."""
    frame = _Frame(run, "", run.root, None)
    strand = _Strand(run, frame, "", [0], run.validator(run.chart))
    await _run_chain(strand, run.chart)
    return strand.broken


async def _run_chain(strand: _Strand, chart: FlowChart) -> None:
    """Walk one chart in a flat loop: no recursion per step, so loops never grow the stack."""
    run = strand.run
    nodes = chart.nodes
    nid: str | None = chart.root
    loops: dict[str, int] = {}
    steps = 0
    while nid is not None:
        node = nodes[nid]
        kind = node.kind
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
            idx = strand.next_index()
            path = f"{strand.prefix}{node.id}#{idx}"
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
        if node.loop and nxt is not None and kind != "decider":
            count = loops.get(nxt, 0) + 1
            if count > run.max_iterations:
                raise LoopLimitError(
                    f"the loop from {node.name!r} ({node.id}) back to {nxt!r} went round "
                    f"{run.max_iterations} times, the limit set by Executor(max_iterations="
                    f"{run.max_iterations}); raise max_iterations if it should run longer, or "
                    "make a decider route out of the loop or a stage call scope.break_()",
                    stage_path=f"{strand.prefix}{node.id}",
                )
            loops[nxt] = count
        nid = nxt
        steps += 1
        if steps % _YIELD_EVERY == 0:
            await anyio.lowlevel.checkpoint()


async def _run_stage(
    strand: _Strand,
    stage_id: str,
    name: str,
    fn: Callable[[Scope], Any] | None,
    is_async: bool,
    kind: CommitKind,
    retry: Retry | None,
    interpret: Interpret | None = None,
) -> tuple[list[str], Scope]:
    """Run one stage function and commit its writes (on return, raise or cancel)."""
    assert fn is not None
    run = strand.run
    rec = run.recorders
    frame = strand.frame
    path = f"{strand.prefix}{stage_id}#{strand.next_index()}"
    if rec.stage_hooks:
        rec.fire(
            "on_stage_start", StageStartEvent(run.run_id, path, len(run.log), stage_id, name, kind)
        )
    started = time()
    attempt = 1
    failed: list[dict[str, str]] = []
    while True:
        scope = Scope(strand, path, stage_id)
        try:
            result = fn(scope)
            if is_async or (result is not None and inspect.isawaitable(result)):
                result = await result
            chosen: list[str] = []
            detail: Any = None
            problem: RunError | None = None
            if interpret is not None:
                chosen, detail, problem = interpret(result)
            break
        except run.cancelled_exc:
            frame.record(
                path,
                stage_id,
                name,
                kind,
                started,
                tuple(scope._ops),
                tuple(scope._reads),
                "cancelled",
                ErrorInfo("Cancelled", "cancelled"),
                None,
                tuple(scope._events),
                attempt,
            )
            _stage_end(run, path, "cancelled", started)
            raise
        except Exception as exc:
            if retry is not None and attempt < retry.attempts and isinstance(exc, retry.on):
                failed.append({"type": type(exc).__name__, "message": str(exc)})
                await anyio.sleep(retry.delay(attempt))
                attempt += 1
                continue
            info = _info(exc)
            frame.record(
                path,
                stage_id,
                name,
                kind,
                started,
                tuple(scope._ops),
                tuple(scope._reads),
                "error",
                info,
                {"failed_attempts": failed} if failed else None,
                tuple(scope._events),
                attempt,
            )
            if rec.stage_hooks:
                rec.fire("on_error", ErrorEvent(run.run_id, path, len(run.log), info))
            _stage_end(run, path, "error", started)
            err = StageError(
                f"stage {name!r} ({path}) raised {info.type}: {info.message}", stage_path=path
            )
            raise err from exc
        except BaseException as exc:  # KeyboardInterrupt and the like: record, then let go
            frame.record(
                path,
                stage_id,
                name,
                kind,
                started,
                tuple(scope._ops),
                tuple(scope._reads),
                "error",
                _info(exc),
                None,
                tuple(scope._events),
                attempt,
            )
            raise
    if failed:
        detail = {**(detail or {}), "failed_attempts": failed}
    outcome: Outcome = "ok" if problem is None else "error"
    frame.record(
        path,
        stage_id,
        name,
        kind,
        started,
        tuple(scope._ops),
        tuple(scope._reads),
        outcome,
        None if problem is None else _info(problem),
        detail,
        tuple(scope._events),
        attempt,
    )
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


def _stage_end(run: RunContext, path: str, outcome: str, started: float) -> None:
    if run.recorders.stage_hooks:
        run.recorders.fire(
            "on_stage_end", StageEndEvent(run.run_id, path, len(run.log), outcome, time() - started)
        )


# -- deciders and selectors -------------------------------------------------------------


def _decider_reader(node: Node) -> Interpret:
    def interpret(result: Any) -> tuple[list[str], Any, RunError | None]:
        if isinstance(result, Decision):
            key, evidence = result.branch, result.evidence
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
    chosen, _ = await _run_stage(
        strand,
        node.id,
        node.name,
        node.fn,
        node.is_async,
        "decider",
        node.retry,
        _decider_reader(node),
    )
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


async def _run_parallel(
    strand: _Strand,
    pairs: Sequence[tuple[str, Branch]],
    base_path: str,
    seeds: Sequence[Mapping[str, Any]] | None = None,
    limit: int | None = None,
) -> list[BranchResult]:
    """Run branches concurrently on isolated frames; hand their commits up in order."""
    run = strand.run
    frames = [
        _Frame(run, f"{base_path}/{key}", StateStore(parent=strand.frame.store), [])
        for key, _ in pairs
    ]
    if seeds is not None:
        for frame, seed in zip(frames, seeds, strict=True):
            for k, v in seed.items():
                frame.store.seed(k, v)
    errors: list[BaseException | None] = [None] * len(pairs)
    limiter = anyio.CapacityLimiter(limit) if limit else None

    async def one(i: int, tg: anyio.abc.TaskGroup) -> None:
        key, branch = pairs[i]
        try:
            if limiter is None:
                await _run_branch(strand, frames[i], key, branch, base_path)
            else:
                async with limiter:
                    await _run_branch(strand, frames[i], key, branch, base_path)
        except Exception as exc:
            errors[i] = exc
            tg.cancel_scope.cancel()

    try:
        async with anyio.create_task_group() as tg:
            for i in range(len(pairs)):
                tg.start_soon(one, i, tg)
    finally:
        for frame in frames:
            assert frame.buffer is not None
            strand.frame.adopt(frame.buffer)
    for exc in errors:
        if exc is not None:
            raise exc
    return [
        BranchResult(key, frame.name, frame.store, frame.buffer or [])
        for (key, _), frame in zip(pairs, frames, strict=True)
    ]


async def _run_branch(
    strand: _Strand, frame: _Frame, key: str, branch: Branch, base_path: str
) -> None:
    run = strand.run
    if branch.fn is not None:
        sub = _Strand(run, frame, f"{base_path}/", [0], strand.validator)
        await _run_stage(sub, key, branch.name, branch.fn, branch.is_async, "stage", None)
    else:
        assert branch.chart is not None
        sub = _Strand(run, frame, f"{base_path}/{key}/", [0], run.validator(branch.chart))
        await _run_chain(sub, branch.chart)


async def _exec_parallel(
    strand: _Strand,
    node: Node,
    pairs: Sequence[tuple[str, Branch]],
    base_path: str,
    merge_path: str,
) -> None:
    started = time()
    results = await _run_parallel(strand, pairs, base_path)
    detail = {
        "merge": {
            "policy": node.merge if isinstance(node.merge, str) else {"reducers": list(node.merge)},
            "branches": [k for k, _ in pairs],
        }
    }
    try:
        ops = merge_ops(node.merge, results, strand.frame.store, merge_path)
    except (MergeConflictError, TrackwayError, Exception) as exc:
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


async def _exec_for_each(strand: _Strand, node: Node) -> None:
    run = strand.run
    path = f"{strand.prefix}{node.id}#{strand.next_index()}"
    started = time()
    scope = Scope(strand, path, node.id)
    try:
        items = _for_each_items(node, scope)
    except Exception as exc:
        strand.frame.record(
            path, node.id, node.name, "merge", started, (), tuple(scope._reads), "error", _info(exc)
        )
        raise StageError(
            f"{node.name!r} ({path}) could not get its items: {exc}", stage_path=path
        ) from exc
    total = len(items)
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
            tuple(scope._reads),
            "error",
            _info(err),
            {"for_each": limits},
        )
        raise err
    items = items[: node.max_branches]
    body = node.parallel[0]
    seeds = []
    for i, item in enumerate(items):
        _, owned = encode_value(item, "item", path)
        seeds.append({"item": freeze(owned), "index": i})
    pairs = [(str(i), body) for i in range(len(items))]
    results = await _run_parallel(strand, pairs, path, seeds, node.concurrency)
    values = []
    missing = []
    for r in results:
        v = r.store.get(node.result_key)
        if v is MISSING:
            missing.append(int(r.key))
            v = None
        values.append(v)
    limits["missing_results"] = missing
    into = node.into
    assert into is not None
    op = Op("set", into, to_bytes(values), values)
    strand.frame.record(
        path,
        node.id,
        node.name,
        "merge",
        started,
        (op,),
        tuple(scope._reads),
        "ok",
        None,
        {"for_each": limits},
    )
    _ = run


def _for_each_items(node: Node, scope: Scope) -> list[Any]:
    source = node.items
    if isinstance(source, str):
        value = scope[source]
    else:
        assert source is not None
        value = source(scope)
        if scope._ops:
            raise TypeError("the items= function must only read state, not write it")
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple, FrozenList)):
        raise TypeError(f"items must be a list, got {type(value).__name__}")
    return list(value)


# -- subflows -----------------------------------------------------------------------------


async def _exec_subflow(strand: _Strand, node: Node) -> None:
    run = strand.run
    chart = node.chart
    assert chart is not None
    rec = run.recorders
    isolated = node.input is not None or node.output is not None
    if not isolated:
        mount = f"{strand.prefix}{node.id}"
        rec.fire("on_subflow_enter", SubflowEvent(run.run_id, mount, len(run.log), chart.id, False))
        sub = _Strand(run, strand.frame, f"{mount}/", strand.counter, run.validator(chart))
        await _run_chain(sub, chart)
        rec.fire("on_subflow_exit", SubflowEvent(run.run_id, mount, len(run.log), chart.id, False))
        if sub.broken is not None and node.propagate_break:
            strand.broken = sub.broken
        return
    mount = f"{strand.prefix}{node.id}#{strand.next_index()}"
    child = _Frame(run, mount, StateStore(), strand.frame.buffer)
    rec.fire("on_subflow_enter", SubflowEvent(run.run_id, mount, len(run.log), chart.id, True))
    started = time()
    pscope = Scope(strand, mount, node.id)
    try:
        seed = _map(node.input, pscope) if node.input is not None else {}
        ops = []
        validator = run.validator(chart)
        for k, v in seed.items():
            data, owned = encode_value(v, k, mount)
            if validator is not None:
                validator.check_set(k, data, mount)
            ops.append(Op("set", k, data, owned))
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
        {"subflow": chart.id},
    )
    sub = _Strand(run, child, f"{mount}/", strand.counter, run.validator(chart))
    await _run_chain(sub, chart)
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
    if sub.broken is not None and node.propagate_break:
        strand.broken = sub.broken


def _map(mapper: Any, scope: Scope) -> Mapping[str, Any]:
    """Apply an input/output mapper: ``{to_key: from_key}`` or a function of the scope."""
    if isinstance(mapper, Mapping):
        return {to: scope[src] for to, src in mapper.items()}
    result = mapper(scope)
    if not isinstance(result, Mapping):
        raise TypeError(f"the mapping function must return a dict, got {type(result).__name__}")
    return result
