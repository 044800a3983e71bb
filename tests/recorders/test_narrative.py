from __future__ import annotations

from typing import Any

import anyio
import pytest

from trackway import Executor, Rule, Scope, decide, flow_chart
from trackway.engine import FrozenDict, FrozenList, Retry, UnknownRunError, select
from trackway.recorders import Narrative, NarrativeEntry, narrative
from trackway.recorders._wording import summarize


def receive(scope: Scope) -> None:
    application = scope["application"]
    scope["applicant"] = application["name"]
    scope["amount"] = application["amount"]
    scope["income"] = application["income"]


def assess(scope: Scope) -> None:
    scope["risk_tier"] = "high" if scope["amount"] / scope["income"] > 0.5 else "low"


def route(scope: Scope) -> Any:
    return decide(scope, [Rule({"risk_tier": "high"}, "reject", label="High risk")], "approve")


def notify(scope: Scope) -> None:
    scope.append("outbox", f"{scope['applicant']}: your application was {scope['decision']}")


def loan_chart() -> Any:
    return (
        flow_chart("Receive", receive)
        .then("Assess", assess)
        .decider("Route", route)
        .branch("approve", "Approve", lambda s: s.__setitem__("decision", "approved"))
        .branch("reject", "Reject", lambda s: s.__setitem__("decision", "rejected"))
        .end()
        .then("Notify", notify)
        .build()
    )


def tell(chart: Any, state: dict[str, Any] | None = None, **kw: Any) -> Narrative:
    story = narrative(**kw)
    Executor(chart, recorders=[story]).run_sync(state, raise_on_error=False)
    return story


def test_a_small_chart_is_told_line_by_line():
    app = {"name": "Ada Lovelace", "amount": 90_000, "income": 60_000}
    story = tell(loan_chart(), {"application": app})
    assert story.lines() == [
        'Stage 1: Receive — read application = {name: "Ada Lovelace", amount: 90000, income: '
        '60000}; wrote applicant = "Ada Lovelace", amount = 90000, income = 60000',
        'Stage 2: Assess — read amount = 90000, income = 60000; wrote risk_tier = "high"',
        "Stage 3: Route — read risk_tier = \"high\"; chose Reject because rule 'High risk' matched",
        'Stage 4: Reject — wrote decision = "rejected"',
        'Stage 5: Notify — read applicant = "Ada Lovelace", decision = "rejected"; appended '
        '"Ada Lovelace: your application was rejec..." to outbox',
    ]
    assert story.text() == "\n".join(story.lines())


def test_entries_are_structured_facts():
    story = tell(loan_chart(), {"application": {"name": "Bo", "amount": 1, "income": 10}})
    route_entries = [e for e in story.entries() if e.stage_path == "route#2"]
    assert route_entries == [
        NarrativeEntry("stage", 0, "route#2", "Stage 3: Route", step=3),
        NarrativeEntry("read", 0, "route#2", 'read risk_tier = "low"', key="risk_tier"),
        NarrativeEntry("decision", 0, "route#2", "chose Approve: no rule matched; default"),
    ]
    assert {e.type for e in story.entries()} == {"stage", "read", "write", "decision"}


def test_value_summaries():
    assert summarize("high") == '"high"'
    assert summarize('say "hi"\n') == '"say \\"hi\\"\\n"'
    assert summarize("x" * 50) == '"' + "x" * 40 + '..."'
    assert summarize(3) == "3" and summarize(2.5) == "2.5"
    assert summarize(True) == "true" and summarize(None) == "null"
    assert summarize([]) == "[]" and summarize({}) == "{}"
    assert summarize("abcdef", max_chars=3) == '"abc..."'
    # containers show their values when that fits in twice max_chars, nested alike
    assert summarize([1, 2, 3]) == "[1, 2, 3]" and summarize(FrozenList([1, 2])) == "[1, 2]"
    assert summarize({"a": 1, "b": 2}) == "{a: 1, b: 2}"
    assert summarize(FrozenDict({"k": [1, {"x": "y"}]})) == '{k: [1, {x: "y"}]}'
    # and fall back to counts and keys when it does not
    assert summarize(list(range(40))) == "(40 items)"
    # strings inside are cut shorter (to half, then a quarter, at least 8) when that fits
    assert summarize({"text": "x" * 30, "more": "y" * 30}, max_chars=20) == (
        '{text: "' + "x" * 10 + '...", more: "' + "y" * 10 + '..."}'
    )
    assert summarize({"a": "x" * 30, "b": "y" * 30, "c": "z" * 30}, max_chars=16) == "{a, b, c}"
    assert summarize(dict.fromkeys("abcdefghijklmnopqrstuvwxyz", 100)) == (
        "{a, b, c, d, ... (26 keys)}"
    )
    # a long string inside a container is cut at max_chars like any string
    assert summarize({"s": "z" * 50}) == '{s: "' + "z" * 40 + '..."}'


def test_decision_wording_for_each_kind_of_decider():
    def chart(fn: Any, default: str | None = None) -> Any:
        d = flow_chart("Begin", lambda s: None).decider("Route", fn)
        d = d.branch("a", "Path A", lambda s: None)
        d = d.branch("b", "Path B", lambda s: None)
        if default is not None:
            d = d.default(default)
        return d.end().build()

    def texts(story: Narrative) -> list[str]:
        return [e.text for e in story.entries() if e.type == "decision"]

    assert texts(tell(chart(lambda s: "b"))) == ["chose Path B"]
    assert texts(tell(chart(lambda s: None, default="a"))) == ["chose Path A (default)"]
    unlabeled = chart(lambda s: decide(s, [Rule(lambda s: True, "b")], "a"))
    assert texts(tell(unlabeled)) == ["chose Path B because rule #0 matched"]


def test_selections_name_the_rules_that_matched():
    def pick(scope: Scope) -> Any:
        return select(
            scope,
            [
                Rule({"x": {"gt": 0}}, "a", label="positive"),
                Rule({"x": {"lt": 10}}, "b", label="small"),
                Rule({"x": {"lt": 0}}, "c", label="negative"),
            ],
        )

    chart = (
        flow_chart("Begin", lambda s: None)
        .selector("Pick", pick)
        .branch("a", "A", lambda s: s.__setitem__("a", 1))
        .branch("b", "B", lambda s: s.__setitem__("b", 2))
        .branch("c", "C", lambda s: None)
        .end()
        .build()
    )
    assert tell(chart, {"x": 5}).lines() == [
        "Stage 1: Begin",
        "Stage 2: Pick — read x = 5; selected a, b because rules 'positive', 'small' matched",
        "  Stage 3: A — wrote a = 1",
        "  Stage 4: B — wrote b = 2",
        "Merged Pick: branches a, b — wrote a = 1, b = 2",
    ]
    assert tell(chart, {"x": 50}).lines()[1].endswith("selected a because rule 'positive' matched")
    assert tell(chart, {"x": -1}).lines()[1:] == [
        "Stage 2: Pick — read x = -1; selected b, c because rules 'small', 'negative' matched",
        "  Stage 3: B — wrote b = 2",
        "  Stage 4: C",
        "Merged Pick: branches b, c — wrote b = 2",
    ]
    plain = (
        flow_chart("Begin", lambda s: None)
        .selector("Pick", lambda s: [])
        .branch("a", "A", lambda s: None)
        .end()
        .build()
    )
    assert tell(plain).lines() == ["Stage 1: Begin", "Stage 2: Pick — selected no branch"]


def test_subflows_are_entered_and_left_with_inputs_and_outputs():
    inner = flow_chart("Double", lambda s: s.__setitem__("y", s["x"] * 2), id="double").build()
    chart = (
        flow_chart("Start", lambda s: s.__setitem__("n", 4))
        .subflow("Shared", inner, id="shared")
        .subflow("Isolated", inner, id="iso", input={"x": "n"}, output={"result": "y"})
        .build()
    )
    assert tell(chart, {"x": 1}).lines() == [
        "Stage 1: Start — wrote n = 4",
        "Entering subflow double",
        "  Stage 2: Double — read x = 1; wrote y = 2",
        "Leaving subflow double",
        "Entering subflow double — read n = 4; input x = 4",
        "  Stage 3: Double — read x = 4; wrote y = 8",
        "Leaving subflow double — output result = 8",
    ]


def test_fork_branches_are_told_at_their_depth_then_the_merge():
    chart = (
        flow_chart("Start", lambda s: s.__setitem__("n", 1))
        .fork(
            "Both",
            {"a": lambda s: s.__setitem__("a", s["n"]), "b": ("Bee", lambda s: s.append("l", 1))},
            merge="namespace",
        )
        .build()
    )
    assert tell(chart).lines() == [
        "Stage 1: Start — wrote n = 1",
        "  Stage 2: a — read n = 1; wrote a = 1",
        "  Stage 3: Bee — appended 1 to l",
        "Merged Both: branches a, b — wrote a = {a: 1}, b = {l: [1]}",
    ]


def test_concurrent_branches_keep_their_parts_on_their_own_line():
    async def slow(scope: Scope) -> None:
        scope["first"] = scope["n"]
        await anyio.sleep(0.02)
        scope["late"] = True

    async def quick(scope: Scope) -> None:
        scope["second"] = 2

    chart = flow_chart("S", lambda s: s.__setitem__("n", 1)).fork("F", {"a": slow, "b": quick})
    lines = tell(chart.build()).lines()
    assert lines[1:3] == [
        "  Stage 2: a — read n = 1; wrote first = 1, late = true",
        "  Stage 3: b — wrote second = 2",
    ]


def test_pause_and_resume_continue_one_story():
    def ask(scope: Scope) -> None:
        scope["asked"] = True
        scope.pause({"question": "approve?"})

    chart = (
        flow_chart("Prepare", lambda s: s.__setitem__("amount", 10))
        .then("Ask", ask, on_resume=lambda s, v: s.__setitem__("answer", v))
        .then("Pay", lambda s: s.__setitem__("paid", s["answer"] == "yes"))
        .build()
    )
    story = narrative()
    executor = Executor(chart, recorders=[story])
    first = executor.run_sync()
    assert story.lines() == [
        "Stage 1: Prepare — wrote amount = 10",
        'Stage 2: Ask — wrote asked = true; paused waiting for {question: "approve?"}',
    ]
    executor.resume_sync(first.checkpoint, "yes")
    assert story.run_ids == [first.run_id]
    assert story.lines()[2:] == [
        'Stage 3: Ask — resumed with "yes"; wrote answer = "yes"',
        'Stage 4: Pay — read answer = "yes"; wrote paid = true',
    ]
    assert [e.type for e in story.entries() if e.stage_path == "ask#1:resume1"] == [
        "stage",
        "resume",
        "write",
    ]


def test_errors_emits_and_breaks():
    def fail(scope: Scope) -> None:
        scope["tried"] = 1
        raise ValueError("no credit file")

    def stop(scope: Scope) -> None:
        scope.emit("audit", {"who": "bot"})
        scope.break_("nothing to do")

    failing = flow_chart("Check", fail).then("Never", lambda s: None).build()
    assert tell(failing).lines() == [
        "Stage 1: Check — wrote tried = 1; failed with ValueError: no credit file"
    ]
    breaking = flow_chart("Stop", stop).then("Never", lambda s: None).build()
    assert tell(breaking).lines() == [
        'Stage 1: Stop — emitted audit {who: "bot"}; ended the flow early: nothing to do'
    ]
    assert tell(flow_chart("Stop", lambda s: s.break_()).build()).lines() == [
        "Stage 1: Stop — ended the flow early"
    ]


def test_a_run_level_failure_without_a_failing_stage_gets_its_own_line():
    chart = flow_chart("Spin", lambda s: s.__setitem__("n", s.get("n", 0) + 1)).loop_to("spin")
    story = narrative()
    Executor(chart.build(), recorders=[story], max_iterations=2).run_sync(raise_on_error=False)
    lines = story.lines()
    assert lines[:3] == [
        "Stage 1: Spin — read n (absent); wrote n = 1",
        "Stage 2: Spin — read n = 1; wrote n = 2",
        "Stage 3: Spin — read n = 2; wrote n = 3",
    ]
    assert lines[3].startswith("The run failed: LoopLimitError: the loop from 'Spin'")
    assert len(lines) == 4


def test_merge_conflicts_are_told_once_on_the_merge_line():
    chart = flow_chart("S", lambda s: None).fork(
        "F", {"a": lambda s: s.__setitem__("k", 1), "b": lambda s: s.__setitem__("k", 2)}
    )
    lines = tell(chart.build()).lines()
    assert lines[-1].startswith("Merged F: branches a, b — failed with MergeConflictError:")
    assert sum("MergeConflictError" in line for line in lines) == 1


def test_retries_tell_only_the_committed_writes():
    calls = []

    def flaky(scope: Scope) -> None:
        calls.append(1)
        scope["attempt"] = len(calls)
        if len(calls) < 3:
            raise ConnectionError("try again")

    chart = flow_chart("Fetch", flaky, retry=Retry(attempts=3, backoff=0)).build()
    assert tell(chart).lines() == ["Stage 1: Fetch — wrote attempt = 3"]


def test_values_can_be_left_out():
    app = {"name": "Ada", "amount": 1, "income": 1}
    lines = tell(loan_chart(), {"application": app}, values=False).lines()
    assert lines[0] == "Stage 1: Receive — read application; wrote applicant, amount, income"
    assert lines[-1] == "Stage 5: Notify — read applicant, decision; appended 1 item to outbox"


def test_one_narrative_keeps_runs_apart():
    story = narrative()
    executor = Executor(loan_chart(), recorders=[story])
    first = executor.run_sync({"application": {"name": "A", "amount": 9, "income": 10}})
    second = executor.run_sync({"application": {"name": "B", "amount": 1, "income": 10}})
    assert story.run_ids == [first.run_id, second.run_id]
    assert "chose Reject" in story.text(first.run_id)
    assert "chose Approve" in story.text() == story.text(second.run_id)
    assert story.lines(first.run_id)[0].startswith("Stage 1: Receive")
    assert story.lines(second.run_id)[0].startswith("Stage 1: Receive")  # numbering per run
    with pytest.raises(UnknownRunError, match="no narrative for run .run-nope."):
        story.text("run-nope")
    story.clear()
    assert story.text() == "" and story.entries() == []


def test_a_decider_whose_branch_is_a_chart_keeps_the_branch_key():
    inner = flow_chart("Inside", lambda s: None, id="inside").build()
    chart = (
        flow_chart("Begin", lambda s: None)
        .decider("Route", lambda s: "deep")
        .branch("deep", "Deep", inner)
        .end()
        .build()
    )
    assert tell(chart).lines() == [
        "Stage 1: Begin",
        "Stage 2: Route — chose deep",
        "Entering subflow inside",
        "  Stage 3: Inside",
        "Leaving subflow inside",
    ]


def test_the_recorder_has_a_name():
    assert narrative().name == "narrative"


def test_parallel_for_each_tells_each_item_then_the_merge():
    chart = (
        flow_chart("Start", lambda s: s.__setitem__("xs", [1, 2, 3]))
        .parallel_for_each(
            "Square",
            items="xs",
            branch=lambda s: s.__setitem__("result", s["item"] ** 2),
            into="squares",
            max_branches=5,
        )
        .build()
    )
    assert tell(chart).lines() == [
        "Stage 1: Start — wrote xs = [1, 2, 3]",
        "  Stage 2: Square — read item = 1; wrote result = 1",
        "  Stage 3: Square — read item = 2; wrote result = 4",
        "  Stage 4: Square — read item = 3; wrote result = 9",
        "Merged Square: 3 of 3 items — wrote squares = [1, 4, 9]",
    ]


def test_a_timeout_tells_the_cancelled_stage_and_the_run_failure():
    async def slow(scope: Scope) -> None:
        scope["started"] = True
        await anyio.sleep(5)

    story = narrative()
    Executor(flow_chart("Slow", slow).build(), recorders=[story]).run_sync(
        timeout=0.05, raise_on_error=False
    )
    lines = story.lines()
    assert lines[0] == "Stage 1: Slow — wrote started = true; was cancelled"
    assert lines[1].startswith("The run failed: RunTimeoutError: the run did not finish")
    assert len(lines) == 2


def test_a_pause_in_a_fork_branch_reads_in_order_although_its_commit_comes_later():
    def ask(scope: Scope) -> None:
        scope["asked"] = 1
        scope.pause("ok?")

    inner = flow_chart("Ask", ask, id="ask", on_resume=lambda s, v: s.__setitem__("a", v))
    chart = (
        flow_chart("S", lambda s: None)
        .fork("F", {"a": inner.build(), "b": lambda s: s.__setitem__("b", 1)})
        .build()
    )
    story = narrative()
    executor = Executor(chart, recorders=[story])
    executor.resume_sync(executor.run_sync().checkpoint, "yes")
    assert story.lines() == [
        "Stage 1: S",
        '    Stage 2: Ask — wrote asked = 1; paused waiting for "ok?"',
        "  Stage 3: b — wrote b = 1",
        '    Stage 4: Ask — resumed with "yes"; wrote a = "yes"',
        'Merged F: branches a, b — wrote asked = 1, a = "yes", b = 1',
    ]


def test_a_break_in_a_subflow_is_told_on_its_stage():
    inner = flow_chart("Stop", lambda s: s.break_("inner says stop"), id="stop")
    chart = (
        flow_chart("S", lambda s: None)
        .subflow("Sub", inner.then("Never", lambda s: None).build(), id="sub", propagate_break=True)
        .then("After", lambda s: None)
        .build()
    )
    assert tell(chart).lines() == [
        "Stage 1: S",
        "Entering subflow stop",
        "  Stage 2: Stop — ended the flow early: inner says stop",
        "Leaving subflow stop",
    ]


def test_text_wraps_to_a_width_at_the_separators_indenting_continuations():
    def start(scope: Scope) -> None:
        for i in range(8):
            scope[f"key_{i}"] = "v" * 12

    chart = (
        flow_chart("Start", start)
        .fork("Both", {"a": lambda s: s.__setitem__("a", s["key_1"])})
        .build()
    )
    story = tell(chart)
    wide = story.text()
    wrapped = story.text(width=50).splitlines()
    assert all(len(line) <= 50 for line in wrapped)
    assert wrapped[0].startswith("Stage 1: Start — wrote key_0") and wrapped[1].startswith("    ")
    branch = next(i for i, line in enumerate(wrapped) if line.startswith("  Stage 2: a"))
    assert wrapped[branch + 1].startswith("      ") or len(wrapped[branch]) <= 50
    # the words are the same, only the line breaks differ
    assert " ".join(" ".join(wrapped).split()) == " ".join(wide.split())
