from __future__ import annotations

import networkx as nx
import pytest

from trackway import ChartBuildError, FlowChart, flow_chart


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
