from __future__ import annotations

import logging

import pytest

from trackway import Commit, Executor, Recorder, flow_chart


def test_hooks_fire_in_the_documented_order(event_log):
    sub = flow_chart("Inner", lambda s: s.__setitem__("z", 1), id="inner").build()

    def a(s):
        s["x"] = s.get("x", 0)
        s.emit("note", 1)

    chart = (
        flow_chart("A", a)
        .decider("R", lambda s: "go")
        .branch("go", "Go", lambda s: None)
        .end()
        .subflow("Sub", sub, id="sub")
        .build()
    )
    Executor(chart, recorders=[event_log]).run_sync()
    assert event_log.hooks() == [
        "on_run_start",
        "on_stage_start",
        "on_read",
        "on_write",
        "on_emit",
        "on_commit",
        "on_stage_end",
        "on_stage_start",
        "on_commit",
        "on_decision",
        "on_stage_end",
        "on_stage_start",
        "on_commit",
        "on_stage_end",
        "on_subflow_enter",
        "on_stage_start",
        "on_write",
        "on_commit",
        "on_stage_end",
        "on_subflow_exit",
        "on_run_end",
    ]
    events = dict(event_log.events)
    assert isinstance(events["on_commit"], Commit)
    decision = next(e for h, e in event_log.events if h == "on_decision")
    assert decision.chosen == ["go"] and decision.stage_path == "r#1" and decision.seq == 2
    write = next(e for h, e in event_log.events if h == "on_write")
    assert (write.stage_path, write.seq, write.op.key) == ("a#0", 0, "x")
    end = event_log.events[-1][1]
    assert (end.status, end.seq) == ("done", 4)


def test_errors_are_reported_to_recorders(event_log):
    def bad(s):
        raise ValueError("nope")

    Executor(flow_chart("Bad", bad).build(), recorders=[event_log]).run_sync(raise_on_error=False)
    hooks = event_log.hooks()
    assert hooks[-5:] == ["on_commit", "on_error", "on_stage_end", "on_error", "on_run_end"]
    assert event_log.events[-1][1].status == "failed"


def test_a_raising_recorder_is_isolated_and_reported(caplog, event_log):
    class Broken(Recorder):
        def on_commit(self, commit):
            raise RuntimeError("disk full")

    with caplog.at_level(logging.WARNING, logger="trackway"):
        result = Executor(
            flow_chart("A", lambda s: None).then("B", lambda s: None).build(),
            recorders=[Broken(), event_log],
        ).run_sync()
    assert result.status == "done"
    failures = result.snapshot.recorder_failures
    assert [(f.recorder, f.hook, f.error.message) for f in failures] == [
        ("Broken", "on_commit", "disk full")
    ] * 2
    assert event_log.hooks().count("on_commit") == 2  # the others still heard everything
    assert "recorder Broken failed in on_commit" in caplog.text


def test_branch_commits_reach_recorders_at_the_merge_in_declaration_order(event_log):
    import anyio

    async def slow(s):
        await anyio.sleep(0.02)
        s["a"] = 1

    chart = flow_chart("S", lambda s: None).fork("F", {"a": slow, "b": lambda s: None}).build()
    Executor(chart, recorders=[event_log]).run_sync()
    commits = [e for h, e in event_log.events if h == "on_commit"]
    assert [(c.seq, c.stage_path) for c in commits] == [
        (1, "s#0"),
        (2, "f#1/a#0"),
        (3, "f#1/b#0"),
        (4, "f#1"),
    ]


def test_base_recorder_hooks_are_skipped_not_called():
    class OnlyCommits(Recorder):
        def __init__(self):
            self.seen: list[int] = []

        def on_commit(self, commit):
            self.seen.append(commit.seq)

    rec = OnlyCommits()
    Executor(flow_chart("A", lambda s: None).build(), recorders=[rec]).run_sync()
    assert rec.seen == [1]


@pytest.mark.parametrize("hook", ["on_read", "on_write", "on_stage_start", "on_run_end"])
def test_recorder_failures_in_any_hook_leave_the_run_intact(hook):
    rec = type("R", (), {hook: lambda self, e: 1 / 0})()

    def stage(s):
        s["x"] = s.get("x", 1)

    result = Executor(flow_chart("A", stage).build(), recorders=[rec]).run_sync()
    assert result.state["x"] == 1
    assert {f.hook for f in result.snapshot.recorder_failures} == {hook}
