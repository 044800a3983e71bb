"""Redacted agents in the worker pool, on the real PostgreSQL (issue 30): a paused run is
answered through the queue, a run whose worker was SIGKILLed is recovered, and no table holds
a value the policy hides, while the run itself sees real values throughout."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import Any

import psycopg
import pytest

from trackway import Agent, PostgresStore, mock
from trackway.agent import conversation_redaction
from trackway.engine import ConfigurationError, Seal, Worker
from trackway.tools import ask_human

from .charts import SECRET_MESSAGE, SIDE_FILE
from .test_worker_processes import Pool, _wait_until

pytestmark = pytest.mark.usefixtures("async_backend")

SECRET_ANSWER = "the PIN is 9876-5432"
KEY = Seal.new_key()


def _asking(request: Any) -> Any:
    said = " ".join(str(m.content) for m in request.messages)
    assert "[REDACTED]" not in said, said  # the run sees real values throughout
    last = request.messages[-1]
    if last.role == "user":
        return {"tool_calls": [{"id": "a1", "name": "ask_human", "args": {"question": "PIN?"}}]}
    return f"Noted: {last.content}"


def _asking_agent() -> Agent:
    return (
        Agent.create(
            provider=mock(respond=_asking), model="m", name="desk", redact=conversation_redaction()
        )
        .tool(ask_human())
        .build()
    )


def _secrets_at_rest(dsn: str, *secrets: str) -> list[str]:
    """Every table of the test's schema, every column, scanned for each secret (and its
    UTF-8 bytes): where one rests, as ``table.column``."""
    found = []
    with psycopg.connect(dsn) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        ]
        for table in tables:
            cur = conn.execute(f"SELECT * FROM {table}")
            names = [d.name for d in cur.description or ()]
            for row in cur.fetchall():
                for name, value in zip(names, row, strict=True):
                    blob = bytes(value) if isinstance(value, (bytes, memoryview)) else str(value)
                    for secret in secrets:
                        needle: Any = secret.encode() if isinstance(blob, bytes) else secret
                        if needle in blob:
                            found.append(f"{table}.{name}")
    return found


def test_a_redacted_agent_pauses_is_answered_and_no_table_keeps_a_secret(
    pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = PostgresStore(pg_dsn, seal=Seal(KEY))
    try:
        rid = store.submit("desk", SECRET_MESSAGE)
        assert _secrets_at_rest(pg_dsn, SECRET_MESSAGE) == []  # sealed from the submit on
        worker = Worker(store, {"desk": _asking_agent()}, lease_seconds=2.0, poll_interval=0.02)
        assert worker.run_sync(idle_exit=True).paused == 1
        entry = store.queued(rid)
        assert entry.state == "paused"
        # an answer the question refuses (not text), quoting a secret: the queue's reason
        # and the worker's log keep the refusal, not the secret
        store.answer(entry.checkpoint_id or "", {"pin": SECRET_ANSWER})
        with caplog.at_level(logging.INFO, logger="trackway.worker"):
            assert worker.run_sync(idle_exit=True).paused == 1
        entry = store.queued(rid)
        assert entry.state == "paused" and "answer refused" in (entry.error or "")
        assert SECRET_ANSWER not in caplog.text
        assert _secrets_at_rest(pg_dsn, SECRET_ANSWER) == []
        store.answer(entry.checkpoint_id or "", SECRET_ANSWER)
        assert _secrets_at_rest(pg_dsn, SECRET_ANSWER) == []
        assert worker.run_sync(idle_exit=True).done == 1
        assert store.queued(rid).state == "done"
        snap = store.load(rid)  # the record is redacted ...
        assert snap.status == "done" and snap.state["final_answer"] == "[REDACTED]"
        assert _secrets_at_rest(pg_dsn, SECRET_MESSAGE, SECRET_ANSWER, "Noted: ") == []
        kept = store.load_checkpoint(entry.checkpoint_id or "")
        assert kept.redacted and kept.payload == "[REDACTED]"  # ... and so is what load gives
    finally:
        store.close()


def test_a_redacted_agent_on_a_store_without_a_seal_is_refused(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn)
    try:
        with pytest.raises(ConfigurationError, match=r"seal=Seal\(") as info:
            Worker(store, {"desk": _asking_agent()})
        assert "'desk'" in str(info.value)
    finally:
        store.close()


def test_a_redacted_run_whose_worker_was_killed_is_recovered_with_real_values(
    pg_dsn: str, tmp_path: Path
) -> None:
    side = tmp_path / "side.txt"
    env = {"TRACKWAY_SEAL_KEY": KEY, SIDE_FILE: str(side), "TRACKWAY_TEST_TOOL_DELAY": "3"}
    store = PostgresStore(pg_dsn, seal=Seal(KEY))
    pool = Pool(
        pg_dsn, tmp_path, "--lease", "1", "--max-runs", "1", "--poll", "0.02",
        charts="tests.workers.charts:SECRET_CHARTS",
    )  # fmt: skip
    os.environ.update(env)
    try:
        rid = store.submit("secret_desk", SECRET_MESSAGE)
        first = pool.start()
        _wait_until(lambda: side.exists() and side.read_text().strip(), 60, "the tool call")
        first.send_signal(signal.SIGKILL)  # mid-tool: the run is left running
        first.wait()
        os.environ["TRACKWAY_TEST_TOOL_DELAY"] = "0"
        pool.start()
        _wait_until(
            lambda: store.queued(rid).ended, 60, "the recovery", store_state=lambda: store.queue()
        )
        pool.stop_all()
    finally:
        for name in env:
            os.environ.pop(name, None)
        pool.kill_all()
    entry = store.queued(rid)
    assert entry.state == "done", entry
    calls = side.read_text().split("\n")
    # the tool ran in both workers, and each time it got the real card, never a marker
    assert [c.split(" ", 1)[1] for c in calls if c] == ["4111-1111-1111-1111"] * 2
    assert store.load(rid).status == "done"
    assert _secrets_at_rest(pg_dsn, "4111-1111-1111-1111", "checked: ") == []
    store.close()
