from __future__ import annotations

import networkx as nx

from trackway import Executor, Rule, causal_chain, decide, flow_chart


def loan_chart():
    def receive(s):
        s["score"] = s["application"]["score"]
        s["amount"] = s["application"]["amount"]

    def assess(s):
        s["risk"] = "high" if s["score"] < 600 else "low"

    def route(s):
        return decide(s, [Rule({"risk": "high"}, "reject", label="High risk")], "approve")

    return (
        flow_chart("Receive", receive)
        .then("Unrelated", lambda s: s.__setitem__("noise", 1))
        .then("Assess", assess)
        .decider("Route", route)
        .branch("approve", "Approve", lambda s: s.__setitem__("decision", "approved"))
        .branch("reject", "Reject", lambda s: s.__setitem__("decision", "rejected"))
        .end()
        .build()
    )


def test_trace_follows_writers_reads_and_the_decision_back_to_the_input():
    snap = Executor(loan_chart()).run_sync({"application": {"score": 550, "amount": 10}}).snapshot
    chain = causal_chain(snap, "decision")
    g = chain.graph
    assert chain.root == 5  # reject#4 wrote it
    assert g.edges[5, 4]["kind"] == "control" and g.edges[5, 4]["branch"] == "reject"
    assert g.edges[4, 3] == {"kind": "data", "key": "risk"}
    assert g.edges[3, 1]["key"] == "score"
    assert g.edges[1, "input"]["key"] == "application"
    assert 2 not in g  # the unrelated stage is not in the slice
    assert chain.writers() == [5, 4, 3, 1] and nx.is_directed_acyclic_graph(g)
    text = chain.render()
    assert text.splitlines()[0] == "Reject (reject#4, commit 5) wrote decision"
    assert "← control: 'reject' chosen by Route (route#3, commit 4)" in text
    assert "← via application: run input" in text


def test_trace_at_an_earlier_point_and_of_input_only_keys():
    snap = Executor(loan_chart()).run_sync({"application": {"score": 700, "amount": 1}}).snapshot
    assert causal_chain(snap, "risk", at=2).root is None  # not yet written after 2 commits
    only_input = causal_chain(snap, "application")
    assert only_input.root is None and "input" in only_input.graph
    assert "came from the run input" in only_input.render()


def test_merged_branch_values_trace_into_the_branch_that_wrote_them():
    chart = (
        flow_chart("Seed", lambda s: s.__setitem__("base", 2))
        .fork(
            "Checks",
            {
                "a": lambda s: s.__setitem__("a", s["base"] * 10),
                "b": lambda s: s.__setitem__("b", 1),
            },
        )
        .then("Sum", lambda s: s.__setitem__("total", s["a"] + s["b"]))
        .build()
    )
    snap = Executor(chart).run_sync().snapshot
    chain = causal_chain(snap, "total")
    paths = {snap.history()[n - 1].stage_path for n in chain.writers()}
    assert paths == {"sum#2", "checks#1", "checks#1/a#0", "checks#1/b#0", "seed#0"}
    merge = next(n for n in chain.writers() if snap.history()[n - 1].kind == "merge")
    assert chain.graph.edges[merge, 2]["merged"] is True  # checks#1/a#0 wrote "a"


def test_absent_reads_and_resume_values_are_reported_as_gaps():
    def ask(s):
        s.get("maybe")
        s.pause("?")

    chart = flow_chart("Ask", ask, on_resume=lambda s, v: s.__setitem__("answer", v)).build()
    ex = Executor(chart)
    snap = ex.resume_sync(ex.run_sync().checkpoint, "yes").snapshot
    chain = causal_chain(snap, "answer")
    assert any("resume value from outside the run ('yes')" in g for g in chain.gaps)
    text = causal_chain(snap, "answer").render()
    assert "⚠" in text


def test_selector_branches_subflow_inputs_for_each_items_and_multi_branch_appends():
    from trackway.engine import select

    sub = flow_chart("Inner", lambda s: s.__setitem__("y", s["x"] * 2), id="inner").build()
    chart = (
        flow_chart("Seed", lambda s: s.__setitem__("t", 3))
        .subflow("Sub", sub, id="sub", input={"x": "t"}, output={"o": "y"})
        .selector("Pick", lambda s: select(s, [{"when": {"o": {"gt": 1}}, "then": "a"}]))
        .branch("a", "A", lambda s: s.__setitem__("picked", s["o"]))
        .end()
        .fork("Logs", {"p": lambda s: s.append("log", s["t"]), "q": lambda s: s.append("log", 2)})
        .parallel_for_each(
            "Each",
            items=lambda s: [1, 2],
            branch=lambda s: s.__setitem__("result", s["item"]),
            into="out",
            max_branches=2,
        )
        .build()
    )
    snap = Executor(chart).run_sync().snapshot
    picked = causal_chain(snap, "picked")
    assert not picked.gaps
    kinds = {d["kind"] for _, _, d in picked.graph.edges(data=True)}
    assert kinds == {"data", "control"}  # the selector's choice is a control edge
    paths = {snap.history()[n - 1].stage_path for n in picked.writers()}
    assert {"sub#1", "sub#1/inner#2", "seed#0"} <= paths  # through the input mapping
    log = causal_chain(snap, "log")
    log_paths = {snap.history()[n - 1].stage_path for n in log.writers()}
    assert {"logs#4/p#0", "logs#4/q#0", "seed#0"} <= log_paths  # both appending branches
    out = causal_chain(snap, "out")
    assert not out.gaps and any(
        "seeded by parallel_for_each" in out.graph.nodes[n].get("label", "") for n in out.graph
    )
