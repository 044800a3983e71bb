"""The command line reads cleanly: help without markup, charts listed by their own id,
commit columns aligned whatever the stage paths' length."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trackway import Executor, SqliteStore, flow_chart
from trackway.cli import cli, main

COMMANDS = sorted(cli.commands)


@pytest.mark.parametrize("argv", [[], *([name] for name in COMMANDS)], ids=["trackway", *COMMANDS])
def test_help_shows_no_markup(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--help"]) == 0
    out = capsys.readouterr().out
    assert "``" not in out and "Usage:" in out


def test_the_group_help_reads_as_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # click re-wraps the lines
    assert "(replay)" in text and "a --value that is not JSON" in text
    assert "The runs and show commands open a SQLite store read-only" in text


def test_runs_names_the_demo_chart_by_its_own_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    assert main(["demo", "--store", str(db)]) == 0
    capsys.readouterr()
    assert main(["runs", "--store", str(db)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [row[1] for row in rows] == ["loan-decision", "agent-weather"]  # not "intake"
    assert main(["runs", "--store", str(db), "--chart", "loan-decision"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2  # the header and the one run


def _write(scope: object) -> None:
    scope["x"] = 1  # type: ignore[index]


def test_show_keeps_its_columns_aligned_for_long_stage_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inner = flow_chart(
        "A stage with a rather long name", _write, id="a-stage-with-a-rather-long-id"
    ).build()
    chart = (
        flow_chart("Start", _write, id="start")
        .subflow("Nested", inner, id="a-subflow-whose-id-is-long-too")
        .then("End", _write, id="end")
        .build()
    )
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    run_id = Executor(chart, store=store).run_sync().run_id
    store.close()
    assert main(["show", run_id, "--store", str(db)]) == 0
    lines = capsys.readouterr().out.split("Commits:\n", 1)[1].splitlines()
    rows = [re.match(r"^\s+\d+\. (\S+)( +)(ok|error|paused) +read", line) for line in lines]
    assert all(rows) and len(rows) == 3, lines
    paths = [row.group(1) for row in rows if row]
    assert max(map(len, paths)) > 22  # longer than the old fixed column
    outcome_at = {row.start(3) for row in rows if row}
    assert len(outcome_at) == 1, lines  # every outcome starts in the same column
    read_at = {line.index(" read ") for line in lines}
    assert len(read_at) == 1, lines
