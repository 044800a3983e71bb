"""The commit record: one per executed stage, the unit of the commit log."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Final, Literal, NamedTuple, NotRequired, TypeAlias

import orjson
from typing_extensions import TypedDict  # pydantic validates these on 3.11

from ._detail import CommitDetail
from ._documents import unencodable
from ._errors import DocumentError
from ._values import freeze, to_plain
from ._values import to_bytes as _json_bytes

__all__ = [
    "Commit",
    "CommitDoc",
    "CommitKind",
    "Emitted",
    "EmittedEvent",
    "ErrorInfo",
    "Op",
    "OpKind",
    "Outcome",
    "Write",
    "error_info",
    "log_writes",
    "write_value",
]

OpKind = Literal["set", "append", "merge", "delete"]
Outcome = Literal["ok", "error", "cancelled", "paused"]
CommitKind = Literal[
    "stage",
    "decider",
    "selector",
    "merge",
    "resume",
    "subflow-input",
    "subflow-output",
    "forked-from",
]


Write: TypeAlias = tuple[OpKind, str, bytes, Any]
"""A write as the log keeps it: a plain ``(kind, key, json_bytes, value)`` tuple.

Plain tuples of atoms are untracked by Python's cycle collector, so a long log does not make
garbage collection slower; :class:`Op` is the named view handed to users. A run's own log
keeps a list or dict value as its JSON bytes only (``value`` is ``None``; see
:func:`log_writes`): read a write's value with :func:`write_value`.
"""

_ATOMS: Final = frozenset({str, int, float, bool, type(None)})


def log_writes(ops: tuple[Write, ...]) -> tuple[Write, ...]:
    """The writes as a run's log keeps them, once applied to its state: a value that is not
    an atom (a list, a dict, a frozen view) as its JSON bytes only, so the write tuple holds
    no container and the cycle collector stops tracking it (a server keeps many runs' logs
    across every await). The state holds the decoded value; :func:`write_value` decodes the
    log's copy when a reader asks."""
    for w in ops:
        if type(w[3]) not in _ATOMS:
            return tuple(w if type(w[3]) in _ATOMS else (w[0], w[1], w[2], None) for w in ops)
    return ops


def write_value(w: Write) -> Any:
    """A write's value, engine-owned: kept in the write, or decoded from its JSON when the
    log kept the bytes only (:func:`log_writes`). ``None`` for a delete."""
    raw = w[3]
    if raw is None and w[0] != "delete":
        return orjson.loads(w[2])
    return raw


class Op(NamedTuple):
    """One write: ``kind`` on ``key``. ``data`` is the value's JSON, serialized once.

    For ``append`` the value is the list of new items only (never the whole list); for
    ``merge`` the mapping merged in; for ``delete`` it is ``None``.
    """

    kind: OpKind
    key: str
    data: bytes
    raw: Any
    """The engine-owned decoded value, or ``None`` where the log keeps the JSON only
    (internal; use :attr:`value`)."""

    @property
    def value(self) -> Any:
        """The written value, read-only."""
        return freeze(write_value(self))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "value": orjson.Fragment(self.data)}


class ErrorInfo(NamedTuple):
    """What a stage raised, as data: the exception's type name and message."""

    type: str
    message: str


Emitted: TypeAlias = tuple[str, bytes]
"""An event as the log keeps it: a plain ``(name, json_bytes)`` tuple (untracked by the
cycle collector, like :data:`Write`); :class:`EmittedEvent` is the named view."""


class EmittedEvent(NamedTuple):
    """A user event from ``scope.emit(name, payload)``, kept in the stage's commit."""

    name: str
    data: bytes

    @property
    def payload(self) -> Any:
        return freeze(orjson.loads(self.data))


class OpDoc(TypedDict):
    """One write as a persisted document holds it."""

    kind: OpKind
    key: str
    value: Any


class EventDoc(TypedDict):
    name: str
    payload: Any


class CommitDoc(TypedDict):
    """A commit as a persisted document holds it (``Commit.to_dict``); checked at load."""

    seq: int
    run_id: NotRequired[str]
    stage_path: str
    stage_id: str
    stage_name: str
    kind: CommitKind
    frame: str
    started_at: float
    ended_at: float
    ops: list[OpDoc]
    reads: list[str]
    outcome: Outcome
    error: NotRequired[tuple[str, str] | None]
    detail: NotRequired[Any]
    events: NotRequired[list[EventDoc]]
    attempts: NotRequired[int]


def error_info(exc: BaseException) -> ErrorInfo:
    """An exception as commit data: its type's name and its message (a lone surrogate in
    the message, which no store can hold, is written as its escape)."""
    message = str(exc)
    if not message.isascii():
        message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return ErrorInfo(type(exc).__name__, message)


ROW_FIELDS = ("seq", "stage_path", "kind", "frame", "outcome", "started_at", "ended_at")
"""Commit fields a store keeps in columns of their own (see ``Commit.to_bytes(slim=True)``)."""


def row_of(c: Commit) -> tuple[int, str, str, str, str, float, float]:
    """A commit's ``ROW_FIELDS`` values, in that order (a store's columns, and the fields of
    ``CommitMeta``)."""
    return (c.seq, c.stage_path, c.kind, c.frame, c.outcome, c.started_at, c.ended_at)


class Commit(NamedTuple):
    """The writes of one executed stage, in the order they were made.

    ``frame`` says which state the ops apply to: ``""`` is the run's state; a parallel branch
    or an isolated subflow writes to its own frame (named by its path) until its results are
    merged back by a ``merge`` or ``subflow-output`` commit.
    """

    seq: int
    run_id: str
    stage_path: str
    stage_id: str
    stage_name: str
    kind: CommitKind
    frame: str
    started_at: float
    ended_at: float
    writes: tuple[Write, ...]
    """The writes as plain tuples (see :attr:`ops` for named views)."""
    reads: tuple[str, ...]
    outcome: Outcome
    error: ErrorInfo | None = None
    detail: CommitDetail | None = None
    """Decision evidence, merge, pause or limit records (JSON), when the stage has them:
    the shapes are named in :class:`~trackway.engine.CommitDetail`."""
    emitted: tuple[Emitted, ...] = ()
    """The events as plain tuples (see :attr:`events` for named views)."""
    attempts: int = 1
    sealed: bytes | None = None
    """Store-only: the real commit, sealed, when a redaction policy changed this one and the
    store has a seal (written in its document, never in snapshots or recordings)."""

    @property
    def ops(self) -> tuple[Op, ...]:
        """The stage's writes, in the order it made them."""
        return tuple(Op._make(w) for w in self.writes)

    @property
    def events(self) -> tuple[EmittedEvent, ...]:
        """The stage's ``scope.emit`` events, in the order it emitted them."""
        return tuple(EmittedEvent._make(e) for e in self.emitted)

    @property
    def keys_written(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(w[1] for w in self.writes))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (op values are embedded as their original bytes)."""
        return {
            "seq": self.seq,
            "run_id": self.run_id,
            "stage_path": self.stage_path,
            "stage_id": self.stage_id,
            "stage_name": self.stage_name,
            "kind": self.kind,
            "frame": self.frame,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "ops": [
                {"kind": w[0], "key": w[1], "value": orjson.Fragment(w[2])} for w in self.writes
            ],
            "reads": list(self.reads),
            "outcome": self.outcome,
            "error": None if self.error is None else list(self.error),
            "detail": self.detail,
            "events": [{"name": n, "payload": orjson.Fragment(d)} for n, d in self.emitted],
            "attempts": self.attempts,
        }

    def to_bytes(self, *, slim: bool = False) -> bytes:
        """Compact JSON for stores: no run id (the row has it), defaults left out.

        ``slim`` also leaves out what a store keeps in columns of its own (``ROW_FIELDS``);
        :meth:`from_dict` takes them back through ``row=``.
        """
        doc: dict[str, Any] = {"stage_id": self.stage_id, "stage_name": self.stage_name}
        if slim:  # writes as [kind, key, value] triples: no repeated field names
            doc["w"] = [[w[0], w[1], orjson.Fragment(w[2])] for w in self.writes]
        else:
            doc["ops"] = [
                {"kind": w[0], "key": w[1], "value": orjson.Fragment(w[2])} for w in self.writes
            ]
        doc["reads"] = self.reads
        if not slim:
            doc.update(
                seq=self.seq,
                stage_path=self.stage_path,
                kind=self.kind,
                frame=self.frame,
                started_at=self.started_at,
                ended_at=self.ended_at,
                outcome=self.outcome,
            )
        if self.error is not None:
            doc["error"] = list(self.error)
        if self.detail is not None:
            doc["detail"] = self.detail
        if self.emitted:
            doc["events"] = [{"name": n, "payload": orjson.Fragment(d)} for n, d in self.emitted]
        if self.attempts != 1:
            doc["attempts"] = self.attempts
        if self.sealed is not None:
            doc["sealed"] = base64.b64encode(self.sealed).decode()
        return orjson.dumps(doc, default=to_plain)

    @classmethod
    def from_dict(
        cls, d: dict[str, Any], run_id: str | None = None, row: Sequence[Any] | None = None
    ) -> Commit:
        """Inverse of :meth:`to_dict` and :meth:`to_bytes` (given the ``run_id``, and for a
        slim document the store's ``row`` of ``ROW_FIELDS`` values)."""
        if row is not None:
            d = {**d, **dict(zip(ROW_FIELDS, row, strict=True))}
        try:
            w = d["w"] if "w" in d else [(o["kind"], o["key"], o["value"]) for o in d["ops"]]
            # as a run's log keeps them (log_writes): a container as its JSON only
            writes: tuple[Write, ...] = tuple(
                (kind, key, _json_bytes(value), value if type(value) in _ATOMS else None)
                for kind, key, value in w
            )
            emitted: tuple[Emitted, ...] = tuple(
                (e["name"], _json_bytes(e["payload"])) for e in d.get("events", ())
            )
        except TypeError:  # orjson.JSONEncodeError is one
            refused = _unkept_value(d)
            if refused is None:
                raise
            raise refused from None
        err = d.get("error")
        return cls(
            seq=d["seq"],
            run_id=d.get("run_id") or run_id or "",
            stage_path=d["stage_path"],
            stage_id=d["stage_id"],
            stage_name=d["stage_name"],
            kind=d["kind"],
            frame=d["frame"],
            started_at=d["started_at"],
            ended_at=d["ended_at"],
            writes=writes,
            reads=tuple(d["reads"]),
            outcome=d["outcome"],
            error=None if err is None else ErrorInfo(err[0], err[1]),
            detail=d.get("detail"),
            emitted=emitted,
            attempts=d.get("attempts", 1),
        )


def _unkept_value(d: dict[str, Any]) -> DocumentError | None:
    """The error for a commit document holding a value the log cannot keep (orjson cannot
    write it again: nested too deep), naming the value; ``None`` when every value encodes
    and the fault is elsewhere. Only called once decoding failed: the good path pays nothing."""
    try:
        if "w" in d:
            places = [
                (f"w.{i}", f"the value written to {w[1]!r}", w[2]) for i, w in enumerate(d["w"])
            ]
        else:
            places = [
                (f"ops.{i}.value", f"the value written to {o['key']!r}", o["value"])
                for i, o in enumerate(d["ops"])
            ]
        places += [
            (f"events.{i}.payload", f"the payload of the event {e['name']!r}", e["payload"])
            for i, e in enumerate(d.get("events", ()))
        ]
    except Exception:  # a malformed document: its own error says more
        return None
    for field, what, value in places:
        try:
            _json_bytes(value)
        except TypeError as exc:
            return DocumentError(
                f"commit {d.get('seq')!r}: {unencodable(what, exc)}",
                document="commit",
                field=field,
            )
    return None
