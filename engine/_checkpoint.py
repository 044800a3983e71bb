"""Checkpoints: everything another process needs to resume a paused run, as JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ._errors import ChartMismatchError, CheckpointError
from ._values import to_plain

if TYPE_CHECKING:
    from ._chart import FlowChart

__all__ = ["CHECKPOINT_FORMAT", "Checkpoint", "chart_structure", "check_chart"]

CHECKPOINT_FORMAT = "trackway.checkpoint/1"
_FIELDS = (
    "checkpoint_id",
    "run_id",
    "chart_id",
    "fingerprint",
    "structure",
    "cursor",
    "payload",
    "paused_at",
    "state",
    "snapshot",
    "redacted",
)


@dataclass(frozen=True)
class Checkpoint:
    """A paused run, JSON-safe and versioned.

    ``cursor`` says where each nested chart stands (subflow path, loop counters, execution
    indices, parallel branches done or paused); ``snapshot`` embeds the commit log so far, or
    is ``None`` when the log lives in the executor's store. ``payload`` is what the paused
    stage is waiting for; ``state`` the run's state at the pause (for inspection).
    """

    checkpoint_id: str
    run_id: str
    chart_id: str
    fingerprint: str
    structure: dict[str, Any]
    cursor: dict[str, Any]
    payload: Any
    paused_at: str
    state: dict[str, Any]
    snapshot: dict[str, Any] | None
    redacted: bool = False
    """Masked at rest by the redaction policy: such a checkpoint cannot be resumed."""

    def to_json(self) -> bytes:
        doc = {"format": CHECKPOINT_FORMAT, **{f: getattr(self, f) for f in _FIELDS}}
        return orjson.dumps(doc, default=to_plain)

    @classmethod
    def from_json(cls, data: bytes | str) -> Checkpoint:
        """Parse :meth:`to_json` output; anything else raises :class:`CheckpointError`."""
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise CheckpointError(f"not a trackway checkpoint: invalid JSON ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != CHECKPOINT_FORMAT:
            found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise CheckpointError(
                f"not a trackway checkpoint: expected format {CHECKPOINT_FORMAT!r}, got {found!r}"
            )
        doc.setdefault("redacted", False)
        missing = [f for f in _FIELDS if f not in doc]
        if missing:
            raise CheckpointError(f"corrupt checkpoint: missing {', '.join(missing)}")
        cursor = doc["cursor"]
        if not isinstance(cursor, dict) or "chain" not in cursor or "counter" not in cursor:
            raise CheckpointError("corrupt checkpoint: the cursor has no chain/counter")
        return cls(**{f: doc[f] for f in _FIELDS})


def chart_structure(chart: FlowChart) -> dict[str, Any]:
    """The chart's shape as JSON: what a checkpoint is checked against on resume."""
    nodes: dict[str, Any] = {}
    for node in chart.nodes.values():
        entry: dict[str, Any] = {"kind": node.kind, "next": node.next, "loop": node.loop}
        if node.branches:
            entry["branches"] = dict(node.branches)
        if node.parallel:
            entry["parallel"] = {
                b.key: chart_structure(b.chart) if b.chart is not None else "fn"
                for b in node.parallel
            }
        if node.chart is not None:
            entry["chart"] = chart_structure(node.chart)
            entry["isolated"] = node.input is not None or node.output is not None
        nodes[node.id] = entry
    return {"id": chart.id, "root": chart.root, "nodes": nodes}


def _differences(old: Any, new: Any, where: str, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old.keys() - new.keys():
            out.append(f"{where}{key} was removed")
        for key in new.keys() - old.keys():
            out.append(f"{where}{key} is new")
        for key in old.keys() & new.keys():
            _differences(old[key], new[key], f"{where}{key}.", out)
    elif old != new:
        out.append(f"{where.rstrip('.')} changed from {old!r} to {new!r}")


def check_chart(checkpoint: Checkpoint, chart: FlowChart) -> None:
    """Refuse to resume on a chart other than (or changed since) the one that paused."""
    if checkpoint.chart_id != chart.id:
        raise ChartMismatchError(
            f"checkpoint {checkpoint.checkpoint_id} was made by chart {checkpoint.chart_id!r}, "
            f"but this executor runs chart {chart.id!r}; resume it with an Executor of that chart"
        )
    if checkpoint.fingerprint == chart.fingerprint:
        return
    diffs: list[str] = []
    _differences(checkpoint.structure, chart_structure(chart), "", diffs)
    shown = "; ".join(sorted(diffs)[:8]) or "the structure fingerprint differs"
    raise ChartMismatchError(
        f"chart {chart.id!r} changed since checkpoint {checkpoint.checkpoint_id} was made: "
        f"{shown}. Resume with the chart as it was when the run paused."
    )
