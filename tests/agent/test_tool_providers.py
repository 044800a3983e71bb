"""Tool providers: per-call offers committed (so receipts hash what was served), calls to a
tool not offered refused, clashing names refused at registration, and replay reading the
recorded offers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from trackway.agent import (
    Agent,
    AgentBuildError,
    load_recording,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
)
from trackway.engine import StageError
from trackway.tools import (
    Tool,
    ToolProvider,
    define_tool,
    gated_tools,
    static_tools,
)


def make(name: str, out: str = "ok") -> Tool:
    return define_tool(
        name=name,
        description=f"The {name} tool.",
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}},
        execute=lambda args, ctx: f"{name}: {out}",
    )


def calls(*items: tuple[str, str]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "args": {"id": "o1"}} for i, n in items]}


def looked_up(state: Mapping[str, Any]) -> bool:
    """The refund tool is offered once an order was looked up successfully."""
    return any(
        r["name"] == "lookup" and r["status"] == "success" for r in state.get("tool_results", ())
    )


def refund_agent(replies: list[Any]) -> Agent:
    return (
        Agent.create(provider=mock(replies=replies), model="m")
        .tool(make("lookup", "order o1, paid"))
        .tools_from(gated_tools(looked_up, make("refund", "refunded")))
        .build()
    )


def served_names(agent: Agent, k: int) -> list[str]:
    return [t.name for t in served_at(agent.snapshot(), k).tools or ()]


def test_a_gated_tool_is_offered_once_its_predicate_holds() -> None:
    agent = refund_agent([calls(("c1", "lookup")), calls(("c2", "refund")), "done"])
    heard: list[Any] = []
    agent.on("tools.offered", lambda e: heard.append(e.payload))
    assert agent.run_sync("refund o1") == "done"
    assert served_names(agent, 1) == ["lookup"]
    assert served_names(agent, 2) == ["lookup", "refund"]
    assert served_names(agent, 3) == ["lookup", "refund"]
    # the law: what served_at rebuilds is what was sent, call by call
    for k, receipt in enumerate(receipts(agent.snapshot()), start=1):
        assert served_at(agent.snapshot(), k).hash == receipt["request_hash"]
    rows = agent.snapshot().state["tool_results"]
    assert [(r["name"], r["status"]) for r in rows] == [
        ("lookup", "success"),
        ("refund", "success"),
    ]
    # written only when it changes (the first offer is the registered tools, as committed)
    assert heard == [{"iteration": 2, "names": ["lookup", "refund"]}]


def test_a_call_to_a_tool_not_offered_is_refused() -> None:
    agent = refund_agent([calls(("c1", "refund")), "done"])
    ran: list[str] = []
    agent.on("stream.tool_end", lambda e: ran.append(e.payload["result"]))
    agent.run_sync("refund o1")
    assert ran == [
        "Error: refund was not offered for this call, so it was not run. Available tools: lookup."
    ]
    assert agent.snapshot().state["tool_results"][0]["status"] == "invalid"


def test_static_tools_and_a_custom_provider() -> None:
    class ByIteration:
        """Offers the first tool on odd iterations and the second on even ones."""

        def __init__(self) -> None:
            self.tools = (make("odd"), make("even"))

        def offer(self, state: Mapping[str, Any]) -> Iterable[str]:
            return ["odd"] if state["iteration"] % 2 else ["even"]

    provider = ByIteration()
    assert isinstance(provider, ToolProvider)
    agent = (
        Agent.create(
            provider=mock(replies=[calls(("c1", "odd")), calls(("c2", "even")), "x"]), model="m"
        )
        .tools_from(static_tools(make("always")))
        .tools_from(provider)
        .build()
    )
    agent.run_sync("go")
    assert served_names(agent, 1) == ["always", "odd"]
    assert served_names(agent, 2) == ["always", "even"]
    assert [r["status"] for r in agent.snapshot().state["tool_results"]] == ["success", "success"]


def test_clashing_names_are_refused_naming_both_sources() -> None:
    base = Agent.create(provider=mock(reply="x"), model="m").tool(make("lookup"))
    with pytest.raises(AgentBuildError, match=r"'lookup' from tools_from\(static_tools\(lookup"):
        base.tools_from(static_tools(make("lookup")))
    b2 = Agent.create(provider=mock(reply="x"), model="m").tools_from(static_tools(make("a")))
    with pytest.raises(AgentBuildError, match=r"from .tool\(\) clashes .* tools_from"):
        b2.tool(make("a"))
    with pytest.raises(AgentBuildError, match="clashes with the tool of that name from tools_from"):
        b2.tools_from(gated_tools(looked_up, make("a")))
    with pytest.raises(AgentBuildError, match="takes a ToolProvider"):
        b2.tools_from([make("z")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="names \\['x'\\] twice"):
        static_tools(make("x"), make("x"))


def test_offering_a_tool_the_provider_never_declared_fails_the_run() -> None:
    class Liar:
        tools = (make("a"),)

        def offer(self, state: Mapping[str, Any]) -> Iterable[str]:
            return ["b"]

    agent = Agent.create(provider=mock(reply="x"), model="m").tools_from(Liar()).build()
    with pytest.raises(StageError, match="offered 'b', which is not one of the tools"):
        agent.run_sync("go")


def test_no_provider_mounts_no_offer_stage() -> None:
    agent = Agent.create(provider=mock(reply="x"), model="m").tool(make("a")).build()
    assert "offer" not in agent.spec().nodes
    agent.run_sync("go")
    assert not any(c.stage_id == "offer" for c in agent.snapshot().commits)
    with_provider = (
        Agent.create(provider=mock(reply="x"), model="m")
        .tools_from(static_tools(make("a")))
        .build()
    )
    assert "offer" in with_provider.spec().nodes


@pytest.mark.parametrize("with_agent", [False, True])
def test_replay_reads_the_recorded_offers(tmp_path: Path, with_agent: bool) -> None:
    agent = refund_agent(
        [calls(("c1", "refund")), calls(("c2", "lookup")), calls(("c3", "refund")), "done"]
    )
    agent.run_sync("refund o1")
    path = save_recording(agent, tmp_path / "run.json")
    loaded = load_recording(path)
    replayed = replay(loaded, agent if with_agent else None)
    assert replayed.state["tool_results"] == agent.snapshot().state["tool_results"]
    for k, receipt in enumerate(receipts(loaded), start=1):
        assert served_at(loaded, k).hash == receipt["request_hash"]
