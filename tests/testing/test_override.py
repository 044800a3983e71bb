"""Agent.override: the provider (and model) swapped for a with block, restored after."""

from __future__ import annotations

from typing import Any

import pytest

from trackway import Agent, define_tool, mock, openai
from trackway.agent import AgentBuildError, RunInFlightError
from trackway.testing import TestModel


def test_the_swap_lasts_for_the_block():
    agent = Agent.create(provider=mock(reply="real"), model="m").build()
    with agent.override(provider=mock(reply="fake")):
        assert agent.run_sync("hi") == "fake"
    assert agent.run_sync("hi") == "real"


def test_restored_after_an_error():
    agent = Agent.create(provider=mock(reply="real"), model="m").build()
    with pytest.raises(ValueError, match="boom"), agent.override(provider=mock(reply="fake")):
        raise ValueError("boom")
    assert agent.run_sync("hi") == "real"


def test_the_model_inside_the_block():
    gpt = openai("gpt-4o", api_key="sk-" + "x" * 20)
    agent = Agent.create(provider=gpt).build()

    kept = TestModel()  # names no model: the agent's stays
    with agent.override(provider=kept):
        agent.run_sync("hi")
    chosen = TestModel()
    with agent.override(provider=chosen, model="small"):
        agent.run_sync("hi")
    named = TestModel(model="tm-1")  # names one: it is the model inside
    with agent.override(provider=named):
        agent.run_sync("hi")
    assert [p.requests[0].model for p in (kept, chosen, named)] == ["gpt-4o", "small", "tm-1"]
    assert repr(agent) == "<Agent 'agent' model='gpt-4o' tools=[]>"


def test_refused_while_the_agent_runs_a_turn():
    seen: list[str] = []

    async def swap(args: dict[str, Any], ctx: Any) -> str:
        try:
            with agent.override(provider=mock(reply="x")):
                pass
        except RunInFlightError as exc:
            seen.append(str(exc))
        return "tried"

    probe = define_tool(name="swap", description="d", input_schema={"type": "object"}, execute=swap)
    agent = Agent.create(provider=TestModel(final_text="done"), model="m").tool(probe).build()
    assert agent.run_sync("go") == "done"
    assert seen and "enter it before the run starts" in seen[0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"provider": object()}, "async complete"),
        ({"provider": mock(reply="x"), "model": ""}, "non-empty str"),
    ],
)
def test_a_bad_override_is_refused(kwargs, match):
    agent = Agent.create(provider=mock(reply="real"), model="m").build()
    with pytest.raises(AgentBuildError, match=match), agent.override(**kwargs):
        pass
    assert agent.run_sync("hi") == "real"
