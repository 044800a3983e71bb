"""How a store names a row it cannot read: one :class:`CorruptStoreError` naming the store,
the run and the column, built only once a read failed or a row has the wrong type, so a
whole store reads at the usual cost.

A store is changed behind trackway's back by hand edits, other programs, or a damaged file:
a document stored as text rather than bytes, text that is not UTF-8, a time that is not a
number. The reads that meet such a row raise this error instead of a ``TypeError`` or a
driver's error, and the other runs of the store still read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core._errors import CorruptStoreError
from ._checkpoint import Checkpoint

__all__ = ["DamagedRows", "check_run_rows", "corrupt", "stored_as"]

_AFTER = (
    "The store was changed by something other than trackway, or its file is corrupt; other "
    "runs in it can still be read."
)


def corrupt(where: str, source: str, run_id: str | None, column: str, what: str) -> Exception:
    """The error for ``column`` of ``run_id``'s rows in the store ``where`` (its repr)."""
    whose = "a run" if run_id is None else f"run {run_id!r}"
    return CorruptStoreError(
        f"{where}: {whose} is damaged: {what} (column {column}). {_AFTER}",
        source=source,
        run_id=run_id,
        field=column,
    )


def stored_as(value: object) -> str:
    """What a stored value is, in words: ``text 'yesterday'``, ``bytes``, ``NULL``."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        shown = repr(value) if len(value) <= 40 else repr(value[:37] + "...")
        return f"text {shown}"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"bytes ({len(value)})"
    return f"a {type(value).__name__} {value!r}"


def _is_time(value: object) -> bool:
    return type(value) is float or type(value) is int


def check_run_rows(where: str, source: str, rows: Sequence[Sequence[Any]]) -> None:
    """Refuse ``trackway_runs`` rows (run id, chart id, status, started, ended, commits)
    whose values have the wrong type: a listing that went on would print or sort them wrong."""
    for run_id, chart_id, status, started, ended, count in rows:
        if (
            type(started) is float
            and (ended is None or type(ended) is float)
            and type(run_id) is str
            and type(chart_id) is str
            and type(status) is str
            and type(count) is int
        ):
            continue  # the row as trackway writes it
        if type(run_id) is not str:
            what = f"a run id is {stored_as(run_id)}, not text"
            raise corrupt(where, source, None, "trackway_runs.run_id", what)
        problem = _run_row_problem(chart_id, status, started, ended, count)
        if problem is not None:
            column, what = problem
            raise corrupt(where, source, run_id, column, what)


def _run_row_problem(
    chart_id: object, status: object, started: object, ended: object, count: object
) -> tuple[str, str] | None:
    """``(column, what is wrong)`` for the first value of a run row of the wrong type."""
    for column, value in (("chart_id", chart_id), ("status", status)):
        if type(value) is not str:
            return f"trackway_runs.{column}", f"its {column} is {stored_as(value)}, not text"
    for column, value in (("started_at", started), ("ended_at", ended)):
        if not _is_time(value) and (value is not None or column == "started_at"):
            what = f"its {column} is {stored_as(value)}, not a time in seconds since the epoch"
            return f"trackway_runs.{column}", what
    if type(count) is not int:
        return "trackway_commits.id", f"its commit count is {stored_as(count)}, not a number"
    return None


class DamagedRows:
    """A SQL store's reads, naming what they met (mixed into :class:`~._sqlstore.SqlRunStore`;
    a dialect says which column its driver could not decode)."""

    _P: str

    def _source(self) -> str:
        """The store as a :class:`CorruptStoreError` names it (a file, a URL's host)."""
        return repr(self)

    def _undecodable(self, exc: Exception) -> str | None:
        """The column of a stored text the driver could not decode, if ``exc`` says so (a
        dialect whose text is always valid says nothing)."""
        return None

    def _damaged(self, run_id: str | None, column: str, what: str) -> Exception:
        return corrupt(repr(self), self._source(), run_id, column, what)

    def _reading(self, exc: Exception, run_id: str | None, table: str) -> Exception | None:
        """A read of ``table`` failed: the error naming the column when a stored text could
        not be decoded, else ``None`` (the failure is not about the data)."""
        column = self._undecodable(exc)
        if column is None:
            return None
        whose = "a commit's" if table == "trackway_commits" else "its" if run_id else "a run's"
        return self._damaged(
            run_id, f"{table}.{column}", f"{whose} {column} is stored as text that is not UTF-8"
        )

    def _not_bytes(self, db: Any, run_id: str, lo: int, hi: int) -> Exception:
        """The error for a run whose commit document is not bytes, naming the commit (read
        again, only once loading it failed)."""
        p = self._P
        rows = db.execute(
            f"SELECT id - {p}, doc FROM trackway_commits WHERE id BETWEEN {p} AND {p} ORDER BY id",
            (lo, lo, hi),
        ).fetchall()
        seq, doc = next(
            ((s, d) for s, d in rows if not isinstance(d, (bytes, memoryview))), ("?", None)
        )
        return self._damaged(
            run_id,
            "trackway_commits.doc",
            f"its commit {seq} document is stored as {stored_as(doc)[:60]}, not as bytes "
            "(a BLOB), so it cannot be read",
        )

    def _checkpoint(self, checkpoint_id: str, doc: Any) -> Checkpoint:
        """A stored checkpoint document, read; one that is not bytes is named."""
        if isinstance(doc, str):
            run_id = checkpoint_id.rpartition("@")[0] or None
            raise self._damaged(
                run_id,
                "trackway_checkpoints.doc",
                f"its checkpoint {checkpoint_id!r} is stored as text, not as bytes (a BLOB)",
            )
        return Checkpoint.from_json(bytes(doc))
