"""The walker: runs a chart's nodes in a flat loop, one runner per node kind.

``RUNNERS`` is the one table from a node's kind to what runs it (and what continues it
after a pause). A chart is walked by :func:`run_chain` without recursion per step, so a loop
of 100,000 iterations never grows the stack; only mounts (subflows, chart branches) nest.
A pause travelling up is wrapped, level by level, into the typed cursor of ``_cursor``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from time import time
from typing import Any, NamedTuple

import anyio.lowlevel

from ..chart._chart import FlowChart, Node, NodeKind
from ..core._errors import LoopLimitError
from ._branching import exec_decider, exec_selector
from ._context import Frame, RunContext, Strand
from ._cursor import ChainCursor, ParallelCursor, RootCursor, StageCursor
from ._for_each import exec_for_each, resume_for_each
from ._parallel import exec_fork, resume_fork
from ._release import Released
from ._stage import Paused, resume_stage, run_stage
from ._subflow import exec_subflow, resume_subflow

__all__ = ["RUNNERS", "NodeRunner", "run_chain", "run_root"]

# A chain of plain ``def`` stages never awaits, so the walker yields to the event loop itself
# (letting timeouts and cancellation in) at least every _YIELD_SECONDS of work.
_YIELD_SECONDS = 0.005

# Stage starts of every walker in the process (one shared cell: bumping it stores no
# attribute or global). When it moved during an async stage by more than that stage's own
# start, other runs walked while the stage awaited: the run has held the loop only since it
# woke, so it goes on at once rather than queueing again behind every run woken with it
# (many runs whose model calls return together). A count another thread moved only skips
# one yield; the next 5 ms of work still yields.
_STARTS = [0]


async def _run_stage_node(strand: Strand, node: Node) -> str | None:
    await run_stage(
        strand, node.id, node.name, node.fn, node.is_async, "stage", node.retry,
        on_resume=node.on_resume,
    )  # fmt: skip
    return node.next


async def _resume_stage_node(strand: Strand, node: Node, at: Any) -> None:
    assert isinstance(at, StageCursor)
    await resume_stage(strand, node.id, node.name, node.on_resume, at)


async def _resume_parallel(strand: Strand, node: Node, at: Any) -> None:
    assert isinstance(at, ParallelCursor)
    await resume_fork(strand, node, at)


class NodeRunner(NamedTuple):
    """How a node kind runs (returning the next node's id) and how it continues a pause."""

    run: Callable[[Strand, Node], Awaitable[str | None]]
    resume: Callable[[Strand, Node, Any], Awaitable[None]] | None


RUNNERS: dict[NodeKind, NodeRunner] = {
    "stage": NodeRunner(_run_stage_node, _resume_stage_node),
    "decider": NodeRunner(exec_decider, None),  # a decider cannot pause
    "selector": NodeRunner(exec_selector, _resume_parallel),
    "fork": NodeRunner(exec_fork, _resume_parallel),
    "subflow": NodeRunner(exec_subflow, resume_subflow),
    "for_each": NodeRunner(exec_for_each, resume_for_each),
}


async def run_root(run: RunContext, cursor: RootCursor | None = None) -> str | None:
    """Run the chart on the run's root state; return the break reason, if it broke.

    With ``cursor`` (from a checkpoint) the walk continues where the run paused. A pause
    raises :class:`Paused` whose cursor is a :class:`RootCursor`.
    """
    frame = Frame(run, "", run.root, None)
    counter = [0 if cursor is None else cursor.counter]
    strand = Strand(run, frame, "", counter, run.validator(run.chart))
    try:
        await run_chain(strand, run.chart, None if cursor is None else cursor.chain)
    except Paused as p:
        p.cursor = RootCursor(counter=counter[0], chain=p.cursor)
        await _settle(run)  # the pause commit is durable before the run reports the pause
        raise
    except Exception:
        await _settle(run)  # so is a failed stage's commit before the run reports failing
        raise
    await _settle(run)
    return strand.broken


async def _settle(run: RunContext) -> None:
    """The run ends: wait (off the loop) until its last commits are durable. A timeout or
    cancellation skips this; the run's close then writes them, blocking (``sink.flush``)."""
    sink = run.sink
    if sink is not None and sink.waiting:
        await sink.room()


def _check_stop(strand: Strand) -> None:
    """A worker letting the run go (``_release``): checked on the run's main line only,
    where the walker waits or yields anyway, so a stage costs nothing more."""
    stop = strand.run.stop
    if stop is not None and stop.requested and not strand.prefix:
        raise Released(strand.run.run_id, stop.reason, len(strand.run.log))


async def run_chain(strand: Strand, chart: FlowChart, resume: ChainCursor | None = None) -> None:
    """Walk one chart in a flat loop: no recursion per step, so loops never grow the stack."""
    nodes = chart.nodes
    nid: str | None = chart.root
    loops: dict[str, int] = {}
    last_yield = time()
    sink = strand.run.sink
    if sink is not None and sink.waiting:
        await sink.room()  # a commit made on the way in (subflow input, a fork's opening)
    try:
        if resume is not None:
            nid = resume.node
            loops.update(resume.loops)
            at = resume.at
            if at is not None:  # a paused node: continue it, then move on
                node = nodes[nid]
                control = at.control if isinstance(at, StageCursor) else None
                strand.control = (
                    strand.base_control
                    if control is None
                    else {"decider": control.decider, "branch": control.branch}
                )
                continue_node = RUNNERS[node.kind].resume
                assert continue_node is not None
                await continue_node(strand, node, at)
                if strand.broken is not None:
                    return
                nid = _follow(strand, node, node.next, loops)
                if sink is not None and sink.waiting:
                    await sink.room()  # the resumed node's commit, before the next node
        while nid is not None:
            node = nodes[nid]
            strand.control = strand.decision if node.branch_of is not None else strand.base_control
            if node.kind == "stage":
                # RUNNERS["stage"] inlined: the hot path, one coroutine frame less per stage
                starts = _STARTS[0] + 1
                _STARTS[0] = starts
                await run_stage(
                    strand, node.id, node.name, node.fn, node.is_async, "stage", node.retry,
                    on_resume=node.on_resume,
                )  # fmt: skip
                if node.is_async and _STARTS[0] != starts:
                    last_yield = time()  # other runs walked while it awaited
                nxt = node.next
            else:
                nxt = await RUNNERS[node.kind].run(strand, node)
            if strand.broken is not None:
                return
            nid = _follow(strand, node, nxt, loops) if node.loop else nxt
            sink, tap = strand.run.sink, strand.run.tap
            if (sink is not None and sink.waiting) or (tap is not None and tap.waiting):
                await strand.run.make_room()  # a group flush, a full queue or stream: wait
                _check_stop(strand)
                last_yield = time()  # it waited: the loop ran the other tasks meanwhile
            now = time()
            if now - last_yield >= _YIELD_SECONDS:
                _check_stop(strand)
                if strand.run.recorders.queues:
                    strand.run.recorders.flush()
                await anyio.lowlevel.checkpoint()
                last_yield = time()
    except Paused as p:
        assert nid is not None
        p.cursor = ChainCursor(chart=chart.id, node=nid, loops=dict(loops), at=p.cursor)
        raise


def _follow(strand: Strand, node: Node, nxt: str | None, loops: dict[str, int]) -> str | None:
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
