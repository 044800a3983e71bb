"""Subflows: a chart mounted in another, sharing its state or isolated with ``input=``/``output=``.

A shared subflow's stages write the parent's frame under the mount's path prefix. An
isolated one runs on a frame of its own: a ``subflow-input`` commit seeds it from the parent,
a ``subflow-output`` commit writes back what ``output=`` maps; nothing else crosses over.
"""

from __future__ import annotations

from collections.abc import Mapping
from time import time
from typing import Any

from ..chart._chart import FlowChart, Node
from ..core._commit import CommitKind, Write
from ..core._errors import StageContractError, StageError
from ..core._paths import join
from ..core._state import StateStore
from ..core._values import encode_value
from ._context import Frame, Strand
from ._cursor import ChainCursor, SubflowCursor
from ._parallel import rebuild_frame, take_committed
from ._recorder import SubflowEvent
from ._scope import PauseSignal, TrackedScope
from ._stage import Paused

__all__ = ["exec_subflow", "resume_subflow"]


async def exec_subflow(strand: Strand, node: Node) -> str | None:
    """Run the mounted chart; the next node follows the mount."""
    await _subflow(strand, node, None)
    return node.next


async def resume_subflow(strand: Strand, node: Node, at: SubflowCursor) -> None:
    """Continue a mounted chart that paused inside (at any depth)."""
    await _subflow(strand, node, at)


async def _subflow(strand: Strand, node: Node, resume: SubflowCursor | None) -> None:
    from ._walker import run_chain

    run = strand.run
    chart = node.chart
    assert chart is not None
    rec = run.recorders
    if node.input is None and node.output is None:
        mount = join(strand.prefix, node.id)
        # fired on resume too: a resumed run re-enters the subflows it paused inside
        rec.fire("on_subflow_enter", SubflowEvent(run.run_id, mount, len(run.log), chart.id, False))
        # A shared subflow writes the parent's state, so the parent's model (if any) rules.
        validator = strand.validator or run.validator(chart)
        sub = Strand(run, strand.frame, f"{mount}/", strand.counter, validator)
        sub.base_control = strand.control
        try:
            await run_chain(sub, chart, None if resume is None else resume.chain)
        except Paused as p:
            p.cursor = SubflowCursor(mount=mount, chain=p.cursor)
            raise
        rec.fire("on_subflow_exit", SubflowEvent(run.run_id, mount, len(run.log), chart.id, False))
    else:
        sub = await _run_isolated(strand, node, chart, resume)
    if sub.broken is not None and node.propagate_break:
        strand.broken = sub.broken


async def _run_isolated(
    strand: Strand, node: Node, chart: FlowChart, resume: SubflowCursor | None
) -> Strand:
    from ._walker import run_chain

    run = strand.run
    rec = run.recorders
    chain: ChainCursor | None = None
    if resume is None:
        mount = join(strand.prefix, node.id, strand.next_index())
        child = Frame(run, mount, StateStore(), strand.frame.buffer)
        rec.fire("on_subflow_enter", SubflowEvent(run.run_id, mount, len(run.log), chart.id, True))
        _seed_isolated(strand, node, chart, child, mount)
    else:
        mount, chain = resume.mount, resume.chain
        rec.fire("on_subflow_enter", SubflowEvent(run.run_id, mount, len(run.log), chart.id, True))
        store, before = rebuild_frame(run, mount, None)
        child = Frame(run, mount, store, strand.frame.buffer)
        child.local_seq = before[-1].seq if before else 0
    sub = Strand(run, child, f"{mount}/", strand.counter, run.validator(chart))
    sub.base_control = strand.control
    try:
        await run_chain(sub, chart, chain)
    except Paused as p:
        p.cursor = SubflowCursor(mount=mount, chain=p.cursor)
        raise
    if node.output is not None:
        _write_output(strand, sub, node, chart, mount)
    rec.fire("on_subflow_exit", SubflowEvent(run.run_id, mount, len(run.log), chart.id, True))
    return sub


def _write_output(strand: Strand, sub: Strand, node: Node, chart: FlowChart, mount: str) -> None:
    """Map the subflow's state back to the parent: one ``subflow-output`` commit."""
    out_path = join(f"{mount}/", "output")
    if take_committed(strand.frame, out_path, node.id):  # recovering: the output is in the log
        return
    started = time()
    cscope = TrackedScope(sub, out_path, node.id)
    wscope = TrackedScope(strand, out_path, node.id)
    try:
        for k, v in _map(node.output, cscope).items():
            wscope[k] = v
    except Exception as exc:
        raise _mapping_failed(
            strand, node, "subflow-output", out_path, started, cscope, exc
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


def _seed_isolated(strand: Strand, node: Node, chart: FlowChart, child: Frame, mount: str) -> None:
    """Map the parent's state into the subflow's own frame: one ``subflow-input`` commit."""
    run = strand.run
    if take_committed(child, mount, node.id):  # recovering: the seed is in the log
        return
    started = time()
    pscope = TrackedScope(strand, mount, node.id)
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
        raise _mapping_failed(strand, node, "subflow-input", mount, started, pscope, exc) from exc
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


def _mapping_failed(
    strand: Strand,
    node: Node,
    kind: CommitKind,
    path: str,
    started: float,
    scope: TrackedScope,
    exc: Exception,
) -> StageError:
    """Commit a failed input=/output= mapping (what it read, the error) and say so."""
    info = strand.run.error_info(exc)
    strand.frame.record(
        path, node.id, node.name, kind, started, (), tuple(scope._reads), "error", info
    )
    which = "input" if kind == "subflow-input" else "output"
    return StageError(
        f"the {which}= mapping of subflow {node.name!r} ({path}) failed: "
        f"{type(exc).__name__}: {exc}",
        stage_path=path,
    )


def _map(mapper: Any, scope: TrackedScope) -> Mapping[str, Any]:
    """Apply an input/output mapper: ``{to_key: from_key}`` or a function of the scope."""
    if isinstance(mapper, Mapping):
        return {to: scope[src] for to, src in mapper.items()}
    try:
        result = mapper(scope)
    except PauseSignal:
        raise StageContractError(
            "an input=/output= mapping cannot pause; pause in a stage"
        ) from None
    if not isinstance(result, Mapping):
        raise StageContractError(
            f"the mapping function must return a dict, got {type(result).__name__}"
        )
    return result
