"""Following a run in a store while it runs: the commits after a sequence number and how the
run stands, each tick costing what is new, never the whole run.

On the SQL stores (SQLite, PostgreSQL) a commit's row id is ``run_no * 2**32 + seq``, so the
commits after ``seq`` are one range of the primary index: a tick reads only the new rows,
and the run's status is one row by its unique id. Any other :class:`RunStore` (a
``MemoryStore``) is read whole each tick, the only way its interface allows.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

from trackway.engine import Commit, RunStore, UnknownRunError
from trackway.engine.stores._sqlstore import ROW, SqlRunStore

__all__ = ["Pause", "RunStatus", "commits_after", "run_status"]


class Pause(NamedTuple):
    """What a paused run waits on: its checkpoint, where it paused and the payload."""

    checkpoint_id: str
    paused_at: str
    payload: Any


class RunStatus(NamedTuple):
    """How a run stands: its status, its chart, its commit count and, paused, its question."""

    status: str
    chart_id: str
    commits: int
    pause: Pause | None


def commits_after(store: RunStore, run_id: str, after: int) -> list[Commit]:
    """The commits of ``run_id`` whose seq is greater than ``after``, in order."""
    if not isinstance(store, SqlRunStore):
        return list(store.load(run_id).history()[after:])
    p = store._P
    with store._read_tx() as db:
        lo, hi = store._span(db, run_id)
        rows = db.execute(
            f"SELECT {ROW}, doc FROM trackway_commits WHERE id BETWEEN {p} AND {p} ORDER BY id",
            (lo + after + 1, hi),
        ).fetchall()
    return [Commit.from_dict(orjson.loads(bytes(r[7])), run_id, r[:7]) for r in rows]


def _count_and_status(store: RunStore, run_id: str) -> tuple[str, str, int]:
    if not isinstance(store, SqlRunStore):
        info = next((r for r in store.list_runs() if r.run_id == run_id), None)
        if info is None:
            raise UnknownRunError(f"no run {run_id!r} in {store!r}")
        return info.status, info.chart_id, info.commit_count
    p = store._P
    with store._read_tx() as db:
        row = db.execute(
            f"SELECT status, chart_id FROM trackway_runs WHERE run_id = {p}", (run_id,)
        ).fetchone()
        if row is None:
            raise UnknownRunError(f"no run {run_id!r} in {store!r}")
        lo, hi = store._span(db, run_id)
        top = db.execute(
            f"SELECT MAX(id) FROM trackway_commits WHERE id BETWEEN {p} AND {p}", (lo, hi)
        ).fetchone()
    count = 0 if top is None or top[0] is None else int(top[0]) - lo
    return str(row[0]), str(row[1]), count


def run_status(store: RunStore, run_id: str) -> RunStatus:
    """How ``run_id`` stands now; paused, with the checkpoint it waits on (``<run id>@<commit
    count>``, kept and not claimed yet) and its payload."""
    status, chart_id, count = _count_and_status(store, run_id)
    pause = None
    if status == "paused":
        checkpoint_id = f"{run_id}@{count}"
        claim = store.checkpoint_claim(checkpoint_id)
        if claim is not None and not claim.claimed:
            try:
                cp = store.load_checkpoint(checkpoint_id)
            except UnknownRunError:
                cp = None
            if cp is not None:
                pause = Pause(checkpoint_id, cp.paused_at, cp.payload)
    return RunStatus(status, chart_id, count, pause)
