from __future__ import annotations

import sys
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.backends import run_async
from trackway import Executor, StageError, flow_chart
from trackway.engine import (
    ExecutorUsageError,
    LoopLimitError,
    Retry,
    RunTimeoutError,
    UnknownBranchError,
)


def test_one_commit_per_executed_stage_with_metadata():
    chart = flow_chart("A", lambda s: s.__setitem__("a", 1)).then("B", lambda s: None).build()
    result = Executor(chart).run_sync()
    a, b = result.snapshot.history()
    assert (a.seq, a.stage_path, a.stage_id, a.stage_name, a.outcome) == (1, "a#0", "a", "A", "ok")
    assert (b.seq, b.stage_path, b.ops) == (2, "b#1", ())
    assert a.run_id == b.run_id == result.run_id
    assert a.started_at <= a.ended_at <= b.started_at <= b.ended_at


def test_a_raising_stage_commits_its_writes_then_fails_the_run():
    class Boom(Exception):
        pass

    def bad(s):
        s["partial"] = "kept"
        raise Boom("bureau down")

    chart = (
        flow_chart("Good", lambda s: s.__setitem__("x", 1))
        .then("Bad", bad)
        .then("Never", lambda s: s.__setitem__("never", 1))
        .build()
    )
    with pytest.raises(StageError) as info:
        Executor(chart).run_sync()
    err = info.value
    assert isinstance(err.__cause__, Boom)
    assert "stage 'Bad' (bad#1) raised Boom: bureau down" in str(err)
    snap = err.snapshot
    assert snap.status == "failed" and len(snap) == 2
    failed = snap.history()[1]
    assert failed.outcome == "error" and tuple(failed.error) == ("Boom", "bureau down")
    assert [op.key for op in failed.ops] == ["partial"]
    assert snap.state["partial"] == "kept" and "never" not in snap.state

    result = Executor(chart).run_sync(raise_on_error=False)
    assert result.status == "failed" and isinstance(result.error, StageError)
    assert result.error.snapshot is result.snapshot


def test_retry_reruns_and_only_the_final_attempt_commits():
    attempts = []

    def flaky(s):
        attempts.append(1)
        s["attempt"] = len(attempts)
        if len(attempts) < 3:
            raise ConnectionError(f"try {len(attempts)}")

    chart = flow_chart("Flaky", flaky, retry=Retry(attempts=3, backoff=0.001)).build()
    result = Executor(chart).run_sync()
    (commit,) = result.snapshot.history()
    assert commit.attempts == 3 and commit.outcome == "ok"
    assert [op.value for op in commit.ops] == [3]
    assert [f["message"] for f in commit.detail["failed_attempts"]] == ["try 1", "try 2"]


def test_retry_gives_up_and_does_not_retry_other_errors():
    calls = []

    def never(s):
        calls.append(1)
        raise ValueError("bad input")

    chart = flow_chart("N", never, retry=Retry(attempts=4, backoff=0, on=(ConnectionError,)))
    with pytest.raises(StageError):
        Executor(chart.build()).run_sync()
    assert len(calls) == 1


def test_timeout_cancels_the_stage_in_flight_which_commits_as_cancelled():
    seen = []

    async def slow(s):
        s["started"] = True
        try:
            await anyio.sleep(10)
        except BaseException:
            seen.append("cancelled")  # the stage code sees the cancellation
            raise

    chart = flow_chart("Slow", slow).build()
    with pytest.raises(RunTimeoutError) as info:
        Executor(chart).run_sync(timeout=0.05)
    assert seen == ["cancelled"]
    (commit,) = info.value.snapshot.history()
    assert commit.outcome == "cancelled" and commit.ops[0].key == "started"
    assert isinstance(info.value, TimeoutError)


def test_timeout_reaches_a_loop_of_sync_stages():
    chart = flow_chart("Spin", lambda s: None).loop_to("spin").build()
    with pytest.raises(RunTimeoutError):
        Executor(chart, max_iterations=10**9).run_sync(timeout=0.2)


def test_runaway_loop_is_stopped_naming_the_loop():
    chart = flow_chart("Spin", lambda s: None).then("Back", lambda s: None).loop_to("spin")
    with pytest.raises(LoopLimitError) as info:
        Executor(chart.build(), max_iterations=5).run_sync()
    assert "from 'Back' (back) back to 'spin' went round 5 times" in str(info.value)
    assert len(info.value.snapshot) == 12  # 6 passes of 2 stages, the 6th back edge refused


def test_100k_iterations_run_in_a_flat_loop_without_growing_the_stack():
    def step(s):
        n = s.get("n", 0) + 1
        s["n"] = n
        if n == 100_000:
            s.break_("done")

    chart = flow_chart("Step", step).loop_to("step").build()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)  # far below 100k: recursion per step would overflow at once
    try:
        result = Executor(chart, max_iterations=100_000).run_sync()
    finally:
        sys.setrecursionlimit(limit)
    assert result.status == "broken" and result.break_reason == "done"
    assert result.state["n"] == 100_000 and len(result.snapshot) == 100_000


def test_break_ends_the_run_after_the_stage_commits():
    def stop(s):
        s["x"] = 1
        s.break_("enough")
        s.break_("ignored")

    chart = flow_chart("Stop", stop).then("Never", lambda s: s.__setitem__("y", 1)).build()
    result = Executor(chart).run_sync()
    assert (result.status, result.break_reason, dict(result.state)) == (
        "broken",
        "enough",
        {"x": 1},
    )


def test_one_executor_runs_100_runs_at_once_in_isolation():
    async def stage(s):
        me = s["me"]
        await anyio.sleep(0.01 * (me % 3))
        s.append("trail", me)
        s["out"] = me * 2

    ex = Executor(flow_chart("S", stage).then("T", stage).build())
    results = {}

    async def one(i):
        results[i] = await ex.run({"me": i})

    async def main():
        async with anyio.create_task_group() as tg:
            for i in range(100):
                tg.start_soon(one, i)

    run_async(main)
    assert len({r.run_id for r in results.values()}) == 100
    for i, r in results.items():
        assert dict(r.state) == {"me": i, "trail": [i, i], "out": 2 * i}
        assert all(c.run_id == r.run_id for c in r.snapshot.history())


def test_run_sync_inside_an_event_loop_says_to_await():
    ex = Executor(flow_chart("S", lambda s: None).build())

    async def main():
        ex.run_sync()

    with pytest.raises(ExecutorUsageError, match="await executor.run"):
        run_async(main)


def test_executor_refuses_a_builder():
    with pytest.raises(ExecutorUsageError, match=r"call \.build\(\)"):
        Executor(flow_chart("S", lambda s: None))  # type: ignore[arg-type]


def test_decider_routes_records_and_unknown_key_fails():
    def route(s):
        return s["to"]

    chart = (
        flow_chart("Start", lambda s: None)
        .decider("Route", route)
        .branch("a", "A", lambda s: s.__setitem__("went", "a"))
        .branch("b", "B", lambda s: s.__setitem__("went", "b"))
        .default("b")
        .end()
        .then("After", lambda s: s.__setitem__("after", True))
        .build()
    )
    result = Executor(chart).run_sync({"to": "a"})
    assert dict(result.state) == {"to": "a", "went": "a", "after": True}
    route_commit = result.snapshot.history()[1]
    assert route_commit.kind == "decider" and route_commit.detail == {"decision": {"chosen": "a"}}
    assert Executor(chart).run_sync({"to": None}).state["went"] == "b"  # default on None
    with pytest.raises(UnknownBranchError, match="chose branch 'c'.* branches are a, b") as info:
        Executor(chart).run_sync({"to": "c"})
    assert info.value.snapshot.history()[-1].outcome == "error"


def test_decider_returning_a_non_key_is_a_stage_error():
    chart = (
        flow_chart("Start", lambda s: None)
        .decider("Route", lambda s: 42)
        .branch("a", "A", lambda s: None)
        .end()
        .build()
    )
    with pytest.raises(StageError, match="returned 42; return a branch key"):
        Executor(chart).run_sync()


def test_async_and_sync_stages_mix():
    async def a(s):
        await anyio.lowlevel.checkpoint()
        s["a"] = 1

    chart = flow_chart("A", a).then("B", lambda s: s.__setitem__("b", s["a"] + 1)).build()
    assert dict(Executor(chart).run_sync().state) == {"a": 1, "b": 2}


def test_the_fast_result_sets_every_field_a_run_result_has() -> None:
    """``_result`` builds a RunResult without its __init__: a field added to the class and
    not to it would be missing from every run's result."""
    import dataclasses

    from trackway.engine.execute._executor import RunResult, _result

    def write(scope: Any) -> None:
        scope["x"] = 1

    result = Executor(flow_chart("A", write).build()).run_sync()
    names = [f.name for f in dataclasses.fields(RunResult)]
    assert list(vars(result)) == names
    again = RunResult(**{n: getattr(result, n) for n in names})
    assert again == result and repr(again) == repr(result)
    built = _result(*(getattr(result, n) for n in names))
    assert built == result
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.status = "failed"  # type: ignore[misc]
