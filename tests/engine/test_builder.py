from __future__ import annotations

import functools

import networkx as nx
import pytest

from trackway import Executor, FlowChart, flow_chart
from trackway.engine import ChartBuildError


def noop(scope):
    return None


def pick(scope):
    return "a"


def test_duplicate_ids_are_named_with_both_stages_and_the_fix():
    with pytest.raises(ChartBuildError) as info:
        flow_chart("Load", noop).then("Load", noop).build()
    msg = str(info.value)
    assert "duplicate stage id 'load'" in msg and "pass a distinct id=" in msg


def test_unknown_loop_target_suggests_ids():
    with pytest.raises(ChartBuildError) as info:
        flow_chart("Start", noop, id="start").then("Step", noop).loop_to("Start").build()
    msg = str(info.value)
    assert "loops to 'Start'" in msg and "ids are: start, step" in msg
    assert "stage name instead of its id" in msg


def test_default_that_is_not_a_branch():
    with pytest.raises(ChartBuildError, match="default 'c' is not one of its branches"):
        flow_chart("D", pick).decider("R", pick).branch("a", "A", noop).default("c").end().build()


def test_decider_without_branches():
    with pytest.raises(ChartBuildError, match="decider 'R' has no branches"):
        flow_chart("S", noop).decider("R", pick).end().build()


def test_selector_without_branches():
    with pytest.raises(ChartBuildError, match="selector 'Sel' has no branches"):
        flow_chart("S", noop).selector("Sel", pick).end().build()


def test_stage_after_a_loop_is_unreachable():
    with pytest.raises(ChartBuildError, match="'After' .* can never run"):
        flow_chart("S", noop).loop_to("s").then("After", noop).build()


def test_stage_after_a_decider_whose_branches_all_loop_is_unreachable():
    builder = (
        flow_chart("S", noop)
        .decider("R", pick)
        .branch("a", "A", noop, loop_to="s")
        .branch("b", "B", noop, loop_to="s")
        .end()
        .then("Tail", noop)
    )
    with pytest.raises(ChartBuildError, match="'Tail' .* can never run"):
        builder.build()


def test_every_fault_is_reported_at_once():
    with pytest.raises(ChartBuildError) as info:
        flow_chart("A", noop).then("A", noop).loop_to("nowhere").build()
    msg = str(info.value)
    assert "duplicate stage id" in msg and "loops to 'nowhere'" in msg


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: flow_chart("A", 42), "expected a stage function"),
        (lambda: flow_chart("", noop), "non-empty name"),
        (lambda: flow_chart("A", noop, id="a/b"), "is not allowed"),
        (lambda: flow_chart("A", noop).fork("F", {}), "non-empty dict of branches"),
        (lambda: flow_chart("A", noop).fork("F", {"x": noop}, merge="first"), "not a merge"),
        (lambda: flow_chart("A", noop).subflow("Sub", object()), "built FlowChart"),
        (lambda: flow_chart("A", noop).decider("R", pick).branch("a b", "A", noop), "branch key"),
        (
            lambda: (
                flow_chart("A", noop)
                .decider("R", pick)
                .branch("a", "A", noop)
                .branch("a", "B", noop)
            ),
            "declares branch 'a' twice",
        ),
        (
            lambda: flow_chart("A", noop).parallel_for_each(
                "E", items="xs", branch=noop, into="ys", max_branches=0
            ),
            "max_branches must be a positive int",
        ),
        (lambda: flow_chart("A", noop, state=dict), "BaseModel subclass"),
        (lambda: flow_chart("A", noop, retry=0), "at least 1 attempt"),
    ],
)
def test_misuse_fails_at_the_builder_call(make, fragment):
    with pytest.raises((ChartBuildError, ValueError, TypeError), match=fragment):
        make()


def test_a_built_builder_refuses_more_stages():
    builder = flow_chart("A", noop)
    builder.build()
    with pytest.raises(ChartBuildError, match="already built"):
        builder.then("B", noop)


def test_chart_is_immutable_and_exposes_graph_description_and_mermaid():
    sub = flow_chart("Inner", noop, id="inner").build(name="Inner chart")
    chart = (
        flow_chart("Receive", noop, id="receive", description="Take it")
        .decider("Route", pick, id="route")
        .branch("a", "Approve", noop, id="approve")
        .branch("b", "Reject", noop, id="reject")
        .default("b")
        .end()
        .fork("Checks", {"x": noop, "y": ("Why", noop)})
        .subflow("Sub", sub, id="sub")
        .then("Again", noop, id="again")
        .loop_to("route")
        .build(name="Loan")
    )
    assert isinstance(chart, FlowChart)
    with pytest.raises(TypeError):
        chart.nodes["x"] = None  # type: ignore[index]
    with pytest.raises(AttributeError):
        chart.root = "x"  # type: ignore[misc]
    g = chart.graph
    assert nx.is_frozen(g)
    assert g.edges["route", "approve"]["kind"] == "branch"
    assert g.edges["again", "route"]["kind"] == "loop"
    assert g.nodes["route"]["kind"] == "decider"
    text = chart.describe()
    assert text.splitlines()[0] == "FlowChart: Loan"
    assert "1. Receive — Take it" in text and "decides: a → step 3, b → step 4; default b" in text
    assert "runs in parallel: x (x), y (Why)" in text and "FlowChart: Inner chart" in text
    assert "loops back to step 2 (route)" in text
    mermaid = chart.to_mermaid()
    assert mermaid.startswith("flowchart TD") and "n_route -->|a| n_approve" in mermaid
    assert "n_again -.->|loop| n_route" in mermaid


def test_fingerprint_tracks_structure_not_code():
    a = flow_chart("A", noop).then("B", noop).build()
    b = flow_chart("A", lambda s: None).then("B", lambda s: 1).build()
    c = flow_chart("A", noop).then("C", noop).build()
    assert a.fingerprint == b.fingerprint != c.fingerprint


# -- generator functions (a stray `yield`) are refused at build -----------------------------


def gen_stage(scope):
    scope["ran"] = True
    yield


async def agen_stage(scope):
    scope["ran"] = True
    yield


def gen_resume(scope, value):
    yield


class GenCall:
    def __call__(self, scope):
        yield


class AsyncCall:
    async def __call__(self, scope):
        scope["async_object"] = True


def sub_chart():
    return flow_chart("Inner", noop, id="inner").build()


@pytest.mark.parametrize(
    ("make", "where"),
    [
        (lambda fn: flow_chart("A", fn), "stage 'A'"),
        (lambda fn: flow_chart("A", noop).then("B", fn), "stage 'B'"),
        (lambda fn: flow_chart("A", noop).decider("D", fn), "stage 'D'"),
        (lambda fn: flow_chart("A", noop).selector("S", fn), "stage 'S'"),
        (lambda fn: flow_chart("A", noop).fork("F", {"x": fn}), "fork 'F', branch 'x'"),
        (lambda fn: flow_chart("A", noop).fork("F", {"x": ("X", fn)}), "fork 'F', branch 'x'"),
        (
            lambda fn: flow_chart("A", noop).decider("D", pick).branch("a", "Yes", fn),
            "decider 'D', branch 'a'",
        ),
        (
            lambda fn: flow_chart("A", noop).selector("S", pick).branch("a", "Yes", fn),
            "selector 'S', branch 'a'",
        ),
        (
            lambda fn: flow_chart("A", noop).parallel_for_each(
                "E", items="xs", branch=fn, into="ys", max_branches=2
            ),
            "parallel_for_each 'E', branch 'each'",
        ),
        (
            lambda fn: flow_chart("A", noop).parallel_for_each(
                "E", items=fn, branch=noop, into="ys", max_branches=2
            ),
            "items= of parallel_for_each 'E'",
        ),
        (
            lambda fn: flow_chart("A", noop).subflow("Sub", sub_chart(), input=fn),
            "input= of subflow 'Sub'",
        ),
        (
            lambda fn: flow_chart("A", noop).fork("F", {"x": noop}, merge={"k": fn}),
            "the reducer of 'k' in fork 'F'",
        ),
    ],
)
@pytest.mark.parametrize(
    ("fn", "label", "kind"),
    [
        (gen_stage, "gen_stage", "a generator function"),
        (agen_stage, "agen_stage", "an async generator function"),
        (GenCall(), "GenCall.__call__", "a generator function"),
        (functools.partial(gen_stage), "functools.partial(gen_stage)", "a generator function"),
    ],
    ids=["generator", "async-generator", "callable-object", "partial"],
)
def test_a_generator_function_is_refused_at_the_builder_call(make, where, fn, label, kind):
    # Regression: it was accepted, and calling it only made a generator: the body never ran.
    with pytest.raises(ChartBuildError) as info:
        make(fn)
    assert str(info.value) == (
        f"{where}: {label} is {kind} (it contains `yield`), so calling it only makes a "
        "generator and its body never runs; remove the yield and return a value instead "
        "(async def without yield is fine)"
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: flow_chart("A", noop, on_resume=gen_resume),
        lambda: flow_chart("A", noop).then("B", noop, on_resume=gen_resume),
        lambda: (
            flow_chart("A", noop).decider("D", pick).branch("a", "B", noop, on_resume=gen_resume)
        ),
    ],
)
def test_a_generator_on_resume_is_refused_naming_its_stage(make):
    with pytest.raises(ChartBuildError, match=r"on_resume= of stage '(A|B)': gen_resume is a gen"):
        make()


def test_coroutine_functions_async_objects_and_partials_still_run():
    async def coro(scope):
        scope["coro"] = True

    def plain(scope, key):
        scope[key] = True

    chart = (
        flow_chart("A", coro)
        .then("B", AsyncCall())
        .then("C", functools.partial(plain, key="partial"))
        .fork("F", {"x": coro, "y": functools.partial(plain, key="branch")}, merge="last")
        .build()
    )
    state = Executor(chart).run_sync().state
    assert dict(state) == {"coro": True, "async_object": True, "partial": True, "branch": True}


# -- control characters in ids, keys and names ----------------------------------------------


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ("a\x00b", "it holds the control character '\\x00' at index 1"),
        ("a\x1b[31m", "it holds the control character '\\x1b' at index 1"),
        ("a\rb", "it holds the control character '\\r' at index 1"),
        ("a\x7f", "it holds the control character '\\x7f' at index 1"),
        ("a\ud800", "it holds the lone surrogate '\\ud800' at index 1"),
        ("a\tb", "it holds the control character '\\t' at index 1"),
    ],
)
def test_control_characters_in_ids_and_branch_keys_are_refused(bad, fragment):
    # Regression: a NUL in a stage id or branch key reached every stage path, which
    # PostgreSQL keeps in a text column, so every run failed there.
    for make, start in [
        (lambda: flow_chart("A", noop, id=bad), f"stage 'A': id {bad!r} is not allowed ("),
        (
            lambda: flow_chart("A", noop).then("B", noop, id=bad),
            f"stage 'B': id {bad!r} is not allowed (",
        ),
        (
            lambda: flow_chart("A", noop).fork("F", {bad: noop}),
            f"fork 'F': branch key {bad!r} is not allowed (",
        ),
        (
            lambda: flow_chart("A", noop).decider("D", pick).branch(bad, "B", noop),
            f"decider 'D': branch key {bad!r} is not allowed (",
        ),
        (
            lambda: flow_chart("A", noop).selector("S", pick).branch(bad, "B", noop),
            f"selector 'S': branch key {bad!r} is not allowed (",
        ),
    ]:
        with pytest.raises(ChartBuildError) as info:
            make()
        message = str(info.value)
        assert message.startswith(start + fragment) and "control characters" in message


@pytest.mark.parametrize("bad", ["c\x00", "c\x1b", "c\n", "c\ud800"])
def test_control_characters_in_the_chart_id_are_refused(bad):
    with pytest.raises(ChartBuildError) as info:
        flow_chart("A", noop).build(chart_id=bad)
    assert str(info.value).startswith(f"build(chart_id={bad!r}): it holds {bad[1]!r} at index 1")
    assert flow_chart("A", noop).build(chart_id="agent-My Bot").id == "agent-My Bot"


@pytest.mark.parametrize(
    ("bad", "char"),
    [
        ("Load\x00", "\x00"),
        ("Load \x1b[2J", "\x1b"),
        ("Load\x9b", "\x9b"),
        ("Load\udc00", "\udc00"),
    ],
)
def test_names_with_nul_escapes_or_surrogates_are_refused_naming_the_stage(bad, char):
    expected = f"the name {bad!r} holds {char!r} at index {bad.index(char)}"
    for make, where in [
        (lambda: flow_chart(bad, noop), f"stage {bad!r}"),
        (lambda: flow_chart("A", noop).then(bad, noop, id="b"), f"stage {bad!r}"),
        (lambda: flow_chart("A", noop).fork(bad, {"x": noop}), f"fork {bad!r}"),
        (lambda: flow_chart("A", noop).fork("F", {"x": (bad, noop)}), "fork 'F', branch 'x'"),
        (
            lambda: flow_chart("A", noop).selector("S", pick).branch("x", bad, noop),
            "selector 'S', branch 'x'",
        ),
        (lambda: flow_chart("A", noop).build(name=bad), "build(name=...)"),
    ]:
        with pytest.raises(ChartBuildError) as info:
            make()
        assert str(info.value).startswith(f"{where}: {expected}"), str(info.value)
        assert "names are display text" in str(info.value)


def test_names_are_display_text_otherwise():
    chart = flow_chart("Check\trisk — ünïcode\nline 2", noop).then("Ok", noop, id="ok").build()
    assert chart.nodes["check-risk-n-code-line-2"].name == "Check\trisk — ünïcode\nline 2"


@pytest.mark.parametrize("option", ["items", "into", "result_key"])
def test_parallel_for_each_state_keys_are_checked_at_build(option):
    kwargs = {"items": "xs", "into": "ys", "result_key": "result", option: "bad\x00key"}
    with pytest.raises(ChartBuildError) as info:
        flow_chart("A", noop).parallel_for_each("E", branch=noop, max_branches=2, **kwargs)
    assert str(info.value).startswith(
        f"parallel_for_each 'E': {option}='bad\\x00key' cannot be a state key: it holds the "
        "control character '\\x00' at index 3"
    )
