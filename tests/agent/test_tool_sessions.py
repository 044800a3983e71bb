"""Tool sessions: keys from the call's facts, teardown when the scope ends (never at a pause),
the idle sweep and eviction, closing by session id, and events that carry only key hashes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from tests.backends import current_backend, run_async
from trackway.agent import Agent, Paused, mock
from trackway.engine import ExecutorUsageError, RunTimeoutError, SqliteStore, TrackwayWarning
from trackway.engine.run._release import Released, StopSignal, driving_with
from trackway.tools import (
    Identity,
    ToolContext,
    ToolSessionError,
    allow,
    ask,
    define_tool,
    tool_session_key,
)
from trackway.tools.define._sessions import ToolSessions, key_hash


def ctx(**kw: Any) -> ToolContext:
    base: dict[str, Any] = {"call_id": "c1", "tool_name": "t", "run_id": "run-1", "iteration": 1}
    return ToolContext(**{**base, **kw})


def calls(*ids: str, name: str = "query", args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": name, "args": args or {"sql": "1"}} for i in ids]}


class Warehouse:
    """A fake backend that counts connects and closes (the session's Start and Stop)."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.closed: list[str] = []
        self.live: dict[str, str] = {}

    def tool(self, scope: str = "run", *, fail_close: bool = False, async_close: bool = False):  # type: ignore[no-untyped-def]
        def execute(args: dict[str, Any], ctx: ToolContext) -> str:
            key = tool_session_key(ctx, scope)
            if key is None:
                raise RuntimeError(f"no {scope} to key the session on")
            if key not in self.live:
                self.opened.append(key)
                self.live[key] = f"conn{len(self.opened)}"
            conn = self.live[key]

            def close() -> None:
                if fail_close:
                    raise ConnectionError("vendor stop failed")
                self.closed.append(self.live.pop(key))

            async def aclose() -> None:
                close()

            ctx.on_teardown(aclose if async_close else close, scope=scope)
            return f"{conn}: {args['sql']}"

        return define_tool(
            name="query",
            description="Run SQL.",
            input_schema={"type": "object", "properties": {"sql": {"type": "string"}}},
            execute=execute,
        )


def agent_with(tool: Any, replies: list[Any], **kw: Any) -> Agent:
    return Agent.create(provider=mock(replies=replies), model="m", **kw).tool(tool).build()


def listen(agent: Agent) -> list[tuple[str, Any]]:
    heard: list[tuple[str, Any]] = []
    agent.on(
        "tools.*",
        lambda e: heard.append((e.name, e.payload)) if "session" in e.name else None,
    )
    return heard


def test_keys_come_from_the_facts_and_are_none_without_them() -> None:
    who = Identity(tenant="acme", principal="ana")
    assert tool_session_key(ctx(identity=who, session_id="s9"), "session") == "t=acme/p=ana/s=s9"
    assert tool_session_key(ctx(identity=who), "run") == "t=acme/p=ana/r=run-1"
    assert tool_session_key(ctx(), "run") == "t=_/p=_/r=run-1"
    assert tool_session_key(ctx(), "call") == "c=c1"
    assert tool_session_key(ctx(), "session") is None  # no session id: never invented
    assert tool_session_key(ctx(run_id=""), "run") is None
    # the same session id under another principal is another session
    other = tool_session_key(ctx(identity=Identity(principal="bo"), session_id="s9"), "session")
    assert other == "t=_/p=bo/s=s9"
    with pytest.raises(ToolSessionError, match="one of session, run, call"):
        tool_session_key(ctx(), "process")


def test_on_teardown_outside_an_agent_is_refused() -> None:
    with pytest.raises(ToolSessionError, match="needs an agent's tool call"):
        ctx().on_teardown(lambda: None)


def test_a_run_scoped_session_is_shared_by_the_run_and_closed_at_its_end() -> None:
    wh = Warehouse()
    agent = agent_with(wh.tool(), [calls("c1"), calls("c2", "c3"), "done"])
    heard = listen(agent)
    assert agent.run_sync("go") == "done"
    assert len(wh.opened) == 1 and wh.closed == ["conn1"] and wh.live == {}
    key = wh.opened[0]
    names = [n for n, _ in heard]
    assert names == [
        "tools.session_started",
        "tools.session_reused",
        "tools.session_reused",
        "tools.session_closed",
    ]
    assert [p.get("calls") for n, p in heard] == [None, 2, 3, 3]
    assert heard[-1][1]["reason"] == "run_end"
    assert all(p["key_hash"] == key_hash(key) for _, p in heard)
    assert key not in repr(heard) and "run" not in heard[0][1]["key_hash"]
    # started and reused are in the run's record; the close came after the run's last commit
    recorded = [e.name for c in agent.snapshot().commits for e in c.events]
    assert recorded.count("tools.session_started") == 1
    assert recorded.count("tools.session_reused") == 2
    assert "tools.session_closed" not in recorded


def test_each_run_gets_its_own_session() -> None:
    wh = Warehouse()
    agent = agent_with(wh.tool(), [calls("c1"), "one", calls("c2"), "two"])
    agent.run_sync("first")
    agent.run_sync("second")
    assert len(wh.opened) == 2 and wh.opened[0] != wh.opened[1]
    assert wh.closed == ["conn1", "conn2"]


def test_call_scope_closes_after_each_call() -> None:
    wh = Warehouse()
    agent = agent_with(wh.tool("call"), [calls("c1", "c2"), "done"])
    heard = listen(agent)
    agent.run_sync("go")
    assert wh.opened == ["c=c1", "c=c2"] and wh.closed == ["conn1", "conn2"]
    closes = [p for n, p in heard if n == "tools.session_closed"]
    assert [p["reason"] for p in closes] == ["call_end", "call_end"]
    recorded = [e.name for c in agent.snapshot().commits for e in c.events]
    assert recorded.count("tools.session_closed") == 2  # inside the tool-calls commit


def test_a_failed_run_closes_its_sessions_and_a_pause_does_not() -> None:
    wh = Warehouse()
    boom = mock(replies=[calls("c1")])  # the second model call finds no reply: the run fails
    agent = Agent.create(provider=boom, model="m").tool(wh.tool()).build()
    heard = listen(agent)
    with pytest.raises(Exception):  # noqa: B017 - the mock's own exhaustion error
        agent.run_sync("go")
    assert wh.closed == ["conn1"]
    assert [p["reason"] for n, p in heard if n == "tools.session_closed"] == ["run_error"]

    wh2 = Warehouse()
    paused_agent = (
        Agent.create(provider=mock(replies=[calls("c1"), calls("c2"), "done"]), model="m")
        .tool(wh2.tool())
        .gate(lambda call, ctx: ask("Again?") if call["id"] == "c2" else allow())
        .build()
    )
    out = paused_agent.run_sync("go")
    assert isinstance(out, Paused)
    assert wh2.opened and wh2.closed == []  # the resume needs what the session holds
    assert paused_agent.resume_sync(out.checkpoint, "approve") == "done"
    assert len(wh2.opened) == 1 and wh2.closed == ["conn1"]  # same run, same session


def test_session_scope_outlives_runs_until_the_host_closes_it() -> None:
    wh = Warehouse()
    agent = agent_with(wh.tool("session"), [calls("c1"), "one", calls("c2"), "two"])
    agent.run_sync("first", session_id="s1", identity={"principal": "ana"})
    agent.run_sync("second", session_id="s1", identity={"principal": "ana"})
    assert wh.opened == ["t=_/p=ana/s=s1"] and wh.closed == []
    heard = listen(agent)
    assert agent.close_tool_sessions_sync(session_id="other") == 0
    assert agent.close_tool_sessions_sync(session_id="s1") == 1
    assert wh.closed == ["conn1"]
    assert heard == [
        (
            "tools.session_closed",
            {
                "key_hash": key_hash("t=_/p=ana/s=s1"),
                "scope": "session",
                "tool": "query",
                "reason": "closed",
                "calls": 2,
            },
        )
    ]


def test_a_session_scope_without_a_session_id_is_refused_to_the_model() -> None:
    wh = Warehouse()

    def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        ctx.on_teardown(lambda: None, scope="session")
        return "held"

    t = define_tool(name="query", description="d", input_schema={"type": "object"}, execute=execute)
    agent = agent_with(t, [calls("c1"), "done"])
    agent.run_sync("go")
    result = agent.snapshot().state["history"][2]["content"]
    assert "needs a session_id" in result and "ToolSessionError" in result
    assert wh.opened == []


def test_a_failing_teardown_is_reported_never_raised() -> None:
    wh = Warehouse()
    agent = agent_with(wh.tool(fail_close=True), [calls("c1"), "done"])
    heard = listen(agent)
    assert agent.run_sync("go") == "done"
    failed = [p for n, p in heard if n == "tools.session_close_failed"]
    assert failed == [
        {
            "key_hash": key_hash(wh.opened[0]),
            "scope": "run",
            "tool": "query",
            "reason": "run_end",
            "calls": 1,
            "error_class": "ConnectionError",
        }
    ]


def test_async_teardowns_are_awaited() -> None:
    wh = Warehouse()
    agent = agent_with(wh.tool("session", async_close=True), [calls("c1"), "done"])
    agent.run_sync("go", session_id="s1")
    assert wh.closed == []
    agent.shutdown()  # takes the rest
    assert wh.closed == ["conn1"]


def test_shutdown_inside_a_loop_names_the_async_twin() -> None:
    wh = Warehouse()
    agent = agent_with(wh.tool("session"), [calls("c1"), "done"])

    async def main() -> None:
        await agent.run("go", session_id="s1")
        with pytest.raises(ExecutorUsageError, match="await agent.close_tool_sessions"):
            agent.shutdown()
        assert await agent.close_tool_sessions() == 1
        agent.shutdown()  # nothing live: fine in a loop

    run_async(main)
    assert wh.closed == ["conn1"]


def test_idle_sessions_close_on_the_next_call_and_the_coldest_is_evicted() -> None:
    now = [0.0]
    sessions = ToolSessions(idle_seconds=60, max_live=2, clock=lambda: now[0])
    emitted: list[tuple[str, dict[str, Any]]] = []

    def emit(name: str, payload: dict[str, Any]) -> None:
        emitted.append((name, payload))

    closed: list[str] = []

    def opener(name: str) -> Callable[[], None]:
        return lambda: closed.append(name)

    for i, sid in enumerate(["a", "b", "c"]):
        now[0] = float(i)
        sessions.register(ctx(session_id=sid, call_id=f"c{i}"), opener(sid), "session", None, emit)
    assert sessions.due() == [("t=_/p=_/s=a", "evicted")]  # three live, two allowed
    now[0] = 100.0
    assert {reason for _, reason in sessions.due()} == {"idle"}


def test_the_sweep_runs_inside_the_next_call() -> None:
    now = [0.0]
    wh = Warehouse()
    agent = agent_with(wh.tool("session"), [calls("c1"), "one", calls("c2"), "two"])
    agent._cfg.sessions.clock = lambda: now[0]
    heard = listen(agent)
    agent.run_sync("first", session_id="s1")
    now[0] = 10_000.0  # idle far past the default
    agent.run_sync("second", session_id="s2")
    reasons = [p["reason"] for n, p in heard if n == "tools.session_closed"]
    assert reasons == ["idle"] and wh.closed == ["conn1"]
    recorded = [e.name for c in agent.snapshot().commits for e in c.events]
    assert "tools.session_closed" in recorded  # swept inside the second run's call


def test_a_listener_that_raises_after_the_run_is_a_warning() -> None:
    wh = Warehouse()
    agent = agent_with(wh.tool(), [calls("c1"), "done"])

    def bad(event: Any) -> None:
        raise RuntimeError("listener broke")

    agent.on("tools.session_closed", bad)
    with pytest.warns(TrackwayWarning, match="listener broke"):
        assert agent.run_sync("go") == "done"
    assert wh.closed == ["conn1"]


# -- every way a run ends closes its sessions (cancelled, left early, released, timed out) ----


class Sandbox:
    """A real resource per run: a child process started by the first call, and a cleanup that
    terminates it, waits for it (an await: a cancelled caller must not cut it short) and
    writes a marker file. The tool then holds the run open until the run is stopped."""

    def __init__(self, marker: Path, *, hold: bool = True) -> None:
        self.marker = marker
        self.hold = hold
        self.procs: list[Process] = []
        self.started: anyio.Event | None = None  # made inside the test's event loop
        self.after_register: Callable[[], None] = lambda: None

    def tool(self) -> Any:
        async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
            proc = await anyio.open_process(
                [sys.executable, "-c", "import time; time.sleep(60)"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self.procs.append(proc)

            async def close() -> None:
                proc.terminate()
                await proc.wait()  # cancelled at once unless the cleanup is shielded
                await proc.aclose()
                self.marker.write_text(f"closed {proc.returncode}")

            ctx.on_teardown(close, scope="run")
            self.after_register()
            if self.started is not None:
                self.started.set()
            if self.hold:
                await anyio.sleep_forever()
            await anyio.sleep(0.05)  # longer than the walker goes between looks at a stop
            return "ran"

        return define_tool(
            name="sandbox", description="Run in a sandbox.", input_schema={}, execute=execute
        )

    def kill_left(self) -> None:
        """The test's own cleanup: no child outlives a failing test."""
        for proc in self.procs:
            if proc.returncode is None:
                proc.kill()

    def assert_closed(self) -> None:
        (proc,) = self.procs
        assert proc.returncode is not None, "the sandbox process outlived the run"
        assert self.marker.read_text() == f"closed {proc.returncode}"


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Sandbox]:
    sandbox = Sandbox(tmp_path / "closed.txt")
    yield sandbox
    sandbox.kill_left()


def sandbox_agent(box: Sandbox, **kw: Any) -> Agent:
    replies = [{"tool_calls": [{"id": "c1", "name": "sandbox", "args": {}}]}, "done"]
    return agent_with(box.tool(), replies, **kw)


def closed_reasons(heard: list[tuple[str, Any]]) -> list[str]:
    return [p["reason"] for n, p in heard if n == "tools.session_closed"]


@pytest.mark.timeout(30)
def test_a_run_cancelled_by_its_caller_closes_its_sessions(box: Sandbox, tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    agent = sandbox_agent(box, store=store)
    heard = listen(agent)

    async def main() -> None:
        box.started = anyio.Event()
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()

            async def caller() -> None:
                with scope:
                    await agent.run("go")

            tg.start_soon(caller)
            await box.started.wait()
            scope.cancel()  # the caller gives up on the run

    run_async(main)
    box.assert_closed()
    assert closed_reasons(heard) == ["run_cancelled"]
    assert len(agent._cfg.sessions) == 0 and not agent._running
    # What is recorded: the store keeps the commits up to the cancelled stage and marks the
    # run failed (Cancelled); the close came after its last commit, so listeners heard it
    # and the log does not hold it.
    (run,) = store.list_runs()
    stored = store.load(run.run_id)
    assert stored.status == "failed" and stored.error is not None
    assert stored.error.type == "Cancelled"
    recorded = [e.name for c in stored.commits for e in c.events]
    assert "tools.session_started" in recorded and "tools.session_closed" not in recorded
    store.close()


@pytest.mark.timeout(30)
def test_a_break_out_of_agent_stream_closes_the_runs_sessions(box: Sandbox) -> None:
    agent = sandbox_agent(box)
    heard = listen(agent)

    async def main() -> None:
        async with agent.stream("go") as events:
            async for event in events:
                if event.name == "tools.session_started":
                    break
        box.assert_closed()  # closed by the time the block is left

    run_async(main)
    assert closed_reasons(heard) == ["run_cancelled"]


@pytest.mark.timeout(30)
def test_an_async_generator_over_a_stream_closed_early_closes_the_sessions(box: Sandbox) -> None:
    agent = sandbox_agent(box)
    heard = listen(agent)

    async def names() -> AsyncIterator[str]:
        async with agent.stream("go") as events:
            async for event in events:
                yield event.name

    async def main() -> None:
        gen = names()
        async for name in gen:
            if name == "tools.session_started":
                break
        await gen.aclose()  # what a web framework does when its client goes away
        box.assert_closed()

    run_async(main)
    assert closed_reasons(heard) == ["run_cancelled"]


@pytest.mark.timeout(30)
def test_an_exception_in_the_stream_block_closes_the_sessions(box: Sandbox) -> None:
    agent = sandbox_agent(box)
    heard = listen(agent)

    async def main() -> None:
        async with agent.stream("go") as events:
            async for event in events:
                if event.name == "tools.session_started":
                    raise LookupError("the reader failed")

    with pytest.raises(LookupError, match="the reader failed"):
        run_async(main)
    box.assert_closed()
    assert closed_reasons(heard) == ["run_cancelled"]


@pytest.mark.timeout(30)
def test_asyncio_task_cancel_around_run_closes_the_sessions(box: Sandbox) -> None:
    if current_backend() != "asyncio":
        pytest.skip("asyncio's own cancellation (task.cancel); trio has only cancel scopes")
    import asyncio

    agent = sandbox_agent(box)
    heard = listen(agent)

    async def main() -> None:
        box.started = anyio.Event()
        task = asyncio.ensure_future(agent.run("go"))
        await box.started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run_async(main)
    box.assert_closed()
    assert closed_reasons(heard) == ["run_cancelled"]


@pytest.mark.timeout(30)
def test_a_timed_out_run_still_closes_its_sessions(box: Sandbox) -> None:
    agent = sandbox_agent(box)
    heard = listen(agent)
    with pytest.raises(RunTimeoutError):
        agent.run_sync("go", timeout=2.0)
    box.assert_closed()
    assert closed_reasons(heard) == ["run_error"]


@pytest.mark.timeout(30)
def test_a_run_its_driver_lets_go_closes_its_sessions(box: Sandbox) -> None:
    # A worker that stops (or lost the lease) releases the run between stages: another
    # worker continues it, with sessions of its own; this process's must not leak.
    box.hold = False
    signal = StopSignal()
    box.after_register = lambda: signal.request("the worker is stopping")
    agent = sandbox_agent(box)
    heard = listen(agent)

    async def main() -> None:
        with driving_with(signal), pytest.raises(Released):
            await agent.run("go")

    run_async(main)
    box.assert_closed()
    assert closed_reasons(heard) == ["run_released"]
