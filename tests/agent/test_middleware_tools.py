"""Middleware at the tool doors (before a call runs, after it ran) and ``ctx.tools.call``:
rewrites with provenance, denials, a person asked by a link, withheld and scrubbed results
the model never reads, nested calls through the same checks; all recorded and replayed
from the record alone."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.law import assert_law
from trackway.agent import (
    Agent,
    MiddlewareError,
    act,
    is_paused,
    mock,
    replay,
    save_recording,
)
from trackway.engine import SqliteStore, thaw
from trackway.recorders import narrative
from trackway.tools import (
    ToolCallRefusedError,
    ToolContext,
    ToolDefinitionError,
    allow,
    ask,
    deny,
    scrub,
    tool,
    withhold,
)

SECRET = "4111-1111-1111-1111"


@tool
def lookup(city: str, days: int = 1) -> str:
    """Look up the weather."""
    return f"{city} for {days} days: sunny; card on file {SECRET}"


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in items]}


def agent_with(*links: Any, replies: list[Any], tools: tuple[Any, ...] = (lookup,)) -> Agent:
    provider = mock(replies=replies)
    builder = Agent.create(provider=provider, model="m")
    for t in tools:
        builder = builder.tool(t)
    return builder.middleware(*links).build()


def state(agent: Agent) -> dict[str, Any]:
    return dict(thaw(agent.snapshot().state))


def test_a_rewrite_runs_with_the_new_arguments_and_says_where_each_came_from() -> None:
    def receipt(call: dict[str, Any], ctx: ToolContext) -> Any:
        return allow({**call["args"], "days": 3}, "from the receipt", from_={"days": "person"})

    def widen(call: dict[str, Any], ctx: ToolContext) -> Any:
        return allow({**call["args"], "city": call["args"]["city"].upper()}, "normalized")

    agent = agent_with(
        act(before_tool=receipt),
        act(before_tool=widen),
        replies=[calls(("a", "lookup", {"city": "Paris"})), "done"],
    )
    agent.run_sync("weather?")
    st = state(agent)
    served = [m["content"] for m in st["history"] if m["role"] == "tool"]
    assert served[0].startswith("PARIS for 3 days")  # both links' rewrites ran
    row = st["tool_results"][0]
    assert row["rewritten"] == [
        {"argument": "days", "value": 3, "source": "person"},
        {"argument": "city", "value": "PARIS", "source": "middleware widen"},
    ]
    # a rewrite that does not say where its value came from reads as assumed
    assert row["assumed"] == [{"argument": "city", "value": "PARIS", "source": "middleware widen"}]
    rows = st["middleware_decisions"]
    assert [(r["middleware"], r["outcome"], r["changed"]) for r in rows] == [
        ("receipt", "allow", True),
        ("widen", "allow", True),
    ]
    assert rows[0]["from"] == {"days": "person"} and rows[0]["why"] == "from the receipt"
    # the recorded call is the model's: the rewrite lives on the row and the ledger only
    asked = next(m for m in st["history"] if m.get("tool_calls"))
    assert asked["tool_calls"][0]["args"] == {"city": "Paris"}
    again = replay(agent.snapshot())  # no agent: the decisions are read, no link runs
    assert thaw(again.state)["middleware_decisions"] == rows


def test_a_rewrite_the_schema_refuses_is_not_run() -> None:
    ran: list[dict[str, Any]] = []

    @tool
    def count(n: int) -> str:
        """Count."""
        ran.append({"n": n})
        return str(n)

    def broken(call: dict[str, Any], ctx: ToolContext) -> Any:
        return allow({"n": "many"}, "oops")

    agent = agent_with(
        act(before_tool=broken),
        replies=[calls(("a", "count", {"n": 1})), "done"],
        tools=(count,),
    )
    agent.run_sync("go")
    st = state(agent)
    assert ran == []
    assert st["tool_results"][0]["status"] == "invalid"


def test_a_denial_stops_the_chain_and_the_model_reads_the_reason() -> None:
    later: list[str] = []

    def no_mars(call: dict[str, Any], ctx: ToolContext) -> Any:
        return deny("Mars is out of range") if call["args"]["city"] == "Mars" else None

    def audit(call: dict[str, Any], ctx: ToolContext) -> None:
        later.append(call["id"])

    agent = agent_with(
        act(before_tool=no_mars),
        act(before_tool=audit),
        replies=[calls(("a", "lookup", {"city": "Mars"}), ("b", "lookup", {"city": "Oslo"})), "ok"],
    )
    agent.run_sync("weather?")
    st = state(agent)
    assert later == ["b"]  # the denial ended the walk for call a only
    assert st["tool_results"][0]["status"] == "denied"
    assert st["tool_results"][0]["middleware"] == "no_mars"
    assert next(m["content"] for m in st["history"] if m["role"] == "tool") == (
        "Denied: Mars is out of range"
    )
    outcomes = [(r["middleware"], r["id"], r["outcome"]) for r in st["middleware_decisions"]]
    assert outcomes == [
        ("no_mars", "a", "deny"),
        ("no_mars", "b", "allow"),
        ("audit", "b", "allow"),
    ]
    replay(agent.snapshot())


@pytest.mark.parametrize("decision", ["approve", "decline"])
def test_a_link_that_asks_pauses_and_the_chain_goes_on_from_the_next_link(decision: str) -> None:
    after_ask: list[dict[str, Any]] = []

    def big_spend(call: dict[str, Any], ctx: ToolContext) -> Any:
        return ask("Look up the weather for 9 days?") if call["args"].get("days") == 9 else None

    def then(call: dict[str, Any], ctx: ToolContext) -> Any:
        after_ask.append(call["args"])
        return allow({**call["args"], "days": 7}, "capped at a week")

    agent = agent_with(
        act(before_tool=big_spend),
        act(before_tool=then),
        replies=[calls(("a", "lookup", {"city": "Rome", "days": 9})), "fine"],
    )
    paused = agent.run_sync("weather?")
    assert is_paused(paused) and paused.question == "Look up the weather for 9 days?"
    assert after_ask == []  # nothing after the asking link ran before the person answered
    done = agent.resume_sync(paused.checkpoint, decision)
    st = state(agent)
    served = next(m["content"] for m in st["history"] if m["role"] == "tool")
    if decision == "approve":
        assert after_ask == [{"city": "Rome", "days": 9}]
        assert served.startswith("Rome for 7 days")
        assert st["tool_results"][0]["rewritten"][0]["value"] == 7
    else:
        assert after_ask == []
        assert st["tool_results"][0]["status"] == "denied"
        assert st["tool_results"][0]["middleware"] == "big_spend"
    assert str(done) == "fine"


def test_after_tool_links_withhold_and_scrub_and_the_model_never_reads_the_words(
    tmp_path: Path,
) -> None:
    def hide_cards(call: dict[str, Any], result: dict[str, Any], ctx: ToolContext) -> Any:
        return scrub(lambda text: text.replace(SECRET, "[card]"), "card numbers")

    def no_oslo(call: dict[str, Any], result: dict[str, Any], ctx: ToolContext) -> Any:
        return withhold("Oslo data is embargoed") if call["args"]["city"] == "Oslo" else None

    provider = mock(
        replies=[calls(("a", "lookup", {"city": "Rome"}), ("b", "lookup", {"city": "Oslo"})), "ok"]
    )
    story = narrative(max_value_chars=10_000)
    events: list[Any] = []
    agent = (
        Agent.create(provider=provider, model="m", store=SqliteStore(tmp_path / "runs.db"))
        .tool(lookup)
        .middleware(act(after_tool=hide_cards), act(after_tool=no_oslo))
        .recorder(story)
        .build()
    )
    agent.on("*", events.append)
    agent.run_sync("weather?")
    for request in provider.requests:  # every request the model was sent
        assert SECRET not in request.model_dump_json()
    st = state(agent)
    # nor anything the run left: state, commits, the store file, a recording, events, story
    assert SECRET not in json.dumps(st)
    assert SECRET not in json.dumps([list(e) for e in agent.snapshot().history()], default=str)
    for stored in tmp_path.glob("runs.db*"):
        assert SECRET.encode() not in stored.read_bytes()
    save_recording(agent, tmp_path / "rec.jsonl")
    assert SECRET not in (tmp_path / "rec.jsonl").read_text()
    assert events and SECRET not in json.dumps([e.payload for e in events], default=str)
    told = story.text(agent.snapshot().run_id)
    assert "lookup" in told and SECRET not in told
    rome, oslo = st["tool_results"]
    assert rome["scrubbed"] is True and rome["status"] == "success"
    assert oslo["withheld"] is True and oslo["status"] == "denied"
    served = [m["content"] for m in st["history"] if m["role"] == "tool"]
    assert "[card]" in served[0]
    assert served[1] == "Withheld: the result of lookup is not shown to you. Oslo data is embargoed"
    # after-tool links walk backwards: the last added decides first; a withhold stops it
    walked = [(r["middleware"], r["id"], r["outcome"]) for r in st["middleware_decisions"]]
    assert walked == [
        ("no_oslo", "a", "allow"),
        ("hide_cards", "a", "scrub"),
        ("no_oslo", "b", "withhold"),
    ]
    replay(agent.snapshot())


def test_a_link_that_returns_what_its_door_cannot_take_is_named() -> None:
    def wrong(call: dict[str, Any], result: dict[str, Any], ctx: ToolContext) -> Any:
        return ask("really?")  # after a call ran there is nothing left to approve

    agent = agent_with(act(after_tool=wrong), replies=[calls(("a", "lookup", {"city": "X"})), "ok"])
    with pytest.raises(MiddlewareError, match=r"'wrong' at the after_tool door"):
        agent.run_sync("go")


def test_gates_cannot_rewrite_and_from_names_only_rewritten_arguments() -> None:
    with pytest.raises(ToolDefinitionError, match="not among the new arguments"):
        allow({"a": 1}, "x", from_={"b": "person"})
    with pytest.raises(ToolDefinitionError, match="give the new arguments as a dict"):
        allow(from_={"b": "person"})

    def gate(call: dict[str, Any], ctx: ToolContext) -> Any:
        return allow({"city": "Elsewhere"})

    agent = (
        Agent.create(
            provider=mock(replies=[calls(("a", "lookup", {"city": "X"})), "ok"]), model="m"
        )
        .tool(lookup)
        .gate(gate)
        .build()
    )
    with pytest.raises(Exception, match="a gate decides, it does not rewrite"):
        agent.run_sync("go")


def test_a_tool_calls_a_tool_through_the_same_checks_and_links() -> None:
    seen: list[tuple[str, str]] = []

    @tool
    async def trip(city: str, ctx: ToolContext) -> str:
        """Plan a trip."""
        weather = await ctx.tools.call("lookup", {"city": city, "days": 2})
        assert weather.status == "success"
        try:
            await ctx.tools.call("lookup", {"city": 5})
        except ToolCallRefusedError as exc:
            refused = str(exc)
        try:
            await ctx.tools.call("lookup", {"city": "Mars"})
        except ToolCallRefusedError as exc:
            denied = str(exc)
        return f"plan: {weather} | {refused} | {denied}"

    def watch(call: dict[str, Any], ctx: ToolContext) -> Any:
        seen.append((call["id"], call["name"]))
        return deny("no Mars") if call["args"].get("city") == "Mars" else None

    def hide(call: dict[str, Any], result: dict[str, Any], ctx: ToolContext) -> Any:
        return scrub(lambda text: text.replace(SECRET, "[card]"))

    provider = mock(replies=[calls(("t", "trip", {"city": "Lima"})), "ok"])
    agent = (
        Agent.create(provider=provider, model="m")
        .tool(trip)
        .tool(lookup)
        .tool_middleware(watch, after=hide)
        .build()
    )
    agent.run_sync("plan")
    st = state(agent)
    served = next(m["content"] for m in st["history"] if m["role"] == "tool")
    assert served.startswith("plan: Lima for 2 days: sunny; card on file [card]")
    assert "invalid arguments for lookup" in served and "middleware 'watch' denied it" in served
    assert seen == [("t", "trip"), ("t.1", "lookup"), ("t.3", "lookup")]  # t.2 failed its check
    nested = st["tool_results"][0]["nested"]
    assert [(n["id"], n["status"]) for n in nested] == [
        ("t.1", "success"),
        ("t.2", "refused"),
        ("t.3", "refused"),
    ]
    assert [d["outcome"] for d in nested[0]["decisions"]] == ["allow", "scrub"]
    # the model's own call is the only one on the ledger
    assert {r["id"] for r in st["middleware_decisions"]} == {"t"}
    assert SECRET not in json.dumps(st)
    replay(agent.snapshot())  # the calling call's outcome is served: no nested call runs


def test_a_tool_that_calls_itself_stops_at_the_depth_limit() -> None:
    @tool
    async def again(n: int, ctx: ToolContext) -> str:
        """Recurse."""
        return await ctx.tools.call("again", {"n": n + 1})

    agent = (
        Agent.create(provider=mock(replies=[calls(("a", "again", {"n": 0})), "ok"]), model="m")
        .tool(again)
        .build()
    )
    agent.run_sync("go")
    st = state(agent)
    served = next(m["content"] for m in st["history"] if m["role"] == "tool")
    assert "tools called tools 8 deep" in served
    depth, row = 0, st["tool_results"][0]
    while "nested" in row:  # each level's call is on its caller's row
        row, depth = row["nested"][0], depth + 1
    assert depth == 8 and row["status"] == "refused"  # every level, to the refused one


def test_no_middleware_writes_no_key_and_changes_no_request() -> None:
    def run(with_links: bool) -> tuple[dict[str, Any], list[str]]:
        provider = mock(replies=[calls(("a", "lookup", {"city": "Rome"})), "ok"])
        builder = Agent.create(provider=provider, model="m").tool(lookup)
        if with_links:
            builder = builder.tool_middleware(lambda call, ctx: None)
        agent = builder.build()
        agent.run_sync("go")
        return state(agent), [r.model_dump_json() for r in provider.requests]

    plain, plain_requests = run(False)
    linked, linked_requests = run(True)
    assert "middleware_decisions" not in plain and "middleware" not in plain["settings"]
    assert linked["middleware_decisions"][0]["outcome"] == "allow"
    assert plain_requests == linked_requests  # a pass-through link changes no request


def test_a_recording_with_every_door_from_this_version_loads_and_replays() -> None:
    """A recording kept from this version (tests/agent/fixtures/recording-doors-v1.jsonl: a
    link at every door, a rewrite with provenance, a scrub, a nested call and an approved
    consent) rebuilds every request and replays without the agent, its links or a vault."""
    from trackway.agent import load_recording

    loaded = load_recording(Path(__file__).parent / "fixtures" / "recording-doors-v1.jsonl")
    assert assert_law(loaded) == 2
    state = thaw(loaded.state)
    assert state["consents"][0]["granted"] is True
    rows = {r["id"]: r for r in state["tool_results"]}
    assert rows["a"]["rewritten"][0] == {"argument": "account", "value": "AB-1", "source": "policy"}
    assert rows["a"]["scrubbed"] is True and rows["b"]["nested"][0]["id"] == "b.1"
    doors = {(r["door"], r["outcome"]) for r in state["middleware_decisions"]}
    assert {("before_tool", "allow"), ("after_tool", "scrub"), ("output", "allow")} <= doors
    assert state["final_answer"] == "Balances read. — the bank bot"
    replayed = replay(loaded)
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    assert thaw(replayed.state)["final_answer"] == state["final_answer"]


def test_under_conversation_redaction_rewrites_and_nested_calls_keep_no_value(
    tmp_path: Path,
) -> None:
    from trackway.agent import conversation_redaction

    planted = "Zanzibar-77"

    @tool
    async def relay(city: str, ctx: ToolContext) -> str:
        """Relay a lookup."""
        with contextlib.suppress(ToolCallRefusedError):
            await ctx.tools.call("lookup", {"city": city, "days": "many"})
        return str(await ctx.tools.call("lookup", {"city": city}))

    def pin(call: dict[str, Any], ctx: ToolContext) -> Any:
        if call["name"] == "lookup":
            return allow({**call["args"], "city": planted}, "pinned")
        return None

    provider = mock(replies=[calls(("a", "relay", {"city": "Oslo"})), "ok"])
    agent = (
        Agent.create(
            provider=provider,
            model="m",
            store=SqliteStore(tmp_path / "runs.db"),
            redact=conversation_redaction(),
        )
        .tool(relay)
        .tool(lookup)
        .tool_middleware(pin)
        .build()
    )
    agent.run_sync("go")
    row = thaw(agent.snapshot().state["tool_results"])[0]
    assert row["nested"] == "[REDACTED]"
    for stored in tmp_path.glob("runs.db*"):
        assert planted.encode() not in stored.read_bytes()
    assert planted not in json.dumps(thaw(agent.snapshot().state))
