"""Skills, instructions, the skill graph and typed effects: what each call is served, what
the record gains, and that every request is rebuilt from the record and replays without the
code that decided it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from trackway.agent import (
    Agent,
    AgentBuildError,
    LLMRequest,
    classifier_scorer,
    define_instruction,
    define_skill,
    mock,
    propose_transition,
    receipts,
    replay,
    require_instruction,
    route,
    served_at,
    skill_graph,
)
from trackway.agent.classify import ClassifierError, mock_classifier
from trackway.tools import define_tool

ORDER = {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}


def envelope(content: str, *effects: dict[str, Any], status: str | None = None) -> Any:
    out: dict[str, Any] = {"content": content, "effects": list(effects)}
    if status is not None:
        out["status"] = status
    return out


def make_tool(name: str, result: Any) -> Any:
    return define_tool(
        name=name,
        description=f"The {name} tool.",
        input_schema=ORDER,
        execute=lambda args, ctx: result(args) if callable(result) else result,
    )


REFUND = make_tool(
    "issue_refund",
    envelope(
        "refused: outside the 30-day window",
        require_instruction("denial-playbook"),
        status="denied",
    ),
)
LOOKUP = make_tool("lookup_order", "order A1: shipped")
TRACK = make_tool("track", "in transit")
CLOSE = make_tool("close_account", "closed")
PLAYBOOK = define_instruction(
    id="denial-playbook",
    prompt="A refund was denied: name the policy, offer store credit.",
    active_when=lambda state: False,
)

REFUNDS = define_skill(
    id="refunds", title="Refunds", body="Check the order, then refund.", tools=[LOOKUP, REFUND]
)
SHIPPING = define_skill(id="shipping", title="Shipping", body="Track parcels.", tools=[TRACK])
ACCOUNT = define_skill(id="account", title="Account", body="Account changes.", tools=[CLOSE])
VAULT = define_skill(
    id="qqvault", title="Qqvaulted", body="Escalation procedure, internal.", hidden=True
)


def call(name: str, args: Mapping[str, Any] | None = None, id: str | None = None) -> dict:
    out: dict[str, Any] = {"name": name, "args": dict(args or {"order": "A1"})}
    if id is not None:
        out["id"] = id
    return out


def turn(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(calls)}


def law_holds(agent: Agent, provider: Any) -> list[LLMRequest]:
    """Every request sent is rebuilt from the record, and the record replays with the agent
    and without it (no model, no classifier, no instruction code)."""
    snap = agent.snapshot()
    rs = receipts(agent)
    assert len(rs) == len(provider.requests)
    rebuilt = []
    for k, receipt in enumerate(rs, start=1):
        request = served_at(snap, k)
        assert request.hash == receipt["request_hash"] == provider.requests[k - 1].hash
        rebuilt.append(request)
    for replayed in (replay(snap, agent), replay(snap)):
        assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in snap.history()]
    return rebuilt


def events(agent: Agent, name: str) -> list[dict[str, Any]]:
    """The payloads of the events ``name`` the last run committed, in order."""
    return [dict(e.payload) for c in agent.snapshot().history() for e in c.events if e.name == name]


def tools_of(request: LLMRequest) -> list[str]:
    return [t.name for t in request.tools or ()]


# -- instructions ------------------------------------------------------------------------------


def test_an_instruction_is_served_only_while_active_when_holds() -> None:
    provider = mock(replies=[turn(call("lookup_order")), turn(call("lookup_order")), "done"])
    polite = define_instruction(
        id="polite", prompt="Be polite.", active_when=lambda s: s["iteration"] >= 2
    )
    agent = Agent.create(provider=provider, model="m").system("Base.").tool(LOOKUP)
    agent = agent.instruction(polite).build()
    agent.run_sync("where is my order")
    first, second, third = law_holds(agent, provider)
    assert first.system == "Base."
    assert second.system == third.system == "Base.\n\nBe polite."
    pieces = agent.snapshot().state["system_pieces"]
    assert [(p["source"], p["id"]) for p in pieces] == [("instruction", "polite")]


def test_a_pushed_instruction_is_served_exactly_the_next_call() -> None:
    provider = mock(replies=[turn(call("issue_refund")), turn(call("lookup_order")), "done"])
    agent = (
        Agent.create(provider=provider, model="m")
        .tool(LOOKUP)
        .tool(REFUND)
        .instruction(PLAYBOOK)
        .build()
    )
    agent.run_sync("refund A1")
    first, second, third = law_holds(agent, provider)
    assert first.system is None and third.system is None
    assert second.system == PLAYBOOK.prompt
    lease = agent.snapshot().state["instruction_leases"]
    assert lease == [] or all(item["lease"] == "next-call" for item in lease)
    effects = events(agent, "tools.effect")
    assert [e["outcome"] for e in effects] == ["accepted"]


def test_an_unknown_instruction_id_is_refused_teachingly_and_recorded() -> None:
    bad = make_tool("bad", envelope("ok", require_instruction("no-such-thing")))
    provider = mock(replies=[turn(call("bad")), "done"])
    agent = Agent.create(provider=provider, model="m").tool(bad).instruction(PLAYBOOK).build()
    agent.run_sync("go")
    _, second = law_holds(agent, provider)
    assert second.system is not None
    assert "[tool effect refused: bad: instruction 'no-such-thing' is not registered" in (
        second.system
    )
    (event,) = events(agent, "tools.effect")
    assert event["outcome"] == "refused" and "no-such-thing" in event["why"]


def test_a_domain_effect_stays_data_an_agent_with_skills_judges_nothing_of() -> None:
    """Effects outside the typed vocabulary (a refund made) are what the tool says it did:
    filed on the row as without skills, never refused to the model or in an event."""
    made = {"kind": "refund", "order": "A1", "amount": 30}
    refund = make_tool("refund", envelope("refunded", made))
    replies = [turn(call("refund")), "done"]
    plain_provider = mock(replies=list(replies))
    Agent.create(provider=plain_provider, model="m").tool(refund).build().run_sync("go")
    provider = mock(replies=list(replies))
    agent = Agent.create(provider=provider, model="m").tool(refund).instruction(PLAYBOOK).build()
    agent.run_sync("go")
    law_holds(agent, provider)
    assert [r.hash for r in provider.requests] == [r.hash for r in plain_provider.requests]
    assert agent.snapshot().state["tool_results"][0]["effects"] == [made]
    assert events(agent, "tools.effect") == []


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (
            lambda b: b.instruction(PLAYBOOK).instruction(PLAYBOOK),
            "two instructions have the id 'denial-playbook'",
        ),
        (
            lambda b: b.instruction(define_instruction(id="x", prompt="p", active_when=3)),  # type: ignore[arg-type]
            "instruction 'x': active_when=3 is not callable",
        ),
        (
            lambda b: b.skill(REFUNDS).instruction(
                define_instruction(id="refunds", prompt="p", active_when=lambda s: True)
            ),
            "instruction 'refunds' has the id of a skill",
        ),
        (
            lambda b: b.tool(TRACK).skill(SHIPPING),
            "tool 'track' of skill 'shipping' clashes with the tool of that name from .tool()",
        ),
        (
            lambda b: b.skill(REFUNDS).skill_graph(
                skill_graph(route("refunds", "nowhere"), entry="refunds")
            ),
            "route\\('refunds', 'nowhere'\\) names 'nowhere', which is not a skill",
        ),
        (
            lambda b: b.tool(make_tool("read_skill", "x")).skill(REFUNDS),
            "has the name of a door",
        ),
    ],
)
def test_bad_declarations_are_refused_at_build_naming_them(build: Any, match: str) -> None:
    with pytest.raises(AgentBuildError, match=match):
        build(Agent.create(provider=mock(reply="x"), model="m")).build()


def test_a_status_route_with_code_is_refused_when_declared() -> None:
    with pytest.raises(AgentBuildError, match="when= and on_tool_status= together"):
        route("a", "b", on_tool_status="denied", when=lambda s: True)


def test_a_guarded_graph_without_an_entry_is_refused_and_assist_may_go_without() -> None:
    with pytest.raises(AgentBuildError, match="names no entry: a turn starts with no skill"):
        skill_graph(route("refunds", "shipping"), strictness="rails")
    assert skill_graph(route("refunds", "shipping"), strictness="assist").entry == ()


# -- skills and doors --------------------------------------------------------------------------


def skills_agent(provider: Any, *, scoped: bool = False, graph: Any = None, **kw: Any) -> Agent:
    builder = Agent.create(provider=provider, model="m", skill_scoped_tools=scoped, **kw)
    builder = builder.system("Support.").skills([REFUNDS, SHIPPING, ACCOUNT, VAULT])
    builder = builder.instruction(PLAYBOOK)
    if graph is not None:
        builder = builder.skill_graph(graph)
    return builder.build()


def test_read_skill_takes_only_a_catalog_id_and_no_extra_field() -> None:
    provider = mock(
        replies=[
            turn(call("read_skill", {"id": "refunds", "why": "x"})),
            turn(call("read_skill", {"id": "qqvault"})),
            "done",
        ]
    )
    agent = skills_agent(provider)
    agent.run_sync("hi")
    first, _, _ = law_holds(agent, provider)
    read = next(t for t in first.tools or () if t.name == "read_skill")
    assert read.input_schema["additionalProperties"] is False
    assert read.input_schema["properties"]["id"]["enum"] == ["refunds", "shipping", "account"]
    rows = agent.snapshot().state["tool_results"]
    assert [r["status"] for r in rows] == ["invalid", "invalid"]
    assert "cursor" not in agent.snapshot().state.get("skill_cursor", {})
    assert agent.snapshot().state["skill_cursor"]["skill"] is None


def test_skill_scoped_tools_serves_the_active_skills_tools_and_the_doors() -> None:
    provider = mock(
        replies=[
            turn(call("read_skill", {"id": "shipping"})),
            turn(call("track")),
            turn(call("issue_refund")),  # not offered now: refused, never run
            "done",
        ]
    )
    agent = skills_agent(provider, scoped=True)
    agent.run_sync("where is my parcel")
    first, second, _, fourth = law_holds(agent, provider)
    doors = ["read_skill", "list_skills", "skip_step", "present"]
    assert tools_of(first) == doors
    assert tools_of(second) == ["track", *doors]
    assert "## Skill: Shipping\n\nTrack parcels." in (second.system or "")
    rows = agent.snapshot().state["tool_results"]
    assert rows[-1]["status"] == "invalid" and "was not offered" in fourth.messages[-1].content
    assert [e["name"] for e in events(agent, "tools.answered_off_wire")] == ["issue_refund"]


def test_unscoped_skills_serve_every_skill_tool_from_the_first_call() -> None:
    provider = mock(replies=["done"])
    agent = skills_agent(provider)
    agent.run_sync("hi")
    (first,) = law_holds(agent, provider)
    assert tools_of(first) == [
        "lookup_order",
        "issue_refund",
        "track",
        "close_account",
        "read_skill",
        "list_skills",
        "skip_step",
        "present",
    ]


def test_a_hidden_skill_is_never_named_to_the_model() -> None:
    """Entered by a tool's proposal, its body is served, but no request names it: not the
    door's enum, a refusal, a listing or a note (a byte scan of every request)."""
    escalate = make_tool("escalate", envelope("escalated", propose_transition("qqvault", "vip")))
    hidden_refunds = define_skill(id="refunds", title="Refunds", body="Refunds.", tools=[escalate])
    provider = mock(
        replies=[
            turn(call("read_skill", {"id": "refunds"})),
            turn(call("escalate")),
            turn(call("list_skills", {}), call("read_skill", {"id": "qqvault"})),
            turn(call("skip_step", {})),
            "done",
        ]
    )
    from trackway.recorders import narrative

    story = narrative()
    agent = (
        Agent.create(provider=provider, model="m", tool_arg_validation="off")
        .skills([hidden_refunds, VAULT, SHIPPING])
        .recorder(story)
        .build()
    )
    agent.run_sync("I am a VIP")
    told = story.text()
    assert "Skill: none → refunds (by read_skill)" in told
    assert "Skill: refunds → a hidden skill (by tool-proposal)" in told
    assert "Skill: a hidden skill → none (by skip_step)" in told
    requests = law_holds(agent, provider)
    assert agent.snapshot().state["skill_proposals"][1]["target"] == "qqvault"
    assert any("Escalation procedure, internal." in (r.system or "") for r in requests)
    for request in requests:  # all the library wrote: the model's own guess aside
        ours = request.model_copy(
            update={"messages": tuple(m for m in request.messages if m.role != "assistant")}
        )
        sent = ours.canonical_json()
        assert b"qqvault" not in sent and b"Qqvaulted" not in sent
    guessed = requests[3].messages[-1].content  # read_skill("qqvault"): as for an unknown id
    assert guessed == "Error: read_skill takes the id of a listed skill. Skills: refunds, shipping."
    moved = events(agent, "skill.moved")
    assert all("qqvault" not in orjson.dumps(m).decode() for m in moved)


# -- the graph ---------------------------------------------------------------------------------


def test_a_status_route_fires_only_on_that_status() -> None:
    graph = skill_graph(
        route("refunds", "account", on_tool_return="issue_refund", on_tool_status="denied"),
        route("refunds", "shipping"),
        entry="refunds",
    )
    provider = mock(replies=[turn(call("lookup_order")), turn(call("issue_refund")), "done"])
    agent = skills_agent(provider, graph=graph)
    agent.run_sync("refund A1")
    first, second, third = law_holds(agent, provider)
    assert "## Skill: Refunds" in (first.system or "")
    assert "## Skill: Refunds" in (second.system or "")  # a success is not a denial
    assert "## Skill: Account" in (third.system or "")
    assert PLAYBOOK.prompt in (third.system or "")  # the denial pushed the playbook
    proposals = agent.snapshot().state["skill_proposals"]
    assert [(p["source"], p["target"], p["verdict"]) for p in proposals] == [
        ("entry", "refunds", "accepted"),
        ("route", "account", "accepted"),
    ]


def test_guard_refuses_a_pick_the_graph_cannot_reach_naming_what_it_can() -> None:
    graph = skill_graph(route("refunds", "shipping"), entry="refunds", strictness="guard")
    provider = mock(replies=[turn(call("read_skill", {"id": "account"})), "done"])
    agent = skills_agent(provider, graph=graph)
    agent.run_sync("close my account")
    _, second = law_holds(agent, provider)
    refusal = second.messages[-1].content
    assert refusal == "Skill 'account' is not reachable from 'refunds'. Reachable now: shipping."
    assert agent.snapshot().state["skill_cursor"]["skill"] == "refunds"


def test_rails_moves_only_by_the_authors_code() -> None:
    graph = skill_graph(
        route("refunds", "shipping", on_tool_return="lookup_order"),
        entry="refunds",
        strictness="rails",
    )
    provider = mock(
        replies=[
            turn(call("read_skill", {"id": "shipping"})),
            turn(call("skip_step", {})),
            turn(call("lookup_order")),
            "done",
        ]
    )
    agent = skills_agent(provider, graph=graph)
    agent.run_sync("where is it")
    requests = law_holds(agent, provider)
    rows = agent.snapshot().state["tool_results"]
    assert [r["status"] for r in rows] == ["invalid", "invalid", "success"]
    assert "## Skill: Refunds" in (requests[2].system or "")
    assert "## Skill: Shipping" in (requests[3].system or "")


def test_assist_lets_the_model_read_any_skill() -> None:
    graph = skill_graph(route("refunds", "shipping"), entry="refunds", strictness="assist")
    provider = mock(replies=[turn(call("read_skill", {"id": "account"})), "done"])
    agent = skills_agent(provider, graph=graph)
    agent.run_sync("close my account")
    law_holds(agent, provider)
    assert agent.snapshot().state["skill_cursor"] == {"skill": "account", "tenure": 2}


def test_in_one_batch_a_route_beats_a_proposal_beats_the_models_pick() -> None:
    mover = make_tool("mover", envelope("ok", propose_transition("account")))
    mover2 = make_tool("mover2", envelope("ok", propose_transition("shipping")))
    refunds = define_skill(id="refunds", title="Refunds", body="R.", tools=[mover, mover2, LOOKUP])
    graph = skill_graph(
        route("refunds", "shipping", on_tool_return="lookup_order"),
        route("refunds", "account"),
        entry="refunds",
        strictness="assist",
    )
    provider = mock(
        replies=[
            turn(
                call("read_skill", {"id": "account"}, id="c1"),
                call("mover", id="c2"),
                call("mover2", id="c3"),
                call("lookup_order", id="c4"),
            ),
            turn(call("mover", id="c5"), call("mover2", id="c6")),
            "done",
        ]
    )
    agent = (
        Agent.create(provider=provider, model="m")
        .skills([refunds, SHIPPING, ACCOUNT])
        .skill_graph(graph)
        .build()
    )
    agent.run_sync("go")
    law_holds(agent, provider)
    proposals = agent.snapshot().state["skill_proposals"]
    first_batch = [(p["source"], p["target"], p["verdict"]) for p in proposals if p["k"] == 2]
    assert first_batch == [
        ("route", "shipping", "accepted"),
        ("tool-proposal", "account", "superseded"),
        ("tool-proposal", "shipping", "superseded"),
        ("read_skill", "account", "superseded"),
    ]
    # from shipping, no route reaches account or shipping: the first is refused, and the
    # second names the cursor's own skill, a stay, accepted without a move
    second = [(p["target"], p["verdict"], p.get("stay")) for p in proposals if p["k"] == 3]
    assert second == [("account", "refused", None), ("shipping", "accepted", True)]
    effects = events(agent, "tools.effect")
    assert [e["outcome"] for e in effects] == [
        "superseded",
        "superseded",
        "refused",
        "accepted",
    ]
    assert effects[-1]["stay"] is True


def test_an_until_skill_exit_lease_dies_with_its_tenure_even_on_reentry() -> None:
    push = make_tool(
        "push", envelope("ok", require_instruction("denial-playbook", "until-skill-exit"))
    )
    refunds = define_skill(id="refunds", title="Refunds", body="R.", tools=[push, LOOKUP])
    shipping = define_skill(id="shipping", title="Shipping", body="S.", tools=[TRACK])
    graph = skill_graph(
        route("refunds", "shipping", on_tool_return="lookup_order"),
        route("shipping", "refunds", on_tool_return="track"),
        entry="refunds",
    )
    provider = mock(
        replies=[
            turn(call("push")),
            turn(call("push")),  # still in refunds: the lease holds (granted again)
            turn(call("lookup_order")),  # to shipping: the lease dies
            turn(call("track")),  # back to refunds: a fresh tenure, no lease
            "done",
        ]
    )
    agent = Agent.create(provider=provider, model="m").skills([refunds, shipping])
    agent = agent.skill_graph(graph).instruction(PLAYBOOK).build()
    agent.run_sync("go")
    requests = law_holds(agent, provider)
    served = [PLAYBOOK.prompt in (r.system or "") for r in requests]
    assert served == [False, True, True, False, False]
    assert agent.snapshot().state["skill_cursor"] == {"skill": "refunds", "tenure": 3}


def test_a_classifier_ranks_the_entries_and_a_failure_falls_back_to_the_cold_start() -> None:
    graph = skill_graph(
        route("refunds", "shipping"),
        entry=["refunds", "shipping", "account"],
        scorer=classifier_scorer(
            mock_classifier(
                [
                    {"ranked": [["shipping", 0.9], ["refunds", 0.1]], "chosen": "shipping"},
                    ClassifierError("overloaded", status=529, retryable=True),
                ]
            )
        ),
    )
    provider = mock(replies=["one", "two"])
    agent = skills_agent(provider, graph=graph)
    agent.run_sync("where is my parcel")
    assert agent.snapshot().state["skill_entry"] == [
        {
            "k": 1,
            "scorer": "classifier:mock-classifier",
            "ranking": [{"id": "shipping", "score": 0.9}, {"id": "refunds", "score": 0.1}],
            "chosen": "shipping",
        }
    ]
    law_holds(agent, provider)
    assert events(agent, "skill.entry") == [
        {"k": 1, "scorer": "classifier:mock-classifier", "chosen": "shipping"}
    ]
    agent.run_sync("and again")
    (row,) = agent.snapshot().state["skill_entry"]
    assert row == {
        "k": 1,
        "scorer": "classifier-unavailable",
        "ranking": [],
        "chosen": "refunds",
        "cold_start": True,
    }


def test_continuity_conversation_keeps_the_cursor_and_turn_starts_over() -> None:
    for continuity, expected in (("conversation", "shipping"), ("turn", "refunds")):
        graph = skill_graph(
            route("refunds", "shipping", on_tool_return="lookup_order"),
            entry="refunds",
            continuity=continuity,  # type: ignore[arg-type]
        )
        provider = mock(replies=[turn(call("lookup_order")), "first", "second"])
        agent = skills_agent(provider, graph=graph)
        agent.run_sync("one")
        assert agent.snapshot().state["skill_cursor"]["skill"] == "shipping"
        agent.run_sync("two", continue_from=agent.checkpoint())
        assert agent.snapshot().state["skill_cursor"]["skill"] == expected, continuity
        replay(agent.snapshot(), agent)
        replay(agent.snapshot())


def test_an_agent_without_skills_records_the_bytes_it_did_before() -> None:
    """Nothing declared: no stage, no key, the same requests."""
    provider = mock(replies=[turn(call("lookup_order")), "done"])
    agent = Agent.create(provider=provider, model="m").tool(LOOKUP).build()
    agent.run_sync("go")
    ids = {c.stage_id for c in agent.snapshot().history()}
    assert "offer" not in ids
    keys = set(agent.snapshot().state)
    assert not keys & {"skills", "skill_cursor", "system_pieces", "tool_choices"}


# -- redaction ---------------------------------------------------------------------------------

SECRET_BODY = "qq-BODY-5d1e"
SECRET_SAID = "qq-SAID-a7c0"
SECRET_RESULT = "qq-RESULT-9b3f"
SECRET_ERROR = "qq-ERROR-11fe"


def test_a_hidden_skill_and_redacted_keys_reach_no_retained_surface(
    tmp_path: Any, caplog: Any
) -> None:
    """Under a redaction policy hiding the conversation and the skills' keys, the hidden
    skill's text and every planted value are absent from the store, the recording, the
    events, the narrative and the log: the new keys, rows and events leak nothing."""
    from trackway.agent import conversation_redaction, save_recording
    from trackway.engine import SqliteStore
    from trackway.recorders import narrative

    secret_tool = make_tool("vault_read", f"value={SECRET_RESULT}")
    escalate = make_tool("escalate", envelope("escalated", propose_transition("qqvault")))
    vault = define_skill(
        id="qqvault", title="Qqvaulted", body=f"Internal: {SECRET_BODY}", hidden=True,
        tools=[secret_tool],
    )  # fmt: skip
    front = define_skill(id="front", title="Front", body="Front desk.", tools=[escalate])
    provider = mock(
        replies=[
            turn(call("read_skill", {"id": "front"})),
            turn(call("escalate")),
            turn(call("vault_read"), call("present", {"content": f"see {SECRET_SAID}"})),
            "done",
        ]
    )
    failing = mock_classifier(
        lambda request: ClassifierError(f"server said: {SECRET_ERROR}", status=500)
    )
    story = narrative()
    db = tmp_path / "runs.db"
    agent = (
        Agent.create(
            provider=provider,
            model="m",
            store=SqliteStore(db),
            redact=conversation_redaction(keys=["skills", "system_pieces"]),
        )
        .skills([front, vault])
        .tool_choice(classifier=failing, serve={"top": 1})
        .recorder(story)
        .build()
    )
    heard: list[Any] = []
    agent.on("*", lambda event: heard.append((event.name, event.payload)))
    assert agent.run_sync(f"hello {SECRET_SAID}") == "done"
    assert any(SECRET_BODY in (r.system or "") for r in provider.requests)  # it was served
    surfaces = {
        "store": b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*")),
        "recording": save_recording(agent, tmp_path / "rec.jsonl").read_bytes(),
        "events": orjson.dumps(heard, default=str),
        "narrative": story.text().encode(),
        "log": caplog.text.encode(),
    }
    for secret in (SECRET_BODY, SECRET_SAID, SECRET_RESULT, SECRET_ERROR):
        for name, data in surfaces.items():
            assert secret.encode() not in data, (secret, name)
    assert b"qqvault" not in surfaces["events"] and b"Qqvaulted" not in surfaces["events"]
    names = [name for name, _ in heard]
    assert "tool_choice.failed" in names and "agent.presented" in names


def test_the_graph_says_where_the_cursor_may_go_and_its_own_next_step() -> None:
    graph = skill_graph(
        route("refunds", "account", on_tool_status="denied"),
        route("refunds", "shipping"),
        route("shipping", "refunds", on_tool_return="track"),
        entry=["shipping", "refunds"],
    )
    assert graph.reachable(None) == ("shipping", "refunds")
    assert graph.reachable("refunds") == ("account", "shipping")
    assert graph.next_skill(None) == "shipping"
    assert graph.next_skill("refunds") == "shipping"  # the first route with no condition
    assert graph.next_skill("shipping") is None


def test_a_skills_recording_from_this_version_loads_rebuilds_and_replays() -> None:
    """Written by commit f82a0bc (skills on a guarded graph with an entry scorer, pushed and
    active instructions, scoped tools and a classifier narrowing to one tool, one call
    missing the narrowed list): later versions load it, rebuild every call to its receipt
    and replay it without the agent, the model or the classifier."""
    from pathlib import Path

    from trackway.agent import load_recording

    loaded = load_recording(Path(__file__).parent / "fixtures" / "recording-skills-f82a0bc.jsonl")
    rs = receipts(loaded)
    assert len(rs) == 4
    for k, receipt in enumerate(rs, start=1):
        assert served_at(loaded, k).hash == receipt["request_hash"]
    state = loaded.state
    assert state["skill_entry"][0]["chosen"] == "refunds"
    assert [r["kind"] for r in state["tool_choices"]].count("outcome") == 4
    replayed = replay(loaded)
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    assert replayed.state["final_answer"] == "done"


def test_a_member_with_skills_replays_in_a_composition_from_the_record_alone(
    tmp_path: Any,
) -> None:
    """Mounted as a composition's member, an agent with skills, a graph and tool choice
    keeps the law at every call and replays from the recording without the composition."""
    from trackway.agent import Sequence, save_recording

    def rank(request: Any) -> dict[str, Any]:
        names = [c.name for c in request.criteria]
        return {"ranked": [[n, 1.0 / (i + 1)] for i, n in enumerate(names)]}

    graph = skill_graph(
        route("refunds", "account", on_tool_return="issue_refund", on_tool_status="denied"),
        route("refunds", "shipping"),
        entry="refunds",
    )
    desk_provider = mock(replies=[turn(call("lookup_order")), turn(call("issue_refund")), "ok"])
    desk = (
        Agent.create(provider=desk_provider, model="m", name="desk", skill_scoped_tools=True)
        .skills([REFUNDS, SHIPPING, ACCOUNT, VAULT])
        .instruction(PLAYBOOK)
        .skill_graph(graph)
        .tool_choice(classifier=mock_classifier(rank), serve={"top": 2})
        .build()
    )
    writer = Agent.create(provider=mock(replies=["written"]), model="m", name="writer").build()
    flow = Sequence.create(name="flow").step("desk", desk).step("write", writer).build()
    assert flow.run_sync("refund A1") == "written"
    snap = flow.snapshot()
    calls = receipts(snap)
    assert len(calls) == 4
    for k, receipt in enumerate(calls, start=1):
        assert served_at(snap, k).hash == receipt["request_hash"]
    assert PLAYBOOK.prompt in (served_at(snap, 3).system or "")  # the denial's lease, call 3
    path = save_recording(flow, tmp_path / "flow.jsonl")
    replayed = replay(path)  # no composition, no model, no classifier
    assert replayed.state["final_answer"] == "written"
    assert receipts(replayed) == calls
