"""Crash recovery: where a run whose process died continues, read from its log alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ._chart import FlowChart
from ._commit import Commit
from ._cursor import ChainCursor, RootCursor
from ._detail import as_detail
from ._errors import CheckpointError
from ._paths import StagePath

__all__ = ["Finished", "recovery_cursor"]


class Finished(NamedTuple):
    """The log already ends the chart: only the run's ending is missing."""

    break_reason: str | None = None


def recovery_cursor(chart: FlowChart, commits: Sequence[Commit]) -> RootCursor | Finished:
    """Where a crashed run continues: after its last top-level commit."""
    if not commits:
        return RootCursor(counter=0, chain=ChainCursor(chart=chart.id, node=chart.root))
    last = commits[-1]
    path = StagePath.parse(last.stage_path)
    detail = as_detail(last.detail)
    if path.depth == 0 and last.frame == "" and last.outcome == "ok" and "break" in detail:
        return Finished(detail["break"])
    if last.frame != "" or last.outcome != "ok":
        raise CheckpointError(
            f"run {last.run_id!r} stopped at {last.stage_path!r} "
            f"({'inside ' + last.frame if last.frame else last.outcome}); recover() continues "
            "only runs that stopped between top-level stages"
        )
    node_id = path.top.name
    if path.depth > 0 and last.kind not in ("merge", "subflow-output"):
        raise CheckpointError(
            f"run {last.run_id!r} stopped inside subflow {node_id!r} at {last.stage_path!r}; "
            "recover() continues only runs that stopped between top-level stages"
        )
    node = chart.nodes.get(node_id)
    if node is None:
        raise CheckpointError(f"the log's last stage {node_id!r} is not in chart {chart.id!r}")
    if node.kind == "decider":
        chosen = detail["decision"]["chosen"]
        nxt: str | None = node.branches[chosen]
    else:
        nxt = node.next
    if nxt is None:
        return Finished()
    counter = 1 + max((_root_index(chart, c.stage_path) for c in commits), default=-1)
    loops: dict[str, int] = {}
    for source in chart.nodes.values():
        if source.loop and source.next is not None:
            # one execution = one plain "<id>#<n>" commit (not ":resumeN", not "/merge")
            runs = sum(1 for c in commits if c.frame == "" and _is_execution_of(c, source.id))
            loops[source.next] = loops.get(source.next, 0) + runs
    return RootCursor(counter=counter, chain=ChainCursor(chart=chart.id, node=nxt, loops=loops))


def _is_execution_of(commit: Commit, node_id: str) -> bool:
    path = StagePath.parse(commit.stage_path)
    last = path.last
    return path.depth == 0 and last.name == node_id and last.index is not None and not last.resume


def _root_index(chart: FlowChart, text: str) -> int:
    """The largest execution index the run's own counter gave out in ``text``.

    Subflows share the counter; inside a parallel branch a counter of its own starts, so
    the walk stops at a fork, selector or for_each segment.
    """
    best = -1
    current: FlowChart | None = chart
    for segment in StagePath.parse(text).segments:
        if current is None:
            break
        if segment.index is not None:
            best = max(best, segment.index)
        node = current.nodes.get(segment.name)
        if node is None or node.kind in ("fork", "selector", "for_each"):
            break
        current = node.chart if node.kind == "subflow" else None
    return best
