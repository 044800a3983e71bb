"""The pause cursor: where every nested chart of a paused run stands, as typed records.

A pause travels up the walker as :class:`~trackway.engine._run.Paused`; each level wraps the
cursor of the level below in its own record, so the root holds one tree:

* :class:`RootCursor` — the run's execution counter and the top chart's :class:`ChainCursor`;
* :class:`ChainCursor` — one chart: the node it stopped at, its loop counts, and what
  stopped inside that node (``at``), or ``None`` when the node had not started;
* ``at`` is a :class:`StageCursor` (a stage paused), a :class:`SubflowCursor` (a mounted
  chart paused: its own chain), a :class:`ParallelCursor` (a fork or selector: each branch
  done or paused) or a :class:`ForEachCursor` (the same, plus the items drawn).

The records are frozen dataclasses; :func:`cursor_from_json` validates a document against
them (pydantic) and :func:`check_cursor` against the chart, so a tampered or foreign cursor
fails at load with a :class:`CorruptCheckpointError` naming the field, never deep in the walker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn, TypeAlias

from ..core._errors import CorruptCheckpointError
from ..core._paths import StagePath

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from ..chart._chart import FlowChart

__all__ = [
    "BranchCursor",
    "BranchState",
    "ChainCursor",
    "ControlRef",
    "ForEachCursor",
    "NodeCursor",
    "ParallelCursor",
    "RootCursor",
    "StageCursor",
    "SubflowCursor",
    "check_cursor",
    "cursor_from_json",
    "cursor_to_json",
    "leaf",
    "upgrade_v1",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlRef:
    """The decision that chose the branch a paused stage runs in."""

    decider: str
    branch: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StageCursor:
    """A stage that paused: its path, how often it was resumed, what it waits for."""

    kind: Literal["stage"] = "stage"
    path: str
    resumes: int = 0
    payload: Any = None
    control: ControlRef | None = None
    pending_break: str | None = None
    """The stage called ``break_`` before pausing: the break holds once it is resumed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainCursor:
    """One chart's position: at ``node``, after these loop counts; ``at`` inside it."""

    kind: Literal["chain"] = "chain"
    chart: str
    node: str
    loops: dict[str, int] = field(default_factory=dict)
    at: NodeCursor | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SubflowCursor:
    """A mounted chart paused inside: its mount path and its own chain."""

    kind: Literal["subflow"] = "subflow"
    mount: str
    chain: ChainCursor


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchState:
    """One parallel branch: its execution counter, and where it paused (``None``: done)."""

    counter: int = 0
    cursor: BranchCursor | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ParallelCursor:
    """A fork or selector some of whose branches paused (the others are done)."""

    kind: Literal["parallel"] = "parallel"
    path: str
    merge_path: str
    keys: tuple[str, ...]
    started: float
    branches: dict[str, BranchState]


@dataclass(frozen=True, slots=True, kw_only=True)
class ForEachCursor:
    """A ``parallel_for_each`` some of whose branches paused; ``items`` as drawn."""

    kind: Literal["for_each"] = "for_each"
    path: str
    started: float
    items: list[Any]
    total: int
    reads: tuple[str, ...]
    branches: dict[str, BranchState]


@dataclass(frozen=True, slots=True, kw_only=True)
class RootCursor:
    """The whole tree: the root strand's execution counter and the top chart's chain."""

    counter: int
    chain: ChainCursor


if TYPE_CHECKING:
    NodeCursor: TypeAlias = StageCursor | SubflowCursor | ParallelCursor | ForEachCursor
    BranchCursor: TypeAlias = StageCursor | ChainCursor
else:  # the discriminated unions pydantic validates against
    from pydantic import Field

    NodeCursor = Annotated[
        StageCursor | SubflowCursor | ParallelCursor | ForEachCursor, Field(discriminator="kind")
    ]
    BranchCursor = Annotated[StageCursor | ChainCursor, Field(discriminator="kind")]


def leaf(cursor: RootCursor | ChainCursor | NodeCursor) -> StageCursor:
    """The paused stage at the bottom of a cursor (the first paused branch, in parallel)."""
    node: Any = cursor
    while True:
        if isinstance(node, StageCursor):
            return node
        if isinstance(node, RootCursor):
            node = node.chain
        elif isinstance(node, ChainCursor):
            if node.at is None:
                raise CorruptCheckpointError(
                    f"corrupt checkpoint: the cursor of chart {node.chart!r} names no paused stage",
                    field="cursor",
                )
            node = node.at
        elif isinstance(node, SubflowCursor):
            node = node.chain
        else:
            node = next(b.cursor for b in node.branches.values() if b.cursor is not None)


# -- JSON --------------------------------------------------------------------------------


@cache
def _adapter() -> TypeAdapter[RootCursor]:
    from pydantic import TypeAdapter

    return TypeAdapter(RootCursor)


def cursor_to_json(cursor: RootCursor) -> dict[str, Any]:
    """The cursor as a JSON object (the checkpoint's ``cursor`` field)."""
    doc: dict[str, Any] = _adapter().dump_python(cursor, mode="json", exclude_none=True)
    return doc


def cursor_from_json(doc: Any, where: str = "cursor") -> RootCursor:
    """Validate a checkpoint's ``cursor`` field; a bad one raises :class:`CheckpointError`
    naming the field (e.g. ``cursor.chain.at.branches.b.counter``)."""
    from pydantic import ValidationError

    try:
        return _adapter().validate_python(doc, strict=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join([where, *_field_path(doc, first["loc"])])
        raise CorruptCheckpointError(
            f"corrupt checkpoint: {loc}: {first['msg']} (got {_short(first.get('input'))}); "
            "the checkpoint was edited or written by something else. Resume with the "
            "checkpoint as the run returned or stored it.",
            field=loc,
        ) from None


def _field_path(doc: Any, loc: tuple[Any, ...]) -> list[str]:
    """The error location as fields of the document: pydantic also puts the tag of the
    union member it tried into the location, which is not a field, so it is left out."""
    parts: list[str] = []
    here = doc
    for part in loc:
        if isinstance(here, Mapping) and part not in here and part in _TAGS:
            continue
        try:
            here = here[part]
        except (KeyError, IndexError, TypeError):
            here = None  # a missing field: name it, stop walking
        parts.append(str(part))
    return parts


_TAGS = frozenset(
    {"stage", "chain", "subflow", "parallel", "for_each", "StageCursor", "ChainCursor"}
)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def upgrade_v1(doc: Any) -> Any:
    """A ``trackway.checkpoint/1`` cursor (untyped nested dicts) in the current shape."""
    if not isinstance(doc, Mapping):
        return doc
    out = dict(doc)
    if "chain" in out:
        out["chain"] = _v1_chain(out["chain"])
    return out


def _v1_chain(chain: Any) -> Any:
    if not isinstance(chain, Mapping):
        return chain
    out = {"kind": "chain", **chain}
    if isinstance(out.get("at"), Mapping):
        out["at"] = _v1_node(out["at"])
    return out


def _v1_node(at: Mapping[str, Any]) -> Any:
    out = dict(at)
    kind = out.get("kind")
    if kind == "stage":
        if "break" in out:
            out["pending_break"] = out.pop("break")
        return out
    if kind == "subflow":
        out["chain"] = _v1_chain(out.get("chain"))
        return out
    if kind == "parallel":
        if "items" in out:  # a for_each kept the parallel kind in v1
            out["kind"] = "for_each"
            out.pop("merge_path", None)
            out.pop("keys", None)
        branches = out.get("branches")
        if isinstance(branches, Mapping):
            out["branches"] = {k: _v1_branch(b) for k, b in branches.items()}
    return out


def _v1_branch(state: Any) -> Any:
    if not isinstance(state, Mapping):
        return state
    cursor = state.get("cursor")
    if isinstance(cursor, Mapping):
        cursor = _v1_node(cursor) if cursor.get("kind") == "stage" else _v1_chain(cursor)
    return {"counter": state.get("counter", 0), "cursor": cursor}


# -- checking against the chart ------------------------------------------------------------


def check_cursor(cursor: RootCursor, chart: FlowChart) -> None:
    """Refuse a cursor that does not fit ``chart`` (unknown nodes, wrong kinds, bad paths),
    naming the field; run before a checkpoint is claimed."""
    if cursor.counter < 0:
        _bad("cursor.counter", f"is {cursor.counter}; it counts executions from 0")
    _check_chain(cursor.chain, chart, "cursor.chain")


def _bad(where: str, problem: str) -> NoReturn:
    raise CorruptCheckpointError(
        f"corrupt checkpoint: {where} {problem}; the checkpoint was edited or does not belong "
        "to this chart. Resume with the checkpoint as the run returned or stored it.",
        field=where,
    )


def _check_path(path: str, where: str) -> None:
    try:
        StagePath.parse(path)
    except ValueError as exc:
        _bad(where, f"is not a stage path ({exc})")


def _check_chain(chain: ChainCursor, chart: FlowChart, where: str) -> None:
    if chain.chart != chart.id:
        _bad(f"{where}.chart", f"is {chain.chart!r}, but the chart here is {chart.id!r}")
    node = chart.nodes.get(chain.node)
    if node is None:
        _bad(f"{where}.node", f"is {chain.node!r}, which is not a stage of chart {chart.id!r}")
    for target, count in chain.loops.items():
        if target not in chart.nodes:
            _bad(f"{where}.loops", f"counts {target!r}, which is not a stage of {chart.id!r}")
        if count < 0:
            _bad(f"{where}.loops.{target}", f"is {count}; loop counts are >= 0")
    at = chain.at
    if at is None or node is None:
        return
    here = f"{where}.at"
    if isinstance(at, StageCursor):
        if node.kind != "stage":
            _bad(f"{here}.kind", f"is 'stage', but {node.id!r} is a {node.kind}")
        _check_stage(at, here)
    elif isinstance(at, SubflowCursor):
        if node.kind != "subflow" or node.chart is None:
            _bad(f"{here}.kind", f"is 'subflow', but {node.id!r} is a {node.kind}")
        assert node.chart is not None
        _check_path(at.mount, f"{here}.mount")
        _check_chain(at.chain, node.chart, f"{here}.chain")
    elif isinstance(at, ParallelCursor):
        if node.kind not in ("fork", "selector"):
            _bad(f"{here}.kind", f"is 'parallel', but {node.id!r} is a {node.kind}")
        declared = {b.key: b for b in node.parallel}
        for key in at.keys:
            if key not in declared:
                _bad(f"{here}.keys", f"names {key!r}, which {node.id!r} does not declare")
        _check_path(at.path, f"{here}.path")
        _check_path(at.merge_path, f"{here}.merge_path")
        _check_branches(at.branches, {k: declared[k] for k in at.keys}, here)
    else:
        if node.kind != "for_each":
            _bad(f"{here}.kind", f"is 'for_each', but {node.id!r} is a {node.kind}")
        if len(at.items) > node.max_branches or at.total < len(at.items):
            _bad(f"{here}.items", f"holds {len(at.items)} items of {at.total}")
        _check_path(at.path, f"{here}.path")
        body = node.parallel[0]
        _check_branches(at.branches, {str(i): body for i in range(len(at.items))}, here)


def _check_stage(at: StageCursor, where: str) -> None:
    _check_path(at.path, f"{where}.path")
    if at.resumes < 0:
        _bad(f"{where}.resumes", f"is {at.resumes}; it counts resumes from 0")


def _check_branches(
    branches: Mapping[str, BranchState], declared: Mapping[str, Any], where: str
) -> None:
    paused = 0
    for key, state in branches.items():
        here = f"{where}.branches.{key}"
        branch = declared.get(key)
        if branch is None:
            _bad(f"{where}.branches", f"has {key!r}, which is not a branch that ran here")
        if state.counter < 0:
            _bad(f"{here}.counter", f"is {state.counter}")
        cursor = state.cursor
        if cursor is None:
            continue
        paused += 1
        if branch.chart is None:
            if not isinstance(cursor, StageCursor):
                _bad(f"{here}.cursor.kind", "is 'chain', but the branch is a stage function")
            _check_stage(cursor, f"{here}.cursor")
        else:
            if not isinstance(cursor, ChainCursor):
                _bad(f"{here}.cursor.kind", "is 'stage', but the branch is a chart")
            _check_chain(cursor, branch.chart, f"{here}.cursor")
    if not paused:
        _bad(f"{where}.branches", "has no paused branch")
