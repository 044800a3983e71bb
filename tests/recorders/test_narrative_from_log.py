"""narrative_from_log: the narrative of a run told from its commit log alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trackway import Executor, FlowChart, RunResult, SqliteStore, flow_chart
from trackway._demo import demo_chart
from trackway.recorders import jsonl, load_recording, narrative, narrative_from_log

from ..engine.cursor_charts import CHARTS
from ..engine.pause_charts import CALLS
from ..engine.test_properties import make_stage, op_strategy


def _run_live(chart: FlowChart, inp: Any, **kwargs: Any) -> tuple[RunResult, str]:
    story = narrative()
    exe = Executor(chart, recorders=[story, *kwargs.pop("recorders", ())], **kwargs)
    result = exe.run_sync(inp, raise_on_error=False)
    while result.status == "paused":
        result = exe.resume_sync(result.checkpoint, "yes")
    return result, story.text(result.run_id)


DEMO_INPUT = {"application": {"name": "Ada", "amount": 18_000, "income": 64_000}}


@pytest.mark.parametrize("name", ["stage", "fork", "selector", "decider"])
def test_told_from_the_log_is_the_live_narrative(name: str) -> None:
    result, live = _run_live(CHARTS[name](), {})
    assert narrative_from_log(result.snapshot).text() == live


def test_the_demo_told_from_a_store_and_from_a_recording(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    try:
        result, live = _run_live(
            demo_chart(), DEMO_INPUT, store=store, recorders=[jsonl(tmp_path / "rec.jsonl")]
        )
        stored = store.load(result.run_id)
    finally:
        store.close()
    assert narrative_from_log(stored).text() == live
    recorded = load_recording(tmp_path / "rec.jsonl", result.run_id)
    assert narrative_from_log(recorded).text() == live
    assert "chose Approve because rule" in live or "chose Decline" in live


def test_values_off_and_width_apply() -> None:
    result, _ = _run_live(demo_chart(), DEMO_INPUT)
    keys_only = narrative_from_log(result.snapshot, values=False).text()
    assert "Ada" not in keys_only and "wrote applicant" in keys_only
    short = narrative_from_log(result.snapshot, max_value_chars=2).text()
    assert 'wrote applicant = "Ad..."' in short


def test_shared_subflows_are_named_by_their_mount() -> None:
    # The log records the mounted chart's id for isolated subflows only: a shared subflow is
    # told by its mount id, entered once (the live narrative re-enters it on resume).
    CALLS.clear()  # the chart writes how often its stages ran in this process
    result, _ = _run_live(CHARTS["subflows"](), {})
    assert narrative_from_log(result.snapshot).lines() == [
        "Stage 1: Root start — wrote outer = 1",
        "Entering subflow level1",
        "  Stage 2: L1 start",
        "  Entering subflow l2-start — read outer = 1; input seed = 1",
        "    Stage 3: L2 start",
        "    Entering subflow level3",
        "      Stage 4: Before",
        "      Stage 5: Ask — read amount (absent); wrote asked = true; paused waiting for "
        '{question: "approve?", amount: 0}',
        '      Stage 6: Ask — resumed with "yes"; wrote answer = "yes"',
        '      Stage 7: After — read answer = "yes"; wrote l3 = "yes"',
        "    Leaving subflow level3",
        '  Leaving subflow l2-start — output from_l2 = "yes"',
        "Leaving subflow level1",
        'Stage 8: Root end — read from_l2 = "yes"; wrote end = "yes"',
    ]


def test_a_seeded_key_is_told_by_name_never_claimed_absent() -> None:
    # A for-each seeds each branch's item without a commit: the log cannot give its value.
    result, live = _run_live(CHARTS["for_each"](), {})
    told = narrative_from_log(result.snapshot).text()
    assert "read item = 1" in live
    assert "read item;" in told and "item (absent)" not in told
    assert told.replace("read item;", "") == live.replace("read item = 1;", "").replace(
        "read item = 2;", ""
    ).replace("read item = 3;", "")


def test_a_failed_run_is_told_with_its_error() -> None:
    def boom(scope: Any) -> None:
        scope["tried"] = True
        raise RuntimeError("planned")

    chart = flow_chart("Start", lambda s: s.__setitem__("a", 1)).then("Boom", boom).build()
    result, live = _run_live(chart, {})
    assert result.status == "failed"
    told = narrative_from_log(result.snapshot).text()
    assert told == live
    assert "failed with RuntimeError: planned" in told


def _fork_program(stages: list[list[Any]], branches: list[list[Any]], fail: bool) -> FlowChart:
    builder = flow_chart("S0", make_stage(stages[0]), id="s0")
    for i, ops in enumerate(stages[1:], start=1):
        builder = builder.then(f"S{i}", make_stage(ops), id=f"s{i}")
    if branches:
        fork = {f"b{i}": make_stage(ops) for i, ops in enumerate(branches)}
        builder = builder.fork("Fan", fork, id="fan", merge="last")
    builder = builder.then("Read", make_stage([("set", "z", 1)]), id="read")
    if fail:

        def boom(s: Any) -> None:
            s["e"] = 1
            raise RuntimeError("planned")

        builder = builder.then("Boom", boom, id="boom")
    return builder.build()


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(op_strategy, max_size=4), min_size=1, max_size=5),
    st.lists(st.lists(op_strategy, max_size=4), max_size=3),
    st.booleans(),
)
def test_any_program_told_from_its_log_reads_as_it_ran(
    stages: list[list[Any]], branches: list[list[Any]], fail: bool
) -> None:
    chart = _fork_program(stages, branches, fail)
    result, live = _run_live(chart, {"seed": [1]})
    assert narrative_from_log(result.snapshot).text() == live
