"""Checkpoints: everything another process needs to resume a paused run, as JSON.

A checkpoint holds where the run stands (the typed cursor of ``_cursor``), what it waits
for, and its commit log (embedded, or a reference to the run in the executor's store).
``trackway.checkpoint/2`` is the current format; ``/1`` checkpoints (untyped cursors) are
read and upgraded. Loading validates every field and the cursor's shape, so a tampered or
foreign checkpoint fails at load, naming the field, before anything is claimed or run.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NotRequired

import orjson
from typing_extensions import TypedDict  # pydantic validates these on 3.11

from ..core._documents import check_document, load_document
from ..core._errors import ChartMismatchError, CorruptCheckpointError, DocumentError
from ..core._snapshot import Snapshot
from ..core._values import to_bytes, to_plain
from ..run._cursor import RootCursor, check_cursor, cursor_from_json, cursor_to_json, upgrade_v1

if TYPE_CHECKING:
    from ..chart._chart import FlowChart
    from ..run._context import RunContext
    from ..run._stage import Paused

__all__ = [
    "CHECKPOINT_FORMAT",
    "Checkpoint",
    "chart_structure",
    "check_chart",
    "core_digest",
    "make_checkpoint",
    "masked",
    "position",
    "sign",
    "signed_by",
]

CHECKPOINT_FORMAT = "trackway.checkpoint/2"
_V1 = "trackway.checkpoint/1"


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
    cursor: RootCursor | None
    """``None`` only in a masked copy (``redacted``), which cannot be resumed."""
    payload: Any
    paused_at: str
    state: dict[str, Any]
    snapshot: Snapshot | None
    redacted: bool = False
    """Masked at rest by the redaction policy: such a checkpoint cannot be resumed."""
    digest: str | None = field(default=None, compare=False)
    """In a store's copy: the digest of what the run returned (see :func:`core_digest`)."""
    signature: str | None = field(default=None, compare=False)
    """HMAC-SHA256 of the whole checkpoint with the executor's key (see :func:`sign`)."""

    def to_json(self) -> bytes:
        doc = {
            "format": CHECKPOINT_FORMAT,
            "checkpoint_id": self.checkpoint_id,
            "run_id": self.run_id,
            "chart_id": self.chart_id,
            "fingerprint": self.fingerprint,
            "structure": self.structure,
            "cursor": None if self.cursor is None else cursor_to_json(self.cursor),
            "payload": self.payload,
            "paused_at": self.paused_at,
            "state": self.state,
            "snapshot": None if self.snapshot is None else orjson.Fragment(self.snapshot.to_json()),
            "redacted": self.redacted,
        }
        if self.digest is not None:
            doc["digest"] = self.digest
        if self.signature is not None:
            doc["signature"] = self.signature
        return orjson.dumps(doc, default=to_plain)

    @classmethod
    def from_json(cls, data: bytes | str, *, source: str | None = None) -> Checkpoint:
        """Parse :meth:`to_json` output (this format or ``/1``); anything else raises
        :class:`CorruptCheckpointError` naming the field."""
        return load_document(
            data,
            document="checkpoint",
            readers={CHECKPOINT_FORMAT: _read, _V1: _read_v1},
            source=source,
            error=CorruptCheckpointError,
        )


class _CheckpointDoc(TypedDict):
    format: str
    checkpoint_id: str
    run_id: str
    chart_id: str
    fingerprint: str
    structure: dict[str, Any]
    cursor: Any
    payload: Any
    paused_at: str
    state: dict[str, Any]
    snapshot: dict[str, Any] | None
    redacted: NotRequired[bool]
    digest: NotRequired[str | None]
    signature: NotRequired[str | None]


def _read(doc: dict[str, Any]) -> Checkpoint:
    checked: _CheckpointDoc = check_document(
        _CheckpointDoc, doc, document="checkpoint", error=CorruptCheckpointError
    )
    redacted = bool(checked.get("redacted", False))
    raw_cursor = checked["cursor"]
    if raw_cursor is None and not redacted:
        raise CorruptCheckpointError(
            "corrupt checkpoint: cursor is null, but only a masked (redacted) checkpoint has "
            "no cursor",
            field="cursor",
        )
    cursor = None if raw_cursor is None else cursor_from_json(raw_cursor)
    snapshot = None
    if checked["snapshot"] is not None:
        try:
            snapshot = Snapshot.from_doc(checked["snapshot"], where="snapshot")
        except DocumentError as exc:
            raise CorruptCheckpointError(
                f"corrupt checkpoint: its commit log is unreadable: {exc}", field=exc.field
            ) from None
    return Checkpoint(
        checkpoint_id=checked["checkpoint_id"],
        run_id=checked["run_id"],
        chart_id=checked["chart_id"],
        fingerprint=checked["fingerprint"],
        structure=checked["structure"],
        cursor=cursor,
        payload=checked["payload"],
        paused_at=checked["paused_at"],
        state=checked["state"],
        snapshot=snapshot,
        redacted=redacted,
        digest=checked.get("digest"),
        signature=checked.get("signature"),
    )


def _read_v1(doc: dict[str, Any]) -> Checkpoint:
    """``/1``: the cursor was nested dicts, and a masked one kept ``"[REDACTED]"``."""
    upgraded = dict(doc)
    cursor = doc.get("cursor")
    masked_v1 = isinstance(cursor, dict) and not isinstance(cursor.get("chain"), dict)
    if doc.get("redacted") and masked_v1:
        upgraded["cursor"] = None
    else:
        upgraded["cursor"] = upgrade_v1(cursor)
    return _read(upgraded)


# -- what makes a checkpoint this run's own --------------------------------------------------

_CORE = ("checkpoint_id", "run_id", "chart_id", "fingerprint", "cursor", "payload", "paused_at")


def core_digest(cp: Checkpoint, log: Snapshot | None = None) -> str:
    """SHA-256 of what a resume acts on: ids, chart, cursor, payload, where it paused, and
    the log it carries (``log`` when it will carry one). A store keeps it with its copy, so
    an edited checkpoint is told from the one it saved."""
    doc = orjson.loads(cp.to_json())
    core = {name: doc[name] for name in _CORE}
    carried = log if log is not None else cp.snapshot
    if carried is not None:
        log_doc = orjson.loads(carried.to_json())
        core["log"] = {k: log_doc[k] for k in ("initial_state", "commits")}
    return hashlib.sha256(orjson.dumps(core, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _signed_bytes(cp: Checkpoint) -> bytes:
    doc = orjson.loads(cp.to_json())
    doc.pop("signature", None)
    doc.pop("digest", None)
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def sign(cp: Checkpoint, key: bytes) -> Checkpoint:
    """The checkpoint with an HMAC-SHA256 of all of it (its embedded log included)."""
    mac = hmac.new(key, _signed_bytes(cp), hashlib.sha256).hexdigest()
    return replace(cp, signature=mac)


def signed_by(cp: Checkpoint, key: bytes) -> bool:
    """True when ``cp`` carries a signature made with ``key`` over exactly its content."""
    if cp.signature is None:
        return False
    mac = hmac.new(key, _signed_bytes(cp), hashlib.sha256).hexdigest()
    return hmac.compare_digest(mac, cp.signature)


def position(cp: Checkpoint) -> int:
    """How many commits the log held when the run paused (from ``<run id>@<n>``)."""
    run_id, _, count = cp.checkpoint_id.rpartition("@")
    if run_id != cp.run_id or not count.isdigit():
        raise CorruptCheckpointError(
            f"corrupt checkpoint: checkpoint_id {cp.checkpoint_id!r} is not "
            f"'<run id>@<commits>' for run {cp.run_id!r}",
            field="checkpoint_id",
        )
    return int(count)


def make_checkpoint(run: RunContext, chart: FlowChart, paused: Paused) -> Checkpoint:
    """The checkpoint of a run that just paused (its log not embedded yet)."""
    assert isinstance(paused.cursor, RootCursor)
    return Checkpoint(
        checkpoint_id=f"{run.run_id}@{len(run.log)}",
        run_id=run.run_id,
        chart_id=chart.id,
        fingerprint=chart.fingerprint,
        structure=chart_structure(chart),
        cursor=paused.cursor,
        payload=orjson.loads(paused.payload),
        paused_at=paused.path,
        state=orjson.loads(to_bytes(run.root.current())),
        snapshot=None,
    )


def masked(checkpoint: Checkpoint, state: dict[str, Any], snapshot: Snapshot | None) -> Checkpoint:
    """A copy with redacted state (and log), and no cursor: it can be read, not resumed
    (the cursor can hold drawn items and pause payloads)."""
    return replace(checkpoint, state=state, snapshot=snapshot, cursor=None, redacted=True)


# -- the chart's structure, from its graph ---------------------------------------------------


def chart_structure(chart: FlowChart) -> dict[str, Any]:
    """The chart's shape as JSON, read off its networkx graph: what a checkpoint is checked
    against on resume (nodes and kinds, edges, and every mounted chart's own shape)."""
    g = chart.graph
    nodes = {n: {"kind": data["kind"], **_isolation(data)} for n, data in g.nodes(data=True)}
    edges = sorted(
        [src, dst, data["kind"], data.get("label")] for src, dst, data in g.edges(data=True)
    )
    charts: dict[str, Any] = {}
    for node in chart.nodes.values():
        if node.chart is not None:
            charts[node.id] = chart_structure(node.chart)
        for branch in node.parallel:
            if branch.chart is not None:
                charts[f"{node.id}/{branch.key}"] = chart_structure(branch.chart)
    return {"id": chart.id, "root": chart.root, "nodes": nodes, "edges": edges, "charts": charts}


def _isolation(data: dict[str, Any]) -> dict[str, Any]:
    return {"isolated": data["isolated"]} if data.get("isolated") is not None else {}


def _differences(old: Any, new: Any, where: str, out: list[str]) -> None:
    if old.get("root") != new.get("root"):
        out.append(f"{where}the first stage changed from {old.get('root')!r} to {new['root']!r}")
    old_nodes, new_nodes = old.get("nodes", {}), new["nodes"]
    for n in sorted(old_nodes.keys() - new_nodes.keys()):
        out.append(f"{where}stage {n} was removed")
    for n in sorted(new_nodes.keys() - old_nodes.keys()):
        out.append(f"{where}stage {n} is new")
    for n in sorted(old_nodes.keys() & new_nodes.keys()):
        if old_nodes[n] != new_nodes[n]:
            out.append(f"{where}stage {n} changed from {old_nodes[n]} to {new_nodes[n]}")
    old_edges = {tuple(e) for e in old.get("edges", ())}
    new_edges = {tuple(e) for e in new["edges"]}
    # wiring that changed around stages both versions have (a new stage's own edges are
    # implied by "is new")
    for src, dst, kind, label in sorted(new_edges - old_edges, key=str):
        if src in old_nodes:
            out.append(f"{where}the {kind} edge {src} -> {dst}{_label(label)} is new")
    for src, dst, kind, label in sorted(old_edges - new_edges, key=str):
        if src in new_nodes:
            out.append(f"{where}the {kind} edge {src} -> {dst}{_label(label)} was removed")
    old_charts, new_charts = old.get("charts", {}), new["charts"]
    for mount in sorted(old_charts.keys() & new_charts.keys()):
        _differences(old_charts[mount], new_charts[mount], f"{where}{mount} > ", out)


def _label(label: Any) -> str:
    return f" ({label})" if label is not None else ""


def check_chart(checkpoint: Checkpoint, chart: FlowChart) -> None:
    """Refuse to resume on a chart other than (or changed since) the one that paused, or
    with a cursor that does not fit the chart."""
    if checkpoint.chart_id != chart.id:
        raise ChartMismatchError(
            f"checkpoint {checkpoint.checkpoint_id} was made by chart {checkpoint.chart_id!r}, "
            f"but this executor runs chart {chart.id!r}; resume it with an Executor of that chart"
        )
    if checkpoint.fingerprint != chart.fingerprint:
        diffs: list[str] = []
        if "edges" in checkpoint.structure:  # /1 checkpoints kept another structure shape
            _differences(checkpoint.structure, chart_structure(chart), "", diffs)
        shown = "; ".join(diffs[:8]) or "the structure fingerprint differs"
        raise ChartMismatchError(
            f"chart {chart.id!r} changed since checkpoint {checkpoint.checkpoint_id} was made: "
            f"{shown}. Resume with the chart as it was when the run paused."
        )
    if checkpoint.cursor is not None:
        check_cursor(checkpoint.cursor, chart)
