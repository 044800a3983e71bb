"""``trackway submit``, ``worker``, ``workers`` and ``answer`` against the real PostgreSQL."""

from __future__ import annotations

import gc
import json

import pytest

from trackway import PostgresStore
from trackway.cli import main
from trackway.engine import SERVING_YOUNG_THRESHOLD


def test_submit_work_answer_and_list(
    store: PostgresStore, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["submit", "steps", "--input", '{"seed": 3}', "--store", pg_dsn]) == 0
    run_id = capsys.readouterr().out.strip()
    assert main(["submit", "approval", "--input", "{}", "--store", pg_dsn]) == 0
    asks = capsys.readouterr().out.strip()
    charts = ["--charts", "tests.workers.charts:STEPS", "--charts", "tests.workers.charts:CHARTS"]
    assert main(["worker", "--store", pg_dsn, *charts[2:], "--idle-exit", "--poll", "0.02"]) == 0
    out = capsys.readouterr()
    assert "2 claimed, 1 done, 0 failed, 1 paused" in out.out
    assert store.queued(run_id).state == "done"
    assert f"claimed {run_id} (steps, queued)" in out.err  # the text log on stderr
    checkpoint = store.queued(asks).checkpoint_id
    assert checkpoint is not None
    assert main(["answer", checkpoint, "--value", '"fine"', "--store", pg_dsn]) == 0
    assert "a worker resumes the run" in capsys.readouterr().out
    assert (
        main(["worker", "--store", pg_dsn, *charts[2:], "--idle-exit", "--log-format", "json"]) == 0
    )
    err = capsys.readouterr().err
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    settled = [e for e in events if e["event"] == "settled"]
    assert [(e["run_id"], e["state"]) for e in settled] == [(asks, "done")]
    assert {"ts", "level", "worker", "message"} <= set(settled[0])
    assert main(["workers", "--store", pg_dsn, "--all", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["queue"] == {"done": 2}
    assert len(listed["workers"]) == 2 and {w["state"] for w in listed["workers"]} == {"stopped"}
    assert main(["workers", "--store", pg_dsn]) == 0
    assert "queue: 2 done" in capsys.readouterr().out
    # a chart registered twice under one name is refused
    twice = [*charts[:2], *charts[:2]]
    assert main(["worker", "--store", pg_dsn, *twice, "--idle-exit"]) == 2
    assert "'s1' is registered twice" in capsys.readouterr().err


def test_the_queue_needs_postgresql(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["worker", "--store", "runs.db", "--charts", "tests.workers.charts:CHARTS"],
        ["workers", "--store", "runs.db"],
        ["submit", "steps", "--store", "runs.db"],
        ["answer", "run-1@2", "--store", "runs.db"],
    ):
        assert main(argv) == 2
        assert "pass a postgresql:// URL" in capsys.readouterr().err


def test_charts_that_are_not_charts_are_refused(
    pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["worker", "--store", pg_dsn, "--charts", "tests.workers.charts:STAGES"])
    assert code == 2
    assert "name a FlowChart, an Agent, or a dict" in capsys.readouterr().err


def test_the_worker_tunes_the_collector_while_it_serves_and_hands_it_back(
    store: PostgresStore, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    seen = []
    flags = ([], ["--no-gc-freeze", "--gc-young", "0"], ["--gc-young", "5000"])
    for flag in flags:
        assert main(["submit", "heap", "--input", "{}", "--store", pg_dsn]) == 0
        run_id = capsys.readouterr().out.strip()
        charts = ["--charts", "tests.workers.charts:HEAP_CHARTS"]
        argv = ["worker", "--store", pg_dsn, *charts, "--idle-exit", "--poll", "0.02", *flag]
        assert main(argv) == 0
        assert "1 claimed, 1 done" in capsys.readouterr().out
        assert gc.get_freeze_count() == 0  # handed back when the command returned
        assert gc.get_threshold() == thresholds
        state = store.load(run_id).state
        seen.append((state["frozen"], state["young"]))
    assert seen == [
        (True, SERVING_YOUNG_THRESHOLD),
        (False, thresholds[0]),  # 0: the process's own
        (True, 5000),
    ]
