"""Recovery at any depth, proven by a real SIGKILL of a child process at the exact moment.

For each crash: what the store held before ``recover`` never runs again (every stage counts
its executions in a file), what was in flight runs again, and the recovered run ends with
the same log (stage paths, in order) and the same state as a run that never crashed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from trackway import Executor, MemoryStore, RunResult, SqliteStore, flow_chart
from trackway.engine import LoopLimitError, RecoveryError

from . import crash_depth

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(autouse=True)
def _count_here(tmp_path, monkeypatch):
    """Stages run by the recovery in this process count their runs in the same file."""
    monkeypatch.setitem(crash_depth.MODE, "ran", str(tmp_path / "ran.txt"))
    monkeypatch.setitem(crash_depth.MODE, "mode", "none")


def _child(tmp: Path, chart: str, mode: str, target: str, *rest: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.engine.crash_depth", str(tmp / "runs.db"),
         str(tmp / "ran.txt"), chart, mode, target, *rest],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    if mode == "none":
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == -signal.SIGKILL, proc.stderr
    return proc.stdout


def _ran(tmp: Path) -> Counter[str]:
    path = tmp / "ran.txt"
    return Counter(path.read_text().split()) if path.exists() else Counter()


def _uncrashed(chart: str) -> RunResult:
    return Executor(crash_depth.CHARTS[chart](), store=MemoryStore(), max_iterations=20).run_sync()


def _paths(result: RunResult) -> list[str]:
    return [c.stage_path for c in result.snapshot.commits]


CRASHES = [
    # a selector's branches in flight: the old recover() skipped them and their merge
    ("selector", "start", "pick#1/b/b2#1"),
    # the branches committed, their merge did not
    ("selector", "commit", "pick#1/merge"),
    # a fork inside an isolated subflow
    ("subflow_fork", "start", "sub#1/fan#3/y#0"),
    ("subflow_fork", "commit", "sub#1/output"),
    # one item of a for-each in flight
    ("for_each", "start", "each#1/1/e2#1"),
    # inside a shared subflow, on the second time round a loop
    ("loop", "start", "body/check#6"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("chart", "mode", "target"), CRASHES)
def test_recover_continues_a_run_killed_at_any_depth(tmp_path, chart, mode, target):
    _child(tmp_path, chart, mode, target)
    store = SqliteStore(tmp_path / "runs.db")
    (info,) = store.list_runs()
    assert info.status == "running"
    before = [c.stage_path for c in store.load(info.run_id).commits]
    ran_before = _ran(tmp_path)

    result = Executor(crash_depth.CHARTS[chart](), store=store, max_iterations=20).recover_sync(
        info.run_id
    )
    ran = _ran(tmp_path)
    clean = _uncrashed(chart)
    assert result.status == clean.status == "done"
    assert _paths(result) == _paths(clean)  # same walk, same indices, nothing twice
    assert result.state == clean.state
    assert store.load(info.run_id) == result.snapshot
    for path in before:  # committed before the crash: never ran again
        if path in ran_before:
            assert ran[path] == ran_before[path] == 1, path
    assert ran[target] >= 1 or mode == "commit"
    assert all(count <= 2 for count in ran.values())  # at most the in-flight work again
    store.close()


@pytest.mark.slow
def test_a_pause_whose_checkpoint_the_crash_lost_pauses_again_with_a_new_one(tmp_path):
    _child(tmp_path, "pause", "checkpoint", "")
    store = SqliteStore(tmp_path / "runs.db")
    (info,) = store.list_runs()
    assert [c.outcome for c in store.load(info.run_id).commits] == ["ok", "paused"]
    chart = crash_depth.CHARTS["pause"]()
    result = Executor(chart, store=store).recover_sync(info.run_id)
    assert result.status == "paused" and result.checkpoint is not None
    assert store.list_runs()[0].status == "paused"
    assert store.load_checkpoint(result.checkpoint.checkpoint_id) == result.checkpoint
    assert _ran(tmp_path)["ask#1"] == 1  # the paused stage did not run again
    done = Executor(chart, store=store).resume_sync(result.checkpoint, "yes")
    assert done.status == "done" and done.state["answer"] == "yes"
    assert done.state["payments"] == 1
    store.close()


@pytest.mark.slow
def test_a_resume_killed_after_its_claim_continues_with_the_claimed_answer(tmp_path):
    checkpoint = _child(tmp_path, "pause", "none", "").strip()
    (tmp_path / "cp.json").write_text(checkpoint)
    _child(tmp_path, "pause", "resume", str(tmp_path / "cp.json"), "approved")
    store = SqliteStore(tmp_path / "runs.db")
    (info,) = store.list_runs()
    chart = crash_depth.CHARTS["pause"]()
    # the checkpoint is spent: resuming it again is refused, and the answer is not lost
    from trackway import CheckpointClaimedError

    with pytest.raises(CheckpointClaimedError):
        Executor(chart, store=store).resume_sync(checkpoint, "a second answer")
    result = Executor(chart, store=store).recover_sync(info.run_id)
    assert result.status == "done" and result.state["answer"] == "approved"
    assert result.state["payments"] == 1
    paths = _paths(result)
    assert paths == ["start#0", "ask#1", "ask#1:resume1", "pay#2"]
    assert _ran(tmp_path)["pay#2"] == 1
    store.close()


def test_a_run_a_rule_ended_is_not_recovered(tmp_path):
    store = SqliteStore(tmp_path / "runs.db")
    ran: list[int] = []

    def step(scope):
        ran.append(1)
        scope["n"] = scope.get("n", 0) + 1

    chart = flow_chart("Step", step, id="step").loop_to("step").build()
    failed = Executor(chart, store=store, max_iterations=3).run_sync(raise_on_error=False)
    assert isinstance(failed.error, LoopLimitError)
    count = len(ran)
    with pytest.raises(RecoveryError, match="ended failed by LoopLimitError"):
        Executor(chart, store=store, max_iterations=3).recover_sync(failed.run_id)
    assert len(ran) == count  # the loop body did not run once more
    assert store.load(failed.run_id) == failed.snapshot
    store.close()


def test_a_paused_run_whose_checkpoint_waits_is_not_recovered(tmp_path):
    store = MemoryStore()
    chart = crash_depth.CHARTS["pause"]()
    paused = Executor(chart, store=store).run_sync()
    with pytest.raises(RecoveryError, match="resume it"):
        Executor(chart, store=store).recover_sync(paused.run_id)
    assert Executor(chart, store=store).resume_sync(paused.checkpoint, "ok").status == "done"


def test_recovering_with_another_chart_names_the_mismatch(tmp_path):
    store = MemoryStore()
    chart = flow_chart("A", lambda s: None, id="a").then("B", lambda s: None, id="b").build()
    run = Executor(chart, store=store).run_sync()
    store.begin_run(run.run_id, chart.id, {})  # as if its process had died before the end
    other = flow_chart("A", lambda s: None, id="a").then("C", lambda s: None, id="c").build()
    with pytest.raises(RecoveryError, match="holds stage 'b' at 'b#1'"):
        Executor(other, store=store).recover_sync(run.run_id)
