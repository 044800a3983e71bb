"""The CLI never lets a stored value drive the terminal, and names what it cannot read."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import orjson

from trackway import Executor, SqliteStore, flow_chart
from trackway.agent import save_recording
from trackway.cli import main as cli

ESC = "\x1b[2J\x1b[31m"


def _stored_run(tmp_path):
    path = tmp_path / "runs.db"
    store = SqliteStore(path)
    chart = flow_chart("Write", lambda s: s.__setitem__("plain", 1), id="write").build()
    run_id = Executor(chart, store=store).run_sync().run_id
    store.close()
    return path, run_id


def _rewrite_doc(path, change):
    with closing(sqlite3.connect(path)) as db:
        (doc,) = db.execute("SELECT doc FROM trackway_commits").fetchone()
        db.execute("UPDATE trackway_commits SET doc = ?", (change(bytes(doc)),))
        db.commit()


def test_show_escapes_control_characters_from_the_store(tmp_path, capsys):
    path, run_id = _stored_run(tmp_path)

    def plant(doc: bytes) -> bytes:  # as another program (or an old version) might write
        d = orjson.loads(doc)
        d["w"][0][1] = f"{ESC}evil\u202ekey"
        return orjson.dumps(d)

    _rewrite_doc(path, plant)
    assert cli(["show", run_id, "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[2J\\x1b[31mevil\\u202ekey" in out


def test_a_damaged_store_is_named_not_a_traceback(tmp_path, capsys):
    path, run_id = _stored_run(tmp_path)
    _rewrite_doc(path, lambda doc: b"{not json")
    assert cli(["show", run_id, "--db", str(path)]) == 1
    err = capsys.readouterr().err
    assert "runs.db" in err and "is damaged" in err and "commit 1" in err
    assert "Traceback" not in err


def test_a_damaged_recording_is_named(tmp_path, capsys):
    bad = tmp_path / "rec.json"
    bad.write_bytes(b'{"format": "trackway.agent-recording/1", "snapshot": {"format": 1}}')
    assert cli(["replay", str(bad), "--call", "1"]) == 1
    err = capsys.readouterr().err
    assert "rec.json" in err and "Traceback" not in err


def test_replay_of_a_good_recording_still_works(tmp_path, capsys):
    from trackway import Agent, mock

    agent = Agent.create(provider=mock(replies=["hi"]), model="m").build()
    agent.run_sync("hello")
    path = save_recording(agent, tmp_path / "rec.json")
    assert cli(["replay", str(path), "--call", "1"]) == 0
    assert "match" in capsys.readouterr().out
