"""Branching from history: ``Executor.fork_from`` continues a new run from commit k of another."""

from __future__ import annotations

import orjson
import pytest

from tests.backends import run_async
from trackway import Executor, MemoryStore, Snapshot, flow_chart
from trackway.agent import load_recording
from trackway.engine import (
    ChartMismatchError,
    DocumentError,
    ExecutorUsageError,
    OutOfRangeError,
    RedactionPolicy,
    SqliteStore,
    StateValueError,
)
from trackway.recorders import jsonl, narrative, narrative_from_log, write_recording

from . import pause_charts as pc


def _calls() -> dict[str, int]:
    pc.CALLS.clear()
    return pc.CALLS


def priced_chart():
    def quote(s):
        pc.CALLS["quote"] = pc.CALLS.get("quote", 0) + 1
        s["price"] = s["base"] * 2

    def discount(s):
        pc.CALLS["discount"] = pc.CALLS.get("discount", 0) + 1
        s["price"] = s["price"] - s.get("off", 0)

    def total(s):
        pc.CALLS["total"] = pc.CALLS.get("total", 0) + 1
        s["total"] = s["price"] + 1

    return (
        flow_chart("Quote", quote, id="quote")
        .then("Discount", discount, id="discount")
        .then("Total", total, id="total")
        .build()
    )


def test_a_fork_continues_after_commit_k_with_changes_and_nothing_before_runs_again():
    calls = _calls()
    ex = Executor(priced_chart())
    original = ex.run_sync({"base": 10})
    assert original.state["total"] == 21 and calls == {"quote": 1, "discount": 1, "total": 1}
    fork = ex.fork_from_sync(original.snapshot, 1, {"off": 5})
    assert calls == {"quote": 1, "discount": 2, "total": 2}  # quote was taken from the log
    assert fork.status == "done" and fork.run_id != original.run_id
    assert fork.state == {"base": 10, "price": 15, "off": 5, "total": 16}
    history = [(c.seq, c.stage_path, c.kind) for c in fork.snapshot.history()]
    assert history == [
        (1, "quote#0", "stage"),
        (2, "forked-from@1", "forked-from"),
        (3, "discount#1", "stage"),
        (4, "total#2", "stage"),
    ]
    copied, opening = fork.snapshot.commits[:2]
    assert copied == original.snapshot.commits[0]._replace(run_id=fork.run_id)
    assert opening.detail == {"forked_from": {"run_id": original.run_id, "k": 1}}
    assert [(op.kind, op.key, op.value) for op in opening.ops] == [("set", "off", 5)]
    assert fork.snapshot.state_at(1) == original.snapshot.state_at(1)
    assert fork.snapshot.state_at(2) == {"base": 10, "price": 20, "off": 5}
    assert original.state["total"] == 21  # the original is untouched
    assert narrative_from_log(fork.snapshot).lines()[1] == (
        f"Forked from run {original.run_id} after commit 1 — set off = 5"
    )


def test_k_zero_reruns_from_the_input_and_k_at_the_end_only_records_the_fork():
    calls = _calls()
    ex = Executor(priced_chart())
    original = ex.run_sync({"base": 1})
    rerun = ex.fork_from_sync(original.snapshot, 0, {"base": 2})
    assert rerun.state["total"] == 5 and calls["quote"] == 2
    assert [c.kind for c in rerun.snapshot.commits] == ["forked-from", "stage", "stage", "stage"]
    end = ex.fork_from_sync(original.snapshot, 3)
    assert calls == {"quote": 2, "discount": 2, "total": 2}
    assert (
        end.state == original.state and [c.kind for c in end.snapshot.commits][-1] == "forked-from"
    )


def test_fork_from_a_run_id_in_a_sqlite_file_is_stored_as_a_child(tmp_path):
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    ex = Executor(priced_chart(), store=store)
    original = ex.run_sync({"base": 3})
    fork = run_async(ex.fork_from, original.run_id, 2, {"price": 100})
    store.close()
    reopened = SqliteStore(db, read_only=True)
    try:
        stored = reopened.load(fork.run_id)
        assert stored == fork.snapshot and stored.status == "done"
        assert stored.commits[2].detail == {"forked_from": {"run_id": original.run_id, "k": 2}}
        assert stored.state["total"] == 101
        assert reopened.load(original.run_id) == original.snapshot
        runs = {r.run_id: r for r in reopened.list_runs()}
        assert runs[fork.run_id].commit_count == 4
    finally:
        reopened.close()


def test_forking_at_a_pause_gives_a_new_paused_run_to_answer_differently(tmp_path):
    store = SqliteStore(tmp_path / "runs.db")
    calls = _calls()
    ex = Executor(pc.approval_chart(), store=store)
    original = ex.run_sync({"amount": 5})
    fork = ex.fork_from_sync(original.run_id, 2, {"amount": 7})
    assert fork.status == "paused" and calls == {"prepare": 1, "ask": 1}
    assert fork.checkpoint.checkpoint_id == f"{fork.run_id}@3"
    assert {p.run_id for p in store.paused()} == {original.run_id, fork.run_id}
    no = ex.resume_sync(fork.run_id, "no")
    yes = ex.resume_sync(original.run_id, "yes")
    assert (no.state["done"], no.state["amount"]) == ("answer=no", 7)
    assert (yes.state["done"], yes.state["amount"]) == ("answer=yes", 5)
    # a fork of the answered fork, back before the answer: pauses there again
    again = ex.fork_from_sync(no.snapshot, 3)
    assert again.status == "paused" and again.checkpoint.paused_at == "ask#1"
    store.close()


def test_a_fork_inside_a_loop_keeps_its_budget_and_paths():
    def step(s):
        s["i"] = s.get("i", 0) + s.get("by", 1)
        if s["i"] >= 6:
            s.break_("enough")

    chart = flow_chart("Step", step).loop_to("step").build()
    ex = Executor(chart, max_iterations=10)
    original = ex.run_sync()
    assert original.status == "broken" and len(original.snapshot) == 6
    fork = ex.fork_from_sync(original.snapshot, 2, {"by": 3})
    assert [c.stage_path for c in fork.snapshot.history()] == [
        "step#0",
        "step#1",
        "forked-from@2",
        "step#2",
        "step#3",
    ]
    assert fork.state["i"] == 8 and fork.break_reason == "enough"


def test_a_fork_inside_an_isolated_subflow_and_between_parallel_branches():
    calls = _calls()
    ex = Executor(pc.deep_chart())
    paused = ex.run_sync()
    done = ex.resume_sync(paused.checkpoint, "ok")
    inner = next(c.seq for c in done.snapshot.commits if c.stage_path.endswith("/level3/before#4"))
    before = dict(calls)
    fork = ex.fork_from_sync(done.snapshot, inner, {"outer": 99})
    assert fork.status == "paused"  # the pause after k is run again, live
    assert calls["root-start"] == before["root-start"] and calls["ask"] == before["ask"] + 1
    finished = ex.resume_sync(fork.checkpoint, "again")
    assert finished.state["end"] == "again" and finished.state["outer"] == 99

    def branch(name):
        def fn(s):
            pc.CALLS[name] = pc.CALLS.get(name, 0) + 1
            s[name] = s.get("seed", 0) + 1

        return fn

    fan = flow_chart("Start", lambda s: None).fork(
        "Fan", {"a": branch("a"), "b": branch("b")}, merge="last"
    )
    ex = Executor(fan.build())
    _calls()
    original = ex.run_sync({"seed": 1})
    paths = [c.stage_path for c in original.snapshot.commits]
    assert paths == ["start#0", "fan#1/a#0", "fan#1/b#0", "fan#1"]
    fork = ex.fork_from_sync(original.snapshot, 2, {"seed": 10})
    assert pc.CALLS == {"a": 1, "b": 2}  # a was taken from the log, b ran again
    assert (fork.state["a"], fork.state["b"]) == (2, 11)


def test_fork_errors_name_the_fix(tmp_path):
    ex = Executor(priced_chart())
    original = ex.run_sync({"base": 1})
    with pytest.raises(OutOfRangeError, match=r"has 3 commits, so k must be an int from 0 .* to 3"):
        ex.fork_from_sync(original.snapshot, 4)
    with pytest.raises(OutOfRangeError):
        ex.fork_from_sync(original.snapshot, -1)
    with pytest.raises(OutOfRangeError):
        ex.fork_from_sync(original.snapshot, True)
    with pytest.raises(ExecutorUsageError, match=r"has none: use Executor\(chart, store="):
        ex.fork_from_sync(original.run_id, 1)
    other = Executor(flow_chart("Other", lambda s: None).build())
    with pytest.raises(ChartMismatchError, match="made by chart 'quote', not 'other'"):
        other.fork_from_sync(original.snapshot, 1)
    with pytest.raises(StateValueError, match="state keys are str"):
        ex.fork_from_sync(original.snapshot, 1, {1: "x"})
    with pytest.raises(StateValueError):
        ex.fork_from_sync(original.snapshot, 1, {"x": object()})

    def bad(s):
        raise ValueError("no")

    failing = Executor(flow_chart("Ok", lambda s: None).then("Bad", bad).build())
    failed = failing.run_sync(raise_on_error=False)
    with pytest.raises(ExecutorUsageError, match=r"commit 2 \(bad#1\) failed.*fork at k=1"):
        failing.fork_from_sync(failed.snapshot, 2)
    assert failing.fork_from_sync(failed.snapshot, 1, raise_on_error=False).status == "failed"

    store = MemoryStore()
    hidden = Executor(priced_chart(), store=store, redact=RedactionPolicy(keys=["base"]))
    run_id = hidden.run_sync({"base": 1}).run_id
    with pytest.raises(ExecutorUsageError, match="redaction policy"):
        hidden.fork_from_sync(run_id, 1)


def test_a_fork_records_and_reloads_through_every_document(tmp_path):
    path = tmp_path / "fork.jsonl"
    story = narrative()
    ex = Executor(priced_chart())
    original = ex.run_sync({"base": 2})
    recorded = Executor(priced_chart(), recorders=[jsonl(path), story])
    fork = recorded.fork_from_sync(original.snapshot, 1, {"off": 1})
    assert story.lines()[0] == f"Forked from run {original.run_id} after commit 1 — set off = 1"
    again = Snapshot.from_json(fork.snapshot.to_json())
    assert again == fork.snapshot
    assert orjson.loads(fork.snapshot.to_json())["commits"][1]["kind"] == "forked-from"
    # streamed, a fork's recording starts at its forked-from commit, as a resume's does
    with pytest.raises(DocumentError, match="begins at a resume"):
        load_recording(path)
    written = write_recording(fork.snapshot, tmp_path / "whole.jsonl")
    assert load_recording(written) == fork.snapshot
    # a fork of a fork: the earlier forked-from commit is state, not a stage to take
    second = ex.fork_from_sync(fork.snapshot, 3, {"off": 0})
    assert [c.stage_path for c in second.snapshot.history()] == [
        "quote#0",
        "forked-from@1",
        "discount#1",
        "forked-from@3",
        "total#2",
    ]
    assert second.state["total"] == second.state["price"] + 1 == 4
