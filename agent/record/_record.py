"""Reading a run back from its record alone: the record a run is read from, every model call
in it, and the exact request each was served.

``served_at(record, k)`` rebuilds the k-th model request from the log: the state just before
the k-th ``call-llm`` commit, through the same assembly ``call-llm`` used. The conformance
law: ``served_at(record, k).hash == receipts(record)[k - 1]["request_hash"]`` for every k.
``save_recording`` and ``load_recording`` write and read the one recording format (and read
the ones before it). Running a record again is ``replay``'s, in the ``rerun`` layer.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from trackway.engine import (
    SNAPSHOT_FORMAT,
    Commit,
    DocumentError,
    FlowChart,
    OutOfRangeError,
    RunResult,
    Snapshot,
    load_document,
    thaw,
    write_value,
)
from trackway.recorders import RECORDING_FORMAT as JSONL_FORMAT
from trackway.recorders import load_recording as load_jsonl_recording
from trackway.recorders import write_recording

from ..artifacts._recording import embed_artifacts
from ..context._request import assemble
from ..messages._errors import RedactedRecordError
from ..messages._members import member_of
from ..messages._messages import LLMRequest

__all__ = [
    "LEGACY_RECORDING_FORMAT",
    "RECORDING_FORMAT",
    "Record",
    "Runner",
    "load_recording",
    "receipts",
    "save_recording",
    "served_at",
]

RECORDING_FORMAT = JSONL_FORMAT
LEGACY_RECORDING_FORMAT = "trackway.agent-recording/1"
"""The agent recordings before the one format (a JSON document); still read."""


@runtime_checkable
class Runner(Protocol):
    """What holds a run and the chart it ran: an agent or a composition. A protocol, because
    this layer reads records below the runtime that makes them and may not import it."""

    def snapshot(self) -> Snapshot: ...

    def spec(self) -> FlowChart: ...


Record = Snapshot | Runner | str | os.PathLike[str]
"""What a run can be read back from: its snapshot, the agent or composition that ran it (its
last run), or the path of its recording."""


def _snapshot(record: Record) -> Snapshot:
    if isinstance(record, Snapshot):
        return record
    if isinstance(record, Runner):
        return record.snapshot()
    return load_recording(record)


def _llm_commits(snap: Snapshot, member: str | None = None) -> list[Commit]:
    """Every model call of the run in commit order, at any depth (``member`` narrows to one
    member and what it contains)."""
    calls = [
        c
        for c in snap.history()
        if c.stage_id == "call-llm" and any(op[1] == "receipts" for op in c.writes)
    ]
    if member is None:
        return calls
    return [
        c
        for c in calls
        if member_of(c.stage_path) == member or member_of(c.stage_path).startswith(member + ".")
    ]


def _state_before(snap: Snapshot, commit: Commit) -> Any:
    """The state a model call read: its frame's state just before its commit."""
    return snap.frame_state_at(commit.frame, commit.seq - 1)


def served_at(record: Record, k: int, *, member: str | None = None) -> LLMRequest:
    """The exact request of model call ``k`` (1-based, in commit order over the whole run,
    every depth), rebuilt from the log alone. ``member="research"`` (a dotted path for nested
    members) numbers only that member's calls."""
    snap = _snapshot(record)
    calls = _llm_commits(snap, member)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(calls):
        where = "" if member is None else f" in member {member!r}"
        known = sorted({member_of(c.stage_path) for c in _llm_commits(snap)} - {""})
        hint = f" (members that called a model: {', '.join(known)})" if known else ""
        raise OutOfRangeError(
            f"served_at(..., {k!r}): the run made {len(calls)} model "
            f"call{'' if len(calls) == 1 else 's'}{where}, numbered from 1{hint}"
        )
    state = _state_before(snap, calls[k - 1])
    _check_not_redacted(state, f"served_at(..., {k})")
    return assemble(state, breakpoints=_decided(state, calls[k - 1])).request


def _decided(state: Any, commit: Any) -> tuple[str, ...] | None:
    """Call ``commit``'s breakpoints as a cache policy function decided them: read from its
    own receipt (the decision is committed with the call it made), else the settings'."""
    if not state["settings"].get("cache_policy"):
        return None
    for op in reversed(commit.writes):
        if op[1] == "receipts":
            value = thaw(write_value(op))
            receipt = value[-1] if isinstance(value, list) else value
            return tuple(receipt["cache"]["breakpoints"])
    return None


def _check_not_redacted(state: Any, what: str) -> None:
    """A record whose conversation was redacted cannot be rebuilt: say so, by name."""
    marked = [r["id"] for r in state.get("tool_results", ()) if r.get("redacted")]
    if marked:
        raise RedactedRecordError(
            f"{what}: tool calls {', '.join(marked)} marked values hidden (ctx.redact), and "
            "this record keeps a marker where they were, so the requests cannot be rebuilt "
            "from it. Check receipts(record) (hashes, usage) instead"
        )
    history = state.get("history")
    if isinstance(history, str):  # the policy's marker where the messages were
        raise RedactedRecordError(
            f"{what}: this record's conversation was redacted (history is {history!r}), so "
            "the request cannot be rebuilt from it. Keep an unredacted recording where it must "
            "be replayed, or check receipts(record) (hashes, usage) instead"
        )


def receipts(record: Record) -> list[dict[str, Any]]:
    """The receipt of every model call, in commit order at every depth: request hashes,
    tool schema hashes, usage; a call made inside a composition member carries ``member``
    (its dotted path)."""
    snap = _snapshot(record)
    out: list[dict[str, Any]] = []
    for commit in _llm_commits(snap):
        written = [op for op in commit.writes if op[1] == "receipts"]
        if not written:
            continue
        value = thaw(write_value(written[-1]))  # an append carries the items added; a set, the list
        receipt = dict(value[-1] if isinstance(value, list) else value)
        member = member_of(commit.stage_path)
        if member:
            receipt["member"] = member
        out.append(receipt)
    return out


def save_recording(
    runner: Runner | RunResult | Snapshot,
    path: str | os.PathLike[str],
    *,
    artifacts: Literal["refer", "embed"] = "refer",
    store: Any = None,
) -> Path:
    """Write a finished run to ``path`` in the one recording format (JSON Lines, the format
    ``jsonl(path)`` streams): a header with the chart's structure, the commits with their
    emits, the end. ``runner`` is an agent or a composition (its last run), a ``RunResult``
    or a ``Snapshot``.

    ``artifacts``: ``"refer"`` keeps the tickets and hashes the run committed (no bytes);
    ``"embed"`` also writes the bytes of each artifact the run placed or redeemed, once per
    hash, read from ``store`` (default: the agent's own), for ``recorded_artifacts(path)``.
    """
    if artifacts not in ("refer", "embed"):
        raise ValueError(f"save_recording(artifacts={artifacts!r}): use 'refer' or 'embed'")
    if isinstance(runner, RunResult):  # before Runner: a RunResult has a snapshot too
        snap, out = runner.snapshot, write_recording(runner.snapshot, Path(path))
    elif isinstance(runner, Runner):
        snap = runner.snapshot()
        out = write_recording(snap, Path(path), chart=runner.spec())
        if store is None and hasattr(runner, "get_artifact_store"):
            store = runner.get_artifact_store()
    else:
        snap, out = runner, write_recording(runner, Path(path))
    if artifacts == "embed":
        embed_artifacts(snap, out, store)
    return out


def load_recording(path: str | os.PathLike[str], run_id: str | None = None) -> Snapshot:
    """Read a recording: the one format (written by :func:`save_recording` or streamed by
    ``jsonl(path)``; ``run_id`` picks a run when a file holds several), and the two before
    it (``trackway.recording/1`` lines, ``trackway.agent-recording/1`` documents) or a
    snapshot's ``to_json``.

    A file that is not one raises :class:`DocumentError` naming the file and what is wrong.
    """
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DocumentError(
            f"{source}: cannot read the recording: {exc.strerror or exc}",
            document="recording",
            source=source,
        ) from None
    first = data.lstrip()[:1]
    head = data.split(b"\n", 1)[0]
    if first == b"{" and b'"type"' in head and b'"on_' in head:  # JSON Lines
        return load_jsonl_recording(Path(path), run_id)
    return load_document(
        data,
        document="recording",
        readers={
            LEGACY_RECORDING_FORMAT: lambda doc: _recorded_snapshot(doc),
            SNAPSHOT_FORMAT: lambda doc: Snapshot.from_doc(doc),
        },
        source=source,
    )


def _recorded_snapshot(doc: dict[str, Any]) -> Snapshot:
    snapshot = doc.get("snapshot")
    if not isinstance(snapshot, dict):
        raise DocumentError(
            "corrupt recording: the field snapshot is missing or not an object",
            document="recording",
            field="snapshot",
        )
    return Snapshot.from_doc(snapshot, where="snapshot")
