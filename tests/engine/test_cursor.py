"""The typed pause cursor: every kind round-trips, old checkpoints load, tampering is named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from trackway import CheckpointClaimedError, Executor, MemoryStore, RunResult
from trackway.engine import (
    CHECKPOINT_FORMAT,
    Checkpoint,
    CheckpointError,
    CorruptCheckpointError,
    DocumentError,
    ForgedCheckpointError,
)
from trackway.engine.execute import _session
from trackway.engine.run._cursor import (
    ChainCursor,
    ForEachCursor,
    ParallelCursor,
    RootCursor,
    StageCursor,
    SubflowCursor,
)

from .cursor_charts import CHARTS
from .pause_charts import CALLS

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _resume_until_done(executor: Executor, result: RunResult) -> RunResult:
    rounds = 0
    while result.status == "paused":
        assert result.checkpoint is not None
        result = executor.resume_sync(result.checkpoint, f"answer-{rounds}")
        rounds += 1
        assert rounds < 10
    return result


def _trail(result: RunResult) -> list[tuple[str, str]]:
    return [(c.stage_path, c.outcome) for c in result.snapshot.history()]


def _at(cursor: RootCursor) -> Any:
    return cursor.chain.at


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_every_cursor_kind_round_trips_through_json_and_resumes(name):
    executor = Executor(CHARTS[name]())
    paused = executor.run_sync({"amount": 5})
    cp = paused.checkpoint
    assert paused.status == "paused" and cp is not None and isinstance(cp.cursor, RootCursor)
    again = Checkpoint.from_json(cp.to_json())
    assert again == cp  # typed records, equal field by field
    assert orjson.loads(cp.to_json())["format"] == CHECKPOINT_FORMAT == "trackway.checkpoint/2"
    done = _resume_until_done(executor, executor.resume_sync(again, "answer-0"))
    assert done.status == "done"


def test_the_cursor_records_what_each_kind_needs():
    kinds = {
        name: type(_at(Executor(make()).run_sync().checkpoint.cursor))
        for name, make in CHARTS.items()
    }
    assert kinds == {
        "stage": StageCursor,
        "subflows": SubflowCursor,
        "fork": ParallelCursor,
        "selector": ParallelCursor,
        "for_each": ForEachCursor,
        "decider": StageCursor,
    }
    each = _at(Executor(CHARTS["for_each"]()).run_sync().checkpoint.cursor)
    assert each.items == [1, 2, 3] and each.total == 3
    assert {k: s.cursor is None for k, s in each.branches.items()} == {
        "0": False,
        "1": True,
        "2": False,
    }
    ask = _at(Executor(CHARTS["decider"]()).run_sync().checkpoint.cursor)
    assert ask.control is not None and (ask.control.decider, ask.control.branch) == (
        "route#1",
        "ask",
    )
    deep = _at(Executor(CHARTS["subflows"]()).run_sync().checkpoint.cursor)
    assert isinstance(deep.chain, ChainCursor) and deep.chain.chart == "l1-start"


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_checkpoints_of_format_1_still_load_and_resume_like_new_ones(name, monkeypatch):
    data = (FIXTURES / f"checkpoint_v1_{name}.json").read_bytes()
    assert orjson.loads(data)["format"] == "trackway.checkpoint/1"
    old = Checkpoint.from_json(data)
    assert isinstance(old.cursor, RootCursor) and old.snapshot is not None
    assert old.signature is None  # /1 checkpoints were never signed
    with pytest.raises(ForgedCheckpointError, match="carries no signature"):
        Executor(CHARTS[name]()).resume_sync(old, "answer-0")
    # the fixture's checkpoint ids are fixed: claims start afresh for each backend's run
    monkeypatch.setattr(_session, "PROCESS_CLAIMS", _session.ProcessClaims())
    executor = Executor(CHARTS[name](), allow_unsigned_checkpoints=True)
    from_old = _resume_until_done(executor, executor.resume_sync(old, "answer-0"))
    CALLS.clear()  # counted stages number their calls per process, as when the file was made
    fresh = _resume_until_done(executor, executor.run_sync({"amount": 5}))
    assert from_old.status == fresh.status == "done"
    assert _trail(from_old) == _trail(fresh)
    assert from_old.state == fresh.state


def test_a_masked_format_1_checkpoint_loads_without_a_cursor_and_is_refused():
    old = Checkpoint.from_json((FIXTURES / "checkpoint_v1_masked.json").read_bytes())
    assert old.redacted and old.cursor is None
    with pytest.raises(CheckpointError, match="masked copy"):
        Executor(CHARTS["fork"]()).resume_sync(old, "x")


def _tamper(data: bytes, edit: Any) -> bytes:
    doc = orjson.loads(data)
    edit(doc)
    return orjson.dumps(doc)


def _set(path: list[Any], value: Any) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        target = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return edit


TAMPERED = [
    (["cursor", "counter"], "three", "cursor.counter"),
    (["cursor", "counter"], -1, "cursor.counter"),
    (["cursor", "chain", "node"], "nowhere", "cursor.chain.node"),
    (["cursor", "chain", "chart"], "other", "cursor.chain.chart"),
    (["cursor", "chain", "at", "kind"], "teleport", "cursor.chain.at"),
    (["cursor", "chain", "at", "branches", "slow", "counter"], [], "counter"),
    (["cursor", "chain", "at", "keys"], ["fast", "ghost"], "cursor.chain.at.keys"),
    (["cursor", "chain", "at", "path"], "fan#0/#/x", "cursor.chain.at.path"),
    (["cursor", "chain", "loops"], {"nowhere": 1}, "cursor.chain.loops"),
    (["cursor"], None, "cursor"),
    (["snapshot", "commits", 0, "ops"], [{"kind": "zap", "key": "k", "value": 1}], "kind"),
]


@pytest.mark.parametrize(("path", "value", "field"), TAMPERED)
def test_a_tampered_cursor_is_refused_at_load_naming_the_field_and_nothing_is_claimed(
    path, value, field
):
    executor = Executor(CHARTS["fork"](), store=MemoryStore())
    good = executor.run_sync().checkpoint
    assert good is not None
    doc = orjson.loads(good.to_json())
    doc["snapshot"] = orjson.loads(good.to_json())["snapshot"] or _embedded_log(executor, good)
    bad = _tamper(orjson.dumps(doc), _set(path, value))
    with pytest.raises(CorruptCheckpointError) as info:
        executor.resume_sync(bad, "x")
    assert field in str(info.value) and info.value.field is not None
    assert isinstance(info.value, DocumentError) and isinstance(info.value, CheckpointError)
    # the checkpoint was not spent: the untouched one still resumes, once
    assert executor.resume_sync(good, "ok").status == "done"
    with pytest.raises(CheckpointClaimedError):
        executor.resume_sync(good, "ok")


def _embedded_log(executor: Executor, cp: Checkpoint) -> Any:
    assert executor.store is not None
    return orjson.loads(executor.store.load(cp.run_id).to_json())


def test_a_cursor_for_another_shape_of_node_is_refused_against_the_chart():
    executor = Executor(CHARTS["stage"]())
    good = executor.run_sync().checkpoint
    assert good is not None

    def as_subflow(doc: dict[str, Any]) -> None:
        doc["cursor"]["chain"]["at"] = {
            "kind": "subflow",
            "mount": "ask",
            "chain": {"kind": "chain", "chart": "x", "node": "y"},
        }

    with pytest.raises(CorruptCheckpointError, match=r"cursor\.chain\.at\.kind is 'subflow'"):
        executor.resume_sync(_tamper(good.to_json(), as_subflow), "x")
    assert executor.resume_sync(good, "yes").status == "done"
