"""Finding a paused run: ``store.paused()`` on every store, and ``resume`` by run id or
checkpoint id (memory, a real SQLite file, and PostgreSQL when TRACKWAY_TEST_PG_DSN is set)."""

from __future__ import annotations

import pytest

from tests.backends import run_async
from trackway import CheckpointClaimedError, Executor, flow_chart
from trackway.engine import (
    ExecutorUsageError,
    PausedRun,
    RedactionPolicy,
    SqliteStore,
    UnknownRunError,
)

from . import pause_charts as pc


def test_paused_lists_waiting_runs_with_their_payloads(store):
    chart = pc.approval_chart()
    ex = Executor(chart, store=store)
    first = ex.run_sync({"amount": 10})
    second = ex.run_sync({"amount": 20})
    ex.run_sync({"amount": 30}).checkpoint  # noqa: B018 - a third, answered below
    done = Executor(flow_chart("Other", lambda s: None).build(), store=store).run_sync()
    waiting = store.paused()
    assert [p.run_id for p in waiting][:2] == [first.run_id, second.run_id]
    assert len(waiting) == 3 and done.run_id not in {p.run_id for p in waiting}
    top = waiting[0]
    assert isinstance(top, PausedRun)
    assert top == PausedRun(
        first.run_id,
        chart.id,
        first.checkpoint.checkpoint_id,
        "ask#1",
        {"question": "approve?", "amount": 10},
        top.since,
    )
    assert top.since >= store.list_runs()[0].started_at
    # answered, it leaves the list; one that paused again is listed with its new pause
    ex.resume_sync(waiting[2].run_id, "yes")
    assert [p.run_id for p in store.paused()] == [first.run_id, second.run_id]


def test_a_run_paused_again_is_listed_at_its_new_checkpoint(store):
    def ask(s):
        s.pause({"n": 1})

    def again(s, value):
        s.pause({"n": 2, "after": value})

    ex = Executor(flow_chart("Ask", ask, on_resume=again).build(), store=store)
    run_id = ex.run_sync().run_id
    ex.resume_sync(run_id, "first")
    (only,) = store.paused()
    assert (only.checkpoint_id, only.paused_at) == (f"{run_id}@2", "ask#0:resume1")
    assert only.payload == {"n": 2, "after": "first"}


def test_resume_by_run_id_and_by_checkpoint_id(store):
    ex = Executor(pc.approval_chart(), store=store)
    by_run = ex.run_sync({"amount": 1})
    by_checkpoint = ex.run_sync({"amount": 2})
    # another executor, as another process would build it, on the same store
    again = Executor(pc.approval_chart(), store=store)
    done = again.resume_sync(by_run.run_id, "yes")
    assert done.status == "done" and done.state["done"] == "answer=yes"
    done = run_async(again.resume, by_checkpoint.checkpoint.checkpoint_id, "no")
    assert done.run_id == by_checkpoint.run_id and done.state["done"] == "answer=no"
    assert store.paused() == []


def test_resume_by_id_errors_name_the_fix(store):
    ex = Executor(pc.approval_chart(), store=store)
    paused = ex.run_sync()
    with pytest.raises(UnknownRunError, match=r"no run 'run-nope'.*store\.paused\(\)"):
        ex.resume_sync("run-nope", "yes")
    with pytest.raises(UnknownRunError, match=r"no checkpoint 'run-nope@3'.*store\.paused"):
        ex.resume_sync("run-nope@3", "yes")
    ex.resume_sync(paused.run_id, "yes")
    with pytest.raises(UnknownRunError, match=r"is not paused: no checkpoint waits at its last"):
        ex.resume_sync(paused.run_id, "again")
    with pytest.raises(CheckpointClaimedError):
        ex.resume_sync(paused.checkpoint.checkpoint_id, "again")


def test_resume_by_id_without_a_store_names_the_fix():
    paused = Executor(pc.approval_chart()).run_sync()
    with pytest.raises(ExecutorUsageError, match=r"has none: use Executor\(chart, store="):
        Executor(pc.approval_chart()).resume_sync(paused.run_id, "yes")
    # the JSON of a checkpoint is still read as a checkpoint, str or bytes
    text = paused.checkpoint.to_json().decode()
    assert Executor(pc.approval_chart()).resume_sync(text, "yes").status == "done"


def test_a_claimed_checkpoint_whose_resume_died_is_refused_by_run_id(store):
    ex = Executor(pc.approval_chart(), store=store)
    paused = ex.run_sync()
    assert store.claim_checkpoint(paused.checkpoint.checkpoint_id, b'"x"')
    assert store.paused() == []  # claimed: nothing waits; recover() continues it
    with pytest.raises(CheckpointClaimedError, match="recover"):
        ex.resume_sync(paused.run_id, "yes")


def test_paused_shows_what_the_store_keeps_under_a_redaction_policy(tmp_path):
    store = SqliteStore(tmp_path / "runs.db")
    policy = RedactionPolicy(keys=["amount"], pauses=True)
    ex = Executor(pc.approval_chart(), store=store, redact=policy)
    ex.run_sync({"amount": 99})
    (only,) = store.paused()
    assert only.payload == policy.marker
    store.close()
