"""Artifact stores: the port's contract on every implementation (memory, folder, SQLite,
PostgreSQL), scopes that never leak, refs that are never derived from content, folder scope
segments that stay inert, and the SQLite and PostgreSQL migrations that add the table."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.pg import PG_DSN, pg_schema
from trackway.engine import MemoryStore, PostgresStore, SqliteStore
from trackway.engine.stores._postgres import SCHEMA_VERSION as PG_VERSION
from trackway.engine.stores._sqlite import SCHEMA_VERSION
from trackway.tools import (
    ArtifactScope,
    ArtifactStore,
    FolderArtifacts,
    MemoryArtifacts,
    RunStoreArtifacts,
    artifact_value,
)

ANA = ArtifactScope("acme", "ana", "c1")
BOB = ArtifactScope("acme", "bob", "c1")
OTHER_TENANT = ArtifactScope("globex", "ana", "c1")
NOBODY = ArtifactScope(None, None, None)


@pytest.fixture(params=["memory", "folder", "sqlite", "memory-run-store", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ArtifactStore]:
    kind = request.param
    if kind == "memory":
        yield MemoryArtifacts()
    elif kind == "folder":
        yield FolderArtifacts(tmp_path / "artifacts")
    elif kind == "sqlite":
        runs = SqliteStore(tmp_path / "runs.db")
        yield RunStoreArtifacts(runs)
        runs.close()
    elif kind == "memory-run-store":
        yield RunStoreArtifacts(MemoryStore())
    else:
        with pg_schema("art") as dsn:
            runs = PostgresStore(dsn)
            yield RunStoreArtifacts(runs)
            runs.close()


def test_put_head_get_list_keep_the_bytes_and_their_ticket(store: ArtifactStore) -> None:
    data = b'{"rows": [1, 2, 3]}'
    meta = store.put(data, kind="dataset/rows", media_type="application/json", scope=ANA)
    assert meta.ref.startswith("art_") and len(meta.ref) == 26
    assert meta.sha256 == hashlib.sha256(data).hexdigest() and meta.size == len(data)
    assert (meta.kind, meta.media_type, meta.scope) == ("dataset/rows", "application/json", ANA)
    assert meta.created.endswith("Z")
    assert store.head(meta.ref, ANA) == meta
    assert store.get(meta.ref, ANA) == (meta, data)
    assert artifact_value(meta, data) == {"rows": [1, 2, 3]}
    text = store.put(b"a,b\n1,2\n", kind="table/csv", media_type="text/csv", scope=ANA)
    assert store.list(ANA) == [text, meta]  # newest first
    assert store.list(ANA, kind="dataset/rows") == [meta]
    assert store.list(ANA, limit=1) == [text]
    assert artifact_value(text, b"a,b\n1,2\n") == "a,b\n1,2\n"


def test_the_same_bytes_in_one_scope_and_kind_keep_one_ticket(store: ArtifactStore) -> None:
    first = store.put(b"same", kind="k/a", media_type="text/plain", scope=ANA)
    assert store.put(b"same", kind="k/a", media_type="text/plain", scope=ANA) == first
    other_kind = store.put(b"same", kind="k/b", media_type="text/plain", scope=ANA)
    other_scope = store.put(b"same", kind="k/a", media_type="text/plain", scope=BOB)
    assert len({first.ref, other_kind.ref, other_scope.ref}) == 3  # never derived from content
    assert len(store.list(ANA)) == 2


def test_a_ticket_resolves_only_in_its_own_scope(store: ArtifactStore) -> None:
    meta = store.put(b"secret rows", kind="k/a", media_type="text/plain", scope=ANA)
    for scope in (BOB, OTHER_TENANT, NOBODY, ArtifactScope("acme", "ana", None)):
        assert store.head(meta.ref, scope) is None
        assert store.get(meta.ref, scope) is None
        assert store.list(scope) == []
    assert store.get("art_" + "A" * 22, ANA) is None  # unknown
    for bad in ("", "art_", "../../etc/passwd", "art_../../x", meta.ref + "x"):
        assert store.get(bad, ANA) is None


def test_put_refuses_what_it_cannot_keep(store: ArtifactStore) -> None:
    with pytest.raises(TypeError, match="takes bytes"):
        store.put("text", kind="k", media_type="text/plain", scope=ANA)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="name the kind"):
        store.put(b"x", kind=" ", media_type="text/plain", scope=ANA)
    with pytest.raises(ValueError, match="media type"):
        store.put(b"x", kind="k", media_type="plain", scope=ANA)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.tuples(*[st.one_of(st.none(), st.text(max_size=12)) for _ in range(3)]),
    data=st.binary(max_size=64),
)
def test_folder_scope_segments_are_inert(tmp_path: Path, parts, data) -> None:
    """``..``, separators and NUL in a scope land as literal names inside the folder."""
    root = tmp_path / "root"
    store = FolderArtifacts(root)
    scope = ArtifactScope(*parts)
    meta = store.put(data, kind="k", media_type="application/octet-stream", scope=scope)
    assert store.get(meta.ref, scope) == (meta, data)
    for path in root.rglob("*"):
        assert path.resolve().is_relative_to(root.resolve())
    assert all(p.parent.parent.parent.parent == root for p in root.glob("*/*/*/art_*.bin"))


def test_the_folder_never_reads_a_ref_as_a_path(tmp_path: Path) -> None:
    store = FolderArtifacts(tmp_path / "a")
    (tmp_path / "outside.json").write_text('{"ref": "x"}')
    assert store.get("../../../outside", ANA) is None


def _v6(path: Path) -> None:
    """A store made by this version, turned into the shape schema 6 had (no artifacts)."""
    with closing(sqlite3.connect(path)) as db:
        db.executescript("DROP TABLE trackway_artifacts; PRAGMA user_version = 6;")


def test_a_version_6_sqlite_store_gains_the_artifacts_table_in_place(tmp_path: Path) -> None:
    path = tmp_path / "v6.db"
    SqliteStore(path).close()
    _v6(path)
    runs = SqliteStore(path)
    meta = RunStoreArtifacts(runs).put(b"x", kind="k", media_type="text/plain", scope=ANA)
    runs.close()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (7,)
        found = db.execute("SELECT ref, size FROM trackway_artifacts").fetchall()
        assert found == [(meta.ref, 1)]


def test_every_sqlite_artifact_read_is_one_index_search(tmp_path: Path) -> None:
    runs = SqliteStore(tmp_path / "runs.db")
    runs.close()
    with closing(sqlite3.connect(tmp_path / "runs.db")) as db:
        for sql, params in (
            ("SELECT ref FROM trackway_artifacts WHERE ref = ? AND scope_key = ?", ("a", "b")),
            (
                "SELECT ref FROM trackway_artifacts WHERE scope_key = ? AND kind = ? "
                "ORDER BY created DESC, ref DESC LIMIT ?",
                ("a", "k", 5),
            ),
        ):
            plan = " | ".join(r[3] for r in db.execute("EXPLAIN QUERY PLAN " + sql, params))
            assert plan.startswith("SEARCH "), plan


@pytest.mark.skipif(not PG_DSN, reason="TRACKWAY_TEST_PG_DSN is not set")
def test_a_version_2_postgres_schema_gains_the_artifacts_table_in_place() -> None:
    import psycopg

    with pg_schema("artmig") as dsn:
        PostgresStore(dsn).close()
        with psycopg.connect(dsn, autocommit=True) as db:  # the schema version 2 had
            db.execute("DROP TABLE trackway_artifacts")
            db.execute("UPDATE trackway_meta SET value = '2' WHERE name = 'schema_version'")
        runs = PostgresStore(dsn)
        meta = RunStoreArtifacts(runs).put(b"x", kind="k", media_type="text/plain", scope=ANA)
        runs.close()
        with psycopg.connect(dsn, autocommit=True) as db:
            assert db.execute("SELECT value FROM trackway_meta").fetchone() == (str(PG_VERSION),)
            assert PG_VERSION == 3
            assert db.execute("SELECT ref FROM trackway_artifacts").fetchall() == [(meta.ref,)]
