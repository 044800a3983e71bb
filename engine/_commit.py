"""The commit record: one per executed stage, the unit of the commit log."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import orjson

from ._values import freeze

__all__ = ["Commit", "CommitKind", "EmittedEvent", "ErrorInfo", "Op", "OpKind", "Outcome"]

OpKind = Literal["set", "append", "merge", "delete"]
Outcome = Literal["ok", "error", "cancelled", "paused"]
CommitKind = Literal["stage", "decider", "selector", "merge", "subflow-input", "subflow-output"]


class Op(NamedTuple):
    """One write: ``kind`` on ``key``. ``data`` is the value's JSON, serialized once.

    For ``append`` the value is the list of new items only (never the whole list); for
    ``merge`` the mapping merged in; for ``delete`` it is ``None``.
    """

    kind: OpKind
    key: str
    data: bytes
    raw: Any
    """The engine-owned decoded value (internal; use :attr:`value`)."""

    @property
    def value(self) -> Any:
        """The written value, read-only."""
        return freeze(self.raw)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "value": orjson.Fragment(self.data)}


class ErrorInfo(NamedTuple):
    """What a stage raised, as data: the exception's type name and message."""

    type: str
    message: str


class EmittedEvent(NamedTuple):
    """A user event from ``scope.emit(name, payload)``, kept in the stage's commit."""

    name: str
    data: bytes

    @property
    def payload(self) -> Any:
        return freeze(orjson.loads(self.data))


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
    ops: tuple[Op, ...]
    reads: tuple[str, ...]
    outcome: Outcome
    error: ErrorInfo | None = None
    detail: Any = None
    """Decision evidence, merge or limit records (JSON), when the stage has them."""
    events: tuple[EmittedEvent, ...] = ()
    attempts: int = 1

    @property
    def keys_written(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(op.key for op in self.ops))

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
            "ops": [op.to_dict() for op in self.ops],
            "reads": list(self.reads),
            "outcome": self.outcome,
            "error": None if self.error is None else list(self.error),
            "detail": self.detail,
            "events": [{"name": e.name, "payload": orjson.Fragment(e.data)} for e in self.events],
            "attempts": self.attempts,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Commit:
        ops = tuple(Op(o["kind"], o["key"], orjson.dumps(o["value"]), o["value"]) for o in d["ops"])
        events = tuple(EmittedEvent(e["name"], orjson.dumps(e["payload"])) for e in d["events"])
        err = d["error"]
        return cls(
            seq=d["seq"],
            run_id=d["run_id"],
            stage_path=d["stage_path"],
            stage_id=d["stage_id"],
            stage_name=d["stage_name"],
            kind=d["kind"],
            frame=d["frame"],
            started_at=d["started_at"],
            ended_at=d["ended_at"],
            ops=ops,
            reads=tuple(d["reads"]),
            outcome=d["outcome"],
            error=None if err is None else ErrorInfo(err[0], err[1]),
            detail=d["detail"],
            events=events,
            attempts=d["attempts"],
        )
