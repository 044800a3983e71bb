"""Checkpoints a caller cannot forge: with a store, only what it holds; without, signed."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
import pytest

from trackway import CheckpointClaimedError, Executor, MemoryStore, SqliteStore, flow_chart
from trackway.engine import ForgedCheckpointError, RedactionPolicy

PAID: list[Any] = []


def _payment_chart():
    def ask(scope):
        scope.pause({"amount": scope["amount"]})

    def approve(scope, value):
        scope["approved"] = value

    def pay(scope):
        PAID.append((scope.run_id, scope["amount"]))
        scope["paid"] = True

    return flow_chart("Ask", ask, id="ask", on_resume=approve).then("Pay", pay, id="pay").build()


def _edit(cp, change):
    doc = orjson.loads(cp.to_json())
    change(doc)
    return orjson.dumps(doc)


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    s = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "runs.db")
    yield s
    s.close()


def test_an_edited_copy_cannot_rerun_a_finished_runs_tail(store):
    PAID.clear()
    chart = _payment_chart()
    cp = Executor(chart, store=store).run_sync({"amount": 10}).checkpoint
    assert Executor(chart, store=store).resume_sync(cp, True).status == "done"
    # an attacker edits the spent checkpoint's id, hoping for a second payment
    forged = _edit(cp, lambda d: d.update(checkpoint_id=d["checkpoint_id"] + "0"))
    with pytest.raises(ForgedCheckpointError):
        Executor(chart, store=store).resume_sync(forged, True)
    with pytest.raises(CheckpointClaimedError):
        Executor(chart, store=store).resume_sync(cp, True)
    assert len(PAID) == 1


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["payload"].update(amount=1_000_000),
        lambda d: d["cursor"].update(counter=5),
        lambda d: d.update(paused_at="pay#1"),
    ],
)
def test_with_a_store_only_the_checkpoint_it_holds_resumes(store, change):
    chart = _payment_chart()
    cp = Executor(chart, store=store).run_sync({"amount": 10}).checkpoint
    with pytest.raises(ForgedCheckpointError, match="not the one the store saved"):
        Executor(chart, store=store).resume_sync(_edit(cp, change), True)
    assert Executor(chart, store=store).resume_sync(cp, True).status == "done"  # not spent


def test_a_checkpoint_aimed_at_another_run_is_refused(store):
    chart = _payment_chart()
    first = Executor(chart, store=store).run_sync({"amount": 1}).checkpoint
    second = Executor(chart, store=store).run_sync({"amount": 2}).checkpoint

    def aim(d):
        d["run_id"] = second.run_id
        d["checkpoint_id"] = second.checkpoint_id

    with pytest.raises(ForgedCheckpointError):
        Executor(chart, store=store).resume_sync(_edit(first, aim), True)
    assert Executor(chart, store=store).resume_sync(second, True).state["amount"] == 2


def test_without_a_store_checkpoints_are_signed_and_an_edit_is_refused():
    chart = _payment_chart()
    executor = Executor(chart)
    cp = executor.run_sync({"amount": 10}).checkpoint
    assert cp.signature is not None
    for change in (
        lambda d: d["payload"].update(amount=99),
        lambda d: d["snapshot"]["commits"][0]["detail"]["pause"].update(amount=99),
        lambda d: d["snapshot"]["initial_state"].update(amount=99),
        lambda d: d["state"].update(amount=99),
        lambda d: d.pop("signature"),
    ):
        with pytest.raises(ForgedCheckpointError, match="checkpoint_key"):
            executor.resume_sync(_edit(cp, change), True)
    assert executor.resume_sync(cp, True).status == "done"


def test_a_shared_key_resumes_elsewhere_and_unsigned_needs_an_explicit_yes():
    chart = _payment_chart()
    key = "k" * 32
    cp = Executor(chart, checkpoint_key=key).run_sync({"amount": 3}).checkpoint
    with pytest.raises(ForgedCheckpointError, match="not signed with this key"):
        Executor(chart, checkpoint_key="another key of 32 bytes at least").resume_sync(cp, 1)
    unsigned = replace(cp, signature=None)
    with pytest.raises(ForgedCheckpointError, match="carries no signature"):
        Executor(chart, checkpoint_key=key).resume_sync(unsigned, 1)
    lenient = Executor(chart, checkpoint_key=key, allow_unsigned_checkpoints=True)
    with pytest.raises(ForgedCheckpointError):  # a wrong signature is never accepted
        lenient.resume_sync(replace(cp, signature="0" * 64), 1)
    assert lenient.resume_sync(unsigned, 1).status == "done"


def test_under_redaction_the_embedded_log_must_match_the_stores(tmp_path):
    chart = _payment_chart()
    store = SqliteStore(tmp_path / "runs.db")
    policy = RedactionPolicy(keys=["amount"])
    cp = Executor(chart, store=store, redact=policy).run_sync({"amount": 10}).checkpoint
    assert cp.snapshot is not None  # the store holds a redacted log: the real one travels
    forged = _edit(cp, lambda d: d["snapshot"]["initial_state"].update(amount=10_000))
    with pytest.raises(ForgedCheckpointError, match="not the one the store saved"):
        Executor(chart, store=store, redact=policy).resume_sync(forged, True)
    done = Executor(chart, store=store, redact=policy).resume_sync(cp, True)
    assert done.status == "done" and done.state["amount"] == 10
    store.close()


def test_a_short_key_is_refused():
    with pytest.raises(Exception, match="at least 16 bytes"):
        Executor(_payment_chart(), checkpoint_key="short")
