"""``agent.stream``: a turn's events as they happen, with back-pressure, for this run only."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from trackway import Agent, ProviderError, define_tool, mock
from trackway._demo import demo_agent
from trackway.agent import AgentError

from ..backends import run_async


def test_the_events_come_in_order_and_the_outcome_after() -> None:
    agent = demo_agent()
    heard: list[str] = []
    agent.on("*", lambda event: heard.append(event.name))

    async def main() -> Any:
        names = []
        async with agent.stream("Weather in Paris?") as events:
            async for event in events:
                names.append(event.name)
        return names, events

    names, events = run_async(main)
    assert names == heard  # exactly what listeners heard, in the same order
    assert names[0] == "agent.turn_start" and names[-1] == "agent.turn_end"
    assert "stream.tool_start" in names and "stream.tool_end" in names
    assert events.outcome == "It is sunny in Paris, 22°C."
    assert events.result.output == events.outcome and events.result.run_id.startswith("run-")


def test_tokens_stream_live() -> None:
    agent = Agent.create(provider=mock(reply="one two three", stream=True), model="m").build()

    async def main() -> list[str]:
        async with agent.stream("hi") as events:
            return [e.payload["text"] async for e in events if e.name == "stream.token"]

    assert "".join(run_async(main)).split() == ["one", "two", "three"]


def test_a_slow_reader_holds_the_run_back() -> None:
    agent = demo_agent()
    seen_at: list[int] = []

    async def main() -> None:
        async with agent.stream("Weather in Paris?", buffer=1) as events:
            async for _event in events:
                await anyio.sleep(0.02)  # a slow consumer (a websocket, say)
                seen_at.append(agent.commit_count())

    run_async(main)
    total = len(agent.snapshot())
    # while the reader worked through the early events the run had not raced to the end
    assert seen_at[0] < total and seen_at[-1] == total


def test_leaving_early_cancels_the_run() -> None:
    gate_reached = []

    async def slow(args: dict[str, Any], ctx: Any) -> str:
        gate_reached.append(True)
        await anyio.sleep(30)
        return "never"

    tool = define_tool(name="slow", description="Slow.", input_schema={}, execute=slow)
    agent = (
        Agent.create(provider=mock(replies=[{"tool_calls": [{"name": "slow"}]}]), model="m")
        .tool(tool)
        .build()
    )

    async def main() -> Any:
        with anyio.fail_after(10):
            async with agent.stream("go") as events:
                async for event in events:
                    if event.name == "stream.tool_start":
                        break
        return events

    events = run_async(main)
    assert events.outcome is None and events.result is None
    assert not agent._running


def test_a_failing_turn_raises_after_its_last_event() -> None:
    def boom(request: Any) -> Any:
        raise ProviderError("the model is down")

    agent = Agent.create(provider=mock(respond=boom), model="m").build()
    names: list[str] = []

    async def main() -> None:
        async with agent.stream("hi") as events:
            async for event in events:
                names.append(event.name)

    with pytest.raises(ProviderError, match="the model is down"):
        run_async(main)
    assert names[0] == "agent.turn_start"


def test_iterating_outside_the_block_says_how() -> None:
    agent = demo_agent()

    async def main() -> None:
        async for _event in agent.stream("hi"):
            pass

    with pytest.raises(AgentError, match="iterate a stream inside its block"):
        run_async(main)


def test_two_streams_at_once_each_hear_only_their_own_run() -> None:
    def respond(request: Any) -> str:
        return f"echo {request.messages[0].content}"

    agent = Agent.create(provider=mock(respond=respond), model="m").build()
    got: dict[str, list[Any]] = {}

    async def one(text: str) -> None:
        async with agent.stream(text) as events:
            got[text] = [e async for e in events]

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "a")
            tg.start_soon(one, "b")

    run_async(main)
    for text, events in got.items():
        assert len({e.run_id for e in events}) == 1
        assert events[-1].payload["answer"] == f"echo {text}"
