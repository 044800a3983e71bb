"""``parallel_for_each``: one branch per item, in parallel, results merged into one key.

The items are drawn (and serialized, so a resume sees exactly the same items) in the
node's own scope; each branch sees the state plus ``item`` and ``index``; the merge commit
writes every branch's ``result_key`` into ``into``, in item order, and records what ran,
what was dropped by ``max_branches`` and which branches wrote no result.
"""

from __future__ import annotations

from collections.abc import Mapping
from time import time
from typing import Any

from ..chart._chart import Node
from ..core._commit import Write
from ..core._detail import ForEachRecord
from ..core._errors import ParallelLimitError, StageContractError, StageError
from ..core._paths import join
from ..core._state import MISSING
from ..core._values import FrozenList, encode_value, freeze, thaw, to_bytes
from ._context import Strand
from ._cursor import ForEachCursor
from ._parallel import run_parallel, take_committed
from ._scope import PauseSignal, TrackedScope
from ._stage import Paused, validate_writes

__all__ = ["exec_for_each", "resume_for_each"]


async def exec_for_each(strand: Strand, node: Node) -> str | None:
    """Draw the items, run a branch per item, merge the results; then the next node."""
    path = join(strand.prefix, node.id, strand.next_index())
    if take_committed(strand.frame, path, node.id):  # recovering: its merge is in the log
        return node.next
    started = time()
    scope = TrackedScope(strand, path, node.id)
    try:
        items = _items(node, scope)
    except Exception as exc:
        strand.frame.record(
            path, node.id, node.name, "merge", started, (), tuple(scope._reads), "error",
            strand.run.error_info(exc),
        )  # fmt: skip
        raise StageError(
            f"{node.name!r} ({path}) could not get its items: {exc}", stage_path=path
        ) from exc
    reads = tuple(scope._reads)
    total = len(items)
    redactor = strand.run.redactor
    if redactor is not None and isinstance(node.items, str) and redactor.verdict(node.items):
        redactor.hide_items(f"{path}/")  # the items are the hidden key's values
    if total > node.max_branches and node.overflow == "error":
        err = ParallelLimitError(
            f"{node.name!r} ({path}) got {total} items but max_branches={node.max_branches}; "
            "raise max_branches, or pass overflow='truncate' to run the first "
            f"{node.max_branches} and record the drop",
            stage_path=path,
        )
        strand.frame.record(
            path, node.id, node.name, "merge", started, (), reads, "error",
            strand.run.error_info(err), {"for_each": _limits(node, total)},
        )  # fmt: skip
        raise err
    drawn = []
    for item in items[: node.max_branches]:
        _, owned = encode_value(item, "item", path)
        drawn.append(owned)
    await _run(strand, node, path, started, drawn, total, reads, None)
    return node.next


async def resume_for_each(strand: Strand, node: Node, at: ForEachCursor) -> None:
    """Continue a for-each whose branches paused: the same items, only the paused branches."""
    await _run(strand, node, at.path, at.started, at.items, at.total, at.reads, at)


async def _run(
    strand: Strand,
    node: Node,
    path: str,
    started: float,
    items: list[Any],
    total: int,
    reads: tuple[str, ...],
    resume: ForEachCursor | None,
) -> None:
    seeds = [{"item": freeze(item), "index": i} for i, item in enumerate(items)]
    pairs = [(str(i), node.parallel[0]) for i in range(len(items))]
    try:
        results = await run_parallel(
            strand,
            pairs,
            path,
            seeds,
            node.concurrency,
            None if resume is None else resume.branches,
            runner=node.runner,
        )
    except Paused as p:
        p.cursor = ForEachCursor(
            path=path,
            started=started,
            items=thaw(items),
            total=total,
            reads=reads,
            branches=p.cursor,
        )
        raise
    values = []
    missing = []
    for r in results:
        v = r.store.get_own(node.result_key)
        if v is MISSING:
            missing.append(int(r.key))
            v = None
        values.append(v)
    limits = _limits(node, total)
    limits["missing_results"] = missing
    assert node.into is not None
    op: Write = ("set", node.into, to_bytes(values), values)
    validate_writes(strand, [op], path)
    strand.frame.record(
        path, node.id, node.name, "merge", started, (op,), reads, "ok", None, {"for_each": limits}
    )


def _limits(node: Node, total: int) -> ForEachRecord:
    return {
        "items": total,
        "max_branches": node.max_branches,
        "ran": min(total, node.max_branches),
        "dropped": max(0, total - node.max_branches),
    }


def _items(node: Node, scope: TrackedScope) -> list[Any]:
    source = node.items
    if isinstance(source, str):
        value = scope[source]
    else:
        assert source is not None
        try:
            value = source(scope)
        except PauseSignal:
            raise StageContractError(
                "the items= function cannot pause; pause in a stage before it"
            ) from None
        if scope._ops:
            raise StageContractError("the items= function must only read state, not write it")
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple, FrozenList)):
        raise StageContractError(f"items must be a list, got {type(value).__name__}")
    return list(value)
