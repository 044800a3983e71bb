"""Regressions for faults found in review (each names what it guards)."""

from __future__ import annotations

import gc
import time

import pytest
from pydantic import BaseModel, Field

from trackway import Executor, StageError, flow_chart
from trackway.engine import ChartBuildError, LoopLimitError, RunTimeoutError, StateValidationError
from trackway.engine.core._values import encode_value


def test_for_each_branch_without_a_result_is_reported_missing_not_given_the_parents_value():
    chart = flow_chart("S", lambda s: None).parallel_for_each(
        "E", items="n", branch=lambda s: None, into="o", max_branches=3
    )
    result = Executor(chart.build()).run_sync({"n": [1, 2], "result": "parent"})
    assert list(result.state["o"]) == [None, None]
    assert result.snapshot.history()[-1].detail["for_each"]["missing_results"] == [0, 1]


class Typed(BaseModel):
    amount: int = Field(default=0, gt=0)
    name: str


def test_state_model_constraints_and_required_fields_are_enforced():
    for stage, fragment in [
        (lambda s: s.__setitem__("amount", -5), "greater than 0"),
        (lambda s: s.__delitem__("name"), "required field"),
    ]:
        with pytest.raises(StageError) as info:
            Executor(flow_chart("S", stage, state=Typed).build()).run_sync({"name": "x"})
        assert isinstance(info.value.__cause__, StateValidationError)
        assert fragment in str(info.value.__cause__)


def test_merge_results_meet_the_parents_state_model():
    chart = flow_chart("S", lambda s: None, state=Typed).fork(
        "F",
        {"a": lambda s: s.__setitem__("amount", 1), "b": lambda s: s.__setitem__("amount", 2)},
        merge={"amount": lambda a, b: "oops"},
    )
    with pytest.raises(StageError, match="merging the branches") as info:
        Executor(chart.build()).run_sync({"name": "x"})
    assert isinstance(info.value.__cause__, StateValidationError)


def test_shared_subflow_writes_meet_the_parents_state_model():
    sub = flow_chart("Inner", lambda s: s.__setitem__("amount", "many")).build()
    chart = flow_chart("S", lambda s: None, state=Typed).subflow("Sub", sub).build()
    with pytest.raises(StageError) as info:
        Executor(chart).run_sync({"name": "x"})
    assert isinstance(info.value.__cause__, StateValidationError)


def test_timeout_reaches_slow_sync_stages_promptly_and_says_where_it_stopped():
    chart = flow_chart("Slow", lambda s: time.sleep(0.01)).loop_to("slow").build()
    started = time.perf_counter()
    with pytest.raises(RunTimeoutError, match="stopped between stages, after slow#") as info:
        Executor(chart, max_iterations=10**6).run_sync(timeout=0.1)
    assert time.perf_counter() - started < 0.5
    assert len(info.value.snapshot) < 20


def test_bad_id_message_names_the_stage_once():
    with pytest.raises(ChartBuildError) as info:
        flow_chart("Start", lambda s: None, id="a/b")
    assert str(info.value).count("'Start'") == 1


def test_bad_retry_is_a_build_error():
    with pytest.raises(ChartBuildError, match="stage 'S': retry="):
        flow_chart("S", lambda s: None, retry="x")  # type: ignore[arg-type]


def test_loop_limit_error_names_the_stage_path_with_its_index():
    chart = flow_chart("Tick", lambda s: None).loop_to("tick").build()
    with pytest.raises(LoopLimitError) as info:
        Executor(chart, max_iterations=3).run_sync()
    assert info.value.stage_path == "tick#3"


def test_a_break_in_a_branch_is_recorded_in_its_commit():
    chart = flow_chart("S", lambda s: None).fork("F", {"x": lambda s: s.break_("r")}).build()
    result = Executor(chart).run_sync()
    assert result.status == "done"  # a break ends the branch only
    assert result.snapshot.history()[1].detail == {"break": "r"}


def test_stored_bytes_are_exact_size():
    # orjson's output keeps its working buffer (4 KB and up); the log must not retain it per
    # value: what a kept encoding holds is measured, not its reported size
    import tracemalloc

    for value in (1, "x", 1.5, [1, 2], {"a": "b" * 100}, {"a": "b" * 5000}):
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            kept = [encode_value(value, "k", "s#0")[0] for _ in range(50)]
            held = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
        finally:
            tracemalloc.stop()
        assert held < len(kept[0]) + 120, (value, held)


def test_log_entries_are_invisible_to_the_cycle_collector():
    # A long log must not make every full collection slower: writes are plain atom tuples.
    chart = flow_chart("S", lambda s: s.__setitem__("n", 1)).build()
    commit = Executor(chart).run_sync().snapshot.history()[0]
    gc.collect()
    gc.collect()  # an outer tuple is untracked on the pass after its items were
    assert not gc.is_tracked(commit.writes)
    assert not gc.is_tracked(commit.writes[0])


def test_container_resume_values_and_pause_payloads_serialize():
    from trackway import MemoryStore

    chart = flow_chart("A", lambda s: s.pause(s["payload"]), on_resume=lambda s, v: None)
    store = MemoryStore()
    ex = Executor(chart.build(), store=store)
    first = ex.run_sync({"payload": {"q": [1, 2]}})  # a frozen view as the pause payload
    second = ex.resume_sync(first.checkpoint, {"ok": True, "items": [1]})
    assert second.snapshot.history()[-1].detail["resume"]["value"] == {"ok": True, "items": [1]}
    assert store.load(second.run_id) == second.snapshot
    assert second.snapshot.to_json()


def test_recover_after_a_committed_break_ends_the_run_broken():
    from trackway import MemoryStore

    def step(s):
        s["i"] = s.get("i", 0) + 1
        if s["i"] == 3:
            s.break_("three")

    chart = flow_chart("S", step).loop_to("s").build()
    store = MemoryStore()
    run_id = Executor(chart, store=store).run_sync().run_id
    store.begin_run(run_id, "s", {})  # as if the process died before finishing the run
    result = Executor(chart, store=store).recover_sync(run_id)
    assert (result.status, result.break_reason, result.state["i"]) == ("broken", "three", 3)


def test_a_store_failing_at_the_final_flush_fails_the_run_cleanly():
    from trackway import MemoryStore
    from trackway.engine import StoreError

    class Broken(MemoryStore):
        def append(self, run_id, commits):
            raise OSError("disk gone")

    result = Executor(
        flow_chart("O", lambda s: None).build(), store=Broken(), durability="exit"
    ).run_sync(raise_on_error=False)
    assert result.status == "failed" and isinstance(result.error, StoreError)
    assert "disk gone" in str(result.error)


def test_pausing_in_items_or_mappers_is_a_clear_error():
    chart = flow_chart("S", lambda s: None).parallel_for_each(
        "E", items=lambda s: s.pause("no"), branch=lambda s: None, into="o", max_branches=2
    )
    with pytest.raises(StageError, match="cannot pause"):
        Executor(chart.build()).run_sync()
