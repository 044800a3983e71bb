"""One sync bridge: *_sync entry points start a loop, and refuse inside one (any backend)."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import signal
import threading
import time
import warnings
from typing import Any

import anyio
import pytest
import trio

from tests.backends import current_backend
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


# -- what a run_sync call leaves behind: nothing (as asyncio.run) ----------------------------

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="outside")


def test_a_context_variable_set_inside_does_not_leak_out() -> None:
    def stage(scope: Any) -> None:
        scope["seen"] = _VAR.get()
        _VAR.set("inside")

    chart = flow_chart("A", stage, id="a").build()
    _VAR.set("caller")
    first = Executor(chart).run_sync()
    second = Executor(chart).run_sync()
    assert first.state["seen"] == second.state["seen"] == "caller"
    assert _VAR.get() == "caller"


def _asyncio_only() -> None:
    if current_backend() != "asyncio":
        pytest.skip("the asyncio loop's own clean-up (trio has no stray tasks to leave)")


def test_a_task_the_call_left_running_is_cancelled_before_it_returns() -> None:
    _asyncio_only()
    left: list[asyncio.Task[None]] = []
    stopped: list[str] = []

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            stopped.append("cancelled")

    async def stage(scope: Any) -> None:
        left.append(asyncio.get_running_loop().create_task(forever()))
        await asyncio.sleep(0)
        scope["a"] = 1

    result = Executor(flow_chart("A", stage, id="a").build()).run_sync()
    assert result.status == "done"
    assert left[0].cancelled() and stopped == ["cancelled"]


def test_an_async_generator_left_suspended_is_finalized() -> None:
    _asyncio_only()
    finalized: list[str] = []
    kept: list[Any] = []

    async def numbers() -> Any:
        try:
            yield 1
            yield 2
        finally:
            finalized.append("closed")

    async def stage(scope: Any) -> None:
        gen = numbers()
        kept.append(gen)  # still referenced: only the loop's shutdown can finalize it
        scope["first"] = await gen.__anext__()

    result = Executor(flow_chart("A", stage, id="a").build()).run_sync()
    assert result.state["first"] == 1 and finalized == ["closed"]


def test_ctrl_c_cancels_the_run_and_raises_keyboard_interrupt() -> None:
    _asyncio_only()
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        pytest.skip("needs the main thread with Python's own Ctrl-C handler")
    seen: list[str] = []

    async def stage(scope: Any) -> None:
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    with pytest.raises(KeyboardInterrupt):
        Executor(flow_chart("A", stage, id="a").build()).run_sync()
    assert seen == ["cancelled"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back


# -- the thread's kept loop -------------------------------------------------------------------


def _loop_seen() -> Any:
    seen: list[asyncio.AbstractEventLoop] = []

    async def stage(scope: Any) -> None:
        seen.append(asyncio.get_running_loop())
        scope["a"] = 1

    Executor(flow_chart("A", stage, id="a").build()).run_sync()
    return seen[0]


def test_a_thread_keeps_one_loop_between_calls_and_it_is_closed_when_the_thread_ends() -> None:
    _asyncio_only()
    asyncio.set_event_loop(None)  # no current loop, and none made on demand (any test order)
    assert _loop_seen() is _loop_seen()  # kept: no new loop, self-pipe and executor a call
    with pytest.raises(RuntimeError):
        asyncio.get_event_loop_policy().get_event_loop()  # not made the thread's current loop

    theirs: list[asyncio.AbstractEventLoop] = []
    worker = threading.Thread(target=lambda: theirs.extend([_loop_seen(), _loop_seen()]))
    worker.start()
    worker.join()
    gc.collect()
    assert theirs[0] is theirs[1] and theirs[0] is not _loop_seen()  # one per thread
    assert theirs[0].is_closed()  # the thread ended: its loop with it


def test_a_loop_closed_by_the_caller_is_replaced() -> None:
    _asyncio_only()
    first = _loop_seen()
    first.close()
    second = _loop_seen()
    assert second is not first and not second.is_closed()


def test_a_generator_left_by_one_call_is_finalized_and_the_next_call_is_clean() -> None:
    _asyncio_only()
    kept: list[Any] = []

    async def numbers() -> Any:
        yield 1
        yield 2

    async def stage(scope: Any) -> None:
        gen = numbers()
        kept.append(gen)
        scope["first"] = await gen.__anext__()

    chart = flow_chart("A", stage, id="a").build()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a loop whose generators were shut down warns here
        for _ in range(3):
            assert Executor(chart).run_sync().state["first"] == 1
    assert all(gen.ag_frame is None for gen in kept)  # each one closed


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_a_loop_of_its_own() -> None:
    _asyncio_only()
    parent = _loop_seen()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the inherited loop shares the parent's epoll and self-pipe
        try:
            ok = _loop_seen() is not parent and Executor(_chart()).run_sync().status == "done"
            os.write(write, b"ok" if ok else b"no")
        finally:
            os._exit(0)
    deadline = time.monotonic() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0):  # a child stuck (fork under threads) fails
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child did not finish in 60 s")
        time.sleep(0.01)
    assert os.read(read, 2) == b"ok"
    assert _loop_seen() is parent and not parent.is_closed()  # the parent's is untouched


def test_anyio_state_and_timers_a_call_left_do_not_reach_the_next_call() -> None:
    """The kept loop is handed to the next call as a new one would be: a thread limiter the
    call left exhausted (tokens a lost task never gave back) would hang every later
    ``to_thread``; a timer it left would fire inside another call."""
    _asyncio_only()
    fired: list[str] = []

    async def leave_behind(scope: Any) -> None:
        limiter = anyio.to_thread.current_default_thread_limiter()
        for _ in range(int(limiter.total_tokens)):
            await limiter.acquire_on_behalf_of(object())  # never released
        asyncio.get_running_loop().call_later(0.05, fired.append, "timer")
        scope["left"] = True

    async def use_a_thread(scope: Any) -> None:
        with anyio.fail_after(10):  # a starved limiter would wait here for ever
            scope["from_thread"] = await anyio.to_thread.run_sync(lambda: "ran")
        await asyncio.sleep(0.1)  # past the timer's time

    assert Executor(flow_chart("A", leave_behind, id="a").build()).run_sync().state["left"]
    second = Executor(flow_chart("B", use_a_thread, id="b").build()).run_sync()
    assert second.status == "done" and second.state["from_thread"] == "ran"
    assert fired == []


def test_the_cancelled_class_a_run_catches_is_the_running_backends() -> None:
    from tests.backends import run_async
    from trackway.engine.core._sync import cancelled_exc_class

    async def asked() -> tuple[type[BaseException], type[BaseException]]:
        return cancelled_exc_class(), anyio.get_cancelled_exc_class()

    ours, anyios = run_async(asked)
    assert ours is anyios
    expected = "asyncio" if current_backend() == "asyncio" else "trio"
    assert ours.__module__.split(".")[0] == expected
