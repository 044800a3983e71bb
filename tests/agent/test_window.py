"""Context windowing: the window stage's record and view per strategy, the planner's holds,
served requests that stay valid on both wire formats, and exact served_at / replay."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trackway.agent import (
    Agent,
    AgentBuildError,
    Paused,
    anthropic,
    load_recording,
    mock,
    openai,
    receipts,
    replay,
    save_recording,
    served_at,
)
from trackway.agent.context._window import (
    WindowPlan,
    WindowVisit,
    sliding_window,
    summarize_oldest,
    token_budget,
)
from trackway.agent.context._window_plan import Turns, plan_removal
from trackway.engine import Snapshot, thaw
from trackway.tools import ask, define_tool

LOOKUP = define_tool(
    name="lookup",
    description="Look up.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    execute=lambda args, ctx: f"result for {args.get('q', '')} " + "x" * 40,
)
OTHER = define_tool(
    name="other",
    description="Other.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    execute=lambda args, ctx: "other " + "y" * 40,
)


def calls(i: int, *names: str, usage: Mapping[str, int] | None = None) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "tool_calls": [
            {"id": f"c{i}-{j}", "name": n, "args": {"q": f"{i}-{j}"}} for j, n in enumerate(names)
        ]
    }
    if usage is not None:
        reply["usage"] = dict(usage)
    return reply


def law(snap: Snapshot) -> None:
    for k, receipt in enumerate(receipts(snap), start=1):
        assert served_at(snap, k).hash == receipt["request_hash"], k


def build(replies: list[Any], strategy: Any, *tools: Any, **kw: Any) -> Agent:
    keep = kw.pop("keep_last_tool_results", 2)
    return (
        Agent.create(provider=mock(replies=replies), model="m", max_iterations=40, **kw)
        .tools(tools or [LOOKUP])
        .window(strategy, keep_last_tool_results=keep)
        .build()
    )


def test_a_sliding_window_serves_the_recent_turns_and_records_each_visit() -> None:
    replies = [calls(i, "lookup") for i in range(6)] + ["done"]
    agent = build(replies, sliding_window(keep_recent_turns=2), keep_last_tool_results=0)
    assert agent.run_sync("find it") == "done"
    snap = agent.snapshot()
    state = snap.state
    assert len(state["history"]) == 13  # the record keeps everything
    records = state["window"]
    assert len(records) == 7  # one per model call
    assert records[0]["removed"] == [] and records[0]["held"] == [
        {"turn": 0, "why": "current-request"}
    ]
    assert records[3]["removed"] == [[1, 3]] and records[3]["removed_messages"] == 2
    assert state["window_view"]["drop"] == [[1, 9]]
    last = served_at(snap, 7)
    assert [m.role for m in last.messages] == [
        "user",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert last.messages[0].content == "find it"  # the person's request never leaves
    assert last.messages[1].origin == "library"
    assert last.messages[1].content == (
        "[Left out of this request to fit the context window: 8 earlier messages, including "
        "results of lookup ×4.]"
    )
    assert [m.tool_call_id for m in last.messages if m.role == "tool"] == ["c4-0", "c5-0"]
    assert state["settings"]["window"] == {
        "strategy": "sliding_window",
        "keep_recent_turns": 2,
        "keep_last_tool_results": 0,
    }
    law(snap)


def test_the_latest_results_of_each_tool_are_held() -> None:
    replies = [calls(0, "other"), *[calls(i, "lookup") for i in range(1, 6)], "done"]
    agent = build(replies, sliding_window(keep_recent_turns=1), LOOKUP, OTHER)
    agent.run_sync("go")
    snap = agent.snapshot()
    served = served_at(snap, len(receipts(snap)))
    names = [m.name for m in served.messages if m.role == "tool"]
    assert names == ["other", "lookup", "lookup"]  # other's only result, lookup's latest 2
    held = snap.state["window"][-1]["held"]
    assert {"turn": 1, "why": "last-tool-result"} in held
    law(snap)


def test_token_budget_acts_on_reported_usage_only() -> None:
    big = {"input_tokens": 900, "output_tokens": 5}
    replies = [
        calls(0, "lookup"),  # reports nothing
        calls(1, "lookup", usage={"input_tokens": 100}),
        calls(2, "lookup", usage=big),
        calls(3, "lookup", usage={"input_tokens": 300}),
        "done",
    ]
    agent = build(
        replies, token_budget(max_input_tokens=500, keep_recent_turns=1), keep_last_tool_results=0
    )
    agent.run_sync("go")
    records = agent.snapshot().state["window"]
    assert records[0]["unmeasured"] is True and records[0]["measured_input_tokens"] is None
    assert "never guesses" in records[1]["why"]  # call 1 reported no usage
    assert records[2]["over_budget"] is False and records[2]["removed"] == []
    assert records[3]["over_budget"] is True and records[3]["measured_input_tokens"] == 900
    assert records[3]["removed"] == [[1, 5]]
    assert records[4]["over_budget"] is False
    law(agent.snapshot())


def test_summarize_oldest_folds_with_its_own_receipts(tmp_path: Path) -> None:
    summarizer = mock(replies=["lookups 0 and 1 found x", "lookups 0 to 3 found x"])
    replies = [calls(i, "lookup") for i in range(5)] + ["done"]
    strategy = summarize_oldest(keep_recent_turns=2, summarizer=summarizer, model="small")
    agent = build(replies, strategy, keep_last_tool_results=0)
    agent.run_sync("go")
    snap = agent.snapshot()
    state = snap.state
    assert [r["k"] for r in receipts(snap)] == [1, 2, 3, 4, 5, 6]  # numbering unshifted
    summaries = state["summaries"]
    assert [s["n"] for s in summaries] == [1, 2] and summaries[0]["model"] == "small"
    assert summaries[1]["summary"] == "lookups 0 to 3 found x"
    assert summarizer.requests[1].messages[0].content.startswith("<<<\n(earlier summary) lookups 0")
    served = served_at(snap, 6)
    assert served.messages[1].content.endswith("lookups 0 to 3 found x")
    assert served.messages[1].content.startswith("[A summary of earlier messages")
    law(snap)
    loaded = load_recording(save_recording(agent, tmp_path / "r.json"))
    calls_before = len(summarizer.requests)
    replayed = replay(loaded)  # no summarizer, no agent: the record says what was folded
    assert len(summarizer.requests) == calls_before
    assert replayed.state["window_view"] == state["window_view"]


def test_a_failing_summarizer_folds_nothing_and_says_so() -> None:
    summarizer = mock(replies=[])  # exhausted: every call fails
    replies = [calls(i, "lookup") for i in range(4)] + ["done"]
    agent = build(
        replies,
        summarize_oldest(keep_recent_turns=1, summarizer=summarizer),
        keep_last_tool_results=0,
    )
    assert agent.run_sync("go") == "done"
    records = agent.snapshot().state["window"]
    assert any(r.get("summarizer_failed") == "MockExhaustedError" for r in records)
    assert "window_view" not in agent.snapshot().state


def test_a_custom_strategy_cannot_drop_what_the_planner_holds() -> None:
    class Greedy:
        name = "greedy"

        def settings(self) -> dict[str, Any]:
            return {}

        def plan(self, visit: WindowVisit) -> WindowPlan:
            return WindowPlan([t.head for t in visit.kept], "everything")

    replies = [calls(i, "lookup") for i in range(3)] + ["done"]
    agent = build(replies, Greedy(), keep_last_tool_results=1)
    agent.run_sync("go")
    snap = agent.snapshot()
    last = snap.state["window"][-1]
    assert 0 in last["refused"]  # the current request
    assert {"turn": 0, "why": "current-request"} in last["held"]
    assert served_at(snap, 4).messages[0].content == "go"
    law(snap)


def test_the_planner_names_each_hold() -> None:
    history = [
        {"role": "user", "content": "earlier question"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "name": "t", "args": {}}]},
        {"role": "tool", "content": "r", "tool_call_id": "a", "name": "t"},
        {"role": "user", "content": "the request"},
        {"role": "user", "content": "a library note", "origin": "library"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "b", "name": "t", "args": {}},
                {"id": "c", "name": "t", "args": {}},
            ],
        },
        {"role": "tool", "content": "r", "tool_call_id": "b", "name": "t"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "d", "name": "u", "args": {}}]},
        {"role": "tool", "content": "r", "tool_call_id": "d", "name": "u"},
        {"role": "tool", "content": "r", "tool_call_id": "zz", "name": "u"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "p", "name": "v", "args": {}}]},
        {"role": "tool", "content": "r", "tool_call_id": "p", "name": "v"},
    ]
    turns = Turns().advance(history)
    removal = plan_removal(turns, 0, 1, paused_calls=["p"])
    assert removal.held == [
        {"turn": 3, "why": "current-request"},  # the latest thing the person said
        {"turn": 5, "why": "unresolved-tool-call"},
        {"turn": 7, "why": "orphan-result"},
        {"turn": 10, "why": "paused-turn"},
    ]
    assert removal.removable == [0, 1, 4]  # the library note is not the request
    pinned = plan_removal(turns, 0, 2)  # t's latest two results: turns 5 and 1
    assert {"turn": 1, "why": "last-tool-result"} in pinned.held
    assert pinned.removable == [0, 4]


def test_window_is_refused_when_given_wrongly() -> None:
    base = Agent.create(provider=mock(reply="x"), model="m")
    with pytest.raises(AgentBuildError, match="window\\(strategy\\) takes"):
        base.window("sliding")
    with pytest.raises(AgentBuildError, match="whole number ≥ 1"):
        sliding_window(keep_recent_turns=0)
    with pytest.raises(AgentBuildError, match="whole number ≥ 0"):
        base.window(sliding_window(keep_recent_turns=2), keep_last_tool_results=-1)
    base.window(sliding_window(keep_recent_turns=2))
    with pytest.raises(AgentBuildError, match="one window strategy"):
        base.window(sliding_window(keep_recent_turns=3))
    plain = Agent.create(provider=mock(reply="x"), model="m").build()
    assert "window" not in plain.spec().nodes
    plain.run_sync("hi")
    assert "window" not in plain.snapshot().state and "window_view" not in plain.snapshot().state


def test_a_pause_inside_a_windowed_conversation_resumes_with_the_window_intact() -> None:
    def make(replies: list[Any]) -> Agent:
        return (
            Agent.create(provider=mock(replies=replies), model="m", max_iterations=20)
            .tool(LOOKUP)
            .gate(lambda call, ctx: ask("ok?") if call["id"] == "c4-0" else "allow")
            .window(sliding_window(keep_recent_turns=2), keep_last_tool_results=0)
            .build()
        )

    first = make([calls(i, "lookup") for i in range(5)])
    out = first.run_sync("go")
    assert isinstance(out, Paused)
    view_at_pause = thaw(first.snapshot().state["window_view"])
    fresh = make(["done"])  # another process: a fresh agent, the memo rebuilt from the record
    assert fresh.resume_sync(out.checkpoint, "approve") == "done"
    snap = fresh.snapshot()
    assert snap.state["window_view"]["drop"][0][0] == view_at_pause["drop"][0][0]
    law(snap)


# -- the wire-validity property -----------------------------------------------------------


def _openai_valid(body: dict[str, Any]) -> None:
    """Every tool message answers a call of the assistant message right before its run of
    tool messages, and every call is answered before the next non-tool message."""
    open_calls: set[str] | None = None
    for m in body["messages"]:
        if m["role"] == "tool":
            assert open_calls is not None and m["tool_call_id"] in open_calls, m
            open_calls.discard(m["tool_call_id"])
            continue
        assert not open_calls, f"unanswered calls {open_calls}"
        open_calls = (
            {c["id"] for c in m.get("tool_calls") or ()} if m["role"] == "assistant" else None
        )
    assert not open_calls


def _anthropic_valid(body: dict[str, Any]) -> None:
    """Opens on a user turn; each assistant turn's tool_use ids are answered by tool_result
    blocks in the user turn right after it (consecutive turns of one role combine)."""
    turns: list[tuple[str, list[Any]]] = []
    for m in body["messages"]:
        content = (
            m["content"]
            if isinstance(m["content"], list)
            else [{"type": "text", "text": m["content"]}]
        )
        if turns and turns[-1][0] == m["role"]:
            turns[-1][1].extend(content)
        else:
            turns.append((m["role"], list(content)))
    assert turns and turns[0][0] == "user"
    for i, (role, blocks) in enumerate(turns):
        uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        if role == "assistant" and uses:
            after = turns[i + 1][1] if i + 1 < len(turns) else []
            answered = {b["tool_use_id"] for b in after if b.get("type") == "tool_result"}
            assert uses <= answered, (uses, answered)
        if results:
            before = turns[i - 1][1] if i > 0 else []
            prior = {b["id"] for b in before if b.get("type") == "tool_use"}
            assert set(results) <= prior, (results, prior)


turn_step = st.one_of(
    st.lists(st.sampled_from(["lookup", "other"]), min_size=1, max_size=3),
    st.just("text"),
)


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(turn_step, min_size=1, max_size=10),
    follow=st.lists(
        st.lists(st.sampled_from(["lookup", "other"]), min_size=1, max_size=2), max_size=3
    ),
    which=st.sampled_from(["sliding", "budget", "summary"]),
    keep=st.integers(1, 4),
    pins=st.integers(0, 2),
)
def test_served_messages_stay_valid_on_both_wires(
    steps: list[Any], follow: list[Any], which: str, keep: int, pins: int
) -> None:
    replies: list[Any] = []
    for i, step in enumerate(steps):
        if step == "text":
            continue
        replies.append(calls(i, *step, usage={"input_tokens": 50 * (i + 1)}))
    replies.append("first answer")
    replies += [
        calls(100 + i, *names, usage={"input_tokens": 400}) for i, names in enumerate(follow)
    ]
    replies.append("second answer")
    if which == "sliding":
        strategy: Any = sliding_window(keep_recent_turns=keep)
    elif which == "budget":
        strategy = token_budget(max_input_tokens=150, keep_recent_turns=keep)
    else:
        strategy = summarize_oldest(
            keep_recent_turns=keep, summarizer=mock(respond=lambda request: "s")
        )
    agent = build(replies, strategy, LOOKUP, OTHER, keep_last_tool_results=pins)
    agent.run_sync("first question")
    agent.run_sync("and then?", continue_from=agent.checkpoint())
    snap = agent.snapshot()
    oa = openai("m", base_url="http://127.0.0.1:9", api_key="k")
    an = anthropic("m", base_url="http://127.0.0.1:9", api_key="k")
    for k in range(1, len(receipts(snap)) + 1):
        request = served_at(snap, k)
        _openai_valid(oa.body(request))
        _anthropic_valid(an.body(request))
        said = [m for m in request.messages if m.role == "user" and m.origin is None]
        assert said and said[-1].content == "and then?"  # the current request is served
    law(snap)
    assert replay(snap).state["window"] == snap.state["window"]


@settings(max_examples=examples(60), deadline=None)
@given(
    shape=st.lists(
        st.tuples(st.sampled_from(["user", "library", "assistant", "calls"]), st.integers(0, 3)),
        min_size=1,
        max_size=14,
    ),
    keep=st.integers(0, 6),
    pins=st.integers(0, 3),
)
def test_one_planner_pass_answers_every_keep(shape: list[Any], keep: int, pins: int) -> None:
    """``visit.removable(k)`` (derived from one pass) equals the planner run for ``k``."""
    history: list[dict[str, Any]] = []
    for n, (kind, results) in enumerate(shape):
        if kind in ("user", "library"):
            history.append(
                {
                    "role": "user",
                    "content": "u",
                    **({"origin": "library"} if kind == "library" else {}),
                }
            )
        elif kind == "assistant":
            history.append({"role": "assistant", "content": "a"})
        else:
            ids = [f"{n}-{j}" for j in range(max(1, results))]
            history.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": i, "name": "t", "args": {}} for i in ids],
                }
            )
            history += [
                {"role": "tool", "content": "r", "tool_call_id": i, "name": f"t{j % 2}"}
                for j, i in enumerate(ids[:results])
            ]
    kept = tuple(Turns().advance(history))
    visit = WindowVisit(1, 1, kept, None, history, None, _keep_last_tool_results=pins)
    assert visit.removable(keep) == plan_removal(kept, keep, pins)


def test_a_custom_strategy_with_its_own_summary_replays(tmp_path: Path) -> None:
    class Digest:
        name = "digest"

        def settings(self) -> dict[str, Any]:
            return {}

        def plan(self, visit: WindowVisit) -> WindowPlan:
            gone = visit.removable(1).removable
            if not gone:
                return WindowPlan([], "nothing to fold")
            return WindowPlan(gone, "digested", summary=f"{len(gone)} turns digested")

    replies = [calls(i, "lookup") for i in range(4)] + ["done"]
    agent = build(replies, Digest(), keep_last_tool_results=0)
    agent.run_sync("go")
    snap = agent.snapshot()
    rows = snap.state["summaries"]
    assert [r["n"] for r in rows] == [1, 2, 3] and rows[0]["summary"] == "1 turns digested"
    assert snap.state["window"][-1]["summary_chars"] == len(rows[-1]["summary"])
    loaded = load_recording(save_recording(agent, tmp_path / "r.json"))
    assert replay(loaded).state["summaries"] == rows
    law(snap)
