from __future__ import annotations

import anyio
import pytest

from trackway import Executor, StageError, flow_chart
from trackway.engine import MergeConflictError, ParallelLimitError, UnknownBranchError, select


def writer(**values):
    async def stage(s):
        await anyio.sleep(values.pop("_delay", 0))
        for k, v in values.items():
            s[k] = v

    return stage


def run(chart, input=None):
    return Executor(chart).run_sync(input)


def test_branches_are_isolated_and_the_join_sees_the_merge():
    seen = {}

    def a(s):
        s["a"] = 1
        seen["a_sees_b"] = s.get("b")

    def b(s):
        s["b"] = 2
        seen["b_sees_a"] = s.get("a")
        seen["b_sees_input"] = s["base"]

    chart = (
        flow_chart("Start", lambda s: None)
        .fork("F", {"a": a, "b": b})
        .then("Join", lambda s: s.__setitem__("sum", s["a"] + s["b"]))
        .build()
    )
    result = run(chart, {"base": 10})
    assert seen == {"a_sees_b": None, "b_sees_a": None, "b_sees_input": 10}
    assert result.state["sum"] == 3
    paths = [(c.stage_path, c.frame, c.kind) for c in result.snapshot.history()]
    assert paths == [
        ("start#0", "", "stage"),
        ("f#1/a#0", "f#1/a", "stage"),
        ("f#1/b#0", "f#1/b", "stage"),
        ("f#1", "", "merge"),
        ("join#2", "", "stage"),
    ]
    merge = result.snapshot.history()[3]
    assert merge.detail == {"merge": {"policy": "error_on_conflict", "branches": ["a", "b"]}}
    assert result.snapshot.state_at(3) == {"base": 10}  # branch commits do not touch run state


def test_log_order_is_declaration_order_not_completion_order():
    chart = (
        flow_chart("S", lambda s: None)
        .fork("F", {"slow": writer(x=1, _delay=0.05), "fast": writer(y=2)})
        .build()
    )
    ids = [c.stage_id for c in run(chart).snapshot.history()]
    assert ids == ["s", "slow", "fast", "f"]


def test_conflicting_writes_fail_under_the_default_policy_and_are_recorded():
    chart = flow_chart("S", lambda s: None).fork("F", {"a": writer(k=1), "b": writer(k=2)})
    with pytest.raises(MergeConflictError) as info:
        run(chart.build())
    err = info.value
    assert err.key == "k" and err.branches == ["a", "b"]
    assert "merge='last'" in str(err)
    last = err.snapshot.history()[-1]
    assert last.kind == "merge" and last.outcome == "error"


def test_appends_from_several_branches_concatenate_in_declaration_order():
    def add(tag, delay):
        async def stage(s):
            await anyio.sleep(delay)
            s.append("log", tag)

        return stage

    chart = (
        flow_chart("S", lambda s: None)
        .fork("F", {"a": add("a", 0.03), "b": add("b", 0), "c": add("c", 0.01)})
        .build()
    )
    assert run(chart, {"log": ["start"]}).state["log"] == ["start", "a", "b", "c"]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("last", {"k": 2, "only_a": 1}),
        ("namespace", {"a": {"k": 1, "only_a": 1}, "b": {"k": 2}}),
        ({"k": lambda acc, v: acc + v}, {"k": 3, "only_a": 1}),
    ],
)
def test_merge_policies(policy, expected):
    chart = (
        flow_chart("S", lambda s: None)
        .fork("F", {"a": writer(k=1, only_a=1, _delay=0.02), "b": writer(k=2)}, merge=policy)
        .build()
    )
    assert dict(run(chart).state) == expected


def test_last_policy_with_deletes_and_sets():
    def drop(s):
        del s["k"]

    chart = (
        flow_chart("S", lambda s: None)
        .fork("F", {"a": writer(k=5), "b": drop}, merge="last")
        .build()
    )
    assert "k" not in run(chart, {"k": 0}).state


def test_failing_branch_fails_the_fork_with_its_error_and_keeps_every_commit():
    async def slow(s):
        s["slow_started"] = True
        await anyio.sleep(5)

    def bad(s):
        s["bad_wrote"] = True
        raise RuntimeError("branch exploded")

    chart = flow_chart("S", lambda s: None).fork("F", {"slow": slow, "bad": bad}).build()
    with pytest.raises(StageError, match="branch exploded") as info:
        run(chart)
    outcomes = {c.stage_id: c.outcome for c in info.value.snapshot.history()}
    assert outcomes == {"s": "ok", "slow": "cancelled", "bad": "error"}


def test_chart_branches_nested_forks_and_branch_local_paths():
    inner = (
        flow_chart("Prep", lambda s: s.__setitem__("prep", s["base"] + 1))
        .fork("Deep", {"x": writer(x=1), "y": writer(y=2)})
        .then("Sum", lambda s: s.__setitem__("total", s["prep"] + s["x"] + s["y"]))
        .build()
    )
    chart = (
        flow_chart("S", lambda s: None)
        .fork("Outer", {"left": inner, "right": writer(right=True)}, merge="namespace")
        .build()
    )
    result = run(chart, {"base": 10})
    assert result.state["left"] == {"prep": 11, "x": 1, "y": 2, "total": 14}
    assert result.state["right"] == {"right": True}
    paths = [c.stage_path for c in result.snapshot.history()]
    assert paths == [
        "s#0",
        "outer#1/left/prep#0",
        "outer#1/left/deep#1/x#0",
        "outer#1/left/deep#1/y#0",
        "outer#1/left/deep#1",
        "outer#1/left/sum#2",
        "outer#1/right#0",
        "outer#1",
    ]
    assert [c.seq for c in result.snapshot.history()] == list(range(1, 9))


def test_selector_runs_the_chosen_branches_with_evidence():
    def choose(s):
        return select(
            s,
            [
                {"when": {"amount": {"gt": 100}}, "then": "audit", "label": "big"},
                {"when": {"country": {"in": ["FR", "DE"]}}, "then": "vat"},
                {"when": {"amount": {"lt": 0}}, "then": "refund"},
            ],
        )

    chart = (
        flow_chart("S", lambda s: None)
        .selector("Checks", choose, id="checks")
        .branch("audit", "Audit", writer(audited=True))
        .branch("vat", "VAT", writer(vat=0.2))
        .branch("refund", "Refund", writer(refund=True))
        .end()
        .build()
    )
    result = run(chart, {"amount": 500, "country": "FR"})
    assert result.state["audited"] is True and result.state["vat"] == 0.2
    assert "refund" not in result.state
    sel = result.snapshot.history()[1]
    assert sel.kind == "selector" and sel.detail["decision"]["selected"] == ["audit", "vat"]
    assert result.snapshot.history()[-1].stage_path == "checks#1/merge"
    with pytest.raises(UnknownBranchError):
        run(
            flow_chart("S", lambda s: None)
            .selector("C", lambda s: ["zzz"])
            .branch("a", "A", writer(a=1))
            .end()
            .build()
        )


def test_parallel_for_each_collects_results_in_item_order():
    async def double(s):
        await anyio.sleep(0.001 * (5 - s["index"]))
        s["result"] = s["item"] * 2

    chart = (
        flow_chart("S", lambda s: None)
        .parallel_for_each(
            "Each", items="nums", branch=double, into="doubled", max_branches=10, concurrency=2
        )
        .build()
    )
    result = run(chart, {"nums": [1, 2, 3, 4, 5]})
    assert result.state["doubled"] == [2, 4, 6, 8, 10]
    merge = result.snapshot.history()[-1]
    assert merge.detail["for_each"] == {
        "items": 5,
        "max_branches": 10,
        "ran": 5,
        "dropped": 0,
        "missing_results": [],
    }


def test_parallel_for_each_refuses_or_records_overflow():
    body = flow_chart("Body", lambda s: s.__setitem__("result", s["item"])).build()
    base = flow_chart("S", lambda s: None)
    with pytest.raises(ParallelLimitError, match="got 5 items but max_branches=3"):
        run(
            base.parallel_for_each(
                "E", items="xs", branch=body, into="out", max_branches=3
            ).build(),
            {"xs": [1, 2, 3, 4, 5]},
        )
    chart = (
        flow_chart("S", lambda s: None)
        .parallel_for_each(
            "E",
            items=lambda s: s["xs"],
            branch=body,
            into="out",
            max_branches=3,
            overflow="truncate",
        )
        .build()
    )
    result = run(chart, {"xs": [1, 2, 3, 4, 5]})
    assert result.state["out"] == [1, 2, 3]
    assert result.snapshot.history()[-1].detail["for_each"]["dropped"] == 2


def test_shared_subflow_writes_land_in_the_parents_state():
    sub = flow_chart("Inner", lambda s: s.__setitem__("y", s["x"] + 1), id="inner").build()
    chart = flow_chart("S", lambda s: s.__setitem__("x", 1)).subflow("Sub", sub, id="sub").build()
    result = run(chart)
    assert result.state["y"] == 2
    assert [c.stage_path for c in result.snapshot.history()] == ["s#0", "sub/inner#1"]


def test_isolated_subflow_maps_input_and_output_only():
    sub = (
        flow_chart("Inner", lambda s: s.__setitem__("score", s["n"] * 10), id="inner")
        .then("Scratch", lambda s: s.__setitem__("scratch", 1))
        .build()
    )
    chart = (
        flow_chart("S", lambda s: s.__setitem__("x", 4))
        .subflow("Sub", sub, id="sub", input={"n": "x"}, output={"final": "score"})
        .build()
    )
    result = run(chart)
    assert dict(result.state) == {"x": 4, "final": 40}
    kinds = [(c.stage_path, c.kind, c.frame) for c in result.snapshot.history()]
    assert kinds == [
        ("s#0", "stage", ""),
        ("sub#1", "subflow-input", "sub#1"),
        ("sub#1/inner#2", "stage", "sub#1"),
        ("sub#1/scratch#3", "stage", "sub#1"),
        ("sub#1/output", "subflow-output", ""),
    ]


def test_subflow_mapper_errors_fail_the_run_naming_the_mount():
    sub = flow_chart("Inner", lambda s: None).build()
    chart = flow_chart("S", lambda s: None).subflow("Sub", sub, input={"n": "absent"}).build()
    with pytest.raises(StageError, match="the input= mapping of subflow 'Sub'"):
        run(chart)


def test_sync_branches_stop_at_the_first_failure_in_declaration_order():
    def boom(s):
        s["b"] = 1
        raise ValueError("b failed")

    # every branch is a plain def: the inline path
    chart = (
        flow_chart("S", lambda s: None)
        .fork(
            "F",
            {"a": lambda s: s.__setitem__("a", 1), "b": boom, "c": lambda s: s.__setitem__("c", 1)},
        )
        .build()
    )
    with pytest.raises(StageError, match="b failed") as info:
        run(chart)
    assert [(c.stage_id, c.outcome) for c in info.value.snapshot.history()] == [
        ("s", "ok"),
        ("a", "ok"),
        ("b", "error"),
    ]
