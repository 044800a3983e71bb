"""Run stores: where commit logs and checkpoints live beyond the process.

One interface (:class:`RunStore`), three implementations: :class:`MemoryStore` here,
``SqliteStore`` (the embedded default) and ``PostgresStore``. The executor writes each commit
through a *durability sink*: ``"sync"`` (durable before the next stage starts), ``"batch"``
(the store's writer thread group-commits every run's bounded queue; a full queue holds the
run before its next stage, so memory never grows without bound) or ``"exit"`` (written when
the run pauses or ends).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

import orjson

from ..core._commit import Commit, row_of
from ..core._errors import ConfigurationError, DocumentError, UnknownRunError
from ..core._snapshot import Snapshot
from ..core._values import exact_bytes
from ..run._sinks import Sink
from ._artifact_rows import ArtifactTables
from ._batch_writer import batch_sink
from ._checkpoint import Checkpoint
from ._damaged import corrupt
from ._group_commit import group_sink
from ._memory_rows import MemoryTables
from ._paused import PausedRun, paused_run

__all__ = [
    "CheckpointClaim",
    "CommitMeta",
    "Durability",
    "MemoryStore",
    "RunInfo",
    "RunStore",
    "make_sink",
    "snapshot_from_rows",
]

Durability = Literal["sync", "batch", "exit"]


class RunInfo(NamedTuple):
    """A run's metadata, listed without loading its commits."""

    run_id: str
    chart_id: str
    status: str
    started_at: float
    ended_at: float | None
    commit_count: int


class CheckpointClaim(NamedTuple):
    """What a store holds of a checkpoint: whether it was claimed, the answer the claim
    recorded (JSON bytes, ``None`` if none), and where the run paused."""

    claimed: bool
    answer: bytes | None
    paused_at: str


class CommitMeta(NamedTuple):
    """One commit's metadata, listed from a store without decoding any value."""

    seq: int
    stage_path: str
    kind: str
    frame: str
    outcome: str
    started_at: float
    ended_at: float

    @classmethod
    def of(cls, c: Commit) -> CommitMeta:
        return cls._make(row_of(c))


@runtime_checkable
class RunStore(Protocol):
    """What the executor needs from a store. Every method is safe to call from any thread."""

    def begin_run(self, run_id: str, chart_id: str, initial: dict[str, bytes]) -> None: ...
    def append(self, run_id: str, commits: Sequence[Commit]) -> None: ...
    def finish_run(self, run_id: str, status: str, outcome: Any = None) -> None: ...
    def save_checkpoint(self, checkpoint: Checkpoint) -> None: ...
    def claim_checkpoint(self, checkpoint_id: str, answer: bytes | None = None) -> bool: ...
    def checkpoint_claim(self, checkpoint_id: str) -> CheckpointClaim | None: ...
    def load_checkpoint(self, checkpoint_id: str) -> Checkpoint: ...
    def load(self, run_id: str) -> Snapshot: ...
    def history(self, run_id: str) -> list[CommitMeta]: ...
    def list_runs(self) -> list[RunInfo]: ...
    def paused(self) -> list[PausedRun]: ...
    def prune(
        self,
        *,
        run_ids: Sequence[str] | None = None,
        older_than: float | None = None,
        keep_latest: int | None = None,
    ) -> int: ...
    def delete(self, run_id: str) -> None: ...
    def close(self) -> None: ...


def snapshot_from_rows(
    run_id: str,
    chart_id: str,
    status: str,
    initial: dict[str, bytes],
    commit_docs: Sequence[bytes | tuple[bytes, Sequence[Any]]],
    outcome: Any = None,
    where: str = "the store",
    source: str | None = None,
) -> Snapshot:
    """Rebuild a snapshot (and its time-travel index) from stored rows.

    ``outcome`` is what ``finish_run`` stored: ``{"error", "break_reason",
    "recorder_failures"}``. A row that cannot be read raises :class:`CorruptStoreError`
    naming ``where`` (the store's repr) and ``source`` (its file or host).
    """
    from ..core._commit import ErrorInfo
    from ..core._snapshot import RecorderFailure

    what, column = "its ending", "trackway_runs.outcome"
    try:
        outcome = outcome or {}
        error = outcome.get("error")
        ending = None if error is None else ErrorInfo(*error)
        failures = [
            RecorderFailure(f["recorder"], f["hook"], ErrorInfo(*f["error"]))
            for f in outcome.get("recorder_failures", ())
        ]
        what, column = "its input", "trackway_runs.initial"
        loaded_initial = {k: orjson.loads(v) for k, v in initial.items()}
        commits = []
        column = "trackway_commits.doc"
        for n, doc in enumerate(commit_docs, 1):
            what = f"its commit {n}"
            if isinstance(doc, bytes):
                commits.append(Commit.from_dict(orjson.loads(doc), run_id))
            else:
                commits.append(Commit.from_dict(orjson.loads(doc[0]), run_id, doc[1]))
        what = "its log (applying its commits)"
        return Snapshot.from_commits(
            run_id=run_id,
            chart_id=chart_id,
            status=status,
            initial=loaded_initial,
            commits=commits,
            error=ending,
            break_reason=outcome.get("break_reason"),
            recorder_failures=failures,
        )
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        why = str(exc) if isinstance(exc, DocumentError) else f"{type(exc).__name__}: {exc}"
        if isinstance(exc, DocumentError) and (exc.field or "").startswith("initial_state"):
            what, column = "its input", "trackway_runs.initial"
        raise corrupt(
            where, source or where, run_id, column, f"{what} cannot be read ({why})"
        ) from exc


def select_prunable(
    runs: Sequence[RunInfo],
    run_ids: Sequence[str] | None,
    older_than: float | None,
    keep_latest: int | None,
) -> list[str]:
    """Which runs a prune call removes (shared by every store)."""
    chosen: set[str] = set(run_ids or ())
    if older_than is not None:
        cutoff = time.time() - older_than
        chosen |= {r.run_id for r in runs if (r.ended_at or r.started_at) < cutoff}
    if keep_latest is not None:
        if keep_latest < 0:
            raise ConfigurationError("keep_latest must be >= 0")
        newest = sorted(runs, key=lambda r: r.started_at, reverse=True)
        chosen |= {r.run_id for r in newest[keep_latest:]}
    return sorted(chosen)


class MemoryStore(MemoryTables, ArtifactTables):
    """A store in this process's memory: the same interface, nothing survives the process
    (an agent's memory rows included)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, dict[str, Any]] = {}
        self._checkpoints: dict[str, bytes] = {}
        self._claimed: dict[str, bytes | None] = {}
        self._init_memory()
        self._init_artifacts()

    def __repr__(self) -> str:
        return f"<MemoryStore runs={len(self._runs)}>"

    def begin_run(self, run_id: str, chart_id: str, initial: dict[str, bytes]) -> None:
        with self._lock:
            if run_id in self._runs:
                self._runs[run_id]["status"] = "running"
                return
            self._runs[run_id] = {
                "chart_id": chart_id,
                "status": "running",
                "started_at": time.time(),
                "ended_at": None,
                "initial": dict(initial),
                "commits": [],
                "outcome": None,
            }

    def append(self, run_id: str, commits: Sequence[Commit]) -> None:
        with self._lock:
            run = self._run(run_id)
            # each commit as a plain (slim document, row) pair, as a SQL store keeps it: no
            # named tuple, so a finished run leaves the cycle collector nothing to walk
            run["commits"].extend((exact_bytes(c.to_bytes(slim=True)), row_of(c)) for c in commits)

    def finish_run(self, run_id: str, status: str, outcome: Any = None) -> None:
        with self._lock:
            run = self._run(run_id)
            run.update(status=status, ended_at=time.time(), outcome=outcome)

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        with self._lock:
            self._checkpoints[checkpoint.checkpoint_id] = exact_bytes(checkpoint.to_json())

    def claim_checkpoint(self, checkpoint_id: str, answer: bytes | None = None) -> bool:
        with self._lock:
            if checkpoint_id in self._claimed:
                return False
            self._claimed[checkpoint_id] = answer
            return True

    def checkpoint_claim(self, checkpoint_id: str) -> CheckpointClaim | None:
        with self._lock:
            data = self._checkpoints.get(checkpoint_id)
            claimed = checkpoint_id in self._claimed
            answer = self._claimed.get(checkpoint_id)
        if data is None and not claimed:
            return None
        paused_at = "" if data is None else Checkpoint.from_json(data).paused_at
        return CheckpointClaim(claimed, answer, paused_at)

    def load_checkpoint(self, checkpoint_id: str) -> Checkpoint:
        with self._lock:
            data = self._checkpoints.get(checkpoint_id)
        if data is None:
            raise UnknownRunError(f"no checkpoint {checkpoint_id!r} in this store")
        return Checkpoint.from_json(data)

    def load(self, run_id: str) -> Snapshot:
        with self._lock:
            run = self._run(run_id)
            docs = list(run["commits"])
        return snapshot_from_rows(
            run_id, run["chart_id"], run["status"], run["initial"], docs, run["outcome"]
        )

    def history(self, run_id: str) -> list[CommitMeta]:
        with self._lock:
            return [CommitMeta._make(row) for _, row in self._run(run_id)["commits"]]

    def list_runs(self) -> list[RunInfo]:
        with self._lock:
            return [
                RunInfo(
                    rid,
                    r["chart_id"],
                    r["status"],
                    r["started_at"],
                    r["ended_at"],
                    len(r["commits"]),
                )
                for rid, r in self._runs.items()
            ]

    def paused(self) -> list[PausedRun]:
        """The runs waiting to be resumed, with what they wait on (oldest pause first)."""
        with self._lock:
            waiting = [
                (r["ended_at"], rid, r["chart_id"], self._checkpoints.get(cid))
                for rid, r in self._runs.items()
                if r["status"] == "paused"
                and (cid := f"{rid}@{len(r['commits'])}") not in self._claimed
            ]
        waiting.sort(key=lambda w: (w[0] or 0.0, w[1]))
        return [paused_run(chart, since, doc) for since, _, chart, doc in waiting if doc]

    def prune(
        self,
        *,
        run_ids: Sequence[str] | None = None,
        older_than: float | None = None,
        keep_latest: int | None = None,
    ) -> int:
        doomed = select_prunable(self.list_runs(), run_ids, older_than, keep_latest)
        with self._lock:
            for rid in doomed:
                self._forget(rid)
        return len(doomed)

    def delete(self, run_id: str) -> None:
        with self._lock:
            self._run(run_id)
            self._forget(run_id)

    def close(self) -> None:
        return None

    def _forget(self, run_id: str) -> None:
        self._runs.pop(run_id, None)
        prefix = f"{run_id}@"
        for cid in [c for c in self._checkpoints if c.startswith(prefix)]:
            del self._checkpoints[cid]

    def _run(self, run_id: str) -> dict[str, Any]:
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRunError(f"no run {run_id!r} in this store; store.list_runs() lists them")
        return run


# -- durability sinks (each a run._sinks.Sink) -----------------------------------------


class _SyncSink:
    """Each commit is durable before the next stage starts."""

    waiting = False

    def __init__(self, store: RunStore, run_id: str) -> None:
        self._store = store
        self._run_id = run_id

    def __call__(self, commit: Commit) -> None:
        self._store.append(self._run_id, [commit])

    async def room(self) -> None:
        return None

    def make_room(self) -> None:
        return None

    def flush(self) -> None:
        return None


class _ExitSink:
    """Commits are written in one transaction when the run pauses or ends."""

    waiting = False

    def __init__(self, store: RunStore, run_id: str) -> None:
        self._store = store
        self._run_id = run_id
        self._pending: list[Commit] = []

    def __call__(self, commit: Commit) -> None:
        self._pending.append(commit)

    async def room(self) -> None:
        return None

    def make_room(self) -> None:
        return None

    def flush(self) -> None:
        if self._pending:
            self._store.append(self._run_id, self._pending)
            self._pending = []


def make_sink(store: RunStore, run_id: str, durability: Durability, queue_size: int = 1024) -> Sink:
    if durability == "sync":
        # Concurrent runs on one store and loop share each fsync (group commit); a
        # MemoryStore has no fsync to share, so it keeps the direct write.
        if not isinstance(store, MemoryStore):
            grouped = group_sink(store, run_id)
            if grouped is not None:
                return grouped
        return _SyncSink(store, run_id)
    if durability == "exit":
        if getattr(store, "offloads_io", False) and hasattr(store, "write_group"):
            # a store that keeps its I/O off the loop (PostgresStore): the held commits go,
            # with the run's end, in its writer thread's next transaction, shared by the
            # runs ending with it; a local file (SqliteStore) answers too fast for the hop
            return batch_sink(store, run_id, queue_size, hold=True)
        return _ExitSink(store, run_id)
    # the store's one writer thread, shared by its batch runs: one transaction takes what
    # every run has queued (up to queue_size + 1 of each), same bounds on memory as before
    return batch_sink(store, run_id, queue_size)
