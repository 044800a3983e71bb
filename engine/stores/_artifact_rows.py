"""Artifact rows: large results kept beside the runs, in the same store (``trackway_artifacts``).

The engine knows nothing of tickets or kinds beyond storing them: a row is a ref the caller
minted, its kind, the sha256 and size of its bytes, a media type, the scope it was put under
(tenant, principal, conversation, each possibly ``None``), when it was created, and the
bytes. Rows are found by ref *and* scope, never by ref alone, so a ref is worthless under
another scope. The same bytes put again under one scope and kind return the row already
there (one ticket per content, found by a unique index). Caller strings reach SQL only as
parameters; the scope is matched through a digest (``scope_key``), so ``None`` parts match
exactly and every lookup is one index range.
"""

from __future__ import annotations

import hashlib
import threading
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol, runtime_checkable

import orjson

from ..core._values import exact_bytes

__all__ = ["ArtifactRow", "ArtifactRows", "ArtifactTables", "SqlArtifactRows", "scope_key"]


class ArtifactRow(NamedTuple):
    """One stored artifact without its bytes."""

    ref: str
    kind: str
    sha256: str
    size: int
    media_type: str
    tenant: str | None
    principal: str | None
    conversation: str | None
    created: str


@runtime_checkable
class ArtifactRows(Protocol):
    """What an artifact store needs from a run store (``MemoryStore``, ``SqliteStore`` and
    ``PostgresStore`` have it). Every method is safe to call from any thread."""

    def artifact_put(self, row: ArtifactRow, data: bytes) -> ArtifactRow:
        """Keep ``data`` under ``row``; returns the row kept (an earlier one of the same scope,
        kind and sha256 if there is one: its ref, not ``row.ref``)."""
        ...

    def artifact_get(
        self, ref: str, scope: tuple[str | None, str | None, str | None], data: bool
    ) -> tuple[ArtifactRow, bytes | None] | None:
        """The row of ``ref`` under ``scope`` (and its bytes when ``data``), or ``None``."""
        ...

    def artifact_list(
        self, scope: tuple[str | None, str | None, str | None], kind: str | None, limit: int
    ) -> list[ArtifactRow]:
        """Up to ``limit`` rows of ``scope`` (of ``kind`` if given), newest first."""
        ...


def scope_key(scope: tuple[str | None, str | None, str | None]) -> str:
    """The digest a scope is matched by (``None`` and ``""`` differ; any str, NUL too)."""
    return hashlib.sha256(orjson.dumps(list(scope))).hexdigest()


class ArtifactTables:
    """:class:`ArtifactRows` in this process's memory (for ``MemoryStore``)."""

    _lock: threading.Lock
    _artifacts: dict[str, tuple[str, ArtifactRow, bytes]]

    def _init_artifacts(self) -> None:
        self._artifacts = {}

    def artifact_put(self, row: ArtifactRow, data: bytes) -> ArtifactRow:
        key = scope_key((row.tenant, row.principal, row.conversation))
        with self._lock:
            for held_key, held, _ in self._artifacts.values():
                if (held_key, held.kind, held.sha256) == (key, row.kind, row.sha256):
                    return held
            self._artifacts[row.ref] = (key, row, exact_bytes(data))
            return row

    def artifact_get(
        self, ref: str, scope: tuple[str | None, str | None, str | None], data: bool
    ) -> tuple[ArtifactRow, bytes | None] | None:
        with self._lock:
            found = self._artifacts.get(ref)
        if found is None or found[0] != scope_key(scope):
            return None
        return found[1], (found[2] if data else None)

    def artifact_list(
        self, scope: tuple[str | None, str | None, str | None], kind: str | None, limit: int
    ) -> list[ArtifactRow]:
        key = scope_key(scope)
        with self._lock:
            rows = [r for k, r, _ in self._artifacts.values() if k == key]
        rows = [r for r in rows if kind is None or r.kind == kind]
        rows.sort(key=lambda r: (r.created, r.ref), reverse=True)
        return rows[: max(limit, 0)]


_COLUMNS = "ref, kind, sha256, size, media_type, tenant, principal, conversation, created"


class SqlArtifactRows:
    """:class:`ArtifactRows` on the SQL stores' ``trackway_artifacts`` table (any dialect
    here: the store provides ``_tx``, ``_read_tx`` and the placeholder ``_P``)."""

    _P = "?"

    def _tx(self) -> AbstractContextManager[Any]:  # pragma: no cover - provided
        raise NotImplementedError

    def _read_tx(self) -> AbstractContextManager[Any]:  # pragma: no cover - provided
        raise NotImplementedError

    def artifact_put(self, row: ArtifactRow, data: bytes) -> ArtifactRow:
        p = self._P
        key = scope_key((row.tenant, row.principal, row.conversation))
        with self._tx() as db:  # the same content again (even from another writer): no row
            db.execute(
                f"INSERT INTO trackway_artifacts ({_COLUMNS}, scope_key, data) VALUES "
                f"({', '.join([p] * 11)}) ON CONFLICT DO NOTHING",
                (*row, key, bytes(data)),
            )
            held = db.execute(
                f"SELECT {_COLUMNS} FROM trackway_artifacts WHERE scope_key = {p} AND kind = {p} "
                f"AND sha256 = {p}",
                (key, row.kind, row.sha256),
            ).fetchone()
        return _row(held)

    def artifact_get(
        self, ref: str, scope: tuple[str | None, str | None, str | None], data: bool
    ) -> tuple[ArtifactRow, bytes | None] | None:
        p = self._P
        columns = f"{_COLUMNS}, data" if data else _COLUMNS
        with self._read_tx() as db:
            found = db.execute(
                f"SELECT {columns} FROM trackway_artifacts WHERE ref = {p} AND scope_key = {p}",
                (ref, scope_key(scope)),
            ).fetchone()
        if found is None:
            return None
        return _row(found[:9]), (bytes(found[9]) if data else None)

    def artifact_list(
        self, scope: tuple[str | None, str | None, str | None], kind: str | None, limit: int
    ) -> list[ArtifactRow]:
        if limit <= 0:
            return []
        p = self._P
        of_kind = f" AND kind = {p}" if kind is not None else ""
        params: tuple[Any, ...] = (scope_key(scope), *((kind,) if kind is not None else ()))
        with self._read_tx() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM trackway_artifacts WHERE scope_key = {p}{of_kind} "
                f"ORDER BY created DESC, ref DESC LIMIT {p}",
                (*params, limit),
            ).fetchall()
        return [_row(r) for r in rows]


def _row(found: Any) -> ArtifactRow:
    ref, kind, sha, size, media, tenant, principal, conversation, created = found
    return ArtifactRow(ref, kind, sha, int(size), media, tenant, principal, conversation, created)


ARTIFACTS_TABLE = """
CREATE TABLE IF NOT EXISTS trackway_artifacts (
    ref TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size {int} NOT NULL,
    media_type TEXT NOT NULL,
    tenant TEXT,
    principal TEXT,
    conversation TEXT,
    created TEXT NOT NULL,
    scope_key TEXT NOT NULL,
    data {blob} NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS trackway_artifacts_content
    ON trackway_artifacts (scope_key, kind, sha256);
CREATE INDEX IF NOT EXISTS trackway_artifacts_recent
    ON trackway_artifacts (scope_key, created);
"""
"""The table in either dialect (``{int}``, ``{blob}``: its integer and bytes types)."""
