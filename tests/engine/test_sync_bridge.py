"""One sync bridge: *_sync entry points start a loop, and refuse inside one (any backend)."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import threading
import warnings
from typing import Any

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


# -- the reused loop ------------------------------------------------------------------------

from trackway.engine.core import _sync  # noqa: E402

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


def _asyncio_only() -> None:
    if _sync._backend != "asyncio":
        pytest.skip("the loop is reused under asyncio only (trio: a new run per call)")


async def _loop_id() -> int:
    return id(asyncio.get_running_loop())


def test_each_call_reuses_the_threads_loop_as_if_it_were_fresh():
    _asyncio_only()
    first = _sync.run_sync(_loop_id, name="t", twin="t")
    assert _sync.run_sync(_loop_id, name="t", twin="t") == first

    async def mark() -> str:
        before = MARK.get()
        MARK.set("set inside")
        return before

    MARK.set("caller's")
    assert _sync.run_sync(mark, name="t", twin="t") == "caller's"
    assert _sync.run_sync(mark, name="t", twin="t") == "caller's"  # nothing leaked back
    assert MARK.get() == "caller's"


def test_a_task_a_call_left_running_is_cancelled_before_it_returns():
    _asyncio_only()
    ended: list[str] = []

    async def leave_one() -> None:
        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                ended.append("cancelled")
                raise

        asyncio.get_running_loop().create_task(forever())
        await asyncio.sleep(0)

    _sync.run_sync(leave_one, name="t", twin="t")
    assert ended == ["cancelled"]
    assert _sync.run_sync(_loop_id, name="t", twin="t")  # and the loop goes on


def test_every_thread_has_its_own_loop_closed_when_the_thread_ends():
    _asyncio_only()
    seen: list[tuple[int, Any]] = []

    def in_thread() -> None:
        seen.append((_sync.run_sync(_loop_id, name="t", twin="t"), _sync._THREAD.held))

    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)  # an unclosed loop would warn
        worker = threading.Thread(target=in_thread)
        worker.start()
        worker.join()
        ((loop_id, held),) = seen
        seen.clear()
        assert loop_id != _sync.run_sync(_loop_id, name="t", twin="t")
        loop = held.runner.get_loop()
        del held
        gc.collect()
        assert loop.is_closed()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_makes_its_own_loop():
    _asyncio_only()
    parent = _sync.run_sync(_loop_id, name="t", twin="t")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a loop of its own, the parent's left alone
        try:
            child = _sync.run_sync(_loop_id, name="t", twin="t")
            os.write(write, b"new" if child != parent else b"same")
        finally:
            os._exit(0)
    os.close(write)
    assert os.read(read, 8) == b"new"
    os.waitpid(pid, 0)
    assert _sync.run_sync(_loop_id, name="t", twin="t") == parent


def test_a_loop_dropped_inside_another_running_loop_is_closed_without_running():
    """A held loop collected by a garbage collection that runs inside another event loop
    (another thread's, found dead in a cycle) is closed there, never run: no coroutine is
    left unawaited, nothing warns."""
    _asyncio_only()
    seen: list[Any] = []
    worker = threading.Thread(
        target=lambda: (
            _sync.run_sync(_loop_id, name="t", twin="t"),
            seen.append(_sync._THREAD.held),
        )
    )
    worker.start()
    worker.join()
    (held,) = seen
    seen.clear()
    loop = held.runner.get_loop()

    async def drop_it_here() -> None:
        nonlocal held
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            held = None
            gc.collect()

    asyncio.run(drop_it_here())
    assert loop.is_closed()
