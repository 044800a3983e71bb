"""Memory rows on every store (memory, a SQLite file, PostgreSQL): numbering, order, bounds,
the latest fact winning; the SQLite and PostgreSQL schema migrations that add them, and the
refusal of a store a newer trackway wrote; the query plan every read uses."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.pg import PG_DSN, pg_schema
from trackway import Executor, flow_chart
from trackway.engine import MemoryRows, MemoryStore, PostgresStore, SqliteStore, StoreError
from trackway.engine.stores._memory_rows import FACTS_SQL, RECENT_SQL
from trackway.engine.stores._postgres import SCHEMA_VERSION as PG_VERSION
from trackway.engine.stores._sqlite import SCHEMA_VERSION

SCOPE = hashlib.sha256(b"someone").hexdigest()
OTHER = hashlib.sha256(b"someone else").hexdigest()


def doc(**value: Any) -> bytes:
    return orjson.dumps(value)


def test_every_store_keeps_memory(store: Any) -> None:
    assert isinstance(store, MemoryRows)
    assert [store.memory_append(SCOPE, "chat", "turn", doc(n=n)) for n in range(5)] == [
        1,
        2,
        3,
        4,
        5,
    ]
    assert store.memory_append(OTHER, "chat", "turn", doc(n=99)) == 1  # numbered per scope
    assert store.memory_append(SCOPE, "notes", "summary", doc(s="x")) == 1  # and per memory
    recent = store.memory_recent(SCOPE, "chat", 3)
    assert [(seq, orjson.loads(d)["n"]) for seq, d in recent] == [(5, 4), (4, 3), (3, 2)]
    assert store.memory_recent(SCOPE, "chat", 0) == []
    assert len(store.memory_recent(SCOPE, "chat", 50)) == 5
    assert store.memory_recent(SCOPE, "none", 5) == []
    assert [orjson.loads(d) for _, d in store.memory_recent(OTHER, "chat", 9)] == [{"n": 99}]


def test_facts_keep_the_latest_value_per_key_whatever_the_key_holds(store: Any) -> None:
    hostile = ["it's", "100%", "_", "nul\x00key", "x" * 10_240, "", "'; DROP TABLE x; --"]
    first = store.memory_put_facts(SCOPE, "prefs", [(k, doc(key=k, v=1)) for k in hostile])
    assert first == 1
    second = store.memory_put_facts(SCOPE, "prefs", [("_", doc(key="_", v=2))])
    assert second == 2
    facts = [orjson.loads(d) for _, d in store.memory_facts(SCOPE, "prefs", 100)]
    assert len(facts) == len(hostile)
    assert facts[0] == {"key": "_", "v": 2}  # the latest write first
    assert sorted(f["key"] for f in facts) == sorted(hostile)
    assert len(store.memory_facts(SCOPE, "prefs", 2)) == 2
    assert store.memory_facts(OTHER, "prefs", 10) == []


def _v5(path: Path) -> None:
    """Turn a store made by this version into the shape schema 5 had (no memory tables)."""
    with closing(sqlite3.connect(path)) as db:
        db.executescript(
            """
            DROP TABLE trackway_memory;
            DROP TABLE trackway_memory_facts;
            PRAGMA user_version = 5;
            """
        )


def test_a_version_5_sqlite_store_is_migrated_and_a_newer_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    chart = flow_chart("A", lambda s: s.__setitem__("a", 1), id="a").build()
    store = SqliteStore(path)
    run_id = Executor(chart, store=store).run_sync().run_id
    before = store.load(run_id)
    store.close()
    _v5(path)
    with closing(sqlite3.connect(path)) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "trackway_memory" not in tables
    store = SqliteStore(path)
    assert store.load(run_id) == before
    assert store.memory_append(SCOPE, "chat", "turn", doc(n=1)) == 1
    store.close()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (7,)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(StoreError) as info:
        SqliteStore(path)
    assert f"schema version {SCHEMA_VERSION + 1}, written by a newer trackway" in str(info.value)
    assert "Upgrade trackway" in str(info.value)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest  # left as it was


def test_every_sqlite_memory_read_is_one_index_range(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    store.memory_append(SCOPE, "chat", "turn", doc(n=1))
    store.memory_put_facts(SCOPE, "prefs", [("k", doc(key="k"))])
    store.close()
    with closing(sqlite3.connect(tmp_path / "runs.db")) as db:
        for sql in (RECENT_SQL, FACTS_SQL):
            plan = " | ".join(
                r[3] for r in db.execute("EXPLAIN QUERY PLAN " + sql.format(p="?"), (SCOPE, "x", 5))
            )
            assert plan.startswith("SEARCH "), plan
            assert "(scope=? AND memory_id=?)" in plan, plan
            assert "TEMP B-TREE" not in plan and "SCAN" not in plan, plan


@pytest.mark.skipif(not PG_DSN, reason="TRACKWAY_TEST_PG_DSN is not set")
def test_an_older_postgres_schema_is_migrated_and_a_newer_one_refused() -> None:
    import psycopg

    with pg_schema("mig") as dsn:
        store = PostgresStore(dsn)
        chart = flow_chart("A", lambda s: s.__setitem__("a", 1), id="a").build()
        run_id = Executor(chart, store=store).run_sync().run_id
        before = store.load(run_id)
        store.close()
        with psycopg.connect(dsn, autocommit=True) as db:  # the schema before trackway_meta
            db.execute("DROP TABLE trackway_memory, trackway_memory_facts, trackway_meta")
        store = PostgresStore(dsn)
        assert store.load(run_id) == before
        assert store.memory_append(SCOPE, "chat", "turn", doc(n=1)) == 1
        store.close()
        with psycopg.connect(dsn, autocommit=True) as db:
            (version,) = db.execute(
                "SELECT value FROM trackway_meta WHERE name = 'schema_version'"
            ).fetchone()
            assert int(version) == PG_VERSION == 3
            db.execute("UPDATE trackway_meta SET value = '4' WHERE name = 'schema_version'")
        with pytest.raises(StoreError) as info:
            PostgresStore(dsn)
        assert "trackway schema version 4, written by a newer trackway" in str(info.value)
        with psycopg.connect(dsn, autocommit=True) as db:  # nothing was changed
            assert db.execute("SELECT value FROM trackway_meta").fetchone() == ("4",)
            assert db.execute("SELECT count(*) FROM trackway_memory").fetchone() == (1,)


def test_a_memory_store_is_a_memory_rows() -> None:
    assert isinstance(MemoryStore(), MemoryRows)
