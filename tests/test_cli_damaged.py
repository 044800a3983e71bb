"""The installed ``trackway`` command on damaged input: a store changed by another program and
a recording holding values nested deeper than trackway writes. Each is run as a real
process: it names the file and what is wrong on stderr, prints no traceback and exits 1."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import orjson
import pytest

from trackway import Agent, Executor, SqliteStore, flow_chart, mock
from trackway.agent import save_recording

TRACKWAY = Path(sys.executable).with_name("trackway")


def trackway(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TRACKWAY), *args], capture_output=True, text=True, timeout=120, check=False
    )


def assert_named_failure(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


# -- damaged stores ---------------------------------------------------------------------------


def stored_run(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "runs.db"
    store = SqliteStore(path)
    chart = flow_chart("Write", lambda s: s.__setitem__("plain", 1), id="write").build()
    run_id = Executor(chart, store=store).run_sync().run_id
    store.close()
    return path, run_id


def damage(path: Path, sql: str) -> None:
    with closing(sqlite3.connect(path)) as db:
        db.execute(sql)
        db.commit()


DAMAGES = {
    "doc-as-text": (
        "UPDATE trackway_commits SET doc = CAST(doc AS TEXT)",
        "trackway_commits.doc",
        "show",
    ),
    "stage-path-not-utf8": (
        "UPDATE trackway_commits SET stage_path = CAST(X'fffe41' AS TEXT)",
        "trackway_commits.stage_path",
        "show",
    ),
    "started-at-as-text": (
        "UPDATE trackway_runs SET started_at = 'yesterday'",
        "trackway_runs.started_at",
        "runs",
    ),
}


@pytest.mark.parametrize("damaged", DAMAGES)
def test_show_and_runs_name_a_damaged_store(tmp_path: Path, damaged: str) -> None:
    sql, column, failing = DAMAGES[damaged]
    path, run_id = stored_run(tmp_path)
    before = {"show": trackway("show", run_id, "--store", str(path))}
    assert before["show"].returncode == 0, before["show"].stderr
    damage(path, sql)
    shown = trackway("show", run_id, "--store", str(path))
    listed = trackway("runs", "--store", str(path))
    # the command that reads the damaged column fails, naming the file, the run, the column
    failed = shown if failing == "show" else listed
    assert_named_failure(failed, str(path), run_id, column, "damaged")
    # the other reads the part that is whole, or fails as cleanly
    other = listed if failing == "show" else shown
    if other.returncode != 0:
        assert_named_failure(other, str(path), column)
    else:
        assert "Traceback" not in other.stderr


# -- recordings nested deeper than trackway writes ----------------------------------------------


def deep_recording(tmp_path: Path, levels: int) -> tuple[Path, int]:
    """A real agent's recording whose first written value is replaced by one ``levels``
    deep (written by hand: orjson refuses to write it); the line it is on."""
    agent = Agent.create(provider=mock(replies=["hi"]), model="m").build()
    agent.run_sync("hello")
    path = save_recording(agent, tmp_path / "rec.jsonl")
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    number = next(
        n for n, line in enumerate(lines, 1) if line["type"] == "on_commit" and line["ops"]
    )
    lines[number - 1]["ops"][0]["value"] = "@@deep@@"
    raw = b"\n".join(orjson.dumps(line) for line in lines) + b"\n"
    path.write_bytes(raw.replace(b'"@@deep@@"', b"[" * levels + b"1" + b"]" * levels))
    return path, number


@pytest.mark.parametrize("levels", [255, 300, 1021, 1024])
def test_replay_and_view_name_a_recording_nested_too_deep(tmp_path: Path, levels: int) -> None:
    path, number = deep_recording(tmp_path, levels)
    assert_named_failure(trackway("replay", str(path)), str(path), f"line {number}", "deeper")
    html = tmp_path / "view.html"
    viewed = trackway("view", str(path), "-o", str(html))
    assert_named_failure(viewed, str(path), f"line {number}", "deeper")
    assert not html.exists()
