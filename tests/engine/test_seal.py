"""Sealed copies under a redaction policy (issue 30): a store given ``seal=Seal(key)`` keeps
the real values beside the redacted rows, so a redacted run resumes by id and recovers after
a crash, while no byte of a hidden value rests in the file in clear and ``load`` stays
redacted. The key is checked, bound to its row, and rotatable."""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.backends import run_async
from trackway import Executor, SqliteStore, flow_chart
from trackway.engine import (
    ConfigurationError,
    ExecutorUsageError,
    RedactionPolicy,
    Seal,
    SealError,
)
from trackway.engine.run._release import Released, StopSignal, driving_with
from trackway.engine.stores._sqlite import SCHEMA_VERSION

pytestmark = pytest.mark.usefixtures("async_backend")

SECRET = "sk-live-4f9a2c77e1"
ANSWER = "approved by Dana, badge 4471"
POLICY = RedactionPolicy(keys=["api_key", "token", "approval"], pauses=True)


def _file_bytes(path: Path) -> bytes:
    """The store file and its WAL, as they rest on disk."""
    out = path.read_bytes()
    wal = path.with_name(path.name + "-wal")
    return out + (wal.read_bytes() if wal.exists() else b"")


def _chart() -> Any:
    def take(scope: Any) -> None:
        scope["token"] = scope["api_key"][::-1]  # a second hidden key, derived

    def ask(scope: Any) -> None:
        scope.pause({"question": f"charge with key ending {scope['api_key'][-4:]}?"})

    def answered(scope: Any, value: Any) -> None:
        scope["approval"] = value

    def pay(scope: Any) -> None:
        scope["paid"] = scope["api_key"] == SECRET and scope["token"] == SECRET[::-1]

    return (
        flow_chart("Take", take, id="take")
        .then("Ask", ask, id="ask", on_resume=answered)
        .then("Pay", pay, id="pay")
        .build()
    )


def test_a_redacted_run_resumes_by_id_from_a_sealed_store(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SqliteStore(path, seal=Seal(Seal.new_key()))
    executor = Executor(_chart(), store=store, redact=POLICY)
    paused = executor.run_sync({"api_key": SECRET})
    assert paused.status == "paused"
    # by id, in "another process": only the store, never the returned checkpoint
    later = Executor(_chart(), store=store, redact=POLICY)
    done = later.resume_sync(paused.run_id, ANSWER)
    assert done.status == "done" and done.state["paid"] is True
    assert done.state["approval"] == ANSWER
    snap = store.load(done.run_id)
    assert snap.state["api_key"] == "[REDACTED]" and snap.state["token"] == "[REDACTED]"
    kept = store.load_checkpoint(paused.checkpoint.checkpoint_id)
    assert kept.redacted and kept.payload == "[REDACTED]"
    store.close()
    raw = _file_bytes(path)
    for secret in (SECRET, SECRET[::-1], ANSWER, SECRET[-4:] + "?"):
        assert secret.encode() not in raw, secret


def test_a_redacted_run_is_recovered_from_a_sealed_store(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    key = Seal.new_key()
    store = SqliteStore(path, seal=Seal(key))

    def take(scope: Any) -> None:
        time.sleep(0.01)  # the walker checks the stop signal where it yields (every 5 ms)
        scope["token"] = scope["api_key"] + "!"

    chart = (
        flow_chart("Take", take, id="take")
        .then("Pay", lambda s: s.__setitem__("paid", s["token"] == SECRET + "!"), id="pay")
        .build()
    )
    sig = StopSignal()

    class Cut:  # the run's driver "dies" at the first stage boundary
        def on_commit(self, event: Any) -> None:
            sig.request("simulated death")

    async def die() -> str:
        ex = Executor(chart, store=store, redact=POLICY, recorders=[Cut()])
        with driving_with(sig), pytest.raises(Released):
            await ex.run({"api_key": SECRET}, run_id="run-cut")
        return "run-cut"

    rid = run_async(die)
    assert store.load(rid).status == "running" and len(store.load(rid)) == 1
    store.close()
    again = SqliteStore(path, seal=Seal(key))  # a new process, the same key
    done = Executor(chart, store=again, redact=POLICY).recover_sync(rid)
    assert done.status == "done" and done.state["paid"] is True  # took the real token
    assert again.load(rid).state["token"] == "[REDACTED]"
    again.close()
    assert SECRET.encode() not in _file_bytes(path)

    unsealed = SqliteStore(path)  # without the key: refused, naming the fix
    with pytest.raises(ExecutorUsageError, match=r"seal=Seal\(key\)"):
        Executor(chart, store=unsealed, redact=POLICY).recover_sync(rid)
    unsealed.close()


def test_a_sealed_value_opens_only_with_its_key_and_in_its_own_row(tmp_path: Path) -> None:
    old, new = Seal.new_key(), Seal.new_key()
    sealed = Seal(old).seal(b'{"api_key": "x"}', "initial:run-a")
    assert Seal(old).open(sealed, "initial:run-a") == b'{"api_key": "x"}'
    with pytest.raises(SealError, match="another key"):
        Seal(new).open(sealed, "initial:run-a")
    with pytest.raises(SealError, match="moved here from another row"):
        Seal(old).open(sealed, "initial:run-b")
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(SealError, match="altered"):
        Seal(old).open(tampered, "initial:run-a")
    rotated = Seal(new, previous=[old])  # after a rotation, old values still open
    assert rotated.open(sealed, "initial:run-a") == b'{"api_key": "x"}'
    assert rotated.open(rotated.seal(b"n", "p"), "p") == b"n"
    assert old not in repr(Seal(old))


def test_bad_keys_and_bad_seals_are_refused_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"32 random bytes.*Seal.new_key\(\)"):
        Seal("too-short")
    with pytest.raises(ConfigurationError, match="str or bytes"):
        Seal(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="list of keys"):
        Seal(Seal.new_key(), previous=Seal.new_key())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"seal= takes a Seal\(key\)"):
        SqliteStore(tmp_path / "x.db", seal="a key")  # type: ignore[arg-type]
    assert Seal(bytes(32)).open(Seal(bytes(32)).seal(b"a", "p"), "p") == b"a"


def test_a_store_without_the_key_cannot_open_sealed_rows(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SqliteStore(path, seal=Seal(Seal.new_key()))
    paused = Executor(_chart(), store=store, redact=POLICY).run_sync({"api_key": SECRET})
    store.close()
    other = SqliteStore(path, seal=Seal(Seal.new_key()))
    with pytest.raises(SealError, match="another key"):
        Executor(_chart(), store=other, redact=POLICY).resume_sync(paused.run_id, "yes")
    other.close()


def test_a_version_4_sqlite_store_is_migrated_to_keep_sealed_copies(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    chart = flow_chart("A", lambda s: s.__setitem__("a", 1), id="a").build()
    store = SqliteStore(path)
    first = Executor(chart, store=store).run_sync().run_id
    store.close()
    with closing(sqlite3.connect(path)) as db:  # back to schema 4: no sealed columns
        db.executescript(
            """
            ALTER TABLE trackway_runs DROP COLUMN sealed;
            ALTER TABLE trackway_checkpoints DROP COLUMN sealed;
            ALTER TABLE trackway_checkpoints DROP COLUMN sealed_answer;
            PRAGMA user_version = 4;
            """
        )
    look = SqliteStore(path, read_only=True)  # read as it is, unchanged
    assert look.load(first).status == "done"
    look.close()
    store = SqliteStore(path, seal=Seal(Seal.new_key()))
    paused = Executor(_chart(), store=store, redact=POLICY).run_sync({"api_key": SECRET})
    done = Executor(_chart(), store=store, redact=POLICY).resume_sync(paused.run_id, "ok")
    assert done.status == "done" and store.load(first).status == "done"
    store.close()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
