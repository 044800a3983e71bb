"""The agent runtime: stored and identified runs, redaction through the engine's funnel,
what a tool knows about its call, and the runtime hooks (attach, emit, listeners, shutdown)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from tests.backends import run_async
from trackway.agent import (
    Agent,
    AgentBuildError,
    AgentNotRunError,
    InvalidRunInputError,
    NoConversationError,
    RedactedRecordError,
    conversation_redaction,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
)
from trackway.cli import main as cli
from trackway.engine import SqliteStore
from trackway.recorders import narrative
from trackway.tools import Identity, ToolContext, define_tool

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def tool_seeing(contexts: list[ToolContext], result: str = "ok") -> Any:
    def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        contexts.append(ctx)
        return result

    return define_tool(name="lookup", description="Look up.", input_schema=SCHEMA, execute=execute)


def one_call(q: str = "x") -> dict[str, Any]:
    return {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": q}}]}


# -- stored, identified runs -------------------------------------------------------------------


def test_an_agent_run_is_a_stored_run_with_its_identity_and_session(tmp_path: Path, capsys) -> None:
    db = tmp_path / "runs.db"
    seen: list[ToolContext] = []
    agent = (
        Agent.create(provider=mock(replies=[one_call(), "done"]), model="m", store=SqliteStore(db))
        .tool(tool_seeing(seen))
        .build()
    )
    who = Identity(tenant="acme", principal="ada")
    assert agent.run_sync("go", identity=who, session_id="s-1") == "done"
    run_id = agent.snapshot().run_id
    (ctx,) = seen
    assert ctx.identity == who and ctx.session_id == "s-1" and ctx.iteration == 1
    assert ctx.run_id == run_id and isinstance(ctx.cancel_scope, anyio.CancelScope)
    seed = agent.snapshot().history()[0]
    assert {op.key: op.value for op in seed.ops}["identity"] == {
        "tenant": "acme",
        "principal": "ada",
    }
    store = SqliteStore(db, read_only=True)
    try:
        (info,) = store.list_runs()
        stored = store.load(run_id)
    finally:
        store.close()
    assert info.run_id == run_id and info.status == "done"
    assert stored.state["identity"] == {"tenant": "acme", "principal": "ada"}
    assert stored.state["session_id"] == "s-1"
    assert cli(["runs", "--db", str(db)]) == 0
    assert run_id in capsys.readouterr().out
    assert cli(["show", run_id, "--db", str(db)]) == 0
    assert "call-llm" in capsys.readouterr().out


def test_no_identity_is_invented() -> None:
    seen: list[ToolContext] = []
    agent = (
        Agent.create(provider=mock(replies=[one_call(), "done"]), model="m")
        .tool(tool_seeing(seen))
        .build()
    )
    agent.run_sync("go")
    assert seen[0].identity is None and seen[0].session_id is None
    assert "identity" not in agent.snapshot().state
    assert "session_id" not in agent.snapshot().state


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"identity": {"tenant": 3}}, "identity: tenant: Input should be a valid string"),
        ({"identity": {"user": "x"}}, "an identity has tenant, principal and conversation_id"),
        ({"identity": "vip"}, "pass an Identity"),
        ({"session_id": ""}, "session_id='': use a non-empty str"),
    ],
)
def test_a_bad_identity_or_session_is_refused_before_the_run(
    kwargs: dict[str, Any], message: str
) -> None:
    agent = Agent.create(provider=mock(replies=["x"]), model="m").build()
    with pytest.raises(InvalidRunInputError, match=message):
        agent.run_sync("go", **kwargs)
    with pytest.raises(AgentNotRunError):
        agent.snapshot()


def test_configure_gets_the_run_id_and_the_defaults_and_one_configure_only() -> None:
    seen: list[dict[str, Any]] = []

    def choose(ctx: dict[str, Any]) -> dict[str, Any]:
        seen.append(ctx)
        return {"model": "big"}

    provider = mock(replies=["x"])
    agent = Agent.create(provider=provider, model="small", top_p=0.5).configure(choose).build()
    agent.run_sync("go")
    (ctx,) = seen
    assert ctx["run_id"] == agent.snapshot().run_id
    assert ctx["defaults"] == {"model": "small", "instructions": None, "top_p": 0.5}
    assert provider.requests[0].model == "big"
    assert agent.snapshot().state["settings"]["model"] == "big"  # recorded as resolved

    def other(ctx: dict[str, Any]) -> dict[str, Any]:
        return {}

    twice = Agent.create(provider=mock(replies=["x"]), model="m").configure(choose)
    with pytest.raises(
        AgentBuildError, match="configure\\(\\) was called twice .*choose and .*other"
    ):
        twice.configure(other).build()


def test_follow_up_before_any_run_is_refused() -> None:
    agent = Agent.create(provider=mock(replies=["x"]), model="m").build()
    with pytest.raises(NoConversationError, match="no conversation to follow up"):
        run_async(agent.follow_up, "and then?")


def test_a_tool_can_cancel_its_own_call() -> None:
    async def slow(args: dict[str, Any], ctx: ToolContext) -> str:
        assert ctx.cancel_scope is not None
        ctx.cancel_scope.cancel()
        await anyio.sleep(10)
        return "never"

    tool = define_tool(name="lookup", description="Slow.", input_schema=SCHEMA, execute=slow)
    agent = Agent.create(provider=mock(replies=[one_call(), "done"]), model="m").tool(tool).build()
    assert agent.run_sync("go") == "done"
    result = agent.snapshot().state["history"][2]["content"]
    assert result == "Error: lookup was cancelled before it returned a result."


# -- redaction: one funnel ---------------------------------------------------------------------

SECRET_MESSAGE = "sk-live-MSG-4f9a2c11"
SECRET_ARG = "sk-live-ARG-77b0e3aa"
SECRET_RESULT = "sk-live-RES-0c51d9ee"


def test_a_planted_secret_is_absent_from_every_retained_surface(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    heard: list[Any] = []
    story = narrative()
    seen: list[ToolContext] = []
    agent = (
        Agent.create(
            provider=mock(replies=[one_call(SECRET_ARG), f"the answer uses {SECRET_RESULT}"]),
            model="m",
            store=SqliteStore(db),
            redact=conversation_redaction(),
        )
        .tool(tool_seeing(seen, result=f"value={SECRET_RESULT}"))
        .recorder(story)
        .build()
    )
    agent.on("*", lambda event: heard.append(event.payload))
    answer = agent.run_sync(f"my key is {SECRET_MESSAGE}")
    assert SECRET_RESULT in answer  # the run itself saw real values
    assert seen[0].call_id == "c1"
    recording = save_recording(agent, tmp_path / "rec.json").read_bytes()
    surfaces = {
        "store": b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*")),
        "recording": recording,
        "events": orjson.dumps(heard, default=str),
        "narrative": story.text().encode(),
    }
    for secret in (SECRET_MESSAGE, SECRET_ARG, SECRET_RESULT):
        for name, data in surfaces.items():
            assert secret.encode() not in data, (secret, name)
    assert b"[REDACTED]" in surfaces["store"] and b"[REDACTED]" in recording
    # what is kept still says what happened and what each call cost
    assert len(receipts(agent)) == 2 and receipts(agent)[0]["request_hash"]
    with pytest.raises(RedactedRecordError, match="conversation was redacted"):
        served_at(agent, 1)
    with pytest.raises(RedactedRecordError):
        replay(agent.snapshot())
    # the live object keeps real values for the next turn
    history = agent.checkpoint().history
    assert history[0]["content"] == f"my key is {SECRET_MESSAGE}"


# -- runtime hooks -----------------------------------------------------------------------------


class Closing:
    def __init__(self) -> None:
        self.commits = 0
        self.closed = False

    def on_commit(self, commit: Any) -> None:
        self.commits += 1

    def close(self) -> None:
        self.closed = True


def test_attach_detach_and_shutdown() -> None:
    agent = Agent.create(provider=mock(replies=["a", "b", "c"]), model="m").build()
    first, second = Closing(), Closing()
    detach = agent.attach(first)
    agent.attach(second)
    agent.run_sync("one")
    assert first.commits == second.commits > 0
    detach()
    agent.run_sync("two")
    assert second.commits > first.commits
    agent.shutdown()
    assert second.closed and not first.closed  # only what was still attached is released
    before = second.commits
    assert agent.run_sync("three") == "c"  # still usable
    assert second.commits == before


def test_emit_from_a_tool_is_recorded_and_heard() -> None:
    agent: Agent | None = None

    def noisy(args: dict[str, Any], ctx: ToolContext) -> str:
        assert agent is not None
        agent.emit("app.progress", {"done": 1})
        return "ok"

    tool = define_tool(name="lookup", description="Noisy.", input_schema=SCHEMA, execute=noisy)
    agent = Agent.create(provider=mock(replies=[one_call(), "done"]), model="m").tool(tool).build()
    heard: list[Any] = []
    agent.on("app.*", lambda event: heard.append(event.payload))
    agent.run_sync("go")
    assert heard == [{"done": 1}]
    commit = next(c for c in agent.snapshot().history() if c.stage_id == "tool-calls")
    assert any(e.name == "app.progress" for e in commit.events)
    with pytest.raises(AgentNotRunError, match="records into a run"):
        agent.emit("app.progress", {})


def test_listener_count_and_remove_all_listeners() -> None:
    agent = Agent.create(provider=mock(replies=["a"]), model="m").build()
    agent.on("stream.*", lambda e: None)
    agent.on("*", lambda e: None)
    assert agent.listener_count() == 2 and agent.listener_count("*") == 1
    agent.remove_all_listeners()
    assert agent.listener_count() == 0


SECRET_ANSWER = "sk-live-ANS-5e1f00aa"


def test_a_secret_in_a_paused_call_and_in_the_answer_is_absent_too(tmp_path: Path) -> None:
    from trackway.agent import Paused
    from trackway.tools import ask_human

    db = tmp_path / "runs.db"
    heard: list[Any] = []
    pay = define_tool(
        name="pay",
        description="Pay.",
        input_schema={"type": "object", "properties": {"card": {"type": "string"}}},
        execute=lambda args, ctx: "paid",
    )
    calls = {
        "tool_calls": [
            {"id": "p1", "name": "pay", "args": {"card": SECRET_ARG}},
            {"id": "a1", "name": "ask_human", "args": {"question": f"Is {SECRET_MESSAGE} ok?"}},
        ]
    }
    agent = (
        Agent.create(
            provider=mock(replies=[calls, "done"]),
            model="m",
            store=SqliteStore(db),
            redact=conversation_redaction(),
        )
        .tool(pay)
        .tool(ask_human())
        .check_in(["pay"])
        .recorder(type("Ears", (), {"on_pause": heard.append, "on_resume": heard.append})())
        .build()
    )
    first = agent.run_sync("pay it")
    assert isinstance(first, Paused) and SECRET_ARG in first.question  # the caller sees it
    second = agent.resume_sync(first.checkpoint, "approve")
    assert isinstance(second, Paused)
    assert agent.resume_sync(second.checkpoint, f"yes, {SECRET_ANSWER}") == "done"
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))
    events = orjson.dumps([list(e) for e in heard], default=str)
    for secret in (SECRET_ARG, SECRET_MESSAGE, SECRET_ANSWER):
        assert secret.encode() not in stored, secret
        assert secret.encode() not in events, secret
        assert secret.encode() not in agent.snapshot().to_json(), secret


def test_a_bad_store_durability_or_redact_is_refused_at_build() -> None:
    from trackway.engine import ExecutorUsageError

    with pytest.raises(AgentBuildError, match="use a run store, e.g. SqliteStore"):
        Agent.create(provider=mock(replies=["x"]), model="m", store="runs.db")  # type: ignore[arg-type]
    with pytest.raises(ExecutorUsageError, match="durability='fast'"):
        Agent.create(provider=mock(replies=["x"]), model="m", durability="fast").build()  # type: ignore[arg-type]
