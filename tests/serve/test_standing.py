"""The standing agent: conversations per session over time, closes, idle sweep, shutdown."""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.backends import BACKENDS, run_async, use_backend
from trackway.agent import Agent, Conversation, LLMRequest, Paused, PendingQuestionError, mock
from trackway.engine import SqliteStore
from trackway.serve import SessionClosedError, SessionOwnerError, StandingAgent
from trackway.tools import Identity, ToolContext, define_tool

ANA = Identity(tenant="t1", principal="ana")
BOB = Identity(tenant="t2", principal="ana")  # same principal name, another tenant


@pytest.fixture(params=BACKENDS, autouse=True)
def async_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from use_backend(request.param)


def said(request: LLMRequest) -> list[str]:
    return [str(m.content) for m in request.messages if m.role == "user"]


def echo(request: LLMRequest) -> str:
    """Answers with every user message of the conversation so far."""
    return " | ".join(said(request))


def _agent(tmp_path: Path, respond: Any = echo, tools: tuple[Any, ...] = ()) -> Agent:
    store = SqliteStore(tmp_path / "runs.db")
    return Agent.create(provider=mock(respond=respond), model="m", store=store).tools(tools).build()


def test_each_session_continues_its_own_conversation_and_every_turn_is_stored(
    tmp_path: Path,
) -> None:
    agent = _agent(tmp_path)
    host = StandingAgent(agent)

    async def main() -> list[Any]:
        return [
            await host.send("s1", "one", identity=ANA),
            await host.send("s2", "other", identity=ANA),
            await host.send("s1", "two", identity=ANA),
        ]

    assert run_async(main) == ["one", "other", "one | two"]
    conversation = host.conversation("s1")
    assert conversation is not None
    assert [m["content"] for m in conversation.history] == ["one", "one", "two", "one | two"]
    store = SqliteStore(tmp_path / "runs.db")  # another connection on the same file
    assert len(store.list_runs()) == 3
    assert sorted(host.session_ids) == ["s1", "s2"]


def test_turns_of_one_session_wait_for_each_other_and_sessions_run_at_once(
    tmp_path: Path,
) -> None:
    running: dict[str, int] = {}
    most: dict[str, int] = {}
    overall = {"now": 0, "most": 0}

    async def hold(args: dict[str, Any], ctx: ToolContext) -> str:
        sid = str(ctx.session_id)
        running[sid] = running.get(sid, 0) + 1
        overall["now"] += 1
        most[sid] = max(most.get(sid, 0), running[sid])
        overall["most"] = max(overall["most"], overall["now"])
        await anyio.sleep(0.05)
        running[sid] -= 1
        overall["now"] -= 1
        return "held"

    tool = define_tool(name="hold", description="H.", input_schema={"type": "object"}, execute=hold)

    def respond(request: LLMRequest) -> Any:
        if request.messages[-1].role == "user":
            return {"tool_calls": [{"id": f"h{len(request.messages)}", "name": "hold", "args": {}}]}
        return "ok " + said(request)[-1]

    host = StandingAgent(_agent(tmp_path, respond, (tool,)))

    async def main() -> list[str]:
        answers: list[str] = []

        async def send(sid: str, text: str) -> None:
            answers.append(str(await host.send(sid, text, identity=ANA)))

        async with anyio.create_task_group() as group:
            for sid, text in [("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")]:
                group.start_soon(send, sid, text)
        return answers

    assert sorted(run_async(main)) == ["ok a1", "ok a2", "ok b1", "ok b2"]
    assert most == {"a": 1, "b": 1}  # one turn at a time per session
    assert overall["most"] == 2  # the two sessions ran at once
    a = host.conversation("a")
    assert a is not None and [m["role"] for m in a.history].count("user") == 2


def test_close_fires_the_hooks_and_closes_the_sessions_tool_sessions(tmp_path: Path) -> None:
    closed_tools: list[str] = []
    heard: list[tuple[str, str]] = []

    def query(args: dict[str, Any], ctx: ToolContext) -> str:
        ctx.on_teardown(lambda: closed_tools.append(str(ctx.session_id)), scope="session")
        return "rows"

    tool = define_tool(
        name="query", description="Q.", input_schema={"type": "object"}, execute=query
    )

    def respond(request: LLMRequest) -> Any:
        if request.messages[-1].role == "user":
            return {
                "tool_calls": [{"id": f"q{len(request.messages)}", "name": "query", "args": {}}]
            }
        return "done"

    async def async_hook(session_id: str, reason: str) -> None:
        heard.append(("async", f"{session_id}:{reason}"))

    def failing_hook(session_id: str, reason: str) -> None:
        raise RuntimeError("hook broke")

    host = StandingAgent(
        _agent(tmp_path, respond, (tool,)),
        on_close=[lambda s, r: heard.append(("sync", f"{s}:{r}")), failing_hook, async_hook],
    )

    async def main() -> None:
        await host.send("s1", "go", identity=ANA)
        await host.send("s2", "go", identity=ANA)
        assert closed_tools == []  # a session's tools outlive its turns
        with pytest.raises(SessionOwnerError):
            await host.close("s1", "logout", identity=BOB)
        assert await host.close("s1", "logout", identity=ANA)
        assert not await host.close("s1", "logout", identity=ANA)  # once

    run_async(main)
    assert heard == [("sync", "s1:logout"), ("async", "s1:logout")]
    assert [(s, h.rsplit(".", 1)[-1]) for s, h, _ in host.hook_failures] == [("s1", "failing_hook")]
    assert closed_tools == ["s1"]  # only that session's
    assert host.session_ids == ["s2"] and host.closed == [("s1", "logout")]


def test_idle_sessions_close_on_the_lazy_sweep(tmp_path: Path) -> None:
    now = [0.0]
    reasons: list[tuple[str, str]] = []
    host = StandingAgent(
        _agent(tmp_path),
        idle_seconds=60,
        on_close=lambda s, r: reasons.append((s, r)),
        clock=lambda: now[0],
    )

    async def main() -> None:
        await host.send("old", "hi", identity=ANA)
        now[0] = 30.0
        await host.send("new", "hi", identity=ANA)
        now[0] = 61.0
        assert reasons == []  # no timer: nothing happens until the next sweep
        assert await host.sweep() == ["old"]
        now[0] = 200.0
        await host.send("third", "hi", identity=ANA)  # each send sweeps first

    run_async(main)
    assert reasons == [("old", "idle"), ("new", "idle")]
    assert host.session_ids == ["third"]


def test_shutdown_flushes_the_turns_in_flight_then_closes_every_session(tmp_path: Path) -> None:
    started: list[int] = []
    both: list[anyio.Event] = []  # made in the test's event loop

    async def slow(request: LLMRequest) -> str:
        started.append(1)
        if len(started) == 2:
            both[0].set()
        await anyio.sleep(0.05)
        return "slow answer"

    class Slow:
        """A provider that takes its time (the mock's respond is sync)."""

        name = "slow"

        async def complete(self, request: LLMRequest) -> Any:
            from trackway.agent import LLMResponse

            return LLMResponse(content=await slow(request))

    agent = Agent.create(
        provider=Slow(), model="m", store=SqliteStore(tmp_path / "runs.db")
    ).build()  # type: ignore[arg-type]
    closed: list[tuple[str, str]] = []
    host = StandingAgent(agent, on_close=lambda s, r: closed.append((s, r)))

    async def main() -> list[str]:
        answers: list[str] = []
        both.append(anyio.Event())

        async def send(sid: str) -> None:
            answers.append(str(await host.send(sid, "hi", identity=ANA)))

        async with anyio.create_task_group() as group:
            group.start_soon(send, "a")
            group.start_soon(send, "b")
            await both[0].wait()
            await host.shutdown()  # waits for both turns
            assert sorted(answers) == ["slow answer", "slow answer"]
        with pytest.raises(SessionClosedError):
            await host.send("c", "hi", identity=ANA)
        await host.wait_closed()
        return answers

    run_async(main)
    assert sorted(closed) == [("a", "shutdown"), ("b", "shutdown")]
    assert host.session_ids == []


def test_shutdown_on_a_signal(tmp_path: Path) -> None:
    closed: list[tuple[str, str]] = []
    host = StandingAgent(
        _agent(tmp_path),
        on_close=lambda s, r: closed.append((s, r)),
        shutdown_on=[signal.SIGUSR1],
    )

    async def main() -> None:
        async with host:
            await host.send("s1", "hi", identity=ANA)
            await anyio.sleep(0.01)  # the receiver is listening
            os.kill(os.getpid(), signal.SIGUSR1)
            with anyio.fail_after(5):
                await host.wait_closed()
            assert closed == [("s1", "shutdown")]

    run_async(main)


def test_a_failed_turn_loses_nothing_and_leaves_the_session_usable(tmp_path: Path) -> None:
    failing = {"on": False}

    def respond(request: LLMRequest) -> str:
        if failing["on"]:
            raise RuntimeError("model down")
        return echo(request)

    agent = _agent(tmp_path, respond)
    host = StandingAgent(agent)

    async def main() -> None:
        assert await host.send("s1", "one", identity=ANA) == "one"
        before = host.conversation("s1")
        failing["on"] = True
        with pytest.raises(Exception, match="model down"):
            await host.send("s1", "two", identity=ANA)
        assert host.conversation("s1") == before  # the failed turn left nothing behind
        failing["on"] = False
        assert await host.send("s1", "three", identity=ANA) == "one | three"

    run_async(main)
    runs = SqliteStore(tmp_path / "runs.db").list_runs()
    assert sorted(r.status for r in runs) == ["done", "done", "failed"]  # all three kept


def test_another_identity_never_continues_or_answers_a_session(tmp_path: Path) -> None:
    host = StandingAgent(_agent(tmp_path))

    async def main() -> None:
        await host.send("s1", "secret", identity=ANA)
        with pytest.raises(SessionOwnerError, match="another identity"):
            await host.send("s1", "what was said?", identity=BOB)
        with pytest.raises(SessionOwnerError):
            await host.send("s1", "what was said?")  # no identity is not the owner either
        with pytest.raises(SessionOwnerError):
            await host.resume("s1", "yes", identity=BOB)

    run_async(main)
    conversation = host.conversation("s1")
    assert conversation is not None and len(conversation.history) == 2


def test_a_paused_turn_is_answered_in_its_session_then_continued(tmp_path: Path) -> None:
    def pay(args: dict[str, Any], ctx: ToolContext) -> str:
        return "paid"

    tool = define_tool(name="pay", description="P.", input_schema={"type": "object"}, execute=pay)

    def respond(request: LLMRequest) -> Any:
        if request.messages[-1].role == "user":
            return {"tool_calls": [{"id": f"p{len(request.messages)}", "name": "pay", "args": {}}]}
        return "done " + said(request)[-1]

    agent = (
        Agent.create(
            provider=mock(respond=respond), model="m", store=SqliteStore(tmp_path / "r.db")
        )
        .tool(tool)
        .check_in(["pay"])
        .build()
    )
    host = StandingAgent(agent)

    async def main() -> None:
        paused = await host.send("s1", "pay it", identity=ANA)
        assert isinstance(paused, Paused)
        with pytest.raises(PendingQuestionError):
            await host.send("s1", "hello?", identity=ANA)
        assert await host.resume("s1", "approve", identity=ANA) == "done pay it"
        assert isinstance(await host.send("s1", "and again", identity=ANA), Paused)
        assert await host.resume("s1", "approve", identity=ANA) == "done and again"
        conversation = host.conversation("s1")
        assert conversation is not None
        assert [m["content"] for m in conversation.history if m["role"] == "user"] == [
            "pay it",
            "and again",
        ]

    run_async(main)


class Kept:
    """A session lifecycle in a dict: what survives a restart of the host."""

    def __init__(self) -> None:
        self.docs: dict[str, tuple[str | None, bytes]] = {}

    def hydrate(self, session_id: str) -> tuple[Identity | None, Conversation] | None:
        if session_id not in self.docs:
            return None
        owner, doc = self.docs[session_id]
        who = None if owner is None else Identity.model_validate_json(owner)
        return who, Conversation.from_json(doc)

    def persist(self, session_id: str, owner: Identity | None, conversation: Conversation) -> None:
        who = None if owner is None else owner.model_dump_json()
        self.docs[session_id] = (who, conversation.to_json())


def test_a_session_lifecycle_carries_a_conversation_and_its_owner_across_a_restart(
    tmp_path: Path,
) -> None:
    kept = Kept()
    first = StandingAgent(_agent(tmp_path), sessions=kept)
    assert first.send_sync("s1", "one", identity=ANA) == "one"
    first.shutdown_sync()
    again = StandingAgent(_agent(tmp_path), sessions=kept)  # a new process, the same store
    with pytest.raises(SessionOwnerError):  # taken up again: still not another identity's
        again.send_sync("s1", "what was said?", identity=BOB)
    assert again.session_ids == []
    assert again.send_sync("s1", "two", identity=ANA) == "one | two"


def test_past_max_sessions_the_coldest_idle_session_is_evicted(tmp_path: Path) -> None:
    now = [0.0]
    closed: list[tuple[str, str]] = []
    host = StandingAgent(
        _agent(tmp_path),
        max_sessions=2,
        on_close=lambda s, r: closed.append((s, r)),
        clock=lambda: now[0],
    )
    for t, sid in enumerate(["a", "b", "a", "c"]):
        now[0] = float(t)
        host.send_sync(sid, "hi", identity=ANA)
    assert closed == [("b", "evicted")]  # "a" was used after "b"
    assert sorted(host.session_ids) == ["a", "c"]
    assert host.close_sync("a", "done", identity=ANA) and closed[-1] == ("a", "done")


def test_a_turn_waiting_on_a_session_closed_meanwhile_is_refused(tmp_path: Path) -> None:
    both: list[anyio.Event] = []

    async def slow(request: LLMRequest) -> Any:
        from trackway.agent import LLMResponse

        both[0].set()
        await anyio.sleep(0.05)
        return LLMResponse(content="first")

    class Slow:
        name = "slow"

        async def complete(self, request: LLMRequest) -> Any:
            return await slow(request)

    host = StandingAgent(Agent.create(provider=Slow(), model="m").build())  # type: ignore[arg-type]

    async def main() -> list[Any]:
        both.append(anyio.Event())
        outcomes: list[Any] = []

        async def send(text: str) -> None:
            try:
                outcomes.append(await host.send("s1", text, identity=ANA))
            except SessionClosedError as exc:
                outcomes.append(type(exc).__name__)

        async with anyio.create_task_group() as group:
            group.start_soon(send, "one")
            await both[0].wait()  # the first turn is running
            group.start_soon(functools.partial(host.close, "s1", "logout", identity=ANA))
            await anyio.sleep(0.001)
            group.start_soon(send, "two")  # waits behind the close
        return outcomes

    assert run_async(main) == ["first", "SessionClosedError"]
    assert host.closed == [("s1", "logout")] and host.session_ids == []


def test_agent_turn_hands_back_the_conversation_each_turn_leaves(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    first = agent.turn_sync("one", identity=ANA)
    other = agent.turn_sync("elsewhere")  # the agent's last run is now another conversation
    assert first.outcome == "one" and first.conversation is not None
    assert first.conversation != agent.checkpoint()
    assert other.conversation == agent.checkpoint()
    again = agent.turn_sync("two", continue_from=first.conversation, identity=ANA)
    assert again.outcome == "one | two" and again.run_id not in (first.run_id, other.run_id)
