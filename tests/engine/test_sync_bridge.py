"""One sync bridge: *_sync entry points start a loop, and refuse inside one (any backend)."""

from __future__ import annotations

import asyncio

import pytest
import trio

from trackway import Agent, Executor, flow_chart, mock, replay
from trackway.agent import replay_async
from trackway.engine import ExecutorUsageError


def _chart():
    return flow_chart("A", lambda s: s.__setitem__("a", 1), id="a").build()


def _agent() -> Agent:
    return Agent.create(provider=mock(replies=["hi"]), model="m").build()


CALLS = [
    ("Executor.run_sync", "await executor.run(...)", lambda: Executor(_chart()).run_sync()),
    ("Agent.run_sync", "await agent.run(...)", lambda: _agent().run_sync("hello")),
]


@pytest.mark.parametrize(("name", "twin", "call"), CALLS)
def test_inside_a_running_asyncio_loop_the_error_names_the_async_twin(name, twin, call):
    async def main() -> None:
        with pytest.raises(ExecutorUsageError) as info:
            call()
        assert f"{name}() was called inside a running asyncio event loop" in str(info.value)
        assert twin in str(info.value) and "Already running" not in str(info.value)

    asyncio.run(main())


@pytest.mark.parametrize(("name", "twin", "call"), CALLS)
def test_inside_a_running_trio_loop_the_error_names_the_async_twin(name, twin, call):
    async def main() -> None:
        with pytest.raises(
            ExecutorUsageError, match=f"inside a running trio event loop.*{twin[:12]}"
        ):
            call()

    trio.run(main)


def test_inside_a_loop_callback_outside_any_task_it_is_refused_too():
    seen: list[BaseException] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done = asyncio.Event()

        def callback() -> None:
            try:
                Executor(_chart()).run_sync()
            except BaseException as exc:
                seen.append(exc)
            done.set()

        loop.call_soon(callback)
        await done.wait()

    asyncio.run(main())
    assert isinstance(seen[0], ExecutorUsageError)


def test_replay_has_an_async_twin_and_the_sync_one_refuses_inside_a_loop():
    agent = _agent()
    agent.run_sync("hello")
    recording = agent.snapshot()
    synced = replay(recording)  # sync: starts its own loop
    assert len(synced) == len(recording) and synced.state == recording.state

    async def main() -> None:
        replayed = await replay_async(recording)
        assert [c.stage_path for c in replayed.history()] == [
            c.stage_path for c in recording.history()
        ]
        with pytest.raises(ExecutorUsageError, match=r"replay\(\) was called inside.*replay_async"):
            replay(recording)

    asyncio.run(main())
    trio.run(main)
