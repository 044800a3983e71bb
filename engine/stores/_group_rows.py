"""Group writes of the SQL stores: several runs' commits, openings and endings in ONE
transaction (one fsync, or one round trip, shared by all of them).

Group commit (``_group_commit``) hands a flush to ``write_group``: per run, its opening (the
run's row, inserted or set running again), its new commits, or its ending (status and
outcome), each written exactly as ``begin_run``, ``append`` and ``finish_run`` write it. A
run that fails alone (deleted meanwhile, a worker's lease lost) is left out and returned
with its error, the others are written; any other failure rolls the whole transaction back
and raises, so nothing of it is half written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core._commit import Commit
from ..core._errors import LeaseLostError, UnknownRunError
from ._group_commit import GroupWrite, RunClosing, RunOpening
from ._lease_fence import lease_lost
from ._sqlstore import (
    SPAN,
    SqlRunStore,
    close_sql,
    commit_rows,
    initial_doc,
    open_sql,
    outcome_doc,
    run_deleted,
)

__all__ = ["GroupRows", "PgGroupRows"]

GROUP_ROWS = 100
"""Commit rows per INSERT statement in ``append_group``: one statement (one release of the
GIL while it runs) instead of one per row, within any SQLite's limit of 999 parameters."""


class GroupRows(SqlRunStore):
    """The group writes on any SQL dialect here (one statement per run where the dialect has
    nothing better: inside one transaction, so still one fsync)."""

    def write_group(self, items: Sequence[GroupWrite]) -> dict[str, Exception]:
        """Write each run's opening, commits and ending in ONE transaction; returns the runs
        that failed alone, with their error (see the module docstring)."""
        if all(i.opening is None and i.closing is None for i in items):
            return self.append_group([(i.run_id, i.commits) for i in items])
        for i in items:
            if i.opening is not None and (i.commits or i.closing is not None):
                raise ValueError(f"run {i.run_id!r}: an opening is written alone")
        failed: dict[str, Exception] = {}
        with self._tx() as db:
            # a worker's runs: every lease of the group held (locked in run id order) at
            # once, before any other row, so two transactions never lock them crosswise
            fenced = sorted({i.run_id for i in items if i.run_id in self._fences})
            for run_id in self._hold_leases(db, fenced) if fenced else ():
                failed[run_id] = lease_lost(run_id)
            items = [i for i in items if i.run_id not in failed]
            opened = self._open_rows(
                db, [(i.run_id, i.opening) for i in items if i.opening is not None], failed
            )
            appends = [(i.run_id, i.commits) for i in items if i.commits]
            if appends:
                failed.update(self._append_rows(db, appends))
            closings = [
                (i.run_id, i.closing)
                for i in items
                if i.closing is not None and i.run_id not in failed
            ]
            if closings:
                self._close_rows(db, closings, failed)
        self._run_nos.update(opened)  # known once the runs' rows are committed
        return failed

    def append_group(self, items: Sequence[tuple[str, Sequence[Commit]]]) -> dict[str, Exception]:
        """Write the commits of several runs in ONE transaction (one fsync for all of them:
        group commit under ``durability="sync"``). A run deleted meanwhile (pruned) is left
        out and returned with its error, and the others are written; any other failure
        rolls the whole transaction back and raises."""
        with self._tx() as db:
            return self._append_rows(db, items)

    def _open_rows(
        self,
        db: Any,
        openings: Sequence[tuple[str, RunOpening]],
        failed: dict[str, Exception],
    ) -> dict[str, int]:
        """Open runs (``begin_run`` each) and return their numbers (a worker's leases were
        held by ``write_group`` first)."""
        if not openings:
            return {}
        p = self._P
        sql = open_sql(p, self._RETURNING)
        nos: dict[str, int] = {}
        for run_id, (chart_id, initial, sealed, started_at) in openings:
            self._run_nos.pop(run_id, None)  # deleted elsewhere and begun again: a new number
            cur = db.execute(sql, (run_id, chart_id, started_at, initial_doc(initial), sealed))
            if not self._RETURNING:
                cur = db.execute(f"SELECT run_no FROM trackway_runs WHERE run_id = {p}", (run_id,))
            nos[run_id] = int(cur.fetchall()[0][0])
        return nos

    def _close_rows(
        self,
        db: Any,
        closings: Sequence[tuple[str, RunClosing]],
        failed: dict[str, Exception],
    ) -> None:
        """Record how runs ended (``finish_run`` each); a run deleted meanwhile, or a
        worker's whose lease is lost, is left out, in ``failed``."""
        for run_id, (status, outcome, ended_at) in closings:
            held, fence = self._held_clause(run_id)
            cur = db.execute(
                close_sql(self._P, held), (status, ended_at, outcome_doc(outcome), run_id, *fence)
            )
            if cur.rowcount != 1:
                try:
                    self._check_lease(db, run_id)
                except LeaseLostError as exc:
                    failed[run_id] = exc
                    continue
                failed[run_id] = run_deleted(run_id, self)

    def _append_rows(
        self, db: Any, items: Sequence[tuple[str, Sequence[Commit]]]
    ) -> dict[str, Exception]:
        """``append_group`` inside a transaction already open."""
        failed: dict[str, Exception] = {}
        nos: dict[str, int] = {}
        for run_id, _ in items:
            try:
                nos[run_id] = self._run_no(db, run_id)
            except UnknownRunError:  # begun, so deleted since (by this store object)
                failed[run_id] = run_deleted(run_id, self)
        # the runs still there, and a worker's whose lease was lost (left out)
        live, lost = self._group_locks(db, sorted(set(nos.values())), list(nos))
        for run_id in lost:
            failed[run_id] = lease_lost(run_id)
            del nos[run_id]
        rows: list[tuple[Any, ...]] = []
        for run_id, commits in items:
            run_no = nos.get(run_id)
            if run_no is None:
                continue
            if run_no not in live:
                self._run_nos.pop(run_id, None)
                failed[run_id] = run_deleted(run_id, self)
                continue
            rows.extend(commit_rows(run_no, commits))
        self._insert_group(db, rows)
        return failed

    def _insert_group(self, db: Any, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert a group's commit rows: one statement per ``GROUP_ROWS`` rows."""
        row = "(" + ", ".join([self._P] * 8) + ")"
        for i in range(0, len(rows), GROUP_ROWS):
            chunk = rows[i : i + GROUP_ROWS]
            db.execute(
                "INSERT INTO trackway_commits VALUES " + ", ".join([row] * len(chunk)),
                [value for one in chunk for value in one],
            )

    def _live_run_nos(self, db: Any, run_nos: Sequence[int]) -> set[int]:
        """Which of these runs still exist, inside this transaction (which serializes
        writers in SQLite; PostgreSQL locks the rows instead)."""
        live: set[int] = set()
        for i in range(0, len(run_nos), 500):  # within any SQLite's limit on parameters
            chunk = run_nos[i : i + 500]
            marks = ", ".join([self._P] * len(chunk))
            cur = db.execute(f"SELECT run_no FROM trackway_runs WHERE run_no IN ({marks})", chunk)
            live.update(int(r[0]) for r in cur.fetchall())
        return live


_COLUMNS = (
    "unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::float8[], "
    "%s::float8[], %s::bytea[])"
)
_UNNEST = "INSERT INTO trackway_commits SELECT * FROM " + _COLUMNS
_GROUP_ONE = (
    "WITH live AS (SELECT run_no FROM trackway_runs WHERE run_no = ANY(%s) ORDER BY run_no "
    "FOR SHARE), ins AS (INSERT INTO trackway_commits SELECT v.* FROM "
    + _COLUMNS
    + " AS v (id, stage_path, kind, frame, outcome, started_at, ended_at, doc) "
    "WHERE v.id / %s IN (SELECT run_no FROM live)) SELECT run_no FROM live"
)
"""A group of unfenced runs in ONE statement (its own transaction): lock the runs' rows,
insert the commits of those still there, and name them."""
_OPEN_ALL = (
    "INSERT INTO trackway_runs (run_id, chart_id, status, started_at, initial, sealed) "
    "SELECT v.run_id, v.chart_id, 'running', v.started_at, v.initial, v.sealed FROM "
    "unnest(%s::text[], %s::text[], %s::float8[], %s::bytea[], %s::bytea[]) "
    "AS v (run_id, chart_id, started_at, initial, sealed) ON CONFLICT (run_id) DO UPDATE SET "
    "status = 'running', ended_at = NULL, outcome = NULL, "
    "sealed = COALESCE(excluded.sealed, trackway_runs.sealed) RETURNING run_id, run_no"
)
"""Open a group of unfenced runs (each ``begin_run``'s statement) in ONE statement."""
_CLOSE_ALL = (
    "UPDATE trackway_runs AS r SET status = v.status, ended_at = v.ended_at, "
    "outcome = v.outcome FROM unnest(%s::text[], %s::text[], %s::float8[], %s::bytea[]) "
    "AS v (run_id, status, ended_at, outcome) WHERE r.run_id = v.run_id RETURNING r.run_id"
)
"""Record how a group of unfenced runs ended (each ``finish_run``'s statement) in ONE
statement; the runs it did not find were deleted meanwhile."""


def _named_twice(run_ids: Sequence[str]) -> bool:
    """A run named twice in a group (two runs given one id at once) takes one statement
    each: one statement may touch a row only once."""
    return len(set(run_ids)) != len(run_ids)


class PgGroupRows(GroupRows):
    """PostgreSQL's group writes: each part of a group in one statement (a column of each
    field as an array, so the query text never changes and is parsed once)."""

    def append_group(self, items: Sequence[tuple[str, Sequence[Commit]]]) -> dict[str, Exception]:
        """A group of runs whose numbers are known and which no worker's lease fences, in
        ONE statement (its own transaction, one round trip): the runs' rows locked, the
        commits of those still there inserted, the others returned as deleted. Else as
        every SQL store does."""
        nos: dict[str, int] = {}
        for run_id, _ in items:
            no = self._run_nos.get(run_id)
            if no is None or run_id in self._fences:
                return super().append_group(items)
            nos[run_id] = no
        rows = [row for run_id, commits in items for row in commit_rows(nos[run_id], commits)]
        columns = [list(column) for column in zip(*rows, strict=True)] if rows else [[]] * 8
        with self._one() as db:
            found = db.execute(_GROUP_ONE, (sorted(set(nos.values())), *columns, SPAN)).fetchall()
        live = {int(r[0]) for r in found}
        failed: dict[str, Exception] = {}
        for run_id, no in nos.items():
            if no not in live:
                self._run_nos.pop(run_id, None)
                failed[run_id] = run_deleted(run_id, self)
        return failed

    def _open_rows(
        self,
        db: Any,
        openings: Sequence[tuple[str, RunOpening]],
        failed: dict[str, Exception],
    ) -> dict[str, int]:
        run_ids = [run_id for run_id, _ in openings]
        if not openings or _named_twice(run_ids):
            return super()._open_rows(db, openings, failed)
        for run_id in run_ids:
            self._run_nos.pop(run_id, None)
        rows = db.execute(
            _OPEN_ALL,
            (
                run_ids,
                [o.chart_id for _, o in openings],
                [o.started_at for _, o in openings],
                [initial_doc(o.initial) for _, o in openings],
                [o.sealed for _, o in openings],
            ),
        ).fetchall()
        return {str(run_id): int(no) for run_id, no in rows}

    def _close_rows(
        self,
        db: Any,
        closings: Sequence[tuple[str, RunClosing]],
        failed: dict[str, Exception],
    ) -> None:
        run_ids = [run_id for run_id, _ in closings]
        if _named_twice(run_ids):
            super()._close_rows(db, closings, failed)
            return
        found = db.execute(
            _CLOSE_ALL,
            (
                run_ids,
                [c.status for _, c in closings],
                [c.ended_at for _, c in closings],
                [outcome_doc(c.outcome) for _, c in closings],
            ),
        ).fetchall()
        ended = {r[0] for r in found}
        for run_id in run_ids:
            if run_id not in ended:
                failed[run_id] = run_deleted(run_id, self)

    def _insert_group(self, db: Any, rows: Sequence[tuple[Any, ...]]) -> None:
        """One statement whatever the group's size (a ``VALUES`` list of 800 placeholders
        cost the driver ~19 ms to parse)."""
        if rows:
            db.execute(_UNNEST, [list(column) for column in zip(*rows, strict=True)])

    def _group_locks(
        self, db: Any, run_nos: Sequence[int], run_ids: Sequence[str]
    ) -> tuple[set[int], set[str]]:
        """The live runs and the lost leases of a group in one query, each row locked for
        this transaction (a prune, or another worker's claim, waits until it ends)."""
        fences = self._fences
        pairs = {r: fences[r] for r in run_ids if r in fences}
        if not pairs:
            return self._live_run_nos(db, run_nos), set()
        rows = db.execute(
            "WITH r AS (SELECT run_no FROM trackway_runs WHERE run_no = ANY(%s) "
            "ORDER BY run_no FOR SHARE), q AS (SELECT run_id FROM trackway_queue "
            "WHERE state = 'running' AND (run_id, lease_token) IN "
            "(SELECT * FROM unnest(%s::text[], %s::text[])) ORDER BY run_id FOR SHARE) "
            "SELECT run_no, NULL FROM r UNION ALL SELECT NULL, run_id FROM q",
            (list(run_nos), list(pairs), list(pairs.values())),
        ).fetchall()
        live = {int(no) for no, _ in rows if no is not None}
        held = {rid for _, rid in rows if rid is not None}
        return live, set(pairs) - held

    def _live_run_nos(self, db: Any, run_nos: Sequence[int]) -> set[int]:
        """Group commit: lock the runs' rows for this transaction in one query (a concurrent
        prune waits until it ends) and return the ones still there."""
        if not run_nos:
            return set()
        cur = db.execute(
            "SELECT run_no FROM trackway_runs WHERE run_no = ANY(%s) ORDER BY run_no FOR SHARE",
            (list(run_nos),),
        )
        return {int(r[0]) for r in cur.fetchall()}
