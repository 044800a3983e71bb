"""The findings ledger: the reserved ``_findings`` argument offered and peeled, basis and
standing rows filed as declared, tickets served for noise and ruled-out results, notes taken
off the answer and the token stream, and exact served_at / replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from trackway.agent import (
    Agent,
    AgentBuildError,
    load_recording,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
    sliding_window,
)
from trackway.agent.context._findings import strip_answer
from trackway.engine import Snapshot
from trackway.tools import ToolContext, define_tool

SEEN: list[dict[str, Any]] = []


def lookup(args: dict[str, Any], ctx: ToolContext) -> str:
    SEEN.append(dict(args))
    return f"row for {args['q']} " + "z" * 30


LOOKUP = define_tool(
    name="lookup",
    description="Look up one row.",
    input_schema={
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
        "additionalProperties": False,
    },
    execute=lookup,
)


def call(cid: str, q: str, findings: Any = None) -> dict[str, Any]:
    args: dict[str, Any] = {"q": q}
    if findings is not None:
        args["_findings"] = findings
    return {"tool_calls": [{"id": cid, "name": "lookup", "args": args}]}


SCRIPT = [
    call("c1", "a", {"basis": "exploratory", "expect": "low", "proposition": "a holds it"}),
    call("c2", "b", {"basis": "direct", "previous": [{"id": "c1", "standing": "noise"}]}),
    call(
        "c3",
        "c",
        {
            "previous": [
                {"id": "c2", "standing": "fact", "note": "b is it"},
                {"id": "0", "standing": "open"},
            ]
        },
    ),
    'It is b.\n{"_findings": {"previous": [{"id": "c3", "standing": "ruled-out"}]}}',
]


def armed(replies: list[Any], **kw: Any) -> Agent:
    return (
        Agent.create(provider=mock(replies=replies, **kw.pop("mock", {})), model="m", **kw)
        .tool(LOOKUP)
        .findings()
        .build()
    )


def law(snap: Snapshot) -> None:
    for k, receipt in enumerate(receipts(snap), start=1):
        assert served_at(snap, k).hash == receipt["request_hash"]


def offered(snap: Snapshot, k: int) -> list[str] | None:
    tools = served_at(snap, k).tools
    assert tools is not None
    prop = tools[0].input_schema["properties"]["_findings"]
    previous = prop["properties"].get("previous")
    return None if previous is None else previous["items"]["properties"]["id"]["enum"]


def test_declarations_are_filed_as_declared_and_peeled_before_the_tool() -> None:
    SEEN.clear()
    agent = armed(list(SCRIPT))
    events: list[Any] = []
    agent.on("findings.*", lambda e: events.append((e.name, e.payload)))
    assert agent.run_sync("which row?") == "It is b."
    assert SEEN == [{"q": "a"}, {"q": "b"}, {"q": "c"}]  # validation passed, tool never saw it
    rows = agent.findings()
    assert rows == [
        {
            "kind": "basis",
            "id": "c1",
            "name": "lookup",
            "iteration": 1,
            "basis": "exploratory",
            "expect": "low",
            "proposition": "a holds it",
        },
        {"kind": "basis", "id": "c2", "name": "lookup", "iteration": 2, "basis": "direct"},
        {"kind": "standing", "id": "c1", "standing": "noise", "declared_by": "c2", "iteration": 2},
        {
            "kind": "standing",
            "id": "c2",
            "standing": "fact",
            "declared_by": "c3",
            "iteration": 3,
            "note": "b is it",
        },
        {
            "kind": "standing",
            "id": "0",
            "standing": "open",
            "declared_by": "c3",
            "iteration": 3,
            "unknown_id": True,
        },
        {
            "kind": "standing",
            "id": "c3",
            "standing": "ruled-out",
            "declared_by": "answer",
            "iteration": 4,
        },
    ]
    assert events[0] == (
        "findings.declared",
        {"id": "c1", "name": "lookup", "basis": "exploratory", "has_proposition": True},
    )
    assert all("a holds it" not in repr(p) for _, p in events)  # never the text
    snap = agent.snapshot()
    history = snap.state["history"]
    assert history[1]["tool_calls"][0]["args"]["_findings"]["basis"] == "exploratory"  # kept
    law(snap)


def test_the_offer_lists_readable_results_newest_first_and_tickets_replace_judged_ones() -> None:
    agent = armed(list(SCRIPT))
    agent.run_sync("which row?")
    snap = agent.snapshot()
    assert offered(snap, 1) is None  # nothing to name yet: the base property
    assert offered(snap, 2) == ["c1"]
    assert offered(snap, 3) == ["c2"]  # c1 is a ticket now: nothing left to judge
    assert offered(snap, 4) == ["c3", "c2"]
    tool_reads = [m.content for m in served_at(snap, 4).messages if m.role == "tool"]
    assert tool_reads[0] == '{"collapsed":true,"id":"c1","standing":"noise"}'
    assert tool_reads[1].startswith("row for b")
    assert snap.state["history"][2]["content"].startswith("row for a")  # history keeps all


def test_at_most_32_ids_are_offered_and_a_clipped_list_says_so() -> None:
    replies = [call(f"c{i}", str(i)) for i in range(34)] + ["done"]
    agent = armed(replies, max_iterations=40)
    agent.run_sync("go")
    snap = agent.snapshot()
    ids = offered(snap, 35)
    assert ids is not None and len(ids) == 32 and ids[0] == "c33" and ids[-1] == "c2"
    tools = served_at(snap, 35).tools
    assert tools is not None
    item = tools[0].input_schema["properties"]["_findings"]["properties"]["previous"]["items"]
    assert "Only the 32 newest are listed" in item["properties"]["id"]["description"]


def test_results_the_window_left_out_are_not_offered() -> None:
    replies = [call(f"c{i}", str(i)) for i in range(5)] + ["done"]
    agent = (
        Agent.create(provider=mock(replies=replies), model="m")
        .tool(LOOKUP)
        .findings()
        .window(sliding_window(keep_recent_turns=2), keep_last_tool_results=0)
        .build()
    )
    agent.run_sync("go")
    snap = agent.snapshot()
    assert offered(snap, 6) == ["c4", "c3"]
    law(snap)


def test_malformed_parts_are_dropped_with_why() -> None:
    replies = [
        call("c1", "a", {"basis": "hunch", "previous": "c0", "proposition": 7}),
        call("c2", "b", "not an object"),
        "done",
    ]
    agent = armed(replies)
    agent.run_sync("go")
    dropped = [r for r in agent.findings() if r["kind"] == "dropped"]
    assert dropped[0]["why"] == [
        "basis 'hunch' is not one of direct, exploratory",
        "proposition was not text",
        "previous was not a list",
    ]
    assert dropped[1]["why"] == ["_findings was not an object"]


def test_long_texts_are_cut_saying_so() -> None:
    agent = armed([call("c1", "a", {"basis": "direct", "proposition": "p" * 300}), "done"])
    agent.run_sync("go")
    assert agent.findings()[0]["proposition"] == "p" * 240 + "… [cut from 300 characters]"


def test_a_typed_answer_loses_only_the_notes() -> None:
    class Answer(BaseModel):
        row: str

    agent = (
        Agent.create(
            provider=mock(
                replies=[
                    call("c1", "a"),
                    '{"row": "a", "_findings": {"previous": [{"id": "c1", "standing": "fact"}]}}',
                ]
            ),
            model="m",
        )
        .tool(LOOKUP)
        .findings()
        .output_schema(Answer)
        .build()
    )
    assert agent.run_sync("go") == '{"row": "a"}'
    assert agent.findings()[-1] == {
        "kind": "standing",
        "id": "c1",
        "standing": "fact",
        "declared_by": "answer",
        "iteration": 2,
    }
    assert agent.output_contract_unmet() is None


@pytest.mark.parametrize(
    ("text", "answer", "declared"),
    [
        ('{"a": 1, "_findings": {"basis": "direct"}}', '{"a": 1}', {"basis": "direct"}),
        ('Done.\n```json\n{"_findings": {"previous": []}}\n```\n', "Done.", {"previous": []}),
        ('Done.\n{"_findings": {"x": 1}}', "Done.", {"x": 1}),
        ('Data: {"k": {"_findings": 1}}', 'Data: {"k": {"_findings": 1}}', None),  # nested: data
        ("No notes here.", "No notes here.", None),
    ],
)
def test_strip_answer(text: str, answer: str, declared: Any) -> None:
    assert strip_answer(text) == (answer, declared)


def test_the_token_stream_never_shows_the_notes() -> None:
    replies = [
        call("c1", "a"),
        'It is a.\n{"_findings": {"previous": [{"id": "c1", "standing": "fact"}]}}',
    ]
    agent = armed(replies, mock={"stream": True})
    tokens: list[str] = []
    agent.on("stream.token", lambda e: tokens.append(e.payload["text"]))
    assert agent.run_sync("go") == "It is a."
    assert "".join(tokens) == "It is a." and "_findings" not in "".join(tokens)


def test_unarmed_agents_treat_the_name_as_any_argument_and_write_nothing() -> None:
    agent = (
        Agent.create(provider=mock(replies=[call("c1", "a", {"basis": "direct"}), "x"]), model="m")
        .tool(LOOKUP)
        .build()
    )
    agent.run_sync("go")
    state = agent.snapshot().state
    assert state["tool_results"][0]["status"] == "invalid"  # additionalProperties: False
    assert "findings" not in state and "findings_tickets" not in state
    assert "_findings" not in served_at(agent.snapshot(), 1).tools[0].input_schema["properties"]  # type: ignore[index]
    with pytest.raises(AgentBuildError, match="has no tools"):
        Agent.create(provider=mock(reply="x"), model="m").findings().build()


@pytest.mark.parametrize("with_agent", [False, True])
def test_replay_files_the_same_ledger(tmp_path: Path, with_agent: bool) -> None:
    agent = armed(list(SCRIPT))
    agent.run_sync("which row?")
    loaded = load_recording(save_recording(agent, tmp_path / "r.json"))
    replayed = replay(loaded, agent if with_agent else None)
    assert replayed.state["findings"] == agent.snapshot().state["findings"]
    assert replayed.state["findings_tickets"] == agent.snapshot().state["findings_tickets"]
    law(loaded)
