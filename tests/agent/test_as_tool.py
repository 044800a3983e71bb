"""Charts and agents as tools: the call runs the procedure or the inner agent, the answer is
its output, and the inner run is kept in the outer record (``tool_runs``) and reachable from
it (``tool_run``, then ``served_at`` on the inner agent's calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trackway.agent import (
    Agent,
    agent_as_tool,
    load_recording,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
    tool_run,
)
from trackway.engine import flow_chart
from trackway.tools import ToolDefinitionError, ask_human, define_tool, flowchart_as_tool


def _score(scope: Any) -> None:
    scope["score"] = 700 if scope["income"] > 50_000 else 450


def _decide(scope: Any) -> None:
    scope["decision"] = "approve" if scope["score"] >= 600 else "review"


CHART = (
    flow_chart("Score", _score, id="score")
    .then("Decide", _decide, id="decide")
    .build(
        name="credit check",
        chart_id="credit_check",
        description="Score an applicant and decide.",
        input_schema={
            "type": "object",
            "properties": {"income": {"type": "integer"}},
            "required": ["income"],
        },
        output_schema={
            "type": "object",
            "properties": {"decision": {"type": "string"}, "score": {"type": "integer"}},
        },
    )
)


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in items]}


def law(snap: Any) -> None:
    for k, receipt in enumerate(receipts(snap), start=1):
        assert served_at(snap, k).hash == receipt["request_hash"]


def test_a_chart_as_a_tool_answers_with_its_output_and_keeps_its_run(tmp_path: Path) -> None:
    tool = flowchart_as_tool(
        CHART,
        coverage={
            "checked": ["the declared income"],
            "cannot_cover": [{"what": "credit history", "why": "no bureau access"}],
        },
    )
    assert tool.name == "credit_check" and tool.input_schema["required"] == ["income"]
    script = [calls(("c1", "credit_check", {"income": 80_000})), "Approved."]
    agent = Agent.create(provider=mock(replies=script), model="m").tool(tool).build()
    assert agent.run_sync("check Ana") == "Approved."
    snap = agent.snapshot()
    read = snap.state["history"][2]["content"]
    assert '"result":{"decision":"approve","score":700}' in read and '"af_coverage"' in read
    run = snap.state["tool_runs"][0]
    assert (run["id"], run["kind"], run["chart"], run["status"]) == (
        "c1",
        "chart",
        "credit_check",
        "done",
    )
    inner = tool_run(snap, "c1")
    assert inner.state["decision"] == "approve"
    assert [c.stage_id for c in inner.history()] == ["score", "decide"]
    assert snap.state["coverage_declared"][0]["cannot_cover"][0]["what"] == "credit history"
    law(snap)
    loaded = load_recording(save_recording(agent, tmp_path / "r.json"))
    assert replay(loaded).state["tool_runs"] == snap.state["tool_runs"]  # no chart run again


def test_a_chart_that_pauses_is_a_failure_saying_why() -> None:
    def ask(scope: Any) -> None:
        scope.pause({"question": "ok?"})

    pausing = flow_chart("Ask", ask, id="ask").build(name="needs a person", chart_id="needs_person")
    tool = flowchart_as_tool(pausing, description="Needs a person.")
    agent = (
        Agent.create(provider=mock(replies=[calls(("c1", "needs_person", {})), "x"]), model="m")
        .tool(tool)
        .build()
    )
    agent.run_sync("go")
    state = agent.snapshot().state
    assert state["tool_results"][0]["status"] == "failure"
    assert "cannot wait for an answer" in state["history"][2]["content"]
    assert state["tool_runs"][0]["status"] == "paused"  # the run is on the record anyway


def test_chart_tool_refusals() -> None:
    with pytest.raises(ToolDefinitionError, match="built chart"):
        flowchart_as_tool("credit_check")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="all empty|declares no boundary"):
        flowchart_as_tool(CHART, coverage={})


def test_an_agent_as_a_tool_runs_with_the_outer_caller_and_is_reachable(tmp_path: Path) -> None:
    seen: list[Any] = []

    def whoami(args: dict[str, Any], ctx: Any) -> str:
        seen.append((ctx.identity, ctx.session_id))
        return "es"

    lang = define_tool(
        name="lang",
        description="The target language.",
        input_schema={"type": "object"},
        execute=whoami,
    )
    translator = (
        Agent.create(
            provider=mock(replies=[calls(("t1", "lang", {})), "Hola, ¿cómo estás?"]),
            model="small",
            name="translator",
        )
        .system("Translate into Spanish.")
        .tool(lang)
        .build()
    )
    outer = (
        Agent.create(
            provider=mock(
                replies=[
                    calls(("c1", "translator", {"message": "Hello, how are you?"})),
                    "Done: Hola.",
                ]
            ),
            model="m",
        )
        .tool(agent_as_tool(translator, description="Translates text to Spanish."))
        .build()
    )
    assert (
        outer.run_sync("translate", identity={"tenant": "acme"}, session_id="s1") == "Done: Hola."
    )
    snap = outer.snapshot()
    assert snap.state["history"][2]["content"] == "Hola, ¿cómo estás?"
    assert seen[0][0].tenant == "acme" and seen[0][1] == "s1"  # the outer caller, passed on
    inner = tool_run(snap, "c1")
    assert snap.state["tool_runs"][0]["kind"] == "agent"
    assert served_at(inner, 1).system == "Translate into Spanish."
    assert served_at(inner, 2).messages[-1].content == "es"
    law(inner)
    law(snap)
    loaded = load_recording(save_recording(outer, tmp_path / "outer.json"))
    replayed = replay(loaded)  # neither agent runs again
    assert replayed.state["tool_runs"] == snap.state["tool_runs"]
    with pytest.raises(LookupError, match="made no inner run"):
        tool_run(snap, "zz")


def test_an_inner_agent_that_pauses_is_a_failure() -> None:
    asker = (
        Agent.create(
            provider=mock(replies=[calls(("a1", "ask_human", {"question": "Which?"}))]),
            model="s",
            name="asker",
        )
        .tool(ask_human())
        .build()
    )
    outer = (
        Agent.create(
            provider=mock(replies=[calls(("c1", "asker", {"message": "go"})), "gave up"]), model="m"
        )
        .tool(agent_as_tool(asker))
        .build()
    )
    outer.run_sync("go")
    state = outer.snapshot().state
    assert state["tool_results"][0]["status"] == "failure"
    assert "cannot wait for an answer" in state["history"][2]["content"]


def test_a_call_whose_inner_run_never_started_files_no_run() -> None:
    inner = Agent.create(provider=mock(replies=["first"]), model="s", name="inner").build()
    outer = (
        Agent.create(
            provider=mock(
                replies=[
                    calls(("c1", "inner", {"message": "hi"})),
                    calls(("c2", "inner", {"message": ""})),  # refused before a run starts
                    "done",
                ]
            ),
            model="m",
        )
        .tool(agent_as_tool(inner))
        .build()
    )
    outer.run_sync("go")
    state = outer.snapshot().state
    assert [r["id"] for r in state["tool_runs"]] == ["c1"]
    assert state["tool_results"][1]["status"] == "failure"
