"""The ledger-fact hold (``keep_ledger_facts``): fact turns held beyond the window's kept
turns by the shared planner, newest first up to a ceiling, anchored at the current request,
released by the stand-down; the window record's ``ledger_facts`` and ``dropped_standings``;
every strategy gets it; exact served_at and hermetic replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agent.test_window import LOOKUP, OTHER, _anthropic_valid, _openai_valid
from tests.examples import examples
from tests.law import assert_law
from trackway.agent import (
    Agent,
    AgentBuildError,
    LedgerFactPin,
    WindowPlan,
    WindowVisit,
    anthropic,
    load_recording,
    mock,
    openai,
    receipts,
    replay,
    save_recording,
    served_at,
    sliding_window,
    summarize_oldest,
    token_budget,
)
from trackway.agent.context._window_plan import FactHold, Turns, plan_removal
from trackway.engine import thaw
from trackway.tools import define_tool


def _search(args: dict[str, Any], ctx: Any) -> str:
    q = int(args["q"])
    return f"finding {q}: the optic on port {q} was swapped" if q % 3 == 0 else f"noise {q} " * 4


SEARCH = define_tool(
    name="search",
    description="Search the logs.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    execute=_search,
)


def script(n: int, *, every: int = 3, usage: int | None = None) -> list[Any]:
    """``n`` calls; each declares the previous result a fact (every ``every``-th) or noise."""
    replies: list[Any] = []
    for i in range(1, n + 1):
        args: dict[str, Any] = {"q": str(i)}
        if i > 1:
            standing = "fact" if (i - 1) % every == 0 else "noise"
            args["_findings"] = {"previous": [{"id": f"c{i - 1}", "standing": standing}]}
        reply: dict[str, Any] = {"tool_calls": [{"id": f"c{i}", "name": "search", "args": args}]}
        if usage is not None:
            reply["usage"] = {"input_tokens": usage}
        replies.append(reply)
    return [*replies, "port 3 and the others"]


def agent(replies: list[Any], strategy: Any, facts: Any = None, **create: Any) -> Agent:
    builder = Agent.create(provider=mock(replies=replies), model="m", max_iterations=60, **create)
    builder = builder.tool(SEARCH).window(strategy, keep_last_tool_results=0)
    if facts != "off":
        builder = builder.findings() if facts is None else builder.findings(keep_ledger_facts=facts)
    return builder.build()


def events_of(a: Agent) -> list[Any]:
    return [e for c in a.snapshot().commits for e in c.events]


def facts_served(a: Agent) -> list[int]:
    """The planted facts whose result the answer turn was served verbatim."""
    last = served_at(a.snapshot(), len(a.snapshot().state["receipts"]))
    return sorted(
        int(m.tool_call_id[1:])
        for m in last.messages
        if m.role == "tool" and (m.content or "").startswith("finding")
    )


def test_fact_turns_are_held_beyond_the_window_newest_first_up_to_the_ceiling() -> None:
    alone = agent(script(12), sliding_window(keep_recent_turns=3), facts="off")
    alone.run_sync("which port?")
    assert facts_served(alone) == [12]  # recency alone
    held = agent(script(12), sliding_window(keep_recent_turns=3))
    held.run_sync("which port?")
    assert facts_served(held) == [3, 6, 9, 12]  # 12 in the window, 9/6/3 held (ceiling 4)
    two = agent(script(12), sliding_window(keep_recent_turns=3), facts=2)
    two.run_sync("which port?")
    assert facts_served(two) == [6, 9, 12]
    rows = two.snapshot().state["window"]
    last = rows[-1]["ledger_facts"]
    assert last["limit"] == 2 and last["keep_recent_turns"] == 3
    assert [p["turn"] for p in last["pinned"]] == sorted(
        (p["turn"] for p in last["pinned"]), reverse=True
    )  # newest first
    assert [p["tool"] for p in last["pinned"]] == ["search", "search"]
    assert last["yielded"] == 1  # the fact of call 3 was turned away by the ceiling
    history = two.snapshot().state["history"]
    for pin in last["pinned"]:
        turn = pin["turn"]
        assert pin["chars"] == len(history[turn]["content"] or "") + len(
            history[turn + 1]["content"]
        )
    assert {"turn": last["pinned"][0]["turn"], "why": "ledger-fact"} in rows[-1]["held"]
    for a in (alone, held, two):
        assert_law(a)
        assert replay(a.snapshot()).state["window"] == a.snapshot().state["window"]


def test_the_record_names_the_standing_of_every_result_that_left() -> None:
    a = agent(script(8), sliding_window(keep_recent_turns=2))
    a.run_sync("which port?")
    dropped = [d for r in a.snapshot().state["window"] for d in r.get("dropped_standings", ())]
    by_id = {d["id"]: d for d in dropped}
    assert by_id["c1"] == {"id": "c1", "name": "search", "standing": "noise"}
    assert "c3" not in by_id  # a fact: held
    assert all(d["standing"] == "noise" for d in dropped)  # facts stay; noise leaves
    # a result the model never named leaves without a standing
    silent = [
        {"tool_calls": [{"id": f"s{i}", "name": "search", "args": {"q": "1"}}]} for i in (1, 2, 3)
    ]
    b = agent([*silent, "done"], sliding_window(keep_recent_turns=1))
    b.run_sync("go")
    gone = [d for r in b.snapshot().state["window"] for d in r.get("dropped_standings", ())]
    assert gone and all("standing" not in d for d in gone)
    assert_law(b)


def test_an_unarmed_agent_records_what_it_always_did() -> None:
    plain = agent(script(6), sliding_window(keep_recent_turns=2), facts="off", keep_ledger_facts=5)
    plain.run_sync("go")
    state = plain.snapshot().state
    assert "keep_ledger_facts" not in state["settings"]["window"]
    assert all("ledger_facts" not in r and "dropped_standings" not in r for r in state["window"])
    assert all(h["why"] != "ledger-fact" for r in state["window"] for h in r.get("held", ()))
    events = events_of(plain)
    assert not any(e.name == "context.ledger_facts" for e in events)


def test_the_findings_door_wins_and_off_holds_nothing() -> None:
    a = agent(script(12), sliding_window(keep_recent_turns=3), facts=1, keep_ledger_facts=6)
    a.run_sync("go")
    assert a.snapshot().state["settings"]["window"]["keep_ledger_facts"] == 1
    assert facts_served(a) == [9, 12]
    b = agent(script(12), sliding_window(keep_recent_turns=3), keep_ledger_facts=6)
    b.run_sync("go")
    assert facts_served(b) == [3, 6, 9, 12]
    for off in (0, False):
        c = agent(script(12), sliding_window(keep_recent_turns=3), facts=off)
        c.run_sync("go")
        assert facts_served(c) == [12]
        assert c.snapshot().state["window"][-1]["ledger_facts"]["pinned"] == []


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_a_bad_ceiling_is_refused_at_build(bad: Any) -> None:
    with pytest.raises(AgentBuildError, match="keep_ledger_facts"):
        Agent.create(provider=mock(reply="x"), model="m").tool(SEARCH).findings(
            keep_ledger_facts=bad
        )
    with pytest.raises(AgentBuildError, match="keep_ledger_facts"):
        Agent.create(provider=mock(reply="x"), model="m", keep_ledger_facts=bad)


def test_a_new_person_turn_releases_the_previous_loop() -> None:
    replies = [*script(9)[:-1], "first", *script(3)]
    a = agent(replies, sliding_window(keep_recent_turns=2))
    a.run_sync("first question")
    first = a.snapshot().state["window"][-1]["ledger_facts"]["pinned"]
    assert first  # facts 3 and 6 were held in the loop they belong to
    a.follow_up_sync("and now?")
    rows = a.snapshot().state["window"]
    assert rows[0]["ledger_facts"]["pinned"] == []  # anchored: nothing before the request
    assert_law(a)


def test_the_stand_down_releases_fact_pins_after_two_blocked_visits() -> None:
    # every result a fact, a window of 1 turn: each visit the leaving turn is a fact
    a = agent(script(8, every=1), sliding_window(keep_recent_turns=1), facts=10)
    a.run_sync("go")
    rows = a.snapshot().state["window"]
    blocked = [i for i, r in enumerate(rows) if r["ledger_facts"].get("blocked")]
    downs = [i for i, r in enumerate(rows) if r["ledger_facts"].get("stand_down")]
    assert downs, rows
    for i in downs:  # the two visits before each stand-down removed nothing, named only pins
        assert {i - 1, i - 2} <= set(blocked)
        assert rows[i]["ledger_facts"]["pinned"] == [] and rows[i]["removed_messages"] > 0
    events = events_of(a)
    down_events = [e for e in events if e.name == "context.ledger_facts"]
    assert sum(1 for e in down_events if e.payload["stand_down"]) == len(downs)
    assert_law(a)
    assert replay(a.snapshot()).state["window"] == rows


def test_every_strategy_gets_the_hold() -> None:
    budget = agent(script(12, usage=900), token_budget(max_input_tokens=100, keep_recent_turns=3))
    budget.run_sync("go")
    assert facts_served(budget) == [3, 6, 9, 12]
    summary = agent(
        script(12),
        summarize_oldest(keep_recent_turns=3, summarizer=mock(respond=lambda r: "s")),
    )
    summary.run_sync("go")
    assert facts_served(summary) == [3, 6, 9, 12]

    class Greedy:  # asks to drop all but its own last two turns, never asking the planner
        name = "greedy"

        def settings(self) -> dict[str, Any]:
            return {}

        def plan(self, visit: WindowVisit) -> WindowPlan:
            return WindowPlan([t.head for t in visit.kept[:-2]], "all but two")

    greedy = agent(script(12), Greedy())
    greedy.run_sync("go")
    assert facts_served(greedy) == [3, 6, 9, 12]  # the ceiling spent with no window
    refused = greedy.snapshot().state["window"][-1]["refused"]
    assert len(refused) >= 3  # the person's request, and the facts it asked to drop
    for a in (budget, summary, greedy):
        assert_law(a)
        assert replay(a.snapshot()).state["window"] == a.snapshot().state["window"]


# -- the planner, as a property ---------------------------------------------------------


@settings(max_examples=examples(80), deadline=None)
@given(
    shape=st.lists(
        st.tuples(
            st.sampled_from(["user", "assistant", "calls"]),
            st.lists(st.sampled_from(["fact", "open", "noise", "ruled-out", None]), max_size=3),
        ),
        min_size=1,
        max_size=16,
    ),
    keep=st.integers(0, 6),
    pins=st.integers(0, 2),
    limit=st.integers(0, 5),
    down=st.booleans(),
)
def test_the_fact_hold_keeps_its_four_bounds(
    shape: list[Any], keep: int, pins: int, limit: int, down: bool
) -> None:
    history: list[dict[str, Any]] = []
    standings: dict[str, str] = {}
    for n, (kind, results) in enumerate(shape):
        if kind == "user":
            history.append({"role": "user", "content": "u"})
        elif kind == "assistant" or not results:
            history.append({"role": "assistant", "content": "a"})
        else:
            ids = [f"{n}-{j}" for j in range(len(results))]
            calls = [{"id": i, "name": "t", "args": {}} for i in ids]
            history.append({"role": "assistant", "content": "", "tool_calls": calls})
            for j, (cid, standing) in enumerate(zip(ids, results, strict=True)):
                history.append(
                    {"role": "tool", "content": "r" * j, "tool_call_id": cid, "name": f"t{j}"}
                )
                if standing is not None:
                    standings[cid] = standing
    kept = tuple(Turns().advance(history))
    facts = FactHold(standings, limit, down)
    plain = plan_removal(kept, keep, pins)
    held = plan_removal(kept, keep, pins, (), facts)
    visit = WindowVisit(1, 1, kept, None, history, None, _keep_last_tool_results=pins, _facts=facts)
    assert visit.removable(keep) == held  # one planner pass answers every keep
    current = next((t.head for t in reversed(kept) if t.said_by_person), -1)
    recent = {t.head for t in kept[max(0, len(kept) - keep) :]} if keep else set()
    by_head = {t.head: t for t in kept}
    pinned = [p.turn for p in held.pins]
    assert len(pinned) <= limit and (not down or not pinned)  # the ceiling; the stand-down
    assert pinned == sorted(pinned, reverse=True)  # spent newest first
    for pin in held.pins:
        assert isinstance(pin, LedgerFactPin)
        assert pin.turn > current and pin.turn not in recent  # anchored; in-window is free
        assert any(standings.get(c) == "fact" for c in pin.ids)  # the model's claim only
        assert pin.chars == by_head[pin.turn].chars
    assert set(held.removable) == set(plain.removable) - set(pinned)  # holds only add
    candidates = [
        h
        for h in plain.removable
        if h > current and any(standings.get(c) == "fact" for c, _ in by_head[h].results)
    ]
    if not down and limit:
        assert len(pinned) + held.yielded == len(candidates)
        assert set(pinned) == set(sorted(candidates, reverse=True)[:limit])


# -- the wire-validity property, with the fact hold and compaction ----------------------

STANDING = st.sampled_from(["fact", "fact", "open", "noise", "ruled-out", None])


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(
        st.lists(st.tuples(st.sampled_from(["lookup", "other"]), STANDING), min_size=1, max_size=3),
        min_size=1,
        max_size=9,
    ),
    follow=st.lists(
        st.lists(st.tuples(st.sampled_from(["lookup", "other"]), STANDING), min_size=1, max_size=2),
        max_size=3,
    ),
    which=st.sampled_from(["sliding", "budget", "summary", "compaction"]),
    keep=st.integers(1, 4),
    pins=st.integers(0, 2),
    limit=st.integers(0, 4),
)
def test_served_messages_stay_valid_on_both_wires_with_facts_and_compaction(
    batches: list[Any], follow: list[Any], which: str, keep: int, pins: int, limit: int
) -> None:
    def replies(rounds: list[Any], prefix: str) -> list[Any]:
        out: list[Any] = []
        previous: list[tuple[str, Any]] = []
        for i, batch in enumerate(rounds):
            tool_calls = []
            for j, (name, _) in enumerate(batch):
                args: dict[str, Any] = {"q": f"{i}-{j}"}
                named = [{"id": c, "standing": s} for c, s in previous if s is not None]
                if j == 0 and named:
                    args["_findings"] = {"previous": named}
                tool_calls.append({"id": f"{prefix}{i}-{j}", "name": name, "args": args})
            previous = [(f"{prefix}{i}-{j}", s) for j, (_, s) in enumerate(batch)]
            out.append({"tool_calls": tool_calls, "usage": {"input_tokens": 60 * (i + 1)}})
        return out

    script_ = [*replies(batches, "a"), "first answer", *replies(follow, "b"), "second answer"]
    summarizer = mock(respond=lambda request: "s")
    builder = (
        Agent.create(provider=mock(replies=script_), model="m", max_iterations=40)
        .tools([LOOKUP, OTHER])
        .findings(keep_ledger_facts=limit)
    )
    if which == "compaction":
        builder = builder.compaction(
            summarizer, threshold_chars=150, keep_recent_turns=keep, keep_last_tool_results=pins
        )
    else:
        strategy: Any = {
            "sliding": lambda: sliding_window(keep_recent_turns=keep),
            "budget": lambda: token_budget(max_input_tokens=150, keep_recent_turns=keep),
            "summary": lambda: summarize_oldest(keep_recent_turns=keep, summarizer=summarizer),
        }[which]()
        builder = builder.window(strategy, keep_last_tool_results=pins)
    a = builder.build()
    a.run_sync("first question")
    a.run_sync("and then?", continue_from=a.checkpoint())
    snap = a.snapshot()
    oa = openai("m", base_url="http://127.0.0.1:9", api_key="k")
    an = anthropic("m", base_url="http://127.0.0.1:9", api_key="k")
    for k in range(1, len(receipts(snap)) + 1):
        request = served_at(snap, k)
        _openai_valid(oa.body(request))
        _anthropic_valid(an.body(request))
        said = [m for m in request.messages if m.role == "user" and m.origin is None]
        assert said and said[-1].content == "and then?"  # the current request is served
    for row in snap.state["window"]:
        lf = row["ledger_facts"]
        assert len(lf["pinned"]) <= limit and lf["limit"] == limit
    assert_law(a)
    assert replay(snap).state["window"] == snap.state["window"]


def test_a_windowed_findings_recording_made_before_the_hold_replays_without_it() -> None:
    builder = Agent.create(provider=mock(replies=script(9)), model="m", max_iterations=20)
    builder = builder.tool(SEARCH).window(sliding_window(keep_recent_turns=2)).findings()
    builder._ledger_facts_unrecorded = True  # what a run of the previous version recorded
    old = builder.build()
    old.run_sync("go")
    snap = old.snapshot()
    assert "keep_ledger_facts" not in snap.state["settings"]["window"]
    assert all("ledger_facts" not in r for r in snap.state["window"])
    assert replay(snap).state["window"] == snap.state["window"]  # no hold on replay either
    assert replay(old).state["window"] == snap.state["window"]


FIXTURE = Path(__file__).parent / "fixtures" / "recording-window-facts-v1.jsonl"


def fixture_agent() -> Agent:
    """The run kept in ``fixtures/recording-window-facts-v1.jsonl`` (made by this module run
    as a script): twelve calls, a fact every third, a window of 3 turns, a ceiling of 2."""
    return agent(script(12), sliding_window(keep_recent_turns=3), facts=2)


def test_a_recording_from_this_version_loads_and_replays() -> None:
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 13
    state = thaw(loaded.state)
    assert state["settings"]["window"]["keep_ledger_facts"] == 2
    last = state["window"][-1]
    assert [p["tool"] for p in last["ledger_facts"]["pinned"]] == ["search", "search"]
    assert last["ledger_facts"]["yielded"] == 1
    assert any("dropped_standings" in r for r in state["window"])
    replayed = replay(loaded)  # no agent: the hold is rebuilt from the recorded settings
    assert [c.writes for c in replayed.history()] == [c.writes for c in loaded.history()]
    fresh = fixture_agent()
    fresh.run_sync("which port?")
    assert thaw(fresh.snapshot().state["window"]) == state["window"]


if __name__ == "__main__":  # python -m tests.agent.test_window_facts: writes the fixture
    made = fixture_agent()
    made.run_sync("which port?")
    save_recording(made, FIXTURE)
