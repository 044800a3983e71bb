"""The command line: runs, show, prune, replay, view and demo, their output and exit codes."""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

import orjson
import pytest

from trackway import Executor, PostgresStore, SqliteStore, flow_chart
from trackway.agent import LLMCall, Sequence, mock, save_recording
from trackway.cli import main
from trackway.recorders import jsonl, narrative_from_log

PG_DSN = os.environ.get("TRACKWAY_TEST_PG_DSN")


def _fill(db: Path, runs: int = 3, failing: int = 1) -> list[str]:
    """``runs`` done runs of chart ``ok`` and ``failing`` failed runs of chart ``boom``."""
    ok = flow_chart("Write", lambda s: s.__setitem__("x", 1), id="ok").build()

    def explode(scope: object) -> None:
        raise RuntimeError("planned")

    boom = flow_chart("Explode", explode, id="boom").build()
    store = SqliteStore(db)
    ids = []
    try:
        for _ in range(runs):
            ids.append(Executor(ok, store=store).run_sync().run_id)
        for _ in range(failing):
            ids.append(Executor(boom, store=store).run_sync(raise_on_error=False).run_id)
    finally:
        store.close()
    return ids


def test_runs_lists_a_table_with_duration_and_filters(tmp_path: Path, capsys) -> None:
    db = tmp_path / "runs.db"
    ids = _fill(db)
    assert main(["runs", "--store", str(db)]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header[:4] == ["run", "id", "chart", "status"] and "duration" in header
    assert all(run_id in out for run_id in ids) and " ms" in out
    assert main(["runs", "--store", str(db), "--status", "failed"]) == 0
    out = capsys.readouterr().out
    assert ids[-1] in out and ids[0] not in out
    assert main(["runs", "--store", str(db), "--chart", "ok", "--limit", "2", "--json"]) == 0
    listed = orjson.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in listed] == ids[1:3]  # the newest two of chart ok
    assert set(listed[0]) == {
        "run_id",
        "chart_id",
        "status",
        "started_at",
        "ended_at",
        "commit_count",
    }
    assert main(["runs", "--store", str(db), "--chart", "nope"]) == 0
    assert "no runs in" in capsys.readouterr().out


def test_colour_only_when_asked_or_on_a_terminal(tmp_path: Path, capsys) -> None:
    db = tmp_path / "runs.db"
    _fill(db, 1, 0)
    assert main(["runs", "--store", str(db)]) == 0
    assert "\x1b[" not in capsys.readouterr().out  # captured output is not a terminal
    assert main(["--color", "runs", "--store", str(db)]) == 0
    assert "\x1b[1m" in capsys.readouterr().out


def test_show_tells_the_run_from_its_log_and_as_json(tmp_path: Path, capsys) -> None:
    db = tmp_path / "runs.db"
    ids = _fill(db, 1, 1)
    assert main(["show", ids[1], "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert "failed, 1 commits" in out and "error: StageError" in out
    assert "Stage 1: Explode — failed with RuntimeError: planned" in out
    assert main(["show", ids[0], "--store", str(db), "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    store = SqliteStore(db, read_only=True)
    snap = store.load(ids[0])
    store.close()
    assert doc["run"]["status"] == "done" and doc["run"]["commits"] == 1
    assert doc["narrative"] == narrative_from_log(snap).lines()
    assert doc["commits"][0]["ops"] == [{"kind": "set", "key": "x", "value": 1}]


def test_show_json_escapes_control_characters_as_json(tmp_path: Path, capsys) -> None:
    db = tmp_path / "runs.db"
    chart = flow_chart("W", lambda s: s.__setitem__("v", "\x1b[31mred\u202e"), id="w").build()
    store = SqliteStore(db)
    run_id = Executor(chart, store=store).run_sync().run_id
    store.close()
    assert main(["show", run_id, "--store", str(db), "--json"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert orjson.loads(out)["commits"][0]["ops"][0]["value"] == "\x1b[31mred\u202e"


def test_prune_needs_a_filter_deletes_what_matches_every_one(tmp_path: Path, capsys) -> None:
    db = tmp_path / "runs.db"
    ids = _fill(db, 150, 2)
    assert main(["prune", "--store", str(db)]) == 2
    assert "nothing was deleted" in capsys.readouterr().err
    assert main(["prune", "--store", str(db), "--status", "failed", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would delete 2 of 152 runs" in out and ids[-1] in out
    store = SqliteStore(db, read_only=True)
    assert len(store.list_runs()) == 152  # a dry run deletes nothing
    store.close()
    # every filter must match: old enough AND not among the newest 5
    assert main(["prune", "--store", str(db), "--keep-latest", "5", "--older-than", "0"]) == 0
    assert "deleted 147 of 152 runs" in capsys.readouterr().out  # in two batches of 100
    assert main(["prune", "--store", str(db), "--older-than", "30"]) == 0
    assert "deleted 0 of 5 runs" in capsys.readouterr().out
    store = SqliteStore(db, read_only=True)
    kept = sorted(store.list_runs(), key=lambda r: r.started_at)
    store.close()
    assert [r.run_id for r in kept] == ids[-5:]


def test_replay_checks_every_call_and_a_chart_recording_says_it_has_none(
    tmp_path: Path, capsys
) -> None:
    researcher = LLMCall.create(provider=mock(replies=["facts"]), model="m").build()
    writer = LLMCall.create(provider=mock(replies=["prose"]), model="m").build()
    article = Sequence.create(name="article").step("research", researcher)
    article = article.step("write", writer).build()
    article.run_sync("Why?")
    rec = save_recording(article, tmp_path / "article.jsonl")
    assert main(["replay", str(rec)]) == 0
    out = capsys.readouterr().out
    assert "all 2 rebuilt requests match their receipts" in out
    assert [line.split()[1] for line in out.splitlines()[1:3]] == ["research", "write"]
    chart = flow_chart("W", lambda s: s.__setitem__("v", 1), id="w").build()
    plain = tmp_path / "chart.jsonl"
    Executor(chart, recorders=[jsonl(plain, chart=chart)]).run_sync()
    assert main(["replay", str(plain)]) == 0
    assert "no model calls to rebuild (a run of 1 commits)" in capsys.readouterr().out
    assert main(["replay", str(plain), "--call", "1"]) == 2
    assert "holds no model calls" in capsys.readouterr().err


def test_view_writes_one_file_and_names_what_it_cannot_read(tmp_path: Path, capsys) -> None:
    chart = flow_chart("W", lambda s: s.__setitem__("v", 1), id="w").build()
    rec = tmp_path / "chart.jsonl"
    Executor(chart, recorders=[jsonl(rec, chart=chart)]).run_sync()
    page = tmp_path / "trace.html"
    assert main(["view", str(rec), "-o", str(page)]) == 0
    assert f"wrote {page}" in capsys.readouterr().out
    html = page.read_text()
    # one file, nothing fetched: no external script, style, image or link
    assert "<script src" not in html and "<link" not in html and "http://" not in html
    assert "default-src 'none'" in html
    assert not (tmp_path / "trace.html.part").exists()
    assert main(["view", str(tmp_path / "missing.jsonl"), "-o", str(page)]) == 1
    assert "no recording at" in capsys.readouterr().err
    assert main(["view", str(rec), "-o", str(tmp_path / "no" / "such" / "t.html")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["view", str(rec)]) == 2  # -o is required: a usage error
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    assert main(["view", str(bad), "-o", str(page)]) == 1
    assert "bad.jsonl" in capsys.readouterr().err


def test_demo_next_commands_work_as_printed(tmp_path: Path, capsys) -> None:
    db = tmp_path / "runs.db"
    assert main(["demo", "--store", str(db)]) == 0
    out = capsys.readouterr().out
    commands = out.split("Next, try:\n", 1)[1].strip().splitlines()
    assert len(commands) == 6
    for line in commands:
        argv = shlex.split(line)
        assert argv[0].endswith("trackway")
        assert main(argv[1:]) == 0, line
    assert (tmp_path / "trace.html").exists() and (tmp_path / "agent-trace.html").exists()


def test_help_and_usage_errors_exit_as_documented(capsys) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("demo", "runs", "show", "prune", "replay", "view"):
        assert command in out
    assert "Exit codes" in out
    assert main(["runs", "--limit", "-1"]) == 2
    assert main(["nope"]) == 2


@pytest.mark.skipif(PG_DSN is None, reason="needs TRACKWAY_TEST_PG_DSN (.ci/postgres.sh)")
def test_runs_and_show_read_a_postgresql_store(capsys) -> None:
    assert PG_DSN is not None
    chart_id = f"pgcli{time.time_ns()}"
    chart = flow_chart("W", lambda s: s.__setitem__("v", 1), id=chart_id).build()
    store = PostgresStore(PG_DSN)
    try:
        run_id = Executor(chart, store=store).run_sync().run_id
    finally:
        store.close()
    assert main(["runs", "--store", PG_DSN, "--chart", chart_id, "--json"]) == 0
    assert [r["run_id"] for r in orjson.loads(capsys.readouterr().out)] == [run_id]
    assert main(["show", run_id, "--store", PG_DSN]) == 0
    assert "Stage 1: W — wrote v = 1" in capsys.readouterr().out
