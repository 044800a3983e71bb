from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from trackway import Executor, FlowChart, Rule, RunResult, Scope, Snapshot, decide, flow_chart
from trackway.engine import ConfigurationError, Retry, select
from trackway.recorders import (
    RECORDING_FORMAT,
    jsonl,
    load_recording,
    read_recording,
)


def route(scope: Scope) -> Any:
    return decide(scope, [Rule({"score": {"gte": 700}}, "approve", label="Good score")], "review")


def pick(scope: Scope) -> Any:
    return select(scope, [Rule({"score": {"gt": 0}}, "a"), Rule({"score": {"gt": 900}}, "b")])


def everything_chart() -> FlowChart:
    """Decisions, selections, a fork, shared and isolated subflows, emits and appends."""
    inner = flow_chart("Inner", lambda s: s.__setitem__("y", s["x"] + 1), id="inner").build()

    def start(scope: Scope) -> None:
        scope["score"] = scope["application"]["score"]
        scope.append("log", {"at": "start"})
        scope.emit("started", {"tags": [1, 2]})
        scope.merge("profile", {"seen": True})

    return (
        flow_chart("Start", start)
        .decider("Route", route)
        .branch("approve", "Approve", lambda s: s.__setitem__("decision", "approved"))
        .branch("review", "Review", lambda s: s.__setitem__("decision", "review"))
        .end()
        .selector("Pick", pick)
        .branch("a", "A", lambda s: s.append("log", "a"))
        .branch("b", "B", lambda s: s.append("log", "b"))
        .end()
        .fork("Both", {"p": lambda s: s.__setitem__("p", s["log"]), "q": lambda s: None})
        .subflow("Shared", inner, id="shared")
        .subflow("Isolated", inner, id="iso", input={"x": "score"}, output={"out": "y"})
        .then("Tidy", lambda s: s.__delitem__("profile"))
        .build()
    )


def record(
    tmp_path: Path, chart: FlowChart, state: Any = None, timeout: float | None = None, **kw: Any
) -> RunResult:
    rec = jsonl(tmp_path / "run.jsonl", **kw)
    return Executor(chart, recorders=[rec]).run_sync(state, raise_on_error=False, timeout=timeout)


def assert_round_trip(path: Path, result: RunResult) -> Snapshot:
    loaded = load_recording(path, result.run_id)
    assert loaded == result.snapshot
    assert loaded.to_json() == result.snapshot.to_json()
    assert loaded.state == result.state
    assert [loaded.state_at(k) for k in range(len(loaded) + 1)] == [
        result.snapshot.state_at(k) for k in range(len(loaded) + 1)
    ]
    return loaded


def test_a_recording_rebuilds_the_snapshot(tmp_path):
    result = record(tmp_path, everything_chart(), {"application": {"score": 720}, "x": 1})
    assert result.status == "done"
    loaded = assert_round_trip(tmp_path / "run.jsonl", result)
    assert loaded.state["decision"] == "approved" and loaded.state["out"] == 721
    kinds = {c.kind for c in loaded.commits}
    assert kinds >= {"stage", "decider", "selector", "merge", "subflow-input", "subflow-output"}


def test_every_hook_is_one_line_with_its_fields(tmp_path):
    result = record(tmp_path, everything_chart(), {"application": {"score": 720}, "x": 1})
    lines = list(read_recording(tmp_path / "run.jsonl"))
    assert lines[0] == {
        "type": "on_run_start",
        "format": RECORDING_FORMAT,
        "run_id": result.run_id,
        "chart_id": "start",
        "seq": 0,
        "input": {"application": {"score": 720}, "x": 1},
    }
    types = [line["type"] for line in lines]
    assert set(types) == {
        "on_run_start",
        "on_stage_start",
        "on_read",
        "on_write",
        "on_emit",
        "on_commit",
        "on_decision",
        "on_stage_end",
        "on_subflow_enter",
        "on_subflow_exit",
        "on_run_end",
    }
    assert types.count("on_commit") == len(result.snapshot)
    assert all(line["run_id"] == result.run_id for line in lines)
    emit = next(line for line in lines if line["type"] == "on_emit")
    assert emit["name"] == "started" and emit["payload"] == {"tags": [1, 2]}
    write = next(line for line in lines if line["type"] == "on_write")
    assert write["op"] == {"kind": "set", "key": "score", "value": 720}
    decision = next(line for line in lines if line["type"] == "on_decision")
    assert decision["chosen"] == ["approve"] and decision["evidence"]["chosen"] == "approve"
    commit = next(line for line in lines if line["type"] == "on_commit")
    assert commit == {
        "type": "on_commit",
        **orjson.loads(orjson.dumps(result.snapshot.commits[0].to_dict())),
    }
    read = next(line for line in lines if line["type"] == "on_read" and line["key"] == "log")
    assert read["value"] == [{"at": "start"}, "a"]  # a frozen list, written as JSON
    assert lines[-1] == {
        "type": "on_run_end",
        "run_id": result.run_id,
        "seq": len(result.snapshot),
        "status": "done",
        "error": None,
        "break_reason": None,
    }


def test_an_absent_read_is_recorded_as_absent(tmp_path):
    record(tmp_path, flow_chart("Peek", lambda s: s.get("maybe", 0)).build())
    (read,) = [x for x in read_recording(tmp_path / "run.jsonl") if x["type"] == "on_read"]
    assert read["key"] == "maybe" and read["absent"] is True and "value" not in read


def test_read_values_can_be_left_out(tmp_path):
    chart = flow_chart("A", lambda s: s.__setitem__("y", s["x"])).build()
    result = record(tmp_path, chart, {"x": [1, 2, 3]}, read_values=False)
    (read,) = [x for x in read_recording(tmp_path / "run.jsonl") if x["type"] == "on_read"]
    assert read["key"] == "x" and "value" not in read and "absent" not in read
    assert_round_trip(tmp_path / "run.jsonl", result)


def test_a_failed_run_round_trips_with_its_error(tmp_path):
    def bad(scope: Scope) -> None:
        scope["half"] = "written"
        raise ValueError("boom")

    result = record(tmp_path, flow_chart("Ok", lambda s: None).then("Bad", bad).build())
    assert result.status == "failed"
    loaded = assert_round_trip(tmp_path / "run.jsonl", result)
    assert loaded.error is not None and loaded.error.type == "StageError"
    errors = [x for x in read_recording(tmp_path / "run.jsonl") if x["type"] == "on_error"]
    assert [e["error"][0] for e in errors] == ["ValueError", "StageError"]


def test_a_merge_conflict_and_a_fork_branch_failure_round_trip(tmp_path):
    conflict = flow_chart("S", lambda s: None).fork(
        "F", {"a": lambda s: s.__setitem__("k", 1), "b": lambda s: s.__setitem__("k", 2)}
    )
    result = record(tmp_path, conflict.build())
    assert result.status == "failed"
    assert_round_trip(tmp_path / "run.jsonl", result)


def test_a_broken_run_round_trips_with_its_reason(tmp_path):
    chart = flow_chart("Stop", lambda s: s.break_("done early")).then("Never", lambda s: None)
    result = record(tmp_path, chart.build())
    assert result.status == "broken"
    loaded = assert_round_trip(tmp_path / "run.jsonl", result)
    assert loaded.break_reason == "done early"


def test_a_paused_and_resumed_run_round_trips_at_each_step(tmp_path):
    def ask(scope: Scope) -> None:
        scope["asked"] = True
        scope.pause({"question": "approve?"})

    inner = flow_chart("Ask", ask, id="ask", on_resume=lambda s, v: s.__setitem__("a", v)).build()
    chart = (
        flow_chart("Prepare", lambda s: s.__setitem__("amount", 5))
        .subflow("Approval", inner, id="approval")
        .then("Pay", lambda s: s.__setitem__("paid", s["a"]))
        .build()
    )
    path = tmp_path / "run.jsonl"
    executor = Executor(chart, recorders=[jsonl(path)])
    first = executor.run_sync()
    assert first.status == "paused"
    assert_round_trip(path, first)
    second = executor.resume_sync(first.checkpoint, {"ok": [True]})
    assert second.status == "done" and second.run_id == first.run_id
    loaded = assert_round_trip(path, second)
    assert loaded.state["paid"] == {"ok": [True]}
    starts = [x for x in read_recording(path) if x["type"] == "on_run_start"]
    assert [s["seq"] for s in starts] == [0, len(first.snapshot)]
    resume = next(x for x in read_recording(path) if x["type"] == "on_resume")
    assert resume["value"] == {"ok": [True]}


def test_one_file_holds_several_runs(tmp_path):
    path = tmp_path / "runs.jsonl"
    rec = jsonl(path)
    executor = Executor(everything_chart(), recorders=[rec])
    first = executor.run_sync({"application": {"score": 720}, "x": 1})
    assert path.read_bytes().endswith(b'"break_reason":null}\n')  # flushed at the run's end
    second = executor.run_sync({"application": {"score": 950}, "x": 2})
    assert load_recording(path) == second.snapshot  # default: the last run
    assert load_recording(path, first.run_id) == first.snapshot
    assert load_recording(path, second.run_id).state["decision"] == "approved"


def test_concurrent_branches_round_trip(tmp_path):
    import anyio

    async def slow(scope: Scope) -> None:
        await anyio.sleep(0.01)
        scope["a"] = 1

    async def fast(scope: Scope) -> None:
        scope["b"] = 2

    chart = flow_chart("S", lambda s: None).fork("F", {"a": slow, "b": fast}).build()
    result = record(tmp_path, chart)
    assert_round_trip(tmp_path / "run.jsonl", result)


def test_bad_recordings_say_what_is_wrong(tmp_path):
    path = tmp_path / "run.jsonl"
    with pytest.raises(ConfigurationError, match="does not exist"):
        jsonl(tmp_path / "nope" / "run.jsonl")
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="holds no run"):
        load_recording(path)
    path.write_bytes(b'{"type": "on_run_start"\n')
    with pytest.raises(ValueError, match="line 1 is not JSON"):
        load_recording(path)
    path.unlink()
    result = record(tmp_path, flow_chart("A", lambda s: None).then("B", lambda s: None).build())
    with pytest.raises(ValueError, match="no run 'run-x'"):
        load_recording(path, "run-x")
    lines = path.read_bytes().splitlines(keepends=True)
    without_first_commit = [
        line for line in lines if b'"on_commit","seq":1' not in line.replace(b" ", b"")
    ]
    path.write_bytes(b"".join(without_first_commit))
    with pytest.raises(ValueError, match=r"lacks commits \[1\]"):
        load_recording(path, result.run_id)
    path.write_bytes(b"".join(lines[:-1]))  # no on_run_end: cut short
    assert load_recording(path, result.run_id).status == "incomplete"


def test_a_recording_that_starts_at_a_resume_has_no_initial_state(tmp_path):
    chart = (
        flow_chart("Ask", lambda s: s.pause(), on_resume=lambda s, v: None)
        .then("B", lambda s: None)
        .build()
    )
    first = Executor(chart).run_sync()
    path = tmp_path / "resumed.jsonl"
    Executor(chart, recorders=[jsonl(path)]).resume_sync(first.checkpoint, None)
    with pytest.raises(ValueError, match="begins at a resume"):
        load_recording(path)


def test_the_recorder_has_a_name(tmp_path):
    assert jsonl(tmp_path / "x.jsonl").name == "jsonl"


def _ask(scope: Scope) -> None:
    scope["asked"] = 1
    scope.pause({"q": "ok?"})


def _flaky_factory() -> Any:
    calls: list[int] = []

    def flaky(scope: Scope) -> None:
        calls.append(1)
        scope["attempt"] = len(calls)
        if len(calls) < 2:
            raise ConnectionError("again")

    return flaky


async def _slow(scope: Scope) -> None:
    import anyio

    scope["started"] = True
    await anyio.sleep(5)


def _bad_input(scope: Scope) -> Any:
    raise KeyError("no such key")


SHAPES = {
    "for_each": lambda: (
        flow_chart("S", lambda s: s.__setitem__("xs", [1, 2]))
        .parallel_for_each(
            "Each",
            items="xs",
            branch=lambda s: s.__setitem__("result", s["item"]),
            into="out",
            max_branches=4,
        )
        .build()
    ),
    "retry": lambda: flow_chart("R", _flaky_factory(), retry=Retry(attempts=2, backoff=0)).build(),
    "timeout": lambda: flow_chart("Slow", _slow).build(),
    "propagated break": lambda: (
        flow_chart("S", lambda s: None)
        .subflow(
            "Sub",
            flow_chart("Stop", lambda s: s.break_("inner")).build(),
            id="sub",
            input={"x": "x"},
            propagate_break=True,
        )
        .build()
    ),
    "failing input mapping": lambda: (
        flow_chart("S", lambda s: None)
        .subflow("Sub", flow_chart("In", lambda s: None).build(), id="sub", input=_bad_input)
        .build()
    ),
}


STATUS = {
    "for_each": "done",
    "retry": "done",
    "timeout": "failed",
    "propagated break": "broken",
    "failing input mapping": "failed",
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_more_shapes_round_trip(tmp_path, shape):
    result = record(tmp_path, SHAPES[shape](), {"x": 1}, timeout=0.05)
    assert result.status == STATUS[shape]
    assert_round_trip(tmp_path / "run.jsonl", result)


def test_a_pause_in_a_fork_branch_round_trips(tmp_path):
    inner = flow_chart("Ask", _ask, id="ask", on_resume=lambda s, v: s.__setitem__("a", v))
    chart = (
        flow_chart("S", lambda s: None)
        .fork("F", {"a": inner.build(), "b": lambda s: s.__setitem__("b", 1)})
        .then("End", lambda s: None)
        .build()
    )
    path = tmp_path / "run.jsonl"
    executor = Executor(chart, recorders=[jsonl(path)])
    first = executor.run_sync()
    assert_round_trip(path, first)
    assert_round_trip(path, executor.resume_sync(first.checkpoint, [1, 2]))
