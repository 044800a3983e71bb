"""Memory rows: what an agent's memory keeps between runs, beside the runs in the same store.

The engine knows nothing of what a memory is; it keeps opaque JSON documents under a
*scope* (a key the caller made, e.g. a digest of who the run is for) and a *memory id*:

- entries (``trackway_memory``): appended in order, numbered per scope and memory from 1;
  read back newest first, a bounded number at a time (the last N turns, the latest summary);
- facts (``trackway_memory_facts``): one document per fact key, the latest write wins (the
  earlier row of a key is deleted, found by a unique index on the key); read back most
  recently written first, a bounded number at a time.

Both tables are keyed (and in SQLite clustered) by (scope, memory id, number, ...), so every
read is one range of one primary key: its cost is the number of rows read, never the number
kept. Keys, ids and documents reach SQL only as parameters;
a fact's key is stored as a digest (its document holds the key itself), so no caller string
ever becomes SQL text or a PostgreSQL ``TEXT`` (which cannot hold NUL).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from ..core._values import exact_bytes

__all__ = ["MemoryRows", "MemoryTables", "SqlMemoryRows", "fact_digest"]


@runtime_checkable
class MemoryRows(Protocol):
    """What an agent's memory needs from a store (``MemoryStore``, ``SqliteStore`` and
    ``PostgresStore`` have it). Every method is safe to call from any thread."""

    def memory_append(self, scope: str, memory_id: str, kind: str, doc: bytes) -> int:
        """Append one entry; returns its number (1 for the first of this scope and id)."""
        ...

    def memory_recent(self, scope: str, memory_id: str, limit: int) -> list[tuple[int, bytes]]:
        """The latest ``limit`` entries, newest first, as ``(number, document)``."""
        ...

    def memory_put_facts(
        self, scope: str, memory_id: str, facts: Sequence[tuple[str, bytes]]
    ) -> int:
        """Write facts ``(key, document)`` (a key written before is replaced); returns the
        number this write got (every fact of one write shares it)."""
        ...

    def memory_facts(self, scope: str, memory_id: str, limit: int) -> list[tuple[int, bytes]]:
        """The ``limit`` most recently written facts, newest first, as ``(number,
        document)``."""
        ...


def fact_digest(key: str) -> str:
    """The stored form of a fact's key: a digest (any str, NUL and lone surrogates too)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


class MemoryTables:
    """:class:`MemoryRows` in this process's memory (for ``MemoryStore``)."""

    _lock: threading.Lock
    _entries: dict[tuple[str, str], list[tuple[int, bytes]]]
    _facts: dict[tuple[str, str], dict[str, tuple[int, bytes]]]
    _fact_seq: dict[tuple[str, str], int]

    def _init_memory(self) -> None:
        self._entries = {}
        self._facts = {}
        self._fact_seq = {}

    def memory_append(self, scope: str, memory_id: str, kind: str, doc: bytes) -> int:
        with self._lock:
            rows = self._entries.setdefault((scope, memory_id), [])
            seq = len(rows) + 1
            rows.append((seq, exact_bytes(doc)))
            return seq

    def memory_recent(self, scope: str, memory_id: str, limit: int) -> list[tuple[int, bytes]]:
        with self._lock:
            rows = self._entries.get((scope, memory_id), [])
            return rows[: -limit - 1 : -1] if limit > 0 else []

    def memory_put_facts(
        self, scope: str, memory_id: str, facts: Sequence[tuple[str, bytes]]
    ) -> int:
        with self._lock:
            seq = self._fact_seq.get((scope, memory_id), 0) + 1
            self._fact_seq[(scope, memory_id)] = seq
            kept = self._facts.setdefault((scope, memory_id), {})
            for key, doc in facts:
                kept[fact_digest(key)] = (seq, exact_bytes(doc))
            return seq

    def memory_facts(self, scope: str, memory_id: str, limit: int) -> list[tuple[int, bytes]]:
        with self._lock:
            kept = self._facts.get((scope, memory_id), {})
            ranked = sorted(kept.items(), key=lambda item: (item[1][0], item[0]), reverse=True)
            return [row for _, row in ranked[: max(limit, 0)]]


class SqlMemoryRows:
    """:class:`MemoryRows` on the SQL stores' ``trackway_memory`` tables (any dialect here:
    the store provides ``_tx``, ``_read_tx`` and the placeholder ``_P``)."""

    _P = "?"

    def _tx(self) -> AbstractContextManager[Any]:  # pragma: no cover - provided
        raise NotImplementedError

    def _read_tx(self) -> AbstractContextManager[Any]:  # pragma: no cover - provided
        raise NotImplementedError

    def _memory_lock(self, db: Any, scope: str, memory_id: str) -> None:
        """Serialize writers of one scope and memory in this transaction (SQLite's write
        transaction already does; PostgreSQL takes an advisory lock)."""

    def memory_append(self, scope: str, memory_id: str, kind: str, doc: bytes) -> int:
        p = self._P
        with self._tx() as db:
            self._memory_lock(db, scope, memory_id)
            (last,) = db.execute(
                f"SELECT MAX(seq) FROM trackway_memory WHERE scope = {p} AND memory_id = {p}",
                (scope, memory_id),
            ).fetchone()
            seq = int(last or 0) + 1
            db.execute(
                "INSERT INTO trackway_memory (scope, memory_id, seq, kind, written_at, doc) "
                f"VALUES ({p}, {p}, {p}, {p}, {p}, {p})",
                (scope, memory_id, seq, kind, time.time(), bytes(doc)),
            )
        return seq

    def memory_recent(self, scope: str, memory_id: str, limit: int) -> list[tuple[int, bytes]]:
        if limit <= 0:
            return []
        p = self._P
        with self._read_tx() as db:
            rows = db.execute(RECENT_SQL.format(p=p), (scope, memory_id, limit)).fetchall()
        return [(int(seq), bytes(doc)) for seq, doc in rows]

    def memory_put_facts(
        self, scope: str, memory_id: str, facts: Sequence[tuple[str, bytes]]
    ) -> int:
        p = self._P
        with self._tx() as db:
            self._memory_lock(db, scope, memory_id)
            (last,) = db.execute(
                f"SELECT MAX(seq) FROM trackway_memory_facts WHERE scope = {p} AND memory_id = {p}",
                (scope, memory_id),
            ).fetchone()
            seq = int(last or 0) + 1
            now = time.time()
            for key, doc in facts:  # the key's earlier value goes (found by its index)
                digest = fact_digest(key)
                db.execute(
                    "DELETE FROM trackway_memory_facts "
                    f"WHERE scope = {p} AND memory_id = {p} AND fact = {p}",
                    (scope, memory_id, digest),
                )
                db.execute(
                    "INSERT INTO trackway_memory_facts (scope, memory_id, seq, fact, "
                    f"written_at, doc) VALUES ({p}, {p}, {p}, {p}, {p}, {p})",
                    (scope, memory_id, seq, digest, now, bytes(doc)),
                )
        return seq

    def memory_facts(self, scope: str, memory_id: str, limit: int) -> list[tuple[int, bytes]]:
        if limit <= 0:
            return []
        p = self._P
        with self._read_tx() as db:
            rows = db.execute(FACTS_SQL.format(p=p), (scope, memory_id, limit)).fetchall()
        return [(int(seq), bytes(doc)) for seq, doc in rows]


RECENT_SQL = (
    "SELECT seq, doc FROM trackway_memory WHERE scope = {p} AND memory_id = {p} "
    "ORDER BY seq DESC LIMIT {p}"
)
"""The latest entries: one backward range of the primary key (scope, memory_id, seq)."""
FACTS_SQL = (
    "SELECT seq, doc FROM trackway_memory_facts WHERE scope = {p} AND memory_id = {p} "
    "ORDER BY seq DESC, fact DESC LIMIT {p}"
)
"""The latest facts: one backward range of the primary key (scope, memory_id, seq, fact)."""
