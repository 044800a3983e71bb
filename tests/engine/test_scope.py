from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from trackway import Executor, StageError, flow_chart
from trackway.engine import ReadOnlyStateError, StateValidationError, StateValueError


def run_one(fn, input=None, state=None):
    return Executor(flow_chart("S", fn, state=state).build()).run_sync(input)


def test_reads_are_tracked_in_first_read_order_including_absent_keys():
    def stage(s):
        s["b"], s["a"], s.get("missing"), "c" in s, s["b"]

    commit = run_one(stage, {"a": 1, "b": 2}).snapshot.history()[0]
    assert commit.reads == ("b", "a", "missing", "c")


def test_missing_key_error_lists_keys_and_suggests_get():
    with pytest.raises(StageError) as info:
        run_one(lambda s: s["nope"], {"a": 1})
    cause = info.value.__cause__
    assert isinstance(cause, KeyError)
    assert "keys present: ['a']" in str(cause) and "scope.get('nope', default)" in str(cause)


def test_each_op_is_logged_with_its_value_and_reads_see_own_writes():
    seen = {}

    def stage(s):
        s["x"] = 1
        seen["x"] = s["x"]
        s.append("log", "a")
        s.extend("log", ["b", "c"])
        seen["log"] = list(s["log"])
        s.merge("cfg", {"a": 1})
        s.merge("cfg", {"b": 2})
        seen["cfg"] = dict(s["cfg"])
        del s["x"]
        seen["x_after_del"] = s.get("x", "gone")

    result = run_one(stage, {"log": ["z"]})
    ops = [(op.kind, op.key, op.value) for op in result.snapshot.history()[0].ops]
    assert ops == [
        ("set", "x", 1),
        ("append", "log", ["a"]),
        ("append", "log", ["b", "c"]),
        ("merge", "cfg", {"a": 1}),
        ("merge", "cfg", {"b": 2}),
        ("delete", "x", None),
    ]
    assert seen == {
        "x": 1,
        "log": ["z", "a", "b", "c"],
        "cfg": {"a": 1, "b": 2},
        "x_after_del": "gone",
    }
    assert dict(result.state) == {"log": ["z", "a", "b", "c"], "cfg": {"a": 1, "b": 2}}


def test_append_logs_only_the_new_items_and_shares_one_backing_list():
    def step(s):
        s.append("log", s.get("n", 0))
        s["n"] = s.get("n", 0) + 1
        if s["n"] == 50:
            s.break_()

    result = Executor(flow_chart("Step", step).loop_to("step").build()).run_sync()
    snap = result.snapshot
    appends = [op for c in snap.history() for op in c.ops if op.key == "log"]
    assert all(op.data == f"[{i}]".encode() for i, op in enumerate(appends))
    views = [snap.value_at("log", k) for k in range(1, 51)]
    assert len({id(v._backing) for v in views}) == 1  # every version shares storage
    assert [len(v) for v in views] == list(range(1, 51))
    assert snap.state_at(10)["log"] == list(range(10))


def test_committed_values_are_frozen_and_history_cannot_be_rewritten():
    def first(s):
        s["items"] = [1, 2]

    def second(s):
        s["items"].append(3)

    chart = flow_chart("First", first).then("Second", second).build()
    result = Executor(chart).run_sync(raise_on_error=False)
    assert result.status == "failed"
    assert isinstance(result.error.__cause__, ReadOnlyStateError)
    assert result.snapshot.state_at(1)["items"] == [1, 2]


def test_writers_mutating_their_object_after_the_write_change_nothing():
    def stage(s):
        mine = {"a": [1]}
        s["v"] = mine
        mine["a"].append(2)

    assert run_one(stage).state["v"] == {"a": [1]}


@pytest.mark.parametrize(
    ("stage", "fragment"),
    [
        (lambda s: s.__setitem__("x", float("nan")), "not a finite number"),
        (lambda s: s.__setitem__(3, 1), "state keys are str"),
        (lambda s: s.append("text", 1), "holds a str, and append needs a list"),
        (lambda s: s.merge("text", {"a": 1}), "merge needs a dict"),
        (lambda s: s.merge("m", [1]), "needs a mapping"),
        (lambda s: s.extend("l", "abc"), "needs a list of items"),
        (lambda s: s.emit("evt", object()), "the payload of event 'evt'"),
    ],
)
def test_bad_writes_fail_at_the_write_naming_key_and_stage(stage, fragment):
    with pytest.raises(StageError) as info:
        run_one(stage, {"text": "hello"})
    cause = info.value.__cause__
    assert isinstance(cause, StateValueError)
    assert fragment in str(cause) and "'s#0'" in str(cause)


def test_emit_is_kept_in_the_commit():
    result = run_one(lambda s: s.emit("progress", {"pct": 50}))
    (event,) = result.snapshot.history()[0].events
    assert event.name == "progress" and event.payload == {"pct": 50}


def test_held_emits_wait_for_the_caller_and_other_scopes_emit_as_usual():
    """What the agent's concurrent tool calls rely on (Scope._hold_emits): in a task that
    holds its scope's emits, they are neither recorded nor checked until the caller emits
    them; the task's other scopes (a run nested in it) and the other tasks are not held."""
    import anyio

    inner = flow_chart("Inner", lambda s: s.emit("inner", 1)).build()
    held: list[list[tuple[object, object]]] = []
    nested: list[object] = []

    async def stage(s):
        async def holding():
            box = s._hold_emits()
            s.emit("late", {"n": 1})
            s.emit(3, "unchecked until emitted")
            nested.append(await Executor(inner).run())
            held.append(box)

        async def plain():
            s.emit("early", 2)

        async with anyio.create_task_group() as group:
            group.start_soon(holding)
            group.start_soon(plain)
        s.emit("after", 3)  # the stage's own context holds nothing
        name, payload = held[0][0]
        s.emit(name, payload)

    result = run_one(stage)
    events = [(e.name, e.payload) for e in result.snapshot.history()[0].events]
    assert events == [("early", 2), ("after", 3), ("late", {"n": 1})]
    assert held[0] == [("late", {"n": 1}), (3, "unchecked until emitted")]
    (event,) = nested[0].snapshot.history()[0].events
    assert (event.name, event.payload) == ("inner", 1)


class Loan(BaseModel):
    amount: int
    tags: list[str] = []
    profile: dict[str, int] = {}


def test_typed_state_validates_set_append_merge_and_input():
    def good(s):
        s["amount"] = 5
        s.append("tags", "x")
        s.merge("profile", {"age": 40})

    assert dict(run_one(good, state=Loan).state) == {
        "amount": 5,
        "tags": ["x"],
        "profile": {"age": 40},
    }
    for stage, fragment in [
        (lambda s: s.__setitem__("amount", "5"), "Loan.amount"),
        (lambda s: s.append("tags", 3), "Loan.tags"),
        (lambda s: s.append("amount", 3), "not a list"),
        (lambda s: s.merge("profile", {"age": "old"}), "Loan.profile"),
        (lambda s: s.__setitem__("unknown", 1), "not a field of Loan"),
    ]:
        with pytest.raises(StageError) as info:
            run_one(stage, state=Loan)
        assert isinstance(info.value.__cause__, StateValidationError)
        assert fragment in str(info.value.__cause__)
    with pytest.raises(StateValidationError, match="run input"):
        run_one(lambda s: None, {"amount": 1.5}, state=Loan)


def test_typed_state_with_extra_allow_accepts_unknown_keys():
    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")
        n: int = 0

    assert run_one(lambda s: s.__setitem__("other", "x"), state=Open).state["other"] == "x"


def test_set_then_append_in_one_stage_keeps_the_logged_set_value_intact():
    # Regression (found by hypothesis): the set op's own list must never become the backing
    # list that later appends extend, or the log would show a value that was never written.
    def stage(s):
        s["a"] = []
        s.append("a", None)

    commit = run_one(stage).snapshot.history()[0]
    assert [(op.kind, op.value) for op in commit.ops] == [("set", []), ("append", [None])]
    assert commit.ops[0].data == b"[]"
