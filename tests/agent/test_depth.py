"""Model calls at every depth: agents mounted in charts (isolated subflows, nested) are
numbered in commit order by ``receipts`` and ``served_at``, carry their member path, and the
conformance law holds for each of them."""

from __future__ import annotations

from typing import Any

import pytest

from trackway.agent import Agent, mock, receipts, served_at
from trackway.engine import Executor, OutOfRangeError, Snapshot, flow_chart


def _agent(reply: str, system: str) -> Agent:
    return Agent.create(provider=mock(replies=[reply]), model="m").system(system).build()


def _ask(scope: Any) -> None:
    scope["q"] = "hi"


def _two_members() -> Snapshot:
    research = _agent("notes", "You research.")
    writer = _agent("an article", "You write.")
    chart = (
        flow_chart("Ask", _ask, id="ask")
        .subflow(
            "Research",
            research.spec(),
            id="research",
            input={"message": "q"},
            output={"notes": "final_answer"},
        )
        .subflow(
            "Write",
            writer.spec(),
            id="write",
            input={"message": "notes"},
            output={"article": "final_answer"},
        )
        .build(name="pipeline", chart_id="pipeline")
    )
    result = Executor(chart).run_sync({})
    assert result.status == "done", result.error
    assert result.state["article"] == "an article"
    return result.snapshot


def test_mounted_agents_are_numbered_in_commit_order_with_their_member() -> None:
    snap = _two_members()
    rs = receipts(snap)
    assert [(r["member"], r["k"]) for r in rs] == [("research", 1), ("write", 1)]
    for k, receipt in enumerate(rs, start=1):
        assert served_at(snap, k).hash == receipt["request_hash"]
    assert served_at(snap, 1).system == "You research."
    second = served_at(snap, 2)
    assert second.system == "You write." and second.messages[0].content == "notes"
    # isolated members do not leak history into each other
    assert [m.content for m in second.messages] == ["notes"]
    assert served_at(snap, 1, member="write").hash == rs[1]["request_hash"]
    with pytest.raises(
        OutOfRangeError, match="in member 'write'.*members that called a model: research, write"
    ):
        served_at(snap, 2, member="write")


def test_nested_members_are_named_by_a_dotted_path() -> None:
    inner_agent = _agent("deep answer", "Deep.")
    inner = (
        flow_chart("Ask", _ask, id="ask")
        .subflow(
            "Research",
            inner_agent.spec(),
            id="research",
            input={"message": "q"},
            output={"out": "final_answer"},
        )
        .build(name="inner", chart_id="inner")
    )

    def start(scope: Any) -> None:
        scope["x"] = 1

    outer = (
        flow_chart("Start", start, id="start")
        .subflow("Stage", inner, id="stage", input={"x": "x"}, output={"out": "out"})
        .build(name="outer", chart_id="outer")
    )
    result = Executor(outer).run_sync({})
    assert result.state["out"] == "deep answer"
    rs = receipts(result.snapshot)
    assert [r["member"] for r in rs] == ["stage.research"]
    assert served_at(result.snapshot, 1, member="stage").hash == rs[0]["request_hash"]
    assert served_at(result.snapshot, 1, member="stage.research").system == "Deep."


def test_a_frames_state_is_rebuilt_from_its_own_commits() -> None:
    snap = _two_members()
    frames = {c.frame for c in snap.history()} - {""}
    assert frames == {"research#1", "write#7"}  # mount id and stage counter
    last = len(snap.history())
    research = snap.frame_state_at("research#1", last)
    assert research["final_answer"] == "notes" and "article" not in research
    assert snap.frame_state_at("", last) == snap.state
    with pytest.raises(OutOfRangeError, match="frame_state_at"):
        snap.frame_state_at("research#1", last + 1)
