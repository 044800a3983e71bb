"""Snapshots: a run's commit log with time travel, history and diffs, read from the log alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, NotRequired

import orjson
from typing_extensions import TypedDict  # pydantic validates these on 3.11

from ._commit import Commit, CommitDoc, ErrorInfo
from ._documents import check_document, load_document, unencodable
from ._errors import DocumentError, OutOfRangeError
from ._paths import StagePath
from ._state import MISSING, StateStore
from ._values import FrozenDict, FrozenList, freeze, to_bytes, to_plain

__all__ = ["SNAPSHOT_FORMAT", "ObserverStats", "RecorderFailure", "Snapshot", "StateDiff"]

SNAPSHOT_FORMAT = "trackway.snapshot/1"


# What the run's recorders left on the snapshot: data the snapshot keeps and reloads, so it
# lives here; the recorder dispatch (``run._recorder``) makes them.
class RecorderFailure(NamedTuple):
    """A recorder hook that raised: kept as data, never allowed to break the run."""

    recorder: str
    hook: str
    error: ErrorInfo


class ObserverStats(NamedTuple):
    """How a deferred recorder's queue fared in one run (kept on the snapshot)."""

    recorder: str
    delivered: int
    dropped: int
    inline_flushes: int
    max_depth: int


class _FailureDoc(TypedDict):
    recorder: str
    hook: str
    error: tuple[str, str]


class _SnapshotDoc(TypedDict):
    format: str
    run_id: str
    chart_id: str
    status: str
    break_reason: str | None
    error: tuple[str, str] | None
    initial_state: dict[str, Any]
    commits: list[CommitDoc]
    recorder_failures: list[_FailureDoc]
    observer_stats: NotRequired[list[tuple[str, int, int, int, int]]]


_STATUSES = ("done", "broken", "failed", "paused", "running", "incomplete")


_SHAPES: dict[bytes, type] = {b"[": list, b"{": dict}
_STAGED: dict[type | None, Any] = {list: FrozenList([]), dict: FrozenDict({})}


def _shape_name(shape: type | None) -> str:
    return "null" if shape is None else shape.__name__  # None: a JSON null


def _check_writes(store: StateStore, c: Commit) -> None:
    """Refuse a logged write a run could not have made: an append of something other than a
    list of new items, or to a key holding no list; a merge into a key holding no dict."""
    staged: dict[str, Any] = {}
    for w in c.writes:
        kind, key, data, raw = w
        # the value's type is all this needs: a container the log keeps as JSON only
        # (``log_writes``) is read from its first byte, not decoded a second time
        shape = type(raw) if raw is not None or kind == "delete" else _SHAPES.get(data[:1])
        current = staged.get(key, MISSING) if key in staged else store.get(key)
        problem = None
        if kind == "append":
            if shape is not list:
                problem = f"appends a {_shape_name(shape)}, not a list of new items"
            elif current is not MISSING and not isinstance(current, FrozenList):
                problem = f"appends to {key!r}, which holds a {type(current).__name__}"
            staged[key] = FrozenList([])
        elif kind == "merge":
            if shape is not dict:
                problem = f"merges a {_shape_name(shape)}, not a dict"
            elif current is not MISSING and not isinstance(current, FrozenDict):
                problem = f"merges into {key!r}, which holds a {type(current).__name__}"
            staged[key] = FrozenDict({})
        elif kind == "set":
            staged[key] = _STAGED.get(shape, raw) if raw is None else freeze(raw)
        else:
            staged[key] = MISSING
        if problem is not None:
            raise DocumentError(
                f"corrupt log: commit {c.seq} ({c.stage_path}) {problem}; no run writes that, "
                "so the log was changed after it was written",
                document="snapshot",
                field=f"commits.{c.seq - 1}",
            )


class StateDiff(NamedTuple):
    """How state changed between two points: keys added, removed, and changed (old, new)."""

    added: dict[str, Any]
    removed: dict[str, Any]
    changed: dict[str, tuple[Any, Any]]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


class Snapshot:
    """Everything a run committed: the initial state and the ordered commit log.

    ``state_at(k)`` is the run's state after the first ``k`` commits, read from per-key
    version lists (a bisect per key); nothing is re-run and no whole state is copied per
    commit. Branch and isolated-subflow commits are in the log too (their ``frame`` is not
    ``""``); they change the run's state only through the merge or output commit that follows.
    """

    __slots__ = (
        "_commits",
        "_initial",
        "_n",
        "_store",
        "break_reason",
        "chart_id",
        "error",
        "observer_stats",
        "recorder_failures",
        "run_id",
        "status",
    )

    def __init__(
        self,
        *,
        run_id: str,
        chart_id: str,
        status: str,
        initial: Mapping[str, bytes],
        commits: Sequence[Commit],
        store: StateStore,
        break_reason: str | None = None,
        error: ErrorInfo | None = None,
        recorder_failures: Sequence[RecorderFailure] = (),
        observer_stats: Sequence[ObserverStats] = (),
    ) -> None:
        self.run_id = run_id
        self.chart_id = chart_id
        self.status = status
        self._initial = dict(initial)
        self._commits = commits
        self._n = len(commits)
        self._store = store
        self.break_reason = break_reason
        self.error = error
        self.recorder_failures = tuple(recorder_failures)
        self.observer_stats = tuple(observer_stats)
        """Queue counts of deferred recorders (delivered, dropped, ...), one per recorder.

        Delivery telemetry of the process that ran it: kept in ``to_json`` but not in stores,
        and not part of snapshot equality."""

    # -- reading -------------------------------------------------------------------------

    @property
    def commits(self) -> tuple[Commit, ...]:
        return tuple(self._commits[: self._n])

    def __len__(self) -> int:
        return self._n

    @property
    def initial_state(self) -> FrozenDict:
        return self.state_at(0)

    @property
    def state(self) -> FrozenDict:
        """The run's state after its last commit."""
        return self.state_at(self._n)

    def state_at(self, k: int) -> FrozenDict:
        """The run's state after the first ``k`` commits (``0`` is the initial state)."""
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= self._n:
            raise OutOfRangeError(
                f"state_at({k!r}): this run has {self._n} commits, so k must be an int from 0 "
                f"to {self._n}"
            )
        return FrozenDict(self._store.at(k))

    def frame_state_at(self, frame: str, k: int) -> FrozenDict:
        """The state of one isolated frame (an isolated subflow, a parallel branch) after the
        first ``k`` commits of the run: its own writes only, replayed from the log
        (O(the frame's commits)). ``frame=""`` is the run's own state (:meth:`state_at`)."""
        if frame == "":
            return self.state_at(k)
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= self._n:
            raise OutOfRangeError(
                f"frame_state_at({frame!r}, {k!r}): this run has {self._n} commits, so k must "
                f"be an int from 0 to {self._n}"
            )
        store = StateStore()
        for c in self._commits[:k]:
            if c.frame == frame and c.writes:
                store.apply(c.seq, c.writes)
        return FrozenDict(store.current())

    def value_at(self, key: str, k: int, default: Any = None) -> Any:
        """One key's value after the first ``k`` commits: a single bisect."""
        v = self._store.value_at(key, k)
        return default if v is MISSING else v

    def copy(self) -> Snapshot:
        """An independent snapshot of the same log, with its own time-travel index (a run
        that continues from it grows the copy, never this one)."""
        return Snapshot.from_commits(
            run_id=self.run_id,
            chart_id=self.chart_id,
            status=self.status,
            initial={k: orjson.loads(v) for k, v in self._initial.items()},
            commits=self.commits,
            break_reason=self.break_reason,
            error=self.error,
            recorder_failures=self.recorder_failures,
            observer_stats=self.observer_stats,
        )

    def history(self) -> tuple[Commit, ...]:
        """The commit log itself: metadata and ops, O(1) per entry, no state rebuilt."""
        return self.commits

    def diff(self, a: int, b: int) -> StateDiff:
        """What changed in the run's state between ``state_at(a)`` and ``state_at(b)``."""
        lo, hi = sorted((a, b))
        self.state_at(lo), self.state_at(hi)  # validates both bounds
        keys: dict[str, None] = {}
        for c in self._commits[lo:hi]:
            if c.frame == "":
                for op in c.writes:
                    keys[op[1]] = None
        added: dict[str, Any] = {}
        removed: dict[str, Any] = {}
        changed: dict[str, tuple[Any, Any]] = {}
        for key in keys:
            before = self._store.value_at(key, a)
            after = self._store.value_at(key, b)
            if before is MISSING and after is not MISSING:
                added[key] = after
            elif after is MISSING and before is not MISSING:
                removed[key] = before
            elif before is not MISSING and (before != after or type(before) is not type(after)):
                changed[key] = (before, after)
        return StateDiff(added, removed, changed)

    # -- serialization -------------------------------------------------------------------

    def to_json(self) -> bytes:
        """The whole snapshot as JSON bytes; values are embedded as serialized at the write."""
        return orjson.dumps(
            {
                "format": SNAPSHOT_FORMAT,
                "run_id": self.run_id,
                "chart_id": self.chart_id,
                "status": self.status,
                "break_reason": self.break_reason,
                "error": None if self.error is None else list(self.error),
                "initial_state": {k: orjson.Fragment(v) for k, v in self._initial.items()},
                "commits": [c.to_dict() for c in self._commits[: self._n]],
                "recorder_failures": [
                    {"recorder": f.recorder, "hook": f.hook, "error": list(f.error)}
                    for f in self.recorder_failures
                ],
                "observer_stats": [list(s) for s in self.observer_stats],
            },
            default=to_plain,
        )

    @classmethod
    def from_json(cls, data: bytes | str, *, source: str | None = None) -> Snapshot:
        """Rebuild a snapshot (and its time-travel index) from :meth:`to_json` output.

        Anything else raises :class:`DocumentError` naming the field: unknown op kinds,
        commits out of order, a missing field. ``source`` (a file name) goes into messages.
        """
        return load_document(
            data, document="snapshot", readers={SNAPSHOT_FORMAT: cls.from_doc}, source=source
        )

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any], *, where: str = "") -> Snapshot:
        """Rebuild a snapshot from its already-parsed JSON object (e.g. one embedded in a
        checkpoint): the document is parsed once, never serialized again to be read."""
        checked: _SnapshotDoc = check_document(_SnapshotDoc, doc, document="snapshot", where=where)
        prefix = f"{where}." if where else ""
        if checked["status"] not in _STATUSES:
            raise DocumentError(
                f"corrupt snapshot: {prefix}status is {checked['status']!r}; a run is one of "
                f"{', '.join(_STATUSES)}",
                document="snapshot",
                field=f"{prefix}status",
            )
        commits = [Commit.from_dict(c) for c in checked["commits"]]  # type: ignore[arg-type]
        run_id = checked["run_id"]
        for i, c in enumerate(commits, 1):
            field = f"{prefix}commits.{i - 1}"
            if c.run_id not in ("", run_id):
                raise DocumentError(
                    f"corrupt snapshot: {field}.run_id is {c.run_id!r}, a commit of another "
                    f"run than {run_id!r}",
                    document="snapshot",
                    field=f"{field}.run_id",
                )
            for name, path in (("stage_path", c.stage_path), ("frame", c.frame)):
                try:
                    if path or name == "stage_path":
                        StagePath.parse(path)
                except ValueError as exc:
                    raise DocumentError(
                        f"corrupt snapshot: {field}.{name}: {exc}",
                        document="snapshot",
                        field=f"{field}.{name}",
                    ) from None
            if c.seq != i:
                field = f"{where + '.' if where else ''}commits.{i - 1}.seq"
                raise DocumentError(
                    f"corrupt snapshot: {field} is {c.seq}, but commit {i} of the log must have "
                    "seq " + str(i) + " (seqs run 1, 2, 3, ... with none missing or repeated)",
                    document="snapshot",
                    field=field,
                )
        err = checked["error"]
        return cls.from_commits(
            run_id=checked["run_id"],
            chart_id=checked["chart_id"],
            status=checked["status"],
            initial=checked["initial_state"],
            commits=commits,
            break_reason=checked["break_reason"],
            error=None if err is None else ErrorInfo(*err),
            recorder_failures=[
                RecorderFailure(f["recorder"], f["hook"], ErrorInfo(*f["error"]))
                for f in checked["recorder_failures"]
            ],
            observer_stats=[ObserverStats(*st) for st in checked.get("observer_stats", ())],
        )

    @classmethod
    def from_commits(
        cls,
        *,
        run_id: str,
        chart_id: str,
        status: str,
        initial: Mapping[str, Any],
        commits: Sequence[Commit],
        break_reason: str | None = None,
        error: ErrorInfo | None = None,
        recorder_failures: Sequence[RecorderFailure] = (),
        observer_stats: Sequence[ObserverStats] = (),
    ) -> Snapshot:
        """Build a snapshot from an initial state (JSON values) and a commit log.

        The time-travel index is rebuilt by applying the run-state commits in order:
        O(total size of their writes), once.
        """
        store = StateStore()
        encoded = {}
        for key, value in initial.items():
            try:
                encoded[key] = to_bytes(value)
            except TypeError as exc:  # orjson.JSONEncodeError is one: read, never written
                raise DocumentError(
                    f"the run input: {unencodable(f'the value of {key!r}', exc)}",
                    document="snapshot",
                    field=f"initial_state.{key}",
                ) from None
            store.seed(key, freeze(orjson.loads(encoded[key])))  # our own copy
        commits = list(commits)
        for c in commits:
            if c.frame == "" and c.writes:
                _check_writes(store, c)
                store.apply(c.seq, c.writes)
        return cls(
            run_id=run_id,
            chart_id=chart_id,
            status=status,
            initial=encoded,
            commits=commits,
            store=store,
            break_reason=break_reason,
            error=error,
            recorder_failures=recorder_failures,
            observer_stats=observer_stats,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Snapshot):
            return NotImplemented
        return (
            self.run_id == other.run_id
            and self.chart_id == other.chart_id
            and self.status == other.status
            and self.break_reason == other.break_reason
            and self.error == other.error
            and self._initial == other._initial
            and self.commits == other.commits
            and self.recorder_failures == other.recorder_failures
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Snapshot run={self.run_id} status={self.status} commits={self._n}>"
