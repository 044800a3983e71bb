"""A SQL store's fencing: the writes of a run a worker drives hold the worker's lease.

A store with a run queue (PostgreSQL) knows, per run a worker claimed, the lease token the
claim got (``_fences``); each write of such a run checks it in its own transaction and is
refused with :class:`LeaseLostError` once another worker holds the run. A store without a
queue fences nothing: these are its no-op defaults.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ..core._errors import LeaseLostError

__all__ = ["LeaseFence", "lease_lost"]


class LeaseFence:
    """The hooks a write asks (mixed into :class:`~._sqlstore.SqlRunStore`)."""

    _fences: Mapping[str, str] = MappingProxyType({})
    """Runs whose writes must hold a worker's lease, with its token (see ``queue._claims``)."""

    def _live_run_nos(self, db: Any, run_nos: Sequence[int]) -> set[int]:  # pragma: no cover
        raise NotImplementedError  # the store's own

    def _hold_leases(self, db: Any, run_ids: Iterable[str]) -> set[str]:
        """Of the fenced runs among ``run_ids``, those whose lease is lost (a store with a
        run queue checks; others fence nothing)."""
        return set()

    def _check_lease(self, db: Any, run_id: str) -> None:
        """Refuse this transaction's write of ``run_id`` if it is fenced by a lease this
        store object no longer holds; checked inside the write's own transaction."""
        if run_id in self._fences and self._hold_leases(db, (run_id,)):
            raise lease_lost(run_id)

    def _group_locks(
        self, db: Any, run_nos: Sequence[int], run_ids: Sequence[str]
    ) -> tuple[set[int], set[str]]:
        """For one group transaction: the runs among ``run_nos`` still there, and the runs
        among ``run_ids`` whose lease this store object lost (a dialect may ask both at
        once)."""
        lost = self._hold_leases(db, run_ids) if self._fences else set()
        return self._live_run_nos(db, run_nos), lost

    def _held_clause(self, run_id: str) -> tuple[str, tuple[Any, ...]]:
        """A condition (and its parameters) that a write of ``run_id`` adds to its WHERE so
        that it lands only while the lease is held; ``""`` where nothing is fenced."""
        return "", ()


def lease_lost(run_id: str) -> LeaseLostError:
    return LeaseLostError(
        f"run {run_id!r}: this worker's lease on it was lost (it ran out, and another worker "
        "claimed the run), so this write was refused and the new holder's record stands"
    )
