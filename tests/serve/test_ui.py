"""``trackway ui`` / ``ui_app``: the runs of a store with filters, a run's events over SSE
(ids are commit seqs; a reconnect resumes), the answer path (origin checked, resumed in
process or refused with the fix), and a store opened read-only. Over real sockets."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from trackway import Executor, MemoryStore, SqliteStore
from trackway._demo import demo_chart
from trackway.serve.ui import ui_app
from trackway.serve.ui._app import parse_since
from trackway.serve.ui._tail import commits_after, run_status

from .ui_support import gate, gated_chart, running, serving, wait_for

DEMO_INPUT = {"application": {"name": "Ada", "amount": 18_000, "income": 64_000}}


def _events(base: str, run_id: str, *, stop: Any, headers: dict[str, str] | None = None,
            after: int = 0) -> list[tuple[str, str, Any]]:  # fmt: skip
    """Read the run's events until ``stop(events)`` is true: (event, id, data) each."""
    seen: list[tuple[str, str, Any]] = []
    url = f"{base}/api/events/{run_id}?after={after}"
    with httpx.stream("GET", url, headers=headers or {}, timeout=20) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        event, ident = "", ""
        for line in reply.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("id: "):
                ident = line[4:]
            elif line.startswith("data: "):
                seen.append((event, ident, orjson.loads(line[6:])))
                if stop(seen):
                    break
    return seen


def _demo_store(db: Path, runs: int = 1) -> list[str]:
    store = SqliteStore(db)
    ids = [Executor(demo_chart(), store=store).run_sync(DEMO_INPUT).run_id for _ in range(runs)]
    store.close()
    return ids


def test_the_runs_are_listed_newest_first_and_filtered(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    done = Executor(demo_chart(), store=store).run_sync(DEMO_INPUT, run_id="loan-1").run_id
    paused = Executor(gated_chart(0), store=store).run_sync({"tag": "p"}, run_id="order-7").run_id
    store.close()
    with serving(ui_app(db)) as base:
        everything = httpx.get(f"{base}/api/runs").json()
        assert [r["run_id"] for r in everything["runs"]] == [paused, done]
        assert everything["charts"] == ["gated", "loan-decision"]
        assert everything["total"] == 2 and everything["store"] == "runs.db"

        def ids(**query: str) -> list[str]:
            reply = httpx.get(f"{base}/api/runs", params=query)
            assert reply.status_code == 200
            return [r["run_id"] for r in reply.json()["runs"]]

        assert ids(status="paused") == [paused]
        assert ids(status="done") == [done]
        assert ids(chart="loan-decision") == [done]
        assert ids(q="ORDER") == [paused]  # text in the run id, any case
        assert ids(since="1h") == [paused, done]
        assert ids(since="2000-01-01") == [paused, done]
        assert ids(since="2999-01-01") == []
        assert ids(status="done", chart="gated") == []
        assert ids(limit="1") == [paused]
        bad = httpx.get(f"{base}/api/runs", params={"since": "yesterday"})
        assert bad.status_code == 400 and "give an age" in bad.json()["error"]
        page = httpx.get(f"{base}/")
        assert page.status_code == 200 and "connect-src 'self'" in page.text
        assert page.headers["x-frame-options"] == "DENY"


def test_since_reads_ages_and_iso_dates() -> None:
    assert parse_since("2h", now=10_000.0) == 10_000.0 - 7200
    assert parse_since("1.5d", now=200_000.0) == 200_000.0 - 129_600
    assert parse_since("1970-01-02") == 86_400.0
    assert parse_since("1970-01-01T01:00+01:00") == 0.0
    with pytest.raises(ValueError, match="ISO date"):
        parse_since("last week")


def test_a_run_s_commits_arrive_while_it_runs_and_a_reconnect_resumes(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    with running(gated_chart(3), store, "live") as box:
        run_id = box["run_id"]
        wait_for(lambda: store.list_runs() and len(store.history(run_id)) == 1, what="start")
        with serving(ui_app(db, poll=0.02)) as base:
            first: list[tuple[str, str, Any]] = []

            def opened(seen: list[tuple[str, str, Any]]) -> bool:
                if len(seen) == 1:
                    assert seen[0][0] == "status" and seen[0][2]["status"] == "running"
                    gate("live-1").set()  # one more commit, while the stream is open
                return any(e == "commit" and d["seq"] == 2 for e, _, d in seen)

            first = _events(base, run_id, stop=opened, after=1)
            assert [(e, i) for e, i, _ in first] == [("status", "1"), ("commit", "2")]
            assert first[1][2]["stage_path"] == "step-1#1" and first[1][2]["ops"][0]["key"]
            # the connection dropped; two more commits meanwhile; reconnect with the last id
            gate("live-2").set()
            gate("live-3").set()
            wait_for(lambda: run_status(store, run_id).status == "paused", what="the pause")
            again = _events(
                base,
                run_id,
                headers={"Last-Event-ID": "2"},
                stop=lambda seen: seen[-1][0] == "commit" and seen[-1][2]["seq"] == 5,
            )
            commits = [d["seq"] for e, _, d in again if e == "commit"]
            assert commits == [3, 4, 5]  # nothing lost, nothing twice, in order
            assert [i for e, i, _ in again if e == "commit"] == ["3", "4", "5"]
            assert again[0][0] == "status"  # how it stands now: paused, with its question
            pause = again[0][2]["pause"]
            assert pause["checkpoint_id"] == f"{run_id}@5"
            assert pause["payload"] == {"question": "Ship order live?", "kind": "approval"}
        wait_for(lambda: "result" in box, what="the run to return")


def test_an_ended_run_streams_its_commits_then_ends(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    (run_id,) = _demo_store(db)
    with serving(ui_app(db)) as base:
        seen = _events(base, run_id, stop=lambda s: s[-1][0] == "end")
    assert [d["seq"] for e, _, d in seen if e == "commit"] == list(range(1, 9))
    assert seen[0][2]["status"] == "done"


def test_the_tail_reads_what_load_reads_after_any_seq(tmp_path: Path) -> None:
    stores = [SqliteStore(tmp_path / "runs.db"), MemoryStore()]
    for store in stores:
        run_id = Executor(demo_chart(), store=store).run_sync(DEMO_INPUT).run_id
        whole = store.load(run_id).history()
        for after in range(len(whole) + 1):
            assert commits_after(store, run_id, after) == list(whole[after:])
        standing = run_status(store, run_id)
        assert standing[:3] == ("done", "loan-decision", 8)
        store.close()


def _post(base: str, run_id: str, body: Any, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{base}/api/answer/{run_id}",
        content=orjson.dumps(body),
        headers={"content-type": "application/json", **headers},
    )


def test_an_answer_is_refused_unless_it_comes_from_the_page_and_the_pause(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    run_id = Executor(gated_chart(0), store=store).run_sync({"tag": "q"}).run_id
    store.close()
    body = {"checkpoint_id": f"{run_id}@2", "value": "yes"}
    with serving(ui_app(db)) as base:
        missing = httpx.post(f"{base}/api/answer/{run_id}", json=body)
        assert missing.status_code == 403 and "Origin" in missing.json()["error"]
        foreign = _post(base, run_id, body, origin="http://evil.example")
        assert foreign.status_code == 403 and "evil.example" in foreign.json()["error"]
        form = httpx.post(
            f"{base}/api/answer/{run_id}", data={"checkpoint_id": "x"}, headers={"origin": base}
        )
        assert form.status_code == 415
        wrong = _post(base, run_id, {**body, "checkpoint_id": f"{run_id}@1"}, origin=base)
        assert wrong.status_code == 409 and f"it waits on {run_id}@2" in wrong.json()["error"]
        # a SQLite store has no workers: without the chart, the fix is named
        no_chart = _post(base, run_id, body, origin=base)
        assert no_chart.status_code == 409
        assert "--chart module:attr naming chart 'gated'" in no_chart.json()["error"]
    with _ro(db) as after:
        assert after.load(run_id).status == "paused"


class _ro:
    """A read-only store as a context manager."""

    def __init__(self, db: Path) -> None:
        self.store = SqliteStore(db, read_only=True)

    def __enter__(self) -> SqliteStore:
        return self.store

    def __exit__(self, *exc: object) -> None:
        self.store.close()


def test_an_answer_resumes_the_run_in_process_when_its_chart_is_given(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    chart = gated_chart(0)
    store = SqliteStore(db)
    run_id = Executor(chart, store=store).run_sync({"tag": "r"}).run_id
    store.close()
    body = {"checkpoint_id": f"{run_id}@2", "value": {"ship": True}}
    with serving(ui_app(db, charts=[chart])) as base:
        ok = _post(base, run_id, body, origin=base)
        assert ok.status_code == 200 and "resumes in this process" in ok.json()["message"]
        again = _post(base, run_id, body, origin=base)
        assert again.status_code == 409
        seen = _events(base, run_id, stop=lambda s: s[-1][0] == "end")
        assert [d["status"] for e, _, d in seen if e == "status"][-1] == "done"
    with _ro(db) as after:
        snap = after.load(run_id)
        assert snap.status == "done" and snap.state["answer"] == {"ship": True}


def test_browsing_never_writes_the_store(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    (run_id,) = _demo_store(db)
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    with serving(ui_app(db)) as base:
        assert httpx.get(f"{base}/api/runs").status_code == 200
        page = httpx.get(f"{base}/runs/{run_id}")
        assert page.status_code == 200 and "live-data" in page.text
        _events(base, run_id, stop=lambda s: s[-1][0] == "end")
        assert httpx.get(f"{base}/runs/nope").status_code == 404
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    # a reader of a WAL file may leave its index (-shm) and an empty log: never a write
    assert all(p.stat().st_size == 0 for p in tmp_path.glob("runs.db-wal"))


def test_a_hostile_value_stays_text_on_the_run_page(tmp_path: Path) -> None:
    from trackway import flow_chart

    db = tmp_path / "runs.db"
    store = SqliteStore(db)

    def write(s: Any) -> None:
        s["note"] = "</script><script>alert(1)</script><main>"

    chart = flow_chart("Write", write, id="w").build()
    run_id = Executor(chart, store=store).run_sync({}, run_id="r<b>").run_id
    store.close()
    with serving(ui_app(db)) as base:
        page = httpx.get(f"{base}/runs/{run_id}").text
    assert "<script>alert(1)" not in page and page.count("<main>") == 1
    assert "\\u003c/script>" in page


def test_the_command_serves_a_store_on_the_port_it_prints(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    (run_id,) = _demo_store(db)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "trackway.cli", "ui", "--store", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("trackway ui: runs.db at http://127.0.0.1:"), line
        base = line.split(" at ", 1)[1].split("/ ", 1)[0]
        reply = wait_for(lambda: _get(f"{base}/api/runs"), what="the server")
        assert [r["run_id"] for r in reply["runs"]] == [run_id]
    finally:
        proc.terminate()
        proc.communicate(timeout=15)  # waits, and closes its pipes
    missing = subprocess.run(
        [sys.executable, "-m", "trackway.cli", "ui", "--store", str(tmp_path / "no.db")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert missing.returncode == 1 and "no run store at" in missing.stderr


def _get(url: str) -> Any:
    try:
        return httpx.get(url, timeout=2).json()
    except httpx.TransportError:
        time.sleep(0.05)
        return None


def test_on_postgresql_an_answer_without_the_chart_goes_to_a_worker() -> None:
    from tests.pg import pg_schema
    from trackway import PostgresStore
    from trackway.engine import Worker

    with pg_schema("uiw") as dsn:
        store = PostgresStore(dsn)
        try:
            chart = gated_chart(0)
            run_id = store.submit("gated", {"tag": "w"})
            Worker(store, {"gated": chart}, poll_interval=0.01).run_sync(idle_exit=True)
            assert store.load(run_id).status == "paused"
            body = {"checkpoint_id": f"{run_id}@2", "value": "by worker"}
            with serving(ui_app(dsn)) as base:
                page = httpx.get(f"{base}/runs/{run_id}").text
                assert "a worker resumes the run" in page
                assert "secret" not in page and dsn not in page
                ok = _post(base, run_id, body, origin=base)
                assert ok.status_code == 200 and "a worker resumes" in ok.json()["message"]
            Worker(store, {"gated": chart}, poll_interval=0.01).run_sync(idle_exit=True)
            snap = store.load(run_id)
            assert snap.status == "done" and snap.state["answer"] == "by worker"
        finally:
            store.close()
