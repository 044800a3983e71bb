"""Compositions on one record: Sequence, Parallel, Conditional and Loop of runners (agents,
LLM calls, other compositions), numbered by member at every depth, replayed whole."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trackway.agent import (
    Agent,
    AgentBuildError,
    Conditional,
    InvalidRunInputError,
    LLMCall,
    Loop,
    Parallel,
    Paused,
    ReplayDivergence,
    Sequence,
    handoff_tool,
    load_recording,
    map_reduce,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
    swarm,
    tree_of_thoughts,
)
from trackway.engine import Snapshot
from trackway.tools import ToolContext, ask_human, define_tool


def llm(*replies: str, system: str | None = None) -> Agent:
    return LLMCall.create(provider=mock(replies=list(replies)), model="m", system=system).build()


def law(runner: Agent) -> list[dict[str, Any]]:
    snap = runner.snapshot()
    rs = receipts(snap)
    for k, receipt in enumerate(rs, start=1):
        assert served_at(snap, k).hash == receipt["request_hash"], k
    return rs


def test_a_researcher_then_a_writer() -> None:
    researcher = llm("facts: air scatters blue light", system="Research.")
    writer = llm("The sky is blue because air scatters blue light.", system="Write.")
    article = (
        Sequence.create(name="article").step("research", researcher).step("write", writer).build()
    )
    answer = article.run_sync("Why is the sky blue?")
    assert answer == "The sky is blue because air scatters blue light."
    rs = law(article)
    assert [(r["member"], r["k"]) for r in rs] == [("research", 1), ("write", 1)]
    assert served_at(article.snapshot(), 1, member="write").messages[0].content == (
        "facts: air scatters blue light"
    )
    assert article.checkpoint().history[-1] == {"role": "assistant", "content": answer}
    assert replay(article.snapshot(), article).state["final_answer"] == answer
    assert replay(article.snapshot()).state["final_answer"] == answer  # from the record alone


def test_a_parallel_debate_with_and_without_a_judge() -> None:
    plain = (
        Parallel.create(name="debate")
        .branch("pro", llm("tabs"))
        .branch("con", llm("spaces"))
        .build()
    )
    assert plain.run_sync("tabs or spaces?") == "pro: tabs\n\ncon: spaces"
    judged = (
        Parallel.create(name="debate")
        .branch("pro", llm("tabs"))
        .branch("con", llm("spaces"))
        .merge(llm("spaces win", system="Judge."))
        .build()
    )
    assert judged.run_sync("tabs or spaces?") == "spaces win"
    rs = law(judged)
    assert [r["member"] for r in rs] == ["pro", "con", "judge"]
    assert served_at(judged.snapshot(), 1, member="judge").messages[0].content == (
        "pro: tabs\n\ncon: spaces"
    )
    replay(judged.snapshot(), judged)
    merged = (
        Parallel.create()
        .branch("a", llm("1"))
        .branch("b", llm("2"))
        .merge(lambda answers: "+".join(answers.values()))
        .build()
    )
    assert merged.run_sync("add") == "1+2"


def test_a_conditional_picks_the_first_member_whose_rule_holds() -> None:
    def desk() -> Agent:
        return (
            Conditional.create(name="desk")
            .when(lambda message, state: "refund" in message, "billing", llm("billing here"))
            .otherwise("general", llm("general here"))
            .build()
        )

    refunds = desk()
    assert refunds.run_sync("I want a refund") == "billing here"
    assert [r["member"] for r in law(refunds)] == ["billing"]
    replay(refunds.snapshot(), refunds)
    other = desk()
    assert other.run_sync("hello") == "general here"
    assert [r["member"] for r in law(other)] == ["general"]


def test_a_reflexion_loop_revises_until_approved_or_three_rounds() -> None:
    def reflexion(*drafts: str) -> Agent:
        return (
            Loop.create(llm(*drafts), name="reflexion")
            .until(lambda answer, round: "APPROVED" in answer)
            .max_rounds(3)
            .build()
        )

    approved = reflexion("draft 1", "draft 2 APPROVED")
    assert approved.run_sync("write a haiku") == "draft 2 APPROVED"
    assert approved.snapshot().state["round"] == 2
    rs = law(approved)
    assert [(r["member"], r["k"]) for r in rs] == [("body", 1), ("body", 1)]
    assert served_at(approved.snapshot(), 2).messages[0].content == "draft 1"  # revises its own
    replay(approved.snapshot(), approved)
    capped = reflexion("a", "b", "c", "d")
    assert capped.run_sync("go") == "c"
    assert capped.snapshot().state["round"] == 3


def test_the_caller_reaches_every_member_and_a_member_can_pause() -> None:
    seen: list[Any] = []

    def whoami(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.append((ctx.identity, ctx.session_id))
        return "ok"

    checker = (
        Agent.create(
            provider=mock(
                replies=[{"tool_calls": [{"id": "t1", "name": "whoami", "args": {}}]}, "checked"]
            ),
            model="m",
        )
        .tool(
            define_tool(
                name="whoami", description="d", input_schema={"type": "object"}, execute=whoami
            )
        )
        .build()
    )
    asker = (
        Agent.create(
            provider=mock(
                replies=[
                    {
                        "tool_calls": [
                            {"id": "q1", "name": "ask_human", "args": {"question": "Which region?"}}
                        ]
                    },
                    "region noted",
                ]
            ),
            model="m",
        )
        .tool(ask_human())
        .build()
    )
    flow = Sequence.create(name="flow").step("check", checker).step("ask", asker).build()
    out = flow.run_sync("go", identity={"tenant": "acme"}, session_id="s1")
    assert seen[0][0].tenant == "acme" and seen[0][1] == "s1"
    assert isinstance(out, Paused) and out.question == "Which region?"
    assert flow.resume_sync(out.checkpoint, "eu-west") == "region noted"
    law(flow)


def test_compositions_nest_and_name_members_by_a_dotted_path() -> None:
    debate = (
        Parallel.create(name="debate").branch("pro", llm("yes")).branch("con", llm("no")).build()
    )
    outer = Sequence.create(name="outer").step("debate", debate).step("sum", llm("a tie")).build()
    assert outer.run_sync("go") == "a tie"
    rs = law(outer)
    assert [r["member"] for r in rs] == ["debate.pro", "debate.con", "sum"]
    assert served_at(outer.snapshot(), 1, member="debate").hash == rs[0]["request_hash"]
    replay(outer.snapshot(), outer)


def test_compositions_refuse_what_they_cannot_run() -> None:
    with pytest.raises(AgentBuildError, match="at least one .step"):
        Sequence.create().build()
    with pytest.raises(AgentBuildError, match="must start with a letter"):
        Sequence.create().step("a b", llm("x"))
    with pytest.raises(AgentBuildError, match="two members are named 'a'"):
        Sequence.create().step("a", llm("x")).step("a", llm("y"))
    with pytest.raises(AgentBuildError, match="must be a runner"):
        Sequence.create().step("a", "not a runner")  # type: ignore[arg-type]
    with pytest.raises(AgentBuildError, match="at least two"):
        Parallel.create().branch("a", llm("x")).build()
    with pytest.raises(AgentBuildError, match="an .otherwise"):
        Conditional.create().when(lambda m, s: True, "a", llm("x")).build()
    with pytest.raises(AgentBuildError, match="whole number ≥ 1"):
        Loop.create(llm("x")).max_rounds(0)
    seq = Sequence.create().step("a", llm("x")).build()
    with pytest.raises(InvalidRunInputError):
        seq.run_sync(42)  # type: ignore[arg-type]


_counter = itertools.count()


def _tooled(tag: int) -> Agent:
    """An agent that looks something up first, then answers from what it read."""
    lookup = define_tool(
        name="lookup",
        description="Look a key up.",
        input_schema={"type": "object", "properties": {"key": {"type": "string"}}},
        execute=lambda args, ctx: f"value of {args['key']}",
    )

    def respond(request: Any) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return f"t{tag}:{last.content}"
        return {"tool_calls": [{"id": "l1", "name": "lookup", "args": {"key": f"k{tag}"}}]}

    return Agent.create(provider=mock(respond=respond), model="m").tool(lookup).build()


@st.composite
def compositions(draw: Any, depth: int = 0) -> Any:
    """A composition of LLM calls, agents with a tool, compositions and patterns, up to
    depth 3."""
    kinds = ["sequence", "parallel", "loop", "conditional", *PATTERNS] if depth < 2 else ["leaf"]
    kind = draw(st.sampled_from(["leaf", "tooled", *kinds] if depth > 0 else kinds))
    if kind == "leaf":
        tag = next(_counter)
        return lambda: LLMCall.create(
            provider=mock(respond=lambda request: f"a{tag}:{len(request.messages[-1].content)}"),
            model="m",
        ).build()
    if kind == "tooled":
        tag = next(_counter)
        return lambda: _tooled(tag)
    if kind in PATTERNS:
        return draw(patterns(kind, depth))
    if kind == "conditional":
        odd, even = draw(compositions(depth + 1)), draw(compositions(depth + 1))

        def make_cond() -> Agent:
            return (
                Conditional.create()
                .when(lambda message, state: len(message) % 2 == 1, "odd", odd())
                .otherwise("even", even())
                .build()
            )

        return make_cond
    parts = [
        draw(compositions(depth + 1)) for _ in range(draw(st.integers(1, 2)) + (kind == "parallel"))
    ]
    if kind == "sequence":

        def make_seq() -> Agent:
            b = Sequence.create()
            for i, part in enumerate(parts):
                b.step(f"s{i}", part())
            return b.build()

        return make_seq
    if kind == "parallel":

        def make_par() -> Agent:
            b = Parallel.create()
            for i, part in enumerate(parts):
                b.branch(f"p{i}", part())
            return b.build()

        return make_par
    return lambda: Loop.create(parts[0]()).max_rounds(2).build()


# --- the patterns (swarm, map_reduce, tree_of_thoughts) among the drawn compositions ---------

PATTERNS = ("swarm", "mapreduce", "tot")


def _router(target: str) -> Agent:
    """A swarm member that hands off to ``target`` (to ``s0`` once refused), then answers."""

    def respond(request: Any) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return "handed"
        to = "s0" if "refused" in last.content else target
        return {"tool_calls": [{"id": "h", "name": "handoff", "args": {"to": to}}]}

    return Agent.create(provider=mock(respond=respond), model="m").tool(handoff_tool()).build()


@st.composite
def patterns(draw: Any, kind: str, depth: int) -> Any:
    """A swarm (a router handing off, maybe to no member or to one its declared handoffs do
    not allow, within a drawn hop cap), a map-reduce (a drawn item count and cap, reduced or
    listed) or a tree of thoughts (drawn k, beam and depth) whose members are drawn
    compositions."""
    if kind == "swarm":
        first, second = draw(compositions(depth + 1)), draw(compositions(depth + 1))
        target = draw(st.sampled_from(["s0", "s1", "nobody"]))
        hops = draw(st.integers(0, 2))
        declared = draw(st.sampled_from([None, {"router": ["s0"]}, {"router": ["s1"]}]))
        return lambda: swarm(
            {"router": _router(target), "s0": first(), "s1": second()},
            max_hops=hops,
            handoffs=declared,
        )
    part = draw(compositions(depth + 1))
    if kind == "mapreduce":
        n, cap = draw(st.integers(0, 3)), draw(st.integers(1, 3))
        reduced = draw(st.booleans())

        def make_mr() -> Agent:
            return map_reduce(
                part(),
                split=lambda m: [f"{m}-{i}" for i in range(n)],
                reduce=(lambda answers: "|".join(answers)) if reduced else None,
                max_items=cap,
                concurrency=2,
            )

        return make_mr
    k, beam, levels = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    return lambda: tree_of_thoughts(
        part(), evaluate=lambda p, th: float(len(th[-1]) % 3), k=k, beam=beam, depth=levels
    )


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(make=compositions())
def test_the_law_holds_at_every_depth_and_replay_is_whole(make: Any) -> None:
    runner = make()
    runner.run_sync("go")
    rs = law(runner)
    assert all("member" in r for r in rs)
    replayed = replay(runner.snapshot(), runner)
    assert replayed.state["final_answer"] == runner.snapshot().state["final_answer"]
    alone = replay(runner.snapshot())  # no runner: every member and rule read from the record
    assert alone.state["final_answer"] == runner.snapshot().state["final_answer"]
    assert receipts(alone) == rs  # the same calls were served, at every depth
    for k, receipt in enumerate(rs, start=1):
        assert served_at(alone, k).hash == receipt["request_hash"]


def test_listeners_hear_every_members_events_with_the_member_named() -> None:
    article = Sequence.create().step("research", llm("notes")).step("write", llm("text")).build()
    heard: list[Any] = []
    article.on("stream.*", lambda e: heard.append((e.name, e.payload.get("member"))))
    article.run_sync("go")
    assert ("stream.llm_start", "research") in heard and ("stream.llm_start", "write") in heard
    recorded = [e.payload for c in article.snapshot().commits for e in c.events]
    assert all("member" not in p for p in recorded if isinstance(p, dict))  # the record: paths


def test_a_later_member_with_tool_rows_replays_from_its_own_numbered_log() -> None:
    def partial(args: dict[str, Any], ctx: ToolContext) -> Any:
        return {"content": "half done", "effects": [{"done": 1}], "status": "partial"}

    act = (
        Agent.create(
            provider=mock(
                replies=[{"tool_calls": [{"id": "t1", "name": "act", "args": {}}]}, "acted"]
            ),
            model="m",
        )
        .tool(
            define_tool(
                name="act", description="d", input_schema={"type": "object"}, execute=partial
            )
        )
        .build()
    )
    flow = Sequence.create().step("first", llm("planned")).step("act", act).build()
    assert flow.run_sync("go") == "acted"
    law(flow)
    replay(flow.snapshot(), flow)


def test_names_that_would_mislead_are_refused_and_plain_charts_say_how_to_replay() -> None:
    with pytest.raises(AgentBuildError, match="named 'judge'"):
        Parallel.create().branch("judge", llm("a")).branch("b", llm("b")).merge(llm("j")).build()
    with pytest.raises(AgentBuildError, match="leave max_iterations out"):
        LLMCall.create(provider=mock(reply="x"), model="m", max_iterations=3)
    call_llm = Sequence.create().step("call-llm", llm("x")).build()  # a name like a stage id
    call_llm.run_sync("go")
    assert [r["member"] for r in law(call_llm)] == ["call-llm"]
    from trackway.engine import Executor, flow_chart

    def ask(scope: Any) -> None:
        scope["q"] = "hi"

    chart = (
        flow_chart("Ask", ask, id="ask")
        .subflow("R", llm("x").spec(), id="r", input={"message": "q"}, output={"a": "final_answer"})
        .build(name="plain", chart_id="plain")
    )
    snap = Executor(chart).run_sync({}).snapshot
    with pytest.raises(ReplayDivergence, match="not of one agent"):
        replay(snap)


def _agent_with_tools(name: str, city: str) -> Agent:
    weather = define_tool(
        name="weather",
        description="Weather for a city.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
        execute=lambda args, ctx: f"{args['city']}: sunny",
    )
    calls = {"tool_calls": [{"id": f"w-{city}", "name": "weather", "args": {"city": city}}]}
    replies = [calls, f"{name}: {city} is sunny"]
    return Agent.create(provider=mock(replies=replies), model="m", name=name).tool(weather).build()


def desk_of_agents() -> Agent:
    """Every kind at once, members with tools, nested, and a person asked in the middle."""
    forecast = (
        Parallel.create(name="forecast")
        .branch("paris", _agent_with_tools("paris", "Paris"))
        .branch("rome", _agent_with_tools("rome", "Rome"))
        .merge(llm("both sunny", system="Judge."))
        .build()
    )
    routed = (
        Conditional.create(name="route")
        .when(lambda message, state: "never" in message, "first", llm("unused"))
        .when(lambda message, state: "sunny" in message, "sunny", _agent_with_tools("s", "Oslo"))
        .otherwise("other", llm("unused"))
        .build()
    )
    asker = (
        Agent.create(
            provider=mock(
                replies=[
                    {
                        "tool_calls": [
                            {"id": "q1", "name": "ask_human", "args": {"question": "Publish?"}}
                        ]
                    },
                    "published",
                ]
            ),
            model="m",
            name="asker",
        )
        .tool(ask_human())
        .build()
    )
    revise = (
        Loop.create(llm("draft", "draft OK"), name="revise")
        .until(lambda answer, round: "OK" in answer)
        .max_rounds(4)
        .build()
    )
    return (
        Sequence.create(name="desk")
        .step("forecast", forecast)
        .step("route", routed)
        .step("revise", revise)
        .step("ask", asker)
        .build()
    )


def test_a_composition_of_agents_replays_from_its_recording_alone(tmp_path: Any) -> None:
    desk = desk_of_agents()
    out = desk.run_sync("weather?", identity={"tenant": "acme"}, session_id="s1")
    assert isinstance(out, Paused) and out.question == "Publish?"
    assert desk.resume_sync(out.checkpoint, "yes") == "published"
    recorded = desk.snapshot()
    calls = law(desk)
    path = save_recording(desk, tmp_path / "desk.jsonl")

    replayed = replay(path)  # no composition, no model, no tool: the record alone
    assert replayed.state["final_answer"] == "published"
    assert len(replayed) == len(recorded)
    assert receipts(replayed) == calls  # the same requests served, by the same members
    for k, receipt in enumerate(calls, start=1):
        assert served_at(replayed, k).hash == receipt["request_hash"]
    # the rules decided as recorded, and say so the same way
    decided = [(c.stage_path, c.detail) for c in recorded.history() if c.kind == "decider"]
    assert [(c.stage_path, c.detail) for c in replayed.history() if c.kind == "decider"] == (
        decided
    )
    assert replay(load_recording(path)).state["final_answer"] == "published"


def test_a_replay_from_the_record_alone_still_diverges_on_a_changed_record(
    tmp_path: Any,
) -> None:
    flow = Sequence.create(name="flow").step("a", llm("one")).step("b", llm("two")).build()
    flow.run_sync("go")
    snap = flow.snapshot()
    answered = next(c for c in snap.history() if c.stage_id == "_final")
    forged = Snapshot.from_commits(
        run_id=snap.run_id,
        chart_id=snap.chart_id,
        status=snap.status,
        initial=snap.initial_state,
        commits=[c for c in snap.history() if c is not answered],
    )
    with pytest.raises(ReplayDivergence, match="the recording has"):
        replay(forged)


def test_a_chart_that_only_looks_like_a_composition_asks_for_its_runner() -> None:
    from trackway.engine import Executor, flow_chart

    chart = flow_chart("_seed", lambda scope: None, id="_seed").build(chart_id="mine")
    with pytest.raises(ReplayDivergence, match="not a Sequence, Parallel, Conditional, Loop"):
        replay(Executor(chart).run_sync({}).snapshot)
