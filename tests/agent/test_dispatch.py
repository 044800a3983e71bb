"""Defining and dispatching tools: ``@tool``, tool mappings, argument validation modes,
outcome statuses and the ``tool_results`` rows, envelopes, and replay of recorded outcomes."""

from __future__ import annotations

from typing import Any, Literal

import anyio
import anyio.lowlevel
import pytest

from trackway.agent import Agent, AgentBuildError, mock, replay
from trackway.engine import TrackwayWarning
from trackway.tools import (
    TOOL_RESULT_STATUSES,
    ToolContext,
    ToolDefinitionError,
    define_tool,
    tool,
)

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}, "days": {"type": "integer"}},
    "required": ["city"],
}


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in items]}


# -- @tool -------------------------------------------------------------------------------------


def test_tool_derives_the_schema_from_type_hints_and_the_docstring() -> None:
    @tool
    def weather(city: str, unit: Literal["C", "F"] = "C", days: int = 1) -> str:
        """Current weather for a city.

        Args:
            city: The city's name, as people
                write it.
            unit: Celsius or Fahrenheit.
        """
        return f"{city}: 22{unit} for {days} day(s)"

    assert weather.name == "weather"
    assert weather.description == "Current weather for a city."
    assert weather.input_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city's name, as people write it."},
            "unit": {
                "enum": ["C", "F"],
                "type": "string",
                "default": "C",
                "description": "Celsius or Fahrenheit.",
            },
            "days": {"type": "integer", "default": 1},
        },
        "required": ["city"],
    }
    agent = (
        Agent.create(
            provider=mock(replies=[calls(("c1", "weather", {"city": "Oslo"})), "done"]), model="m"
        )
        .tool(weather)
        .build()
    )
    agent.run_sync("weather?")
    assert agent.snapshot().state["history"][2]["content"] == "Oslo: 22C for 1 day(s)"


def test_tool_passes_the_context_and_runs_async_functions() -> None:
    seen: list[ToolContext] = []

    @tool(name="slow_lookup", description="Look something up slowly.")
    async def lookup(q: str, ctx: ToolContext) -> dict[str, Any]:
        seen.append(ctx)
        await anyio.lowlevel.checkpoint()
        return {"q": q, "found": True}

    assert lookup.name == "slow_lookup" and lookup.is_async
    assert "ctx" not in lookup.input_schema["properties"]
    agent = (
        Agent.create(
            provider=mock(replies=[calls(("c1", "slow_lookup", {"q": "x"})), "done"]), model="m"
        )
        .tool(lookup)
        .build()
    )
    agent.run_sync("go")
    assert seen[0].call_id == "c1"
    assert agent.snapshot().state["history"][2]["content"] == '{"q":"x","found":true}'


def test_tool_refuses_what_it_cannot_describe() -> None:
    def undocumented(x: int) -> int:
        return x

    with pytest.raises(ToolDefinitionError, match="give the function a docstring"):
        tool(undocumented)

    def untyped(x):  # type: ignore[no-untyped-def]
        """Does x."""

    with pytest.raises(ToolDefinitionError, match="annotate 'x'"):
        tool(untyped)

    def star(*items: int) -> int:
        """Sums."""
        return sum(items)

    with pytest.raises(ToolDefinitionError, match=r"\*items cannot be described"):
        tool(star)


def test_a_tool_given_as_a_mapping() -> None:
    spec = {
        "name": "echo",
        "description": "Echo the text.",
        "schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "execute": lambda args, ctx: args["text"],
    }
    provider = mock(replies=[calls(("c1", "echo", {"text": "hi"})), "done"])
    agent = Agent.create(provider=provider, model="m").tool(spec).build()
    agent.run_sync("go")
    assert agent.snapshot().state["history"][2]["content"] == "hi"
    with pytest.raises(AgentBuildError, match="missing description, execute, schema; unknown run"):
        Agent.create(provider=mock(replies=["x"]), model="m").tool({"name": "x", "run": 1})


# -- validation modes --------------------------------------------------------------------------


def weather_agent(mode: str, replies: list[Any], ran: list[dict[str, Any]]) -> Agent:
    def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        ran.append(args)
        return "sunny"

    weather = define_tool(
        name="weather", description="Weather.", input_schema=SCHEMA, execute=execute
    )
    return (
        Agent.create(provider=mock(replies=replies), model="m", tool_arg_validation=mode)  # type: ignore[arg-type]
        .tool(weather)
        .build()
    )


LONG = "x" * 300
BAD = calls(("c1", "weather", {"city": LONG, "days": "three"}))


def test_enforce_names_every_failing_path_and_quotes_at_most_80_characters() -> None:
    ran: list[dict[str, Any]] = []
    events: list[Any] = []
    agent = weather_agent("enforce", [BAD, "done"], ran)
    agent.on("validation.*", lambda e: events.append(e.payload))
    agent.run_sync("go")
    assert ran == []
    text = agent.snapshot().state["history"][2]["content"]
    assert text.startswith("Error: invalid arguments for weather: city: expected maxLength 20, got")
    assert 'days: expected type "integer", got "three"' in text
    assert LONG not in text and 'got "' + "x" * 78 + "…;" in text  # 80 characters of it
    assert agent.snapshot().state["tool_results"][0]["status"] == "invalid"
    assert events == [{"id": "c1", "name": "weather", "errors": ["city", "days"], "enforced": True}]


def test_warn_runs_the_tool_and_says_so_without_values() -> None:
    ran: list[dict[str, Any]] = []
    events: list[Any] = []
    agent = weather_agent("warn", [BAD, "done"], ran)
    agent.on("validation.*", lambda e: events.append(e.payload))
    agent.run_sync("go")
    assert ran == [{"city": LONG, "days": "three"}]
    assert events == [
        {"id": "c1", "name": "weather", "errors": ["city", "days"], "enforced": False}
    ]
    assert agent.snapshot().state["settings"]["tool_arg_validation"] == "warn"
    replay(agent.snapshot())  # the mode is in the record: no agent needed


def test_off_skips_validation_but_unparsed_arguments_never_run() -> None:
    ran: list[dict[str, Any]] = []
    unreadable = calls(("c2", "weather", {"_unparsed_arguments": '{"city": "Os'}))
    agent = weather_agent("off", [BAD, unreadable, "done"], ran)
    agent.run_sync("go")
    assert ran == [{"city": LONG, "days": "three"}]
    rows = agent.snapshot().state["tool_results"]
    assert [(r["id"], r["status"]) for r in rows] == [("c1", "success"), ("c2", "invalid")]
    assert "could not be read as a JSON object" in agent.snapshot().state["history"][4]["content"]


def test_a_bad_validation_mode_is_refused() -> None:
    with pytest.raises(AgentBuildError, match="tool_arg_validation='strict'"):
        Agent.create(provider=mock(replies=["x"]), model="m", tool_arg_validation="strict")  # type: ignore[arg-type]


# -- outcomes ----------------------------------------------------------------------------------


def test_statuses_rows_and_tool_end_events() -> None:
    def flaky(args: dict[str, Any], ctx: ToolContext) -> Any:
        if args["city"] == "Atlantis":
            raise LookupError("no such city")
        if args["city"] == "Vault":
            return {"content": "access refused by policy", "effects": [], "status": "denied"}
        if args["city"] == "Half":
            return {"content": {"rows": 3}, "effects": [{"kind": "note"}], "status": "partial"}
        return "sunny"

    weather = define_tool(name="weather", description="W.", input_schema=SCHEMA, execute=flaky)
    script = calls(
        ("a", "weather", {"city": "Rome"}),
        ("b", "weather", {"city": "Atlantis"}),
        ("c", "radar", {}),
        ("d", "weather", {"city": "Vault"}),
        ("e", "weather", {"city": "Half"}),
    )
    agent = Agent.create(provider=mock(replies=[script, "done"]), model="m").tool(weather).build()
    ends: list[Any] = []
    agent.on("stream.tool_end", lambda e: ends.append(e.payload))
    agent.run_sync("go")
    rows = agent.snapshot().state["tool_results"]
    assert [(r["id"], r["status"]) for r in rows] == [
        ("a", "success"),
        ("b", "failure"),
        ("c", "invalid"),
        ("d", "denied"),
        ("e", "partial"),
    ]
    assert all(r["status"] in TOOL_RESULT_STATUSES and r["iteration"] == 1 for r in rows)
    assert rows[4]["effects"] == [{"kind": "note"}] and "effects" not in rows[0]
    history = agent.snapshot().state["history"]
    assert history[5]["content"] == "access refused by policy"  # the envelope's content
    assert history[6]["content"] == '{"rows":3}'
    assert [(e["id"], e["status"], e["result"]) for e in ends][3] == (
        "d",
        "denied",
        "access refused by policy",
    )
    replay(agent.snapshot())  # each call gets its recorded outcome back, status included


def test_a_near_miss_envelope_stays_data_and_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from trackway.tools.results import _outcome

    monkeypatch.setattr(_outcome, "_warned", set())  # once per tool per process
    weather = define_tool(
        name="near_miss",
        description="W.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda args, ctx: {"content": "x", "status": "denied"},
    )
    script = calls(("a", "near_miss", {}), ("b", "near_miss", {}))
    agent = Agent.create(provider=mock(replies=[script, "done"]), model="m").tool(weather).build()
    with pytest.warns(TrackwayWarning, match="without 'effects', so it is plain data") as caught:
        agent.run_sync("go")
    assert len(caught) == 1
    rows = agent.snapshot().state["tool_results"]
    assert [r["status"] for r in rows] == ["success", "success"]
    assert agent.snapshot().state["history"][2]["content"] == '{"content":"x","status":"denied"}'


def test_an_envelope_with_an_unknown_status_is_a_failure() -> None:
    weather = define_tool(
        name="odd",
        description="W.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda args, ctx: {"content": "x", "effects": [], "status": "great"},
    )
    agent = (
        Agent.create(provider=mock(replies=[calls(("a", "odd", {})), "done"]), model="m")
        .tool(weather)
        .build()
    )
    agent.run_sync("go")
    assert agent.snapshot().state["tool_results"][0]["status"] == "failure"
    assert "status 'great'; use one of success" in agent.snapshot().state["history"][2]["content"]


# -- ceilings and progress ---------------------------------------------------------------------

EXPORT_SCHEMA = {"type": "object", "properties": {"limit": {"type": "integer"}}}
PAYLOAD_MARK = "ROW-7f3a-"


def export_tool(ceiling: dict[str, Any] | None = None) -> Any:
    def export(args: dict[str, Any], ctx: ToolContext) -> str:
        ctx.progress({"rows": 1})
        ctx.progress({1, 2})  # not JSON: dropped, never raised into the tool
        return PAYLOAD_MARK * int(args.get("limit", 1000))

    return define_tool(
        name="export_orders",
        description="Export orders.",
        input_schema=EXPORT_SCHEMA,
        execute=export,
        result_ceiling=ceiling,
    )


def test_a_result_over_its_ceiling_is_refused_and_enters_no_channel(tmp_path: Any) -> None:
    from trackway.agent import save_recording
    from trackway.engine import SqliteStore

    heard: list[Any] = []
    tool_ = export_tool({"max_chars": 2000, "narrow_by": ["limit"]})
    script = [
        calls(("c1", "export_orders", {})),
        calls(("c2", "export_orders", {"limit": 3})),
        "ok",
    ]
    agent = (
        Agent.create(provider=mock(replies=script), model="m", store=SqliteStore(tmp_path / "r.db"))
        .tool(tool_)
        .build()
    )
    agent.on("*", lambda e: heard.append((e.name, e.payload)))
    agent.run_sync("export")
    history = agent.snapshot().state["history"]
    size = len(PAYLOAD_MARK) * 1000
    assert history[2]["content"] == (
        f"Result too large: export_orders returned {size} chars, over its declared 2000-char "
        "ceiling. Narrow the request and call again — e.g. pass 'limit'. No data was returned."
    )
    assert history[4]["content"] == PAYLOAD_MARK * 3  # the narrowed call is served
    rows = agent.snapshot().state["tool_results"]
    assert rows[0] == {
        "id": "c1",
        "name": "export_orders",
        "iteration": 1,
        "status": "invalid",
        "chars": len(history[2]["content"]),
        "refused": True,
        "chars_returned": size,
    }
    refused = [p for n, p in heard if n == "tools.result_refused"]
    assert refused == [
        {
            "id": "c1",
            "name": "export_orders",
            "iteration": 1,
            "size_chars": size,
            "max_chars": 2000,
            "narrow_by": ["limit"],
        }
    ]
    progress = [p for n, p in heard if n == "stream.tool_progress"]
    assert progress[:2] == [
        {"id": "c1", "name": "export_orders", "iteration": 1, "payload": {"rows": 1}},
        {"id": "c1", "name": "export_orders", "iteration": 1, "dropped": "StateValueError"},
    ]
    refused_payload = (PAYLOAD_MARK * 4).encode()  # only the refused call was that long
    channels = {
        "history and snapshot": agent.snapshot().to_json(),
        "recording": save_recording(agent, tmp_path / "rec.json").read_bytes(),
        "events": repr(heard).encode(),
        "store": b"".join(p.read_bytes() for p in tmp_path.glob("r.db*")),
    }
    for name, data in channels.items():
        assert refused_payload not in data, name
    replay(agent.snapshot())


def test_the_agent_cap_cuts_with_a_marker_and_replay_does_not_cut_again() -> None:
    agent = (
        Agent.create(
            provider=mock(replies=[calls(("c1", "export_orders", {"limit": 10})), "ok"]),
            model="m",
            max_tool_result_chars=25,
        )
        .tool(export_tool())
        .build()
    )
    agent.run_sync("export")
    text = agent.snapshot().state["history"][2]["content"]
    total = len(PAYLOAD_MARK) * 10
    assert text == (
        f"{(PAYLOAD_MARK * 10)[:25]}\n[truncated: the first 25 of {total} characters are shown; "
        f"{total - 25} were cut]"
    )
    row = agent.snapshot().state["tool_results"][0]
    assert row["truncated"] is True and row["chars_returned"] == total
    assert agent.snapshot().state["settings"]["max_tool_result_chars"] == 25
    replay(agent.snapshot())  # the recorded, already cut text is served as it was


@pytest.mark.parametrize(
    ("ceiling", "message"),
    [
        ({"max_chars": 0}, "max_chars=0: use a positive whole number"),
        ({"max_chars": 10, "narrow_by": []}, "narrow_by=\\[\\]: name the arguments"),
        ({"max_chars": 10, "narrow_by": ["page"]}, "narrow_by names \\['page'\\], which are not"),
        ({"max_chars": 10, "cut": True}, "takes max_chars and narrow_by, not \\['cut'\\]"),
    ],
)
def test_a_bad_ceiling_is_refused_where_it_is_written(
    ceiling: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        export_tool(ceiling)
    with pytest.raises(AgentBuildError, match="max_tool_result_chars=0"):
        Agent.create(provider=mock(replies=["x"]), model="m", max_tool_result_chars=0)


def test_tool_takes_the_first_paragraph_and_checks_the_name() -> None:
    def lookup(q: str) -> str:
        """Look a thing up.

        It searches everywhere.

        Returns:
            What it found.
        """
        return q

    assert tool(lookup).description == "Look a thing up."
    with pytest.raises(ToolDefinitionError, match="must be non-empty letters"):
        tool(name="has space")(lookup)


def test_a_nested_nan_is_a_failure_not_a_null() -> None:
    odd = define_tool(
        name="odd",
        description="Odd.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda args, ctx: {"a": [1.0, float("inf")]},
    )
    agent = (
        Agent.create(provider=mock(replies=[calls(("a", "odd", {})), "done"]), model="m")
        .tool(odd)
        .build()
    )
    agent.run_sync("go")
    assert agent.snapshot().state["tool_results"][0]["status"] == "failure"
    assert "JSON cannot hold exactly" in agent.snapshot().state["history"][2]["content"]


# -- the repeated-call nudge -------------------------------------------------------------------


def lookup_tool(answers: dict[str, str] | None = None) -> Any:
    return define_tool(
        name="lookup",
        description="Look up.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        execute=lambda args, ctx: (answers or {}).get(args["q"], f"found {args['q']}"),
    )


def again(call_id: str, q: str = "x") -> dict[str, Any]:
    return calls((call_id, "lookup", {"q": q}))


def test_a_repeated_call_with_the_same_result_is_said_once() -> None:
    heard: list[Any] = []
    script = [again("c1"), again("c2"), again("c3"), again("c4", "y"), "done"]
    agent = Agent.create(provider=mock(replies=script), model="m").tool(lookup_tool()).build()
    agent.on("tools.repeated_call", lambda e: heard.append(e.payload))
    agent.run_sync("go")
    results = [m["content"] for m in agent.snapshot().state["history"] if m["role"] == "tool"]
    assert results[0] == "found x"
    assert results[1].startswith("found x (You called lookup with these same arguments earlier")
    assert results[2] == "found x"  # once per distinct call
    assert results[3] == "found y"
    rows = agent.snapshot().state["tool_results"]
    assert [r.get("nudged", False) for r in rows] == [False, True, False, False]
    assert len(heard) == 1 and set(heard[0]) == {"id", "name", "call", "result"}
    assert "found x" not in repr(heard)  # fingerprints, never values
    replay(agent.snapshot())


def test_no_nudge_when_the_result_changed_or_when_turned_off() -> None:
    answers = {"x": "first"}

    def changing(args: dict[str, Any], ctx: ToolContext) -> str:
        answers["x"] = answers["x"] + "!"
        return answers["x"]

    moving = define_tool(
        name="lookup",
        description="Look up.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        execute=changing,
    )
    agent = (
        Agent.create(provider=mock(replies=[again("c1"), again("c2"), "done"]), model="m")
        .tool(moving)
        .build()
    )
    agent.run_sync("go")
    assert all("You called" not in m["content"] for m in agent.snapshot().state["history"])
    quiet = (
        Agent.create(
            provider=mock(replies=[again("c1"), again("c2"), "done"]),
            model="m",
            repeated_call_nudge=False,
        )
        .tool(lookup_tool())
        .build()
    )
    quiet.run_sync("go")
    assert all("You called" not in m["content"] for m in quiet.snapshot().state["history"])
    assert quiet.snapshot().state["settings"]["repeated_call_nudge"] is False


def test_the_nudge_survives_a_pause_and_a_resume_in_a_fresh_agent(tmp_path: Any) -> None:
    from trackway.agent import Paused
    from trackway.engine import SqliteStore
    from trackway.tools import ask_human

    question = calls(("a1", "ask_human", {"question": "Go on?"}))

    def build(replies: list[Any]) -> Agent:
        return (
            Agent.create(
                provider=mock(replies=replies), model="m", store=SqliteStore(tmp_path / "r.db")
            )
            .tool(lookup_tool())
            .tool(ask_human())
            .build()
        )

    paused = build([again("c1"), question]).run_sync("go")
    assert isinstance(paused, Paused)
    fresh = build([again("c2"), "done"])
    assert fresh.resume_sync(paused.checkpoint.to_json(), "yes") == "done"
    last = [m for m in fresh.snapshot().state["history"] if m["role"] == "tool"][-1]
    assert last["content"].startswith("found x (You called lookup")  # rebuilt from the record


# -- gates -------------------------------------------------------------------------------------


def test_gates_allow_deny_and_ask() -> None:
    from trackway.agent import Paused
    from trackway.tools import allow, ask, deny

    def over_limit(call: dict[str, Any], ctx: ToolContext) -> Any:
        amount = call["args"]["amount"]
        if amount > 1000:
            return deny("refunds over 1000 need a manager")
        if amount > 100:
            return ask(f"Refund {amount}?")
        return allow()

    refunded: list[float] = []
    refund = define_tool(
        name="refund",
        description="Refund.",
        input_schema={"type": "object", "properties": {"amount": {"type": "number"}}},
        execute=lambda args, ctx: refunded.append(args["amount"]) or "refunded",
        gate=over_limit,
    )
    script = calls(
        ("r1", "refund", {"amount": 50}),
        ("r2", "refund", {"amount": 5000}),
        ("r3", "refund", {"amount": 500}),
    )
    agent = Agent.create(provider=mock(replies=[script, "done"]), model="m").tool(refund).build()
    gates: list[Any] = []
    agent.on("tools.gate", lambda e: gates.append(e.payload))
    paused = agent.run_sync("refund all")
    assert isinstance(paused, Paused) and paused.question == "Refund 500?"
    assert agent.resume_sync(paused.checkpoint, "approve") == "done"
    assert refunded == [50, 500]
    rows = agent.snapshot().state["tool_results"]
    assert [(r["id"], r["status"], r.get("gate")) for r in rows] == [
        ("r1", "success", None),
        ("r2", "denied", "deny"),
        ("r3", "success", "ask"),
    ]
    history = agent.snapshot().state["history"]
    assert history[3]["content"] == "Denied: refunds over 1000 need a manager"
    assert [g["decision"] for g in gates] == ["deny", "ask"]
    replay(agent.snapshot())  # no agent: the gates' decisions are read from the record


def test_an_agent_gate_and_a_bad_gate_answer() -> None:
    from trackway.tools import deny

    lookup = define_tool(
        name="lookup",
        description="Look up.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda args, ctx: "ok",
    )
    script = [calls(("c1", "lookup", {})), "done", calls(("c2", "lookup", {})), "done"]
    tenant_only = (
        Agent.create(provider=mock(replies=script), model="m")
        .tool(lookup)
        .gate(lambda call, ctx: deny("no tenant") if ctx.identity is None else "allow")
        .build()
    )
    tenant_only.run_sync("go")
    assert tenant_only.snapshot().state["tool_results"][0]["status"] == "denied"
    tenant_only.run_sync("go", identity={"tenant": "acme"})
    assert tenant_only.snapshot().state["tool_results"][0]["status"] == "success"
    bad = (
        Agent.create(provider=mock(replies=[calls(("c1", "lookup", {})), "done"]), model="m")
        .tool(lookup)
        .gate(lambda call, ctx: "maybe")
        .build()
    )
    with pytest.raises(Exception, match="returned 'maybe'; return allow\\(\\), deny"):
        bad.run_sync("go")
    with pytest.raises(AgentBuildError, match="one gate"):
        Agent.create(provider=mock(replies=["x"]), model="m").gate(print).gate(print)
