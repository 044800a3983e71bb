from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from trackway import CheckpointClaimedError, Executor, StageError, flow_chart
from trackway.engine import ChartMismatchError, Checkpoint, CheckpointError, LoopLimitError

from . import pause_charts as pc

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def _reset_calls():
    pc.CALLS.clear()


def test_pause_commits_returns_a_checkpoint_and_resume_continues_the_same_log():
    ex = Executor(pc.approval_chart())
    first = ex.run_sync({"amount": 500})
    assert first.status == "paused" and first.checkpoint is not None
    cp = first.checkpoint
    assert cp.payload == {"question": "approve?", "amount": 500}
    assert cp.paused_at == "ask#1" and cp.state["asked"] is True
    paused = first.snapshot.history()[-1]
    assert (paused.outcome, paused.detail["pause"]["amount"]) == ("paused", 500)

    again = Checkpoint.from_json(cp.to_json())
    assert again == cp
    second = ex.resume_sync(again, "yes")
    assert second.status == "done" and second.run_id == first.run_id
    assert second.state["done"] == "answer=yes"
    log = second.snapshot.history()
    assert [(c.seq, c.stage_path, c.kind, c.outcome) for c in log] == [
        (1, "prepare#0", "stage", "ok"),
        (2, "ask#1", "stage", "paused"),
        (3, "ask#1:resume1", "resume", "ok"),
        (4, "finish#2", "stage", "ok"),
    ]
    assert log[2].detail == {"resume": {"value": "yes"}}
    assert pc.CALLS == {"prepare": 1, "ask": 1}  # nothing that committed ran again


def test_a_checkpoint_resumes_once():
    ex = Executor(pc.approval_chart())
    cp = ex.run_sync().checkpoint
    ex.resume_sync(cp, "yes")
    with pytest.raises(CheckpointClaimedError, match="already resumed"):
        Executor(pc.approval_chart()).resume_sync(cp, "again")


KEY = "a shared secret of at least 16 bytes"
RESUME_ELSEWHERE = (
    "import sys, json; sys.path.insert(0, sys.argv[1]);"
    "from engine import pause_charts as pc; from trackway import Executor;"
    "key = sys.argv[3] or None;"
    "r = Executor(pc.approval_chart(), checkpoint_key=key).resume_sync("
    "open(sys.argv[2], 'rb').read(), 'remote');"
    "print(json.dumps({'status': r.status, 'done': r.state['done'], 'calls': pc.CALLS,"
    "'paths': [c.stage_path for c in r.snapshot.history()], 'run': r.run_id}))"
)


def _resume_elsewhere(path: Path, key: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RESUME_ELSEWHERE, str(HERE.parent), str(path), key],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_resume_in_another_process(tmp_path):
    first = Executor(pc.approval_chart(), checkpoint_key=KEY).run_sync({"amount": 7})
    path = tmp_path / "cp.json"
    path.write_bytes(first.checkpoint.to_json())
    # without the key the checkpoint signs with, another process refuses it (not spent)
    refused = _resume_elsewhere(path, "")
    assert refused.returncode == 1 and "ForgedCheckpointError" in refused.stderr
    assert "checkpoint_key" in refused.stderr
    proc = _resume_elsewhere(path, KEY)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "done" and out["done"] == "answer=remote"
    assert out["calls"] == {}  # the other process ran no stage that had committed
    assert out["paths"] == ["prepare#0", "ask#1", "ask#1:resume1", "finish#2"]
    assert out["run"] == first.run_id


def test_pause_three_subflows_deep_resumes_without_rerunning_outer_stages():
    ex = Executor(pc.deep_chart())
    first = ex.run_sync()
    assert first.status == "paused"
    assert first.checkpoint.paused_at == "level1/level2#2/level3/ask#5"
    calls_before = dict(pc.CALLS)
    second = ex.resume_sync(first.checkpoint, "deep")
    assert second.status == "done" and second.state["end"] == "deep"
    assert calls_before == pc.CALLS
    paths = [c.stage_path for c in second.snapshot.history()]
    assert paths[len(first.snapshot) :] == [
        "level1/level2#2/level3/ask#5:resume1",
        "level1/level2#2/level3/after#6",
        "level1/level2#2/output",
        "root-end#7",
    ]
    assert len(paths) == len(set(paths))


def test_pause_inside_a_decider_branch():
    chart = (
        flow_chart("Start", lambda s: None)
        .decider("Route", lambda s: "ask")
        .branch("ask", "Ask", pc.ask, on_resume=pc.take_answer)
        .branch("skip", "Skip", lambda s: None)
        .end()
        .then("After", lambda s: s.__setitem__("after", s["answer"]))
        .build()
    )
    ex = Executor(chart)
    result = ex.resume_sync(ex.run_sync().checkpoint, 42)
    assert result.state["after"] == 42


def test_pause_inside_a_selector_branch_other_branches_finish_and_merge_after_resume():
    async def slow(s):
        await anyio.sleep(0.01)
        s["slow"] = "done"

    asker = flow_chart("Ask", pc.ask, id="ask", on_resume=pc.take_answer).build()
    chart = (
        flow_chart("Start", lambda s: None)
        .selector("Pick", lambda s: ["a", "b"], id="pick")
        .branch("a", "Asker", asker)
        .branch("b", "Slow", slow)
        .end()
        .then("Join", lambda s: s.__setitem__("joined", [s["slow"], s["answer"]]))
        .build()
    )
    ex = Executor(chart)
    first = ex.run_sync()
    assert first.status == "paused"
    assert "slow" not in first.state  # the merge waits for the paused branch
    second = ex.resume_sync(first.checkpoint, "ok")
    assert second.status == "done" and second.state["joined"] == ["done", "ok"]
    kinds = [(c.stage_path, c.kind, c.outcome) for c in second.snapshot.history()]
    assert ("pick#1/merge", "merge", "ok") in kinds
    assert kinds.index(("pick#1/merge", "merge", "ok")) == len(kinds) - 2


def test_two_parallel_pauses_are_resumed_one_at_a_time():
    def asker(name):
        def stage(s):
            s.pause({"who": name})

        return stage

    chart = flow_chart("S", lambda s: None).fork("F", {"x": asker("x"), "y": asker("y")}).build()
    ex = Executor(chart)
    first = ex.run_sync()
    assert first.checkpoint.payload == {"who": "x"}
    second = ex.resume_sync(first.checkpoint, 1)
    assert second.status == "paused" and second.checkpoint.payload == {"who": "y"}
    third = ex.resume_sync(second.checkpoint, 2)
    assert third.status == "done"
    resumes = [c for c in third.snapshot.history() if c.kind == "resume"]
    assert [(c.stage_path, c.detail["resume"]["value"]) for c in resumes] == [
        ("f#1/x#0:resume1", 1),
        ("f#1/y#0:resume1", 2),
    ]


def test_loop_budget_and_counters_continue_across_resume():
    def step(s):
        n = s.get("n", 0) + 1
        s["n"] = n
        if n == 3:
            s.pause("third")

    chart = flow_chart("Step", step, on_resume=lambda s, v: None).loop_to("step").build()
    ex = Executor(chart, max_iterations=5)
    first = ex.run_sync()
    assert first.status == "paused" and first.state["n"] == 3
    with pytest.raises(LoopLimitError) as info:
        ex.resume_sync(first.checkpoint, None)
    # 6 executions in all (the 6th back edge is refused), exactly as without the pause
    steps = [c for c in info.value.snapshot.history() if c.kind == "stage"]
    assert [c.stage_path for c in steps] == [f"step#{i}" for i in range(6)]


def test_many_pauses_in_one_run():
    def ask_again(s):
        s.append("answers", len(s.get("answers", [])))
        if len(s["answers"]) < 5:
            s.pause("more")
        else:
            s.break_("enough")

    chart = flow_chart("Ask", ask_again, on_resume=lambda s, v: s.append("got", v))
    ex = Executor(chart.loop_to("ask").build())
    result = ex.run_sync()
    for i in range(4):
        result = ex.resume_sync(result.checkpoint, i)
    assert result.status == "broken" and list(result.state["got"]) == [0, 1, 2, 3]


def test_resume_refuses_a_changed_chart_saying_what_differs():
    cp = Executor(pc.approval_chart()).run_sync().checkpoint
    changed = (
        flow_chart("Prepare", lambda s: None, id="prepare")
        .then("Ask", pc.ask, id="ask", on_resume=pc.take_answer)
        .then("Audit", lambda s: None, id="audit")
        .then("Finish", lambda s: None, id="finish")
        .build()
    )
    with pytest.raises(ChartMismatchError) as info:
        Executor(changed).resume_sync(cp, "yes")
    assert "stage audit is new" in str(info.value)
    assert "the next edge ask -> finish was removed" in str(info.value)
    assert "the next edge ask -> audit is new" in str(info.value)
    other = flow_chart("Other", lambda s: None).build()
    with pytest.raises(ChartMismatchError, match="made by chart 'prepare'"):
        Executor(other).resume_sync(cp, "yes")


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"{not json", "invalid JSON"),
        (b'{"format": "x"}', "this version reads 'trackway.checkpoint/2'"),
        (b'{"format": "trackway.checkpoint/1"}', "missing"),
    ],
)
def test_corrupt_checkpoints_are_refused(data, fragment):
    with pytest.raises(CheckpointError, match=fragment):
        Executor(pc.approval_chart()).resume_sync(data, "x")


def test_deciders_cannot_pause():
    chart = (
        flow_chart("S", lambda s: None)
        .decider("R", lambda s: s.pause("no"))
        .branch("a", "A", lambda s: None)
        .end()
        .build()
    )
    with pytest.raises(StageError, match="cannot pause"):
        Executor(chart).run_sync()
