"""A SQLite store changed by something other than trackway: every read names the file, the
run and the column with a CorruptStoreError (a StoreError and a DocumentError), never a
TypeError or a sqlite3 error, and leaves the other runs readable."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from trackway import Executor, SqliteStore, flow_chart
from trackway.engine import CorruptStoreError, DocumentError, StoreError
from trackway.engine.core._values import MAX_DEPTH


def _chart():  # type: ignore[no-untyped-def]
    def ask(scope):  # type: ignore[no-untyped-def]
        scope["asked"] = True
        scope.pause({"question": "ok?"})

    return (
        flow_chart("Write", lambda s: s.__setitem__("plain", 1), id="write")
        .then("Ask", ask, id="ask", on_resume=lambda s, v: None)
        .build()
    )


def stored(tmp_path: Path, runs: int = 2) -> tuple[Path, list[str]]:
    """A store with ``runs`` paused runs (two commits each, a checkpoint each), written by
    the real SqliteStore."""
    path = tmp_path / "runs.db"
    store = SqliteStore(path)
    ids = [Executor(_chart(), store=store).run_sync().run_id for _ in range(runs)]
    store.close()
    return path, ids


def damage(path: Path, sql: str, *params: object) -> None:
    with closing(sqlite3.connect(path)) as db:
        db.execute(sql, params)
        db.commit()


def first_commit_of(path: Path, run_id: str) -> int:
    with closing(sqlite3.connect(path)) as db:
        (run_no,) = db.execute(
            "SELECT run_no FROM trackway_runs WHERE run_id = ?", (run_id,)
        ).fetchone()
    return int(run_no) * 2**32 + 1


def read_only(path: Path) -> SqliteStore:
    return SqliteStore(path, read_only=True)


def expect_corrupt(
    read: Callable[[], object], path: Path, column: str, *words: str
) -> CorruptStoreError:
    with pytest.raises(CorruptStoreError) as info:
        read()
    err = info.value
    message = str(err)
    assert str(path) in message and column in message, message
    for word in words:
        assert word in message, message
    assert err.source == str(path) and err.field == column
    assert isinstance(err, StoreError) and isinstance(err, DocumentError)
    return err


def test_a_commit_document_stored_as_text_names_the_run_and_the_column(tmp_path: Path) -> None:
    path, (bad, good) = stored(tmp_path)
    damage(
        path,
        "UPDATE trackway_commits SET doc = CAST(doc AS TEXT) WHERE id = ?",
        first_commit_of(path, bad),
    )
    store = read_only(path)
    err = expect_corrupt(
        lambda: store.load(bad), path, "trackway_commits.doc", repr(bad), "commit 1", "text"
    )
    assert err.run_id == bad
    assert store.load(good).state["plain"] == 1  # the other runs still read
    assert len(store.history(bad)) == 2  # history reads no documents
    store.close()


def test_a_stage_path_that_is_not_utf8_names_the_run_and_the_column(tmp_path: Path) -> None:
    path, (bad, good) = stored(tmp_path)
    damage(
        path,
        "UPDATE trackway_commits SET stage_path = CAST(X'fffe41' AS TEXT) WHERE id = ?",
        first_commit_of(path, bad),
    )
    store = read_only(path)
    for read in (lambda: store.load(bad), lambda: store.history(bad)):
        err = expect_corrupt(read, path, "trackway_commits.stage_path", repr(bad), "UTF-8")
        assert err.run_id == bad
    assert store.load(good).status == "paused"
    store.close()


@pytest.mark.parametrize(
    ("column", "value"),
    [("started_at", "yesterday"), ("ended_at", "later"), ("started_at", b"\x00\x01")],
    ids=["started-text", "ended-text", "started-blob"],
)
def test_a_run_time_that_is_not_a_number_is_named_by_list_runs(
    tmp_path: Path, column: str, value: object
) -> None:
    path, (bad, _good) = stored(tmp_path)
    damage(path, f"UPDATE trackway_runs SET {column} = ? WHERE run_id = ?", value, bad)
    store = read_only(path)
    err = expect_corrupt(store.list_runs, path, f"trackway_runs.{column}", repr(bad), "seconds")
    assert err.run_id == bad
    store.close()


def test_a_run_id_that_is_not_utf8_is_named_by_list_runs(tmp_path: Path) -> None:
    path, (bad, _good) = stored(tmp_path)
    damage(
        path, "UPDATE trackway_runs SET chart_id = CAST(X'fffe41' AS TEXT) WHERE run_id = ?", bad
    )
    store = read_only(path)
    expect_corrupt(store.list_runs, path, "trackway_runs.chart_id", "UTF-8")
    store.close()


def test_a_checkpoint_stored_as_text_is_named_by_load_checkpoint_and_paused(tmp_path: Path) -> None:
    path, (bad, _good) = stored(tmp_path)
    damage(path, "UPDATE trackway_checkpoints SET doc = CAST(doc AS TEXT)")
    store = read_only(path)
    expect_corrupt(
        lambda: store.load_checkpoint(f"{bad}@2"), path, "trackway_checkpoints.doc", "text"
    )
    expect_corrupt(store.paused, path, "trackway_checkpoints.doc", "text")
    store.close()


def test_a_value_nested_deeper_than_trackway_writes_is_named(tmp_path: Path) -> None:
    path, (bad, _good) = stored(tmp_path)
    at = first_commit_of(path, bad)
    with closing(sqlite3.connect(path)) as db:
        (doc,) = db.execute("SELECT doc FROM trackway_commits WHERE id = ?", (at,)).fetchone()
    deep = b"[" * 300 + b"1" + b"]" * 300
    changed = bytes(doc).replace(b'["set","plain",1]', b'["set","plain",' + deep + b"]")
    assert changed != bytes(doc)
    damage(path, "UPDATE trackway_commits SET doc = ? WHERE id = ?", changed, at)
    store = read_only(path)
    expect_corrupt(
        lambda: store.load(bad),
        path,
        "trackway_commits.doc",
        repr(bad),
        "commit 1",
        f"nested deeper than {MAX_DEPTH} levels",
    )
    store.close()
