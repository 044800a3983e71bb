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

from ._errors import CorruptStoreError

__all__ = ["check_run_rows", "corrupt", "stored_as"]

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
