"""The engine's shortcuts for the library's own values give what the checked paths give.

- ``TrackedScope._set_built`` / ``_extend_built`` (a value the library built of plain JSON,
  handed over): the same commit bytes and the same state as ``scope[key] = v`` / ``scope.extend``;
  anything orjson refuses takes the checked path and is refused as before.
- ``TrackedScope._set_reused`` (a value a stage builds alike run after run): where its JSON
  and value are the last run's, the run holds the last run's engine-owned data, with the same
  commit and state as ``scope[key] = v``; a value the checked path refuses (a tuple, a NaN
  that writes the same JSON) is refused as before.
- ``Recorder.wants_emit``: an emit no recorder wants makes no event object, yet is in its
  commit as every event is; a recorder without a filter still hears everything.
- The state is applied op by op: a key written several times in one commit ends as the
  folded value, with one version for that commit.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trackway import Executor, flow_chart
from trackway.engine import Recorder, StateValueError, thaw
from trackway.engine.core._values import FrozenDict

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


def _run(stage: Any) -> Any:
    return Executor(flow_chart("Stage", stage).build()).run_sync({})


@settings(max_examples=examples(150), deadline=None)
@given(value=json_values, items=st.lists(json_values, max_size=3))
def test_a_built_write_commits_what_the_checked_write_commits(value: Any, items: Any) -> None:
    def checked(scope: Any) -> None:
        scope["v"] = value
        scope.extend("l", items)
        scope.extend("l", items)

    def built(scope: Any) -> None:
        scope._set_built("v", thaw(value))
        scope._extend_built("l", thaw(items))
        scope._extend_built("l", thaw(items))

    slow, fast = _run(checked), _run(built)
    assert fast.snapshot.commits[0].writes == slow.snapshot.commits[0].writes
    assert thaw(fast.snapshot.state) == thaw(slow.snapshot.state)
    assert [w[2] for w in fast.snapshot.commits[0].writes] == [
        w[2] for w in slow.snapshot.commits[0].writes
    ]


@pytest.mark.parametrize(
    "value",
    [2**70, {1: "non-str key"}, {"s": {1, 2}}, FrozenDict({"a": 1}), "lone \ud800 surrogate"],
)
def test_a_built_write_orjson_refuses_is_refused_as_the_checked_one(value: Any) -> None:
    def stage(scope: Any) -> None:
        scope._set_built("v", value)

    def checked(scope: Any) -> None:
        scope["v"] = value

    if isinstance(value, FrozenDict):  # a frozen view is not plain: it is checked, and kept
        assert thaw(_run(stage).snapshot.state["v"]) == thaw(_run(checked).snapshot.state["v"])
        return
    with pytest.raises(Exception) as raised:
        _run(stage)
    assert isinstance(raised.value.__cause__, StateValueError)


def test_an_extend_built_onto_a_non_list_is_refused_naming_the_key() -> None:
    def stage(scope: Any) -> None:
        scope["k"] = "text"
        scope._extend_built("k", [1])

    with pytest.raises(Exception) as raised:
        _run(stage)
    assert isinstance(raised.value.__cause__, StateValueError)
    assert "cannot append to state key 'k'" in str(raised.value.__cause__)


def _reusing(values: list[Any]) -> tuple[list[Any], list[Any]]:
    """Run one chart once per value, each run writing it through ``_set_reused`` with what
    the last run kept; return each run's result and its checked twin's."""
    kept: list[Any] = [None]
    at: list[Any] = [None]

    def reused(scope: Any) -> None:
        kept[0] = scope._set_reused("v", at[0], kept[0])

    def checked(scope: Any) -> None:
        scope["v"] = at[0]

    fast, slow = (
        Executor(flow_chart("S", reused).build()),
        Executor(flow_chart("S", checked).build()),
    )
    runs: list[Any] = []
    twins: list[Any] = []
    for value in values:
        at[0] = value
        runs.append(fast.run_sync({}))
        twins.append(slow.run_sync({}))
    return runs, twins


@settings(max_examples=examples(150), deadline=None)
@given(
    values=st.lists(json_values, min_size=1, max_size=4).flatmap(
        lambda vs: st.lists(st.sampled_from(vs), min_size=2, max_size=6)
    )
)
def test_a_reused_write_commits_what_the_checked_write_commits(values: list[Any]) -> None:
    runs, twins = _reusing(values)
    for run, twin in zip(runs, twins, strict=True):
        assert run.snapshot.commits[0].writes == twin.snapshot.commits[0].writes
        assert thaw(run.snapshot.state) == thaw(twin.snapshot.state)


def test_runs_writing_the_same_json_share_the_engine_owned_value() -> None:
    settings_ = {"model": "m", "temperature": 0.5, "stop": ["x"]}
    runs, _ = _reusing([dict(settings_), dict(settings_), {"model": "n"}, {"model": "n"}])
    first, second, third, fourth = (run.snapshot.state["v"] for run in runs)
    assert first._data is second._data  # one decode for both runs
    assert third._data is not second._data  # the JSON changed: a fresh value
    assert third._data is fourth._data
    assert thaw(first) == settings_ and thaw(third) == {"model": "n"}


@pytest.mark.parametrize(
    "bad",
    [
        {"stop": ("x",)},  # a tuple writes the JSON of the list before it
        {"t": float("nan")},  # a NaN writes the JSON of the null before it
    ],
)
def test_a_reused_write_refuses_what_the_checked_write_refuses(bad: dict[str, Any]) -> None:
    good = {k: ["x"] if isinstance(v, tuple) else None for k, v in bad.items()}
    kept: list[Any] = [None]
    value: list[Any] = [good]

    def stage(scope: Any) -> None:
        kept[0] = scope._set_reused("v", value[0], kept[0])

    executor = Executor(flow_chart("S", stage).build())
    executor.run_sync({})
    value[0] = bad
    with pytest.raises(Exception) as raised:
        executor.run_sync({})
    assert isinstance(raised.value.__cause__, StateValueError)


class _Picky(Recorder):
    def __init__(self, wanted: set[str]) -> None:
        self.wanted = wanted
        self.heard: list[str] = []
        self.asked: list[str] = []

    def wants_emit(self, name: str) -> bool:
        self.asked.append(name)
        return name in self.wanted

    def on_emit(self, event: Any) -> None:
        self.heard.append(event.name)


class _All(Recorder):
    def __init__(self) -> None:
        self.heard: list[str] = []

    def on_emit(self, event: Any) -> None:
        self.heard.append(event.name)


def _emitting(scope: Any) -> None:
    scope.emit("a", {"n": 1})
    scope._emit_built("b", {"n": 2})
    scope.emit("c")


def test_an_emit_no_recorder_wants_is_not_heard_but_is_committed() -> None:
    picky = _Picky({"b"})
    result = Executor(flow_chart("Stage", _emitting).build(), recorders=[picky]).run_sync({})
    assert picky.heard == ["b"]
    assert picky.asked == ["a", "b", "c"]
    assert [e.name for e in result.snapshot.commits[0].events] == ["a", "b", "c"]


def test_a_recorder_without_a_filter_hears_every_emit_beside_a_picky_one() -> None:
    picky, everything = _Picky(set()), _All()
    chart = flow_chart("Stage", _emitting).build()
    Executor(chart, recorders=[picky, everything]).run_sync({})
    assert everything.heard == ["a", "b", "c"]
    assert picky.heard == ["a", "b", "c"]  # it is asked nothing: the emit is made anyway


def test_two_picky_recorders_each_get_an_emit_one_of_them_wants() -> None:
    first, second = _Picky({"a"}), _Picky({"c"})
    chart = flow_chart("Stage", _emitting).build()
    Executor(chart, recorders=[first, second]).run_sync({})
    assert first.heard == ["a", "c"] and second.heard == ["a", "c"]


def test_a_key_written_several_times_in_one_commit_keeps_one_folded_version() -> None:
    def stage(scope: Any) -> None:
        scope.extend("l", [1])
        scope["l"] = [0]
        scope.extend("l", [1, 2])
        scope.merge("d", {"a": 1})
        scope.merge("d", {"b": 2})
        scope["gone"] = 1
        del scope["gone"]

    result = _run(stage)
    snapshot = result.snapshot
    assert thaw(snapshot.state) == {"l": [0, 1, 2], "d": {"a": 1, "b": 2}}
    assert thaw(snapshot.state_at(1)) == thaw(snapshot.state)
    assert thaw(snapshot.state_at(0)) == {}


def test_built_writes_and_events_keep_their_bytes_at_exact_size() -> None:
    # orjson's output keeps a 4 KB working buffer; a commit keeps its bytes for the whole
    # run, so each built write and event must hold only its own size (measured, not sizeof)
    import tracemalloc

    text = "b" * 100

    def stage(scope: Any) -> None:
        scope._set_built("v", {"a": text})
        scope._extend_built("l", [{"a": text}])
        scope._emit_built("e", {"a": text})

    builder = flow_chart("S0", stage)
    for i in range(1, 40):
        builder = builder.then(f"S{i}", stage)
    executor = Executor(builder.build())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = executor.run_sync({})
        held = (tracemalloc.get_traced_memory()[0] - before) / 40
    finally:
        tracemalloc.stop()
    assert len(result.snapshot.commits) == 40
    assert held < 3 * 4096, held  # three raw encodings per stage would hold 12 KB and more
