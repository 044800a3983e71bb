"""Parallel branches (forks, selectors, and the body of ``parallel_for_each``) and merges.

Each branch runs on a frame of its own that reads through to its parent and buffers its
commits. When every branch has finished, the buffers are handed up in declaration order
(never completion order) and the branches' net effects are merged by the node's policy in
one ``merge`` commit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from time import time
from typing import TYPE_CHECKING, Any

import anyio

from ..chart._chart import Branch, Node
from ..core._commit import Commit
from ..core._detail import CommitDetail, MergeRecord
from ..core._errors import RecoveryError, RunError, StageError
from ..core._paths import join
from ..core._state import StateStore
from ..core._values import to_bytes
from ._context import Frame, RunContext, Strand
from ._cursor import BranchState, ChainCursor, ParallelCursor, StageCursor, leaf
from ._merge import BranchResult, merge_ops
from ._stage import Paused, resume_stage, run_stage, validate_writes

if TYPE_CHECKING:
    from ..chart._runner import BranchRunner

__all__ = [
    "exec_fork",
    "exec_parallel",
    "rebuild_frame",
    "resume_fork",
    "run_parallel",
    "take_committed",
]


def take_committed(frame: Frame, path: str, node_id: str) -> bool:
    """Recovering: take the engine-made commit (merge, subflow input or output) the log
    holds at ``path`` into ``frame``; False when there is none (it runs)."""
    replay = frame.run.replay
    if replay is None:
        return False
    committed = replay.take(path)
    if committed is None:
        replay.check_live(path)
        return False
    if committed.stage_id != node_id or committed.outcome != "ok":
        raise RecoveryError(
            f"the log holds {committed.kind} {committed.stage_id!r} ({committed.outcome}) at "
            f"{path!r}, where the chart runs {node_id!r}: the run failed there or was made "
            "by another chart, so recover() cannot continue it"
        )
    frame.take(committed)
    return True


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


async def run_parallel(
    strand: Strand,
    pairs: Sequence[tuple[str, Branch]],
    base_path: str,
    seeds: Sequence[Mapping[str, Any]] | None = None,
    limit: int | None = None,
    resume: Mapping[str, BranchState] | None = None,
    chooser: str | None = None,
    runner: BranchRunner | None = None,
) -> list[BranchResult]:
    """Run branches concurrently on isolated frames; hand their commits up in order.

    If some branches pause, the others still finish; then :class:`Paused` carries, per
    branch, its counter and where it paused (``None``: done). Resuming rebuilds every
    branch's frame from the log and runs only the paused ones. With a ``runner`` the
    branches run where it sends them (``ray_runner()``: one Ray task each), except when
    resuming or recovering, which take the branches' commits from the log here.
    """
    run = strand.run
    if runner is not None and resume is None and run.replay is None:
        results: list[BranchResult] = await runner.run_branches(
            strand, pairs, base_path, seeds, limit, chooser
        )
        return results
    frames: list[Frame] = []
    prior: list[list[Commit]] = []
    before: list[Commit]
    for key, _ in pairs:
        name = join(f"{base_path}/", key)
        seed = None if seeds is None else seeds[len(frames)]
        if resume is None:
            store, before = StateStore(parent=strand.frame.store), []
            for k, v in (seed or {}).items():
                store.seed(k, v)
        else:
            store, before = rebuild_frame(run, name, strand.frame.store, seed)
        frame = Frame(run, name, store, [])
        frame.local_seq = before[-1].seq if before else 0
        frames.append(frame)
        prior.append(before)
    states: Mapping[str, BranchState] = {} if resume is None else resume
    errors: list[BaseException | None] = [None] * len(pairs)
    paused: dict[str, StageCursor | ChainCursor] = {}
    counters = [[states[key].counter if key in states else 0] for key, _ in pairs]
    limiter = anyio.CapacityLimiter(limit) if limit else None

    gate: AbstractAsyncContextManager[Any] = limiter or contextlib.nullcontext()

    async def one(i: int) -> bool:
        """Run branch ``i`` (unless it is done); True if it failed."""
        key, branch = pairs[i]
        state = states.get(key)
        if state is not None and state.cursor is None:
            return False
        at = None if state is None else state.cursor
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
            key: BranchState(counter=counters[i][0], cursor=paused.get(key))
            for i, (key, _) in enumerate(pairs)
        }
        first = leaf(next(paused[key] for key, _ in pairs if key in paused))
        raise Paused(branches, to_bytes(first.payload), first.path)
    return [
        BranchResult(key, frame.name, frame.store, [*before, *frame.adopted, *(frame.buffer or [])])
        for (key, _), frame, before in zip(pairs, frames, prior, strict=True)
    ]


async def _run_branch(
    strand: Strand,
    frame: Frame,
    key: str,
    branch: Branch,
    base_path: str,
    counter: list[int],
    resume: StageCursor | ChainCursor | None,
    chooser: str | None = None,
) -> None:
    from ._walker import run_chain

    run = strand.run
    # A selector's branch ran because the selector chose it: that is its control dependency.
    control = strand.control if chooser is None else {"decider": chooser, "branch": key}
    if branch.fn is not None:
        sub = Strand(run, frame, f"{base_path}/", counter, strand.validator)
        sub.base_control = sub.control = control
        if resume is None:
            await run_stage(sub, key, branch.name, branch.fn, branch.is_async, "stage", None)
            await run.make_room()
        else:
            assert isinstance(resume, StageCursor)
            await resume_stage(sub, key, branch.name, None, resume)
    else:
        assert branch.chart is not None
        sub = Strand(run, frame, f"{base_path}/{key}/", counter, run.validator(branch.chart))
        sub.base_control = control
        assert resume is None or isinstance(resume, ChainCursor)
        await run_chain(sub, branch.chart, resume)


async def exec_parallel(
    strand: Strand,
    node: Node,
    pairs: Sequence[tuple[str, Branch]],
    base_path: str,
    merge_path: str,
    resume: ParallelCursor | None = None,
) -> None:
    """Run a fork's or selector's branches, then commit their merge."""
    if take_committed(strand.frame, merge_path, node.id):  # recovering: the merge is in the log
        return
    started = time() if resume is None else resume.started
    try:
        results = await run_parallel(
            strand,
            pairs,
            base_path,
            resume=None if resume is None else resume.branches,
            chooser=base_path if node.kind == "selector" else None,
            runner=node.runner,
        )
    except Paused as p:
        p.cursor = ParallelCursor(
            path=base_path,
            merge_path=merge_path,
            keys=tuple(k for k, _ in pairs),
            started=started,
            branches=p.cursor,
        )
        raise
    record: MergeRecord = {
        "policy": node.merge if isinstance(node.merge, str) else {"reducers": list(node.merge)},
        "branches": [k for k, _ in pairs],
    }
    detail: CommitDetail = {"merge": record}
    try:
        ops = merge_ops(node.merge, results, strand.frame.store, merge_path)
        validate_writes(strand, ops, merge_path)
    except Exception as exc:
        strand.frame.record(
            merge_path,
            node.id,
            node.name,
            "merge",
            started,
            (),
            (),
            "error",
            strand.run.error_info(exc),
            detail,
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


async def exec_fork(strand: Strand, node: Node) -> str | None:
    """Run every branch of a fork, then the merge; the next node follows the fork."""
    path = join(strand.prefix, node.id, strand.next_index())
    await exec_parallel(strand, node, [(b.key, b) for b in node.parallel], path, path)
    return node.next


async def resume_fork(strand: Strand, node: Node, at: ParallelCursor) -> None:
    """Continue a fork or selector whose branches paused: only the paused ones run."""
    pairs = [(b.key, b) for b in node.parallel if b.key in at.keys]
    await exec_parallel(strand, node, pairs, at.path, at.merge_path, at)
