"""The seeds' remaining patterns as compositions on one record: ``swarm`` (agents handing off),
``map_reduce`` and ``tree_of_thoughts``; real runs on the mock provider, the law at every
depth, pauses inside a member resumed, and replays with the runner and from the record alone."""

from __future__ import annotations

import math
import re
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.law import assert_law
from trackway.agent import (
    Agent,
    AgentBuildError,
    LLMCall,
    PatternError,
    Paused,
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
from trackway.engine import StageError, thaw
from trackway.tools import ToolContext, ask_human, define_tool

FIXTURES = Path(__file__).parent / "fixtures"


def llm(*replies: str) -> Agent:
    return LLMCall.create(provider=mock(replies=list(replies)), model="m").build()


def echo(prefix: str) -> Agent:
    """A model call that answers ``prefix:`` and the message it was given."""
    return LLMCall.create(
        provider=mock(respond=lambda request: f"{prefix}:{request.messages[-1].content}"),
        model="m",
    ).build()


def handing(to: str, note: str = "", call_id: str = "h1") -> dict[str, Any]:
    args = {"to": to, "note": note} if note else {"to": to}
    return {"tool_calls": [{"id": call_id, "name": "handoff", "args": args}]}


def member(*replies: Any, name: str | None = None) -> Agent:
    return (
        Agent.create(provider=mock(replies=list(replies)), model="m", name=name)
        .tool(handoff_tool())
        .build()
    )


def events(runner: Agent, prefix: str = "composition.") -> list[tuple[str, Any]]:
    return [
        (e.name, thaw(e.payload))
        for c in runner.snapshot().history()
        for e in c.events
        if e.name.startswith(prefix)
    ]


def replays_whole(runner: Agent, fresh: Agent | None = None) -> None:
    """Replayed with the runner (or a fresh twin) and from the record alone: same answer, same
    calls served, the law on the replay too."""
    snap = runner.snapshot()
    calls = receipts(snap)
    with_runner = replay(snap, fresh or runner)
    assert with_runner.state["final_answer"] == snap.state["final_answer"]
    alone = replay(snap)
    assert alone.state["final_answer"] == snap.state["final_answer"]
    assert receipts(alone) == calls
    assert assert_law(alone) == len(calls)


# --- swarm -------------------------------------------------------------------------------


def desk() -> Agent:
    triage = member(handing("billing", "wants a refund"), "Passing you to billing.")
    billing = member("Refund of 20 EUR issued.")
    return swarm({"triage": triage, "billing": billing}, name="desk")


def test_a_swarm_member_hands_the_conversation_to_another() -> None:
    s = desk()
    assert s.run_sync("I was charged twice") == "Refund of 20 EUR issued."
    state = s.snapshot().state
    assert thaw(state["handoffs"]) == [
        {"hop": 1, "from": "triage", "to": "billing", "status": "accepted"}
    ]
    assert events(s)[:1] == [("composition.handoff", {"from": "triage", "to": "billing", "hop": 1})]
    rs = receipts(s.snapshot())
    assert [r["member"] for r in rs] == ["triage", "triage", "billing"]
    said = served_at(s.snapshot(), 1, member="billing").messages[0].content
    assert said == "I was charged twice\n\n(Handed over by triage: wants a refund)"
    assert assert_law(s) == 3
    replays_whole(s, desk())


def test_a_handoff_to_an_unknown_member_is_refused_as_data_and_the_run_continues() -> None:
    triage = member(
        handing("biling", call_id="h1"),
        "One moment.",
        handing("billing", call_id="h2"),
        "Passing you on.",
    )
    s = swarm({"triage": triage, "billing": member("Done."), "sales": member("unused")})
    assert s.run_sync("refund please") == "Done."
    rows = thaw(s.snapshot().state["handoffs"])
    assert rows == [
        {
            "hop": 1,
            "from": "triage",
            "to": "biling",
            "status": "refused",
            "reason": "unknown_member",
        },
        {"hop": 2, "from": "triage", "to": "billing", "status": "accepted"},
    ]
    refused = [p for n, p in events(s) if n == "composition.handoff_refused"]
    assert refused == [{"from": "triage", "hop": 1, "reason": "unknown_member", "max_hops": 4}]
    assert all("biling" not in str(p) for _, p in events(s))  # the model's text stays in state
    told = served_at(s.snapshot(), 3).messages[0].content  # triage, asked again
    assert "no member is named 'biling'" in told and "billing, sales" in told
    assert assert_law(s) == 5
    replays_whole(s)


def test_declared_handoffs_refuse_a_handoff_they_do_not_allow() -> None:
    def make() -> Agent:
        triage = member(
            handing("sales", call_id="h1"), "Hm.", handing("billing", call_id="h2"), "Over."
        )
        billing = member(handing("triage"), "Back to triage?", "I will handle it.")
        return swarm(
            {"triage": triage, "billing": billing, "sales": member("unused")},
            handoffs={"triage": ["billing"]},
        )

    s = make()
    assert s.run_sync("refund") == "I will handle it."  # billing may hand off to no one
    rows = [
        (r["from"], r["to"], r["status"], r.get("reason")) for r in s.snapshot().state["handoffs"]
    ]
    assert rows == [
        ("triage", "sales", "refused", "not_declared"),
        ("triage", "billing", "accepted", None),
        ("billing", "triage", "refused", "not_declared"),
    ]
    told = served_at(s.snapshot(), 3).messages[0].content
    assert told.startswith(
        "Your handoff was refused: you cannot hand off to sales. You can hand off to: billing;"
    )
    assert s.snapshot().state["swarm"]["handoffs"] == {"triage": ["billing"]}
    assert_law(s)
    replays_whole(s, make())
    with pytest.raises(AgentBuildError, match="names 'nobody', which is not a member"):
        swarm({"a": member("x"), "b": member("y")}, handoffs={"a": ["nobody"]})
    with pytest.raises(AgentBuildError, match="lets 'a' hand off to itself"):
        swarm({"a": member("x"), "b": member("y")}, handoffs={"a": ["a"]})
    with pytest.raises(AgentBuildError, match="must be a list of member names"):
        swarm({"a": member("x"), "b": member("y")}, handoffs={"a": "b"})


def test_hops_are_bounded_and_the_last_answer_stands() -> None:
    ping = member(handing("pong", call_id="a"), "to pong", handing("pong", call_id="b"), "again")
    pong = member(handing("ping", call_id="c"), "to ping")
    s = swarm({"ping": ping, "pong": pong}, max_hops=2)
    assert s.run_sync("go") == "again"
    rows = thaw(s.snapshot().state["handoffs"])
    assert [(r["status"], r.get("reason")) for r in rows] == [
        ("accepted", None),
        ("accepted", None),
        ("refused", "max_hops"),
    ]
    assert events(s)[-2] == (
        "composition.handoff_refused",
        {"from": "ping", "hop": 3, "reason": "max_hops", "max_hops": 2},
    )
    assert_law(s)
    replays_whole(s)
    alone = swarm({"a": member("just me"), "b": member("unused")}, max_hops=0)
    assert alone.run_sync("hi") == "just me"
    assert "handoffs" not in alone.snapshot().state  # no handoff, no row


def test_a_continued_swarm_gives_its_members_the_conversation_so_far() -> None:
    def make() -> Agent:
        triage = member(handing("billing"), "Passing on.", handing("billing"), "Again.")
        return swarm({"triage": triage, "billing": member("Refund issued.", "On Monday.")})

    s = make()
    assert s.run_sync("charged twice") == "Refund issued."
    first = served_at(s.snapshot(), 1).messages
    assert [m.content for m in first] == ["charged twice"]  # a first turn: the message alone
    assert s.run_sync("when?", continue_from=s.checkpoint()) == "On Monday."
    snap = s.snapshot()
    conversation = [("user", "charged twice"), ("assistant", "Refund issued."), ("user", "when?")]
    for k, receipt in enumerate(receipts(snap), start=1):
        if receipt["member"] == "billing":
            said = [(m.role, m.content) for m in served_at(snap, k).messages]
            assert said == conversation  # billing takes the conversation over
    assert assert_law(s) == 3
    replays_whole(s, make())


def test_the_caller_reaches_every_swarm_member_and_a_member_can_pause() -> None:
    seen: list[Any] = []

    def whoami(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.append((ctx.identity.tenant if ctx.identity else None, ctx.session_id))
        return "ok"

    who = define_tool(
        name="whoami", description="d", input_schema={"type": "object"}, execute=whoami
    )
    front = (
        Agent.create(
            provider=mock(
                replies=[
                    {"tool_calls": [{"id": "w", "name": "whoami", "args": {}}]},
                    handing("closer"),
                    "over to closer",
                ]
            ),
            model="m",
        )
        .tool(who)
        .tool(handoff_tool())
        .build()
    )
    ask = {"tool_calls": [{"id": "q", "name": "ask_human", "args": {"question": "Confirm?"}}]}
    closer = (
        Agent.create(provider=mock(replies=[ask, "confirmed"]), model="m").tool(ask_human()).build()
    )
    s = swarm({"front": front, "closer": closer})
    out = s.run_sync("buy", identity={"tenant": "acme"}, session_id="s9")
    assert seen == [("acme", "s9")]
    assert isinstance(out, Paused) and out.question == "Confirm?"
    assert s.resume_sync(out.checkpoint, "yes") == "confirmed"
    assert_law(s)
    replays_whole(s)


# --- map_reduce ----------------------------------------------------------------------------


def test_map_reduce_maps_each_item_as_its_own_member_and_reduces() -> None:
    mr = map_reduce(echo("m"), split=lambda m: m.split(","), reduce=lambda a: " | ".join(a))
    assert mr.run_sync("a,bb,ccc") == "m:a | m:bb | m:ccc"
    rs = receipts(mr.snapshot())
    assert [r["member"] for r in rs] == ["map_0", "map_1", "map_2"]
    assert events(mr) == [
        (
            "composition.split",
            {"items": 3, "ran": 3, "dropped": 0, "max_items": 16, "by": "function"},
        ),
        ("composition.turn_end", {"answer": "m:a | m:bb | m:ccc"}),
    ]
    assert assert_law(mr) == 3
    replays_whole(mr)


def test_map_reduce_with_a_splitting_and_a_reducing_member() -> None:
    def make() -> Agent:
        return map_reduce(
            echo("sum"),
            split=llm("first part\n\n second part \n"),
            reduce=echo("total"),
            max_items=4,
            name="digest",
        )

    mr = make()
    answer = mr.run_sync("a long text")
    assert answer == "total:1. sum:first part\n\n2. sum:second part"
    assert [r["member"] for r in receipts(mr.snapshot())] == ["split", "map_0", "map_1", "reduce"]
    assert events(mr)[0][1]["by"] == "member"
    assert_law(mr)
    replays_whole(mr, make())
    listed = map_reduce(echo("x"), split=lambda m: ["p", "q"])  # no reduce: the listing
    assert listed.run_sync("go") == "1. x:p\n\n2. x:q"


def test_items_past_max_items_are_dropped_and_the_drop_is_recorded() -> None:
    mr = map_reduce(echo("m"), split=lambda m: list(m), reduce=lambda a: ",".join(a), max_items=2)
    assert mr.run_sync("abcd") == "m:a,m:b"
    snap = mr.snapshot()
    assert thaw(snap.state["items"]) == ["a", "b", "c", "d"]  # every item, as split
    assert events(mr)[0][1] == {
        "items": 4,
        "ran": 2,
        "dropped": 2,
        "max_items": 2,
        "by": "function",
    }
    merge = next(c for c in snap.history() if c.stage_id == "_map" and c.kind == "merge")
    assert merge.detail["for_each"]["dropped"] == 2
    replays_whole(mr)
    empty = map_reduce(echo("m"), split=lambda m: [], reduce=lambda a: f"{len(a)} answers")
    assert empty.run_sync("nothing") == "0 answers"
    assert receipts(empty.snapshot()) == []
    replays_whole(empty)


def test_at_most_concurrency_items_run_at_once() -> None:
    live = {"now": 0, "most": 0}

    async def slow(args: dict[str, Any], ctx: ToolContext) -> str:
        live["now"] += 1
        live["most"] = max(live["most"], live["now"])
        await anyio.sleep(0.02)
        live["now"] -= 1
        return "read"

    def respond(request: Any) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return "done"
        return {"tool_calls": [{"id": "s", "name": "slow", "args": {}}]}

    tool = define_tool(name="slow", description="d", input_schema={"type": "object"}, execute=slow)
    mapper = Agent.create(provider=mock(respond=respond), model="m").tool(tool).build()
    mr = map_reduce(mapper, split=lambda m: list(m), concurrency=2)
    mr.run_sync("abcdef")
    assert live["most"] == 2
    assert assert_law(mr) == 12


def test_the_caller_reaches_every_item_and_every_proposal() -> None:
    seen: list[Any] = []

    def whoami(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.append((ctx.identity.tenant if ctx.identity else None, ctx.session_id))
        return "ok"

    who = define_tool(
        name="whoami", description="d", input_schema={"type": "object"}, execute=whoami
    )

    def respond(request: Any) -> Any:
        if request.messages[-1].role == "tool":
            return "checked"
        return {"tool_calls": [{"id": "w", "name": "whoami", "args": {}}]}

    def checker() -> Agent:
        return Agent.create(provider=mock(respond=respond), model="m").tool(who).build()

    mr = map_reduce(checker(), split=lambda m: ["a", "b", "c"])
    mr.run_sync("go", identity={"tenant": "acme"}, session_id="s1")
    tree = tree_of_thoughts(checker(), evaluate=checker(), k=2, beam=1, depth=1)
    tree.run_sync("go", identity={"tenant": "acme"}, session_id="s1")
    assert seen == [("acme", "s1")] * 7  # 3 items, 2 proposals, 2 evaluations
    assert_law(mr) and assert_law(tree)


def pausing_mapper() -> Agent:
    def respond(request: Any) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return f"answered {last.content}"
        if last.content.endswith("?"):
            question = {"question": f"Which {last.content}"}
            return {
                "tool_calls": [{"id": f"q-{last.content}", "name": "ask_human", "args": question}]
            }
        return f"plain {last.content}"

    return Agent.create(provider=mock(respond=respond), model="m").tool(ask_human()).build()


def paused_map() -> Agent:
    return map_reduce(pausing_mapper(), split=lambda m: m.split(","), max_items=4, concurrency=2)


@pytest.mark.timeout(60)
def test_an_item_that_pauses_resumes_and_its_recording_replays_without_hanging(
    tmp_path: Path,
) -> None:
    mr = paused_map()
    out = mr.run_sync("a,b?,c,d?", identity={"tenant": "acme"})
    questions = []
    while isinstance(out, Paused):
        questions.append(out.question)
        out = mr.resume_sync(out.checkpoint, f"yes-{len(questions)}")
    assert questions == ["Which b?", "Which d?"]
    assert out == "1. plain a\n\n2. answered yes-1\n\n3. plain c\n\n4. answered yes-2"
    calls = receipts(mr.snapshot())
    assert [r["member"] for r in calls] == ["map_0", "map_1", "map_2", "map_3", "map_1", "map_3"]
    assert assert_law(mr) == 6
    path = save_recording(mr, tmp_path / "paused.jsonl")

    def replayed() -> None:  # in a worker thread: a hang fails the test instead of blocking it
        replays_whole(mr, paused_map())
        assert replay(load_recording(path)).state["final_answer"] == out

    failed: list[BaseException] = []

    def guarded() -> None:
        try:
            replayed()
        except BaseException as exc:  # handed to the test below
            failed.append(exc)

    worker = threading.Thread(target=guarded, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "the replay of a recording whose item paused hung"
    if failed:
        raise failed[0]
    paused = paused_map()
    left = paused.run_sync("a,b?,c,d?")
    left = paused.resume_sync(left.checkpoint, "yes")  # one of two answered: still paused
    assert isinstance(left, Paused) and left.question == "Which d?"
    for still in (replay(paused.snapshot()), replay(paused.snapshot(), paused_map())):
        assert still.status == "paused"  # recorded while paused: replays to the same pause
        assert receipts(still) == receipts(paused.snapshot())


# --- tree_of_thoughts --------------------------------------------------------------------


def _thoughts(text: str) -> list[str]:
    """The numbered thoughts a proposer or evaluator was shown."""
    shown = text.rsplit("\n\nThoughts", 1)[1]  # after the problem, whatever it holds
    return [line.split(". ", 1)[1] for line in shown.splitlines() if re.match(r"\d+\. ", line)]


def proposer() -> Agent:
    """Thought ``<option>`` at the path's depth: ``L<depth>.<option>``."""

    def respond(request: Any) -> str:
        text = request.messages[-1].content
        option = text.split("(option ")[1].split(" ")[0]
        return f"L{len(_thoughts(text))}.{option}"

    return LLMCall.create(provider=mock(respond=respond), model="m").build()


def test_the_beam_keeps_the_best_thoughts_and_ties_go_to_the_earlier_candidate() -> None:
    scores = {"L0.1": 1.0, "L0.2": 3.0, "L0.3": 3.0}

    def evaluate(problem: str, thoughts: list[str]) -> float:
        assert problem == "make 24"
        last = thoughts[-1]
        return scores.get(last, float(len(thoughts) * 10 + int(last[-1])))

    t = tree_of_thoughts(proposer(), evaluate=evaluate, k=3, beam=2, depth=2)
    answer = t.run_sync("make 24")
    state = thaw(t.snapshot().state)
    level0 = [r for r in state["tree"] if r["level"] == 0]
    assert [(r["index"], r["score"], r["kept"]) for r in level0] == [
        (0, 1.0, False),
        (1, 3.0, True),
        (2, 3.0, True),
    ]
    level1 = [r for r in state["tree"] if r["level"] == 1]
    assert len(level1) == 6 and [r["parent"] for r in level1] == [0, 0, 0, 1, 1, 1]
    assert [r["index"] for r in level1 if r["kept"]] == [2, 5]  # 23.0 twice: both kept
    assert state["best_path"] == ["L0.2", answer] and answer.endswith(".3")
    beams = [p for n, p in events(t) if n == "composition.beam"]
    assert beams[0] == {
        "level": 0,
        "candidates": 3,
        "kept": 2,
        "best": 1,
        "best_score": 3.0,
        "unscored": 0,
    }
    assert beams[1]["best"] == 2  # the tie at 23.0 goes to the earlier candidate
    assert [r["member"] for r in receipts(t.snapshot())] == [
        *(f"propose_{i}" for i in range(3)),
        *(f"propose_{i}" for i in range(6)),
    ]
    assert assert_law(t) == 9
    replays_whole(t)


def test_an_evaluating_member_scores_and_an_answer_without_a_number_ranks_last() -> None:
    ratings = {"L0.1": "no idea", "L0.2": "score: 7", "L1.1": "5", "L1.2": "9/10"}

    def rate(request: Any) -> str:
        return ratings[_thoughts(request.messages[-1].content)[-1]]

    judge = LLMCall.create(provider=mock(respond=rate), model="m").build()

    def make() -> Agent:
        return tree_of_thoughts(proposer(), evaluate=judge, k=2, beam=1, depth=2, name="judged")

    t = make()
    t.run_sync("plan a trip")
    rows = thaw(t.snapshot().state["tree"])
    assert [(r["level"], r["score"], r["kept"]) for r in rows] == [
        (0, None, False),
        (0, 7.0, True),
        (1, 5.0, False),
        (1, 9.0, True),
    ]
    beams = [p for n, p in events(t) if n == "composition.beam"]
    assert beams[0]["unscored"] == 1 and beams[0]["best"] == 1
    members = [r["member"] for r in receipts(t.snapshot())]
    assert members == ["propose_0", "propose_1", "evaluate_0", "evaluate_1"] * 2
    assert served_at(t.snapshot(), 3).messages[0].content.endswith("higher is better.")
    assert_law(t)
    snap = t.snapshot()
    alone = replay(snap)
    assert alone.state["final_answer"] == snap.state["final_answer"]
    assert receipts(alone) == receipts(snap)


def test_a_proposer_that_pauses_resumes_and_replays() -> None:
    ask = {"tool_calls": [{"id": "q", "name": "ask_human", "args": {"question": "Hint?"}}]}
    asker = Agent.create(provider=mock(replies=[ask, "idea"]), model="m").tool(ask_human()).build()
    t = tree_of_thoughts(asker, evaluate=lambda p, th: 1.0, k=1, beam=1, depth=1)
    out = t.run_sync("think")
    assert isinstance(out, Paused) and out.question == "Hint?"
    assert t.resume_sync(out.checkpoint, "go left") == "idea"
    assert_law(t)
    replays_whole(t)


# --- nesting, refusals, the fixture ----------------------------------------------------------


def test_patterns_nest_in_compositions_and_compositions_in_patterns() -> None:
    inner = Sequence.create(name="inner").step("a", echo("a")).step("b", echo("b")).build()
    mr = map_reduce(inner, split=lambda m: ["x", "y"], reduce=lambda a: "+".join(a), name="mr")
    outer = Sequence.create(name="outer").step("fan", mr).step("end", echo("end")).build()
    assert outer.run_sync("go") == "end:b:a:x+b:a:y"
    members = [r["member"] for r in receipts(outer.snapshot())]
    assert members == ["fan.map_0.a", "fan.map_0.b", "fan.map_1.a", "fan.map_1.b", "end"]
    assert assert_law(outer) == 5
    replays_whole(outer)


def test_patterns_refuse_what_they_cannot_run() -> None:
    with pytest.raises(AgentBuildError, match="at least two members"):
        swarm({"a": llm("x")})
    with pytest.raises(AgentBuildError, match="entry='c' is not a member"):
        swarm({"a": llm("x"), "b": llm("y")}, entry="c")
    with pytest.raises(AgentBuildError, match="must be a runner"):
        swarm({"a": llm("x"), "b": "nope"})  # type: ignore[dict-item]
    with pytest.raises(AgentBuildError, match="max_hops=-1"):
        swarm({"a": member("x"), "b": llm("y")}, max_hops=-1)
    with pytest.raises(AgentBuildError, match="unknown keyword"):
        swarm({"a": llm("x"), "b": llm("y")}, retries=2)
    with pytest.raises(AgentBuildError, match="no member has the handoff tool 'handoff'"):
        swarm({"a": llm("x"), "b": llm("y")})
    with pytest.raises(AgentBuildError, match="no member has the handoff tool 'pass'"):
        swarm({"a": member("x"), "b": member("y")}, tool="pass")
    with pytest.raises(AgentBuildError, match="max_items=0"):
        map_reduce(llm("x"), split=lambda m: [m], max_items=0)
    with pytest.raises(AgentBuildError, match="split= takes a function"):
        map_reduce(llm("x"), split="lines")  # type: ignore[arg-type]
    with pytest.raises(AgentBuildError, match="reduce= takes a function"):
        map_reduce(llm("x"), split=lambda m: [m], reduce=3)  # type: ignore[arg-type]
    with pytest.raises(AgentBuildError, match="beam=0"):
        tree_of_thoughts(llm("x"), evaluate=lambda p, t: 1.0, beam=0)
    with pytest.raises(AgentBuildError, match="evaluate= takes a function"):
        tree_of_thoughts(llm("x"), evaluate="best")  # type: ignore[arg-type]


def test_a_function_that_answers_what_a_pattern_cannot_use_is_named() -> None:
    def refused(runner: Agent, stage: str, says: str) -> None:
        with pytest.raises(StageError, match=stage) as info:
            runner.run_sync("abc")
        assert isinstance(info.value.__cause__, PatternError)
        assert says in str(info.value.__cause__)

    bad_split = map_reduce(echo("m"), split=lambda m: m)  # type: ignore[arg-type,return-value]
    refused(bad_split, "_split", "split returned str; it must return a list of strings")
    bad_item = map_reduce(echo("m"), split=lambda m: ["a", 2])  # type: ignore[list-item]
    refused(bad_item, "_split", "item 1 as int")
    nan = tree_of_thoughts(echo("t"), evaluate=lambda p, t: math.nan, k=1, beam=1, depth=1)
    refused(nan, "_beam", "evaluate (level 0, candidate 0) returned nan; it must return a finite")


# --- a recording from this version loads in the next ------------------------------------------

FIXTURE = FIXTURES / "recording-patterns-v1.jsonl"


def fixture_runner() -> Agent:
    """The run kept in ``fixtures/recording-patterns-v1.jsonl`` (made by :func:`made_fixture`):
    a sequence of a swarm (a refused and an accepted handoff), a map-reduce whose second item
    asks a person, and a tree of thoughts scored by a member."""
    triage = member(
        handing("biling", call_id="h1"), "One moment.", handing("billing", "refund", "h2"), "On."
    )
    desk = swarm({"triage": triage, "billing": member("refund issued, 2 items")}, name="desk")
    ratings = {"L0.1": "3", "L0.2": "8", "L1.1": "6", "L1.2": "no score"}

    def rate(request: Any) -> str:
        return ratings[_thoughts(request.messages[-1].content)[-1]]

    judge = LLMCall.create(provider=mock(respond=rate), model="m").build()
    return (
        Sequence.create(name="patterns")
        .step("desk", desk)
        .step(
            "items",
            map_reduce(pausing_mapper(), split=lambda m: ["a", "b?", "c"], max_items=3, name="mr"),
        )
        .step("think", tree_of_thoughts(proposer(), evaluate=judge, k=2, beam=1, depth=2))
        .build()
    )


def made_fixture() -> Agent:
    made = fixture_runner()
    out = made.run_sync("I was charged twice", identity={"tenant": "acme"}, session_id="s1")
    assert isinstance(out, Paused) and out.question == "Which b?"
    assert made.resume_sync(out.checkpoint, "the blue one") == "L1.1"
    return made


def test_a_patterns_recording_from_this_version_loads_and_replays() -> None:
    loaded = load_recording(FIXTURE)
    calls = receipts(loaded)
    assert assert_law(loaded) == len(calls) == 17
    assert [r["member"] for r in calls[:6]] == [
        "desk.triage",
        "desk.triage",
        "desk.triage",
        "desk.triage",
        "desk.billing",
        "items.map_0",
    ]
    assert loaded.state["final_answer"] == "L1.1"
    replayed = replay(loaded)  # no runner, no model, no person: the record alone
    assert [c.writes for c in replayed.history()] == [c.writes for c in loaded.history()]
    fresh = made_fixture()  # this version serves the same requests, byte for byte
    assert [r["request_hash"] for r in receipts(fresh.snapshot())] == [
        r["request_hash"] for r in calls
    ]


if __name__ == "__main__":  # python -m tests.agent.test_patterns: writes the fixture
    save_recording(made_fixture(), FIXTURE)


def test_the_narrative_tells_handoffs_splits_and_beams_from_the_log() -> None:
    from trackway.recorders import narrative, narrative_from_log

    s = desk()
    story = narrative()
    s.attach(story)
    s.run_sync("charged twice")
    lines = [line.strip() for line in story.lines()]
    assert lines[:2] == [
        'Swarm desk was asked "charged twice"',
        "Starting with triage (at most 4 hops)",
    ]
    assert "triage handed the conversation to billing (hop 1)" in lines
    assert not any("_take" in line or "_route" in line for line in lines)  # structure: silent
    assert narrative_from_log(s.snapshot()).lines() == story.lines()
    mr = map_reduce(echo("m"), split=lambda m: list(m), reduce="".join, max_items=2)
    mr.run_sync("abc")
    told = [line.strip() for line in narrative_from_log(mr.snapshot()).lines()]
    assert "Split into 3 items by function: ran 2, dropped 1 past 2" in told
    assert 'Reduced the answers: "m:am:b"' in told and not any("_slot" in t for t in told)
    t = tree_of_thoughts(proposer(), evaluate=lambda p, th: 1.0, k=2, beam=1, depth=1)
    t.run_sync("go")
    told = [line.strip() for line in narrative_from_log(t.snapshot()).lines()]
    assert "Searching 1 level: 2 thoughts per path, keeping the best 1" in told
    assert "Level 0: kept 1 of 2 thoughts; best: thought 0 at 1.0" in told
