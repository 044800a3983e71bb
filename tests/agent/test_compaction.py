"""Compaction: past a threshold of served characters, one summarizer call folds the earlier
summary and the newly old turns into a summary committed to the record; later calls and a
continued conversation serve it in place of the folded messages; history is never edited;
exact served_at, hermetic replay, and a v1 recording that loads and replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.law import assert_law
from trackway.agent import (
    Agent,
    AgentBuildError,
    Conversation,
    InvalidRunInputError,
    LLMRequest,
    ProviderConnectionError,
    load_recording,
    mock,
    replay,
    save_recording,
    served_at,
    sliding_window,
)
from trackway.agent.context._window import SUMMARY_PREFIX
from trackway.engine import thaw
from trackway.tools import define_tool

FIXTURE = Path(__file__).parent / "fixtures" / "recording-compaction-v1.jsonl"

LOOKUP = define_tool(
    name="lookup",
    description="Look up.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    execute=lambda args, ctx: f"row {args.get('q', '')}: " + "x" * 100,
)


class Summarizer:
    """A scripted summarizer that keeps what it was asked (the model is the only mock)."""

    def __init__(self) -> None:
        self.asked: list[LLMRequest] = []
        self.inner = mock(respond=self.respond)

    def respond(self, request: LLMRequest) -> str:
        self.asked.append(request)
        return f"summary {len(self.asked)}"

    async def complete(self, request: LLMRequest) -> Any:
        return await self.inner.complete(request)


def calls(n: int, start: int = 1) -> list[Any]:
    return [
        {"tool_calls": [{"id": f"c{i}", "name": "lookup", "args": {"q": str(i)}}]}
        for i in range(start, start + n)
    ]


def build(replies: list[Any], summarizer: Any, **kw: Any) -> Agent:
    return (
        Agent.create(provider=mock(replies=replies), model="m", max_iterations=40)
        .tool(LOOKUP)
        .compaction(summarizer, **{"threshold_chars": 500, "keep_recent_turns": 2, **kw})
        .build()
    )


def test_under_the_threshold_nothing_is_folded_and_no_call_is_made() -> None:
    s = Summarizer()
    a = build([*calls(2), "done"], s, threshold_chars=10_000)
    a.run_sync("go")
    state = a.snapshot().state
    assert s.asked == [] and "summaries" not in state and "window_view" not in state
    assert [r["served_chars"] for r in state["window"]][:1] == [2]
    assert all(r["strategy"] == "compaction" for r in state["window"])
    assert_law(a)


def test_past_the_threshold_the_older_turns_fold_into_a_summary_with_its_own_receipt() -> None:
    s = Summarizer()
    a = build([*calls(9), "done"], s)
    a.run_sync("go")
    snap = a.snapshot()
    state = snap.state
    rows = state["summaries"]
    assert len(rows) == len(s.asked) >= 2  # one call per fold, not per model call
    assert len(rows) < len(state["receipts"])
    for row, asked in zip(rows, s.asked, strict=True):
        assert row["request_hash"] == asked.hash and row["model"] == "summarizer"
    # the second fold reads the first summary and only the turns that became old since
    second = s.asked[1].messages[0].content
    assert second.startswith("<<<\n(earlier summary) summary 1\n")
    assert "row 1:" not in second
    view = state["window_view"]
    assert view["summary"] == rows[-1]["summary"]
    last = served_at(snap, len(state["receipts"]))
    assert last.messages[0].content == "go"  # the person's request stays
    assert last.messages[1].content == SUMMARY_PREFIX + rows[-1]["summary"]
    assert len(state["history"]) == 1 + 2 * 9  # history is never edited
    folded = [r for r in state["window"] if r["removed_messages"]]
    assert all(r["over_threshold"] for r in folded)
    assert_law(a)
    again = replay(snap)  # hermetic: the summaries are read from the record
    assert again.state["summaries"] == rows and again.state["window"] == state["window"]


def test_a_continued_conversation_is_served_the_summary_in_place_of_the_folded_turns() -> None:
    s = Summarizer()
    a = build([*calls(9), "first", *calls(2, start=20), "second"], s)
    a.run_sync("go")
    view = thaw(a.snapshot().state["window_view"])
    conversation = a.checkpoint()
    assert conversation.carry == {"compaction": view}
    assert Conversation.from_json(conversation.to_json()).carry == conversation.carry
    asked_before = len(s.asked)
    a.follow_up_sync("and then?")
    snap = a.snapshot()
    now = [(a, b) for a, b in snap.state["window_view"]["drop"]]
    assert all(any(a <= x and y <= b for a, b in now) for x, y in view["drop"])  # still folded
    first = served_at(snap, 1)
    texts = [m.content for m in first.messages]
    assert SUMMARY_PREFIX + view["summary"] in texts
    assert not any((t or "").startswith("row 1:") for t in texts)
    assert texts[-1] == "and then?"
    if len(s.asked) > asked_before:  # a later fold starts from the carried summary
        assert "(earlier summary) " + view["summary"] in s.asked[asked_before].messages[0].content
    assert_law(a)
    assert replay(snap).state["window"] == snap.state["window"]


def test_a_carried_compaction_that_does_not_fit_is_refused() -> None:
    s = Summarizer()
    a = build([*calls(9), "first", "second"], s)
    a.run_sync("go")
    good = a.checkpoint()
    assert good.carry is not None
    bad = Conversation(
        history=good.history,
        agent=good.agent,
        carry={"compaction": {**good.carry["compaction"], "drop": [[1, 2]]}},  # half a turn
    )
    with pytest.raises(InvalidRunInputError, match="whole turns"):
        a.run_sync("again", continue_from=bad)


def test_compaction_is_refused_when_given_wrongly() -> None:
    base = Agent.create(provider=mock(reply="x"), model="m").tool(LOOKUP)
    with pytest.raises(AgentBuildError, match="compaction"):
        base.window(sliding_window(keep_recent_turns=2)).compaction(
            mock(reply="s"), threshold_chars=10
        )
    with pytest.raises(AgentBuildError, match="one window strategy"):
        Agent.create(provider=mock(reply="x"), model="m").compaction(
            mock(reply="s"), threshold_chars=10
        ).window(sliding_window(keep_recent_turns=2))
    for bad in ({"threshold_chars": 0}, {"threshold_chars": 9, "keep_recent_turns": 0}):
        with pytest.raises(AgentBuildError, match="compaction"):
            Agent.create(provider=mock(reply="x"), model="m").compaction(mock(reply="s"), **bad)
    with pytest.raises(AgentBuildError, match="provider"):
        Agent.create(provider=mock(reply="x"), model="m").compaction("s", threshold_chars=9)  # type: ignore[arg-type]


def test_a_failing_summarizer_folds_nothing_and_the_run_goes_on() -> None:
    def fail(request: LLMRequest) -> str:
        raise RuntimeError("down")

    a = build([*calls(6), "done"], mock(respond=fail))
    assert a.run_sync("go") == "done"
    rows = a.snapshot().state["window"]
    assert any(r.get("summarizer_failed") == "RuntimeError" for r in rows)
    assert all(r["removed_messages"] == 0 for r in rows)
    assert_law(a)


def test_facts_are_held_through_a_fold() -> None:
    replies: list[Any] = []
    for i in range(1, 10):
        args: dict[str, Any] = {"q": str(i)}
        if i > 1:
            standing = "fact" if i - 1 == 2 else "noise"
            args["_findings"] = {"previous": [{"id": f"c{i - 1}", "standing": standing}]}
        replies.append({"tool_calls": [{"id": f"c{i}", "name": "lookup", "args": args}]})
    a = (
        Agent.create(provider=mock(replies=[*replies, "done"]), model="m", max_iterations=40)
        .tool(LOOKUP)
        .compaction(Summarizer(), threshold_chars=500, keep_recent_turns=2)
        .findings()
        .build()
    )
    a.run_sync("go")
    snap = a.snapshot()
    last = served_at(snap, len(snap.state["receipts"]))
    assert any(m.tool_call_id == "c2" for m in last.messages)  # the fact stayed verbatim
    assert any(p["tool"] == "lookup" for p in snap.state["window"][-1]["ledger_facts"]["pinned"])
    assert_law(a)


class FailingAt:
    """A scripted provider that fails its ``n``-th call (a dropped connection)."""

    def __init__(self, replies: list[Any], n: int) -> None:
        self.inner, self.n, self.calls = mock(replies=replies), n, 0

    async def complete(self, request: LLMRequest) -> Any:
        self.calls += 1
        if self.calls == self.n:
            raise ProviderConnectionError("flaky: could not connect to http://127.0.0.1:9")
        return await self.inner.complete(request)


def test_a_provider_failure_carries_the_compaction_to_resume_on_error() -> None:
    s = Summarizer()
    flaky = Agent.create(provider=FailingAt(calls(9), 10), model="m", max_iterations=40)
    flaky_agent = flaky.tool(LOOKUP).compaction(s, threshold_chars=500, keep_recent_turns=2)
    a = flaky_agent.build()
    with pytest.raises(ProviderConnectionError) as caught:
        a.run_sync("go")
    carried = caught.value.checkpoint.carry
    assert carried is not None and carried["compaction"]["summary"].startswith("summary")
    again = build(["done"], Summarizer(), threshold_chars=100_000)
    assert again.resume_on_error_sync(caught.value.checkpoint) == "done"
    first = served_at(again.snapshot(), 1).messages
    assert SUMMARY_PREFIX + carried["compaction"]["summary"] in [m.content for m in first]
    assert_law(again)


def fixture_agent() -> Agent:
    """The run kept in ``fixtures/recording-compaction-v1.jsonl`` (made by this module run
    as a script): nine calls folded twice past a 500-character threshold."""
    return build([*calls(9), "done"], mock(respond=lambda r: "nine lookups, rows 1 to 7"))


def test_a_recording_from_this_version_loads_and_replays() -> None:
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 10
    state = thaw(loaded.state)
    assert state["settings"]["window"]["strategy"] == "compaction"
    assert state["summaries"] and state["window_view"]["summary"]
    replayed = replay(loaded)  # no summarizer: the folds are read from the record
    assert [c.writes for c in replayed.history()] == [c.writes for c in loaded.history()]
    fresh = fixture_agent()
    fresh.run_sync("go")
    assert thaw(fresh.snapshot().state["window"]) == state["window"]


if __name__ == "__main__":  # python -m tests.agent.test_compaction: writes the fixture
    made = fixture_agent()
    made.run_sync("go")
    save_recording(made, FIXTURE)
