from __future__ import annotations

import pytest

from trackway import Executor, Scope, flow_chart
from trackway.engine import StageEndEvent, StageStartEvent
from trackway.recorders import Metrics, metrics


def timed(rec: Metrics, stage_id: str, durations: list[float], outcome: str = "ok") -> None:
    """Feed the recorder stage events with known durations."""
    for i, d in enumerate(durations):
        path = f"{stage_id}#{i}"
        rec.on_stage_start(StageStartEvent("run-1", path, 0, stage_id, stage_id.title(), "stage"))
        rec.on_stage_end(StageEndEvent("run-1", path, 0, outcome, d))


def test_counts_reads_writes_and_outcomes_per_stage_id_across_runs():
    def count(scope: Scope) -> None:
        scope["n"] = scope.get("n", 0) + 1
        if scope["n"] >= 3:
            scope.break_("enough")

    chart = (
        flow_chart("Start", lambda s: s.__setitem__("log", []), id="start")
        .then("Count", count, id="count")
        .loop_to("count")
        .build()
    )
    rec = metrics()
    executor = Executor(chart, recorders=[rec])
    executor.run_sync()
    executor.run_sync()
    failing = flow_chart("Start", lambda s: 1 / 0, id="start").build()
    Executor(failing, recorders=[rec]).run_sync(raise_on_error=False)
    summary = rec.summary()
    assert list(summary) == ["start", "count"]
    assert summary["start"]["count"] == 3
    assert summary["start"]["outcomes"] == {"ok": 2, "error": 1}
    assert summary["start"]["writes"] == 2 and summary["start"]["reads"] == 0
    assert summary["count"]["name"] == "Count"
    assert summary["count"]["count"] == 6
    assert summary["count"]["outcomes"] == {"ok": 6}
    assert summary["count"]["reads"] == 6 and summary["count"]["writes"] == 6
    assert rec.runs == {"broken": 2, "failed": 1}
    for s in summary.values():
        assert 0 < s["p50"] <= s["p95"] <= s["max"] <= s["total"]
        assert s["mean"] == pytest.approx(s["total"] / s["count"])


def test_percentiles_are_nearest_rank():
    rec = metrics()
    timed(rec, "a", [0.001 * i for i in range(1, 101)])  # 1 ms .. 100 ms
    timed(rec, "b", [0.2, 0.1, 0.3], outcome="error")
    s = rec.summary()
    assert s["a"]["count"] == 100
    assert s["a"]["p50"] == pytest.approx(0.050)
    assert s["a"]["p95"] == pytest.approx(0.095)
    assert s["a"]["max"] == pytest.approx(0.100)
    assert s["a"]["total"] == pytest.approx(5.050)
    assert s["a"]["mean"] == pytest.approx(0.0505)
    assert (s["b"]["p50"], s["b"]["p95"], s["b"]["max"]) == (0.2, 0.3, 0.3)
    assert s["b"]["outcomes"] == {"error": 3}


def test_table_lists_each_stage_in_milliseconds():
    rec = metrics()
    timed(rec, "receive", [0.002, 0.004])
    timed(rec, "route", [0.0015])
    assert rec.table().splitlines() == [
        "stage    count  total ms  mean ms  p50 ms  p95 ms  max ms  outcomes",
        "receive      2     6.000    3.000   2.000   4.000   4.000  ok=2",
        "route        1     1.500    1.500   1.500   1.500   1.500  ok=1",
    ]


def test_resume_and_pause_count_as_executions_of_the_paused_stage():
    chart = (
        flow_chart("Ask", lambda s: s.pause("ok?"), id="ask", on_resume=lambda s, v: None)
        .then("Done", lambda s: None, id="done")
        .build()
    )
    rec = metrics()
    executor = Executor(chart, recorders=[rec])
    executor.resume_sync(executor.run_sync().checkpoint, "yes")
    s = rec.summary()
    assert s["ask"]["count"] == 2 and s["ask"]["outcomes"] == {"paused": 1, "ok": 1}
    assert s["done"]["count"] == 1
    assert rec.runs == {"paused": 1, "done": 1}


def test_clear_and_name():
    rec = metrics()
    timed(rec, "a", [0.1])
    rec.clear()
    assert rec.summary() == {} and rec.runs == {}
    assert rec.table().splitlines() == [
        "stage  count  total ms  mean ms  p50 ms  p95 ms  max ms  outcomes"
    ]
    assert rec.name == "metrics"
