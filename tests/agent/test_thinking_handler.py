"""``.thinking_handler(fn)``: a user function normalises each answer into its text and its
reasoning in a ``thinking`` stage after ``call-llm``; what it changed is recorded per call,
the next request carries the normalised turn, and a replay runs no user code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.law import assert_law
from trackway.agent import (
    Agent,
    AgentBuildError,
    ReplayDivergence,
    ThinkingBlock,
    ThinkingHandlerError,
    load_recording,
    mock,
    replay,
)
from trackway.engine import thaw
from trackway.tools import define_tool

FIXTURE = Path(__file__).parent / "fixtures" / "recording-thinkfn-v1.jsonl"

TAG = re.compile(r"<reasoning>(.*?)</reasoning>\s*", re.S)


def vendor_tags(text: str, blocks: tuple[ThinkingBlock, ...]) -> tuple[str, list[ThinkingBlock]]:
    """A vendor that writes its reasoning into the answer between ``<reasoning>`` tags."""
    found = TAG.findall(text)
    moved = [ThinkingBlock(kind="reasoning", text=t.strip()) for t in found]
    return TAG.sub("", text), [*blocks, *moved]


RATE = define_tool(
    name="rate",
    description="The EUR/USD rate.",
    input_schema={"type": "object"},
    execute=lambda args, ctx: "1.08",
)


def replies() -> list[dict[str, Any]]:
    return [
        {
            "content": "<reasoning>Look the rate up first.</reasoning> Checking.",
            "tool_calls": [{"id": "c1", "name": "rate", "args": {}}],
        },
        {
            "content": "<reasoning>It said 1.08.</reasoning>1.08",
            "thinking": [{"kind": "reasoning", "text": "server's own"}],
        },
    ]


def built(
    handler: Any = vendor_tags, name: str | None = None, stream: bool = False
) -> tuple[Any, Any]:
    provider = mock(replies=replies(), stream=stream)
    builder = Agent.create(provider=provider, model="m", stream=stream).tool(RATE)
    if handler is not None:
        builder = builder.thinking_handler(handler, name=name)
    return builder.build(), provider


def test_the_handler_moves_reasoning_out_and_the_next_request_carries_the_normalised_turn():
    agent, provider = built()
    assert agent.run_sync("EUR/USD?") == "1.08"
    turn = provider.requests[1].messages[1]
    assert turn.content == "Checking."
    assert turn.thinking == (ThinkingBlock(kind="reasoning", text="Look the rate up first."),)
    state = thaw(agent.snapshot().state)
    assert state["settings"]["thinking_handler"] == "vendor_tags"
    assert state["thinking_normalised"] == [
        {
            "k": 1,
            "handler": "vendor_tags",
            "chars_before": len(replies()[0]["content"]),
            "chars_after": 9,
            "blocks_before": 0,
            "blocks_after": 1,
        },
        {
            "k": 2,
            "handler": "vendor_tags",
            "chars_before": len(replies()[1]["content"]),
            "chars_after": 4,
            "blocks_before": 1,
            "blocks_after": 2,
        },
    ]
    assert [b["text"] for b in state["response"]["thinking"]] == ["server's own", "It said 1.08."]
    # the raw answer stays in call-llm's commit: the record says what the handler changed
    raw = [
        thaw(op.value)["content"]
        for c in agent.snapshot().history()
        if c.stage_id == "call-llm"
        for op in c.ops
        if op.key == "response"
    ]
    assert raw == [r["content"] for r in replies()]
    stages = [c.stage_id for c in agent.snapshot().history()]
    assert stages.count("thinking") == 2
    assert stages.index("thinking") == stages.index("call-llm") + 1
    carried = agent.checkpoint().history
    assert carried[-1]["content"] == "1.08" and len(carried[-1]["thinking"]) == 2
    assert assert_law(agent) == 2


def test_replay_serves_what_the_handler_returned_without_running_it():
    agent, _ = built()
    agent.run_sync("EUR/USD?")
    snap = agent.snapshot()
    replayed = replay(snap)  # no agent: the handler's results come from the record
    assert thaw(replayed.state)["thinking_normalised"] == thaw(snap.state)["thinking_normalised"]
    assert thaw(replayed.state)["final_answer"] == "1.08"
    calls: list[str] = []

    def counting(text: str, blocks: tuple[ThinkingBlock, ...]) -> tuple[str, Any]:
        calls.append(text)
        return vendor_tags(text, blocks)

    again, _ = built(counting, name="vendor_tags")
    replay(snap, again)  # with an agent: still the recorded results, its code never runs
    assert calls == []
    other, _ = built(counting)  # another handler's name: another definition, said so
    with pytest.raises(ReplayDivergence, match="thinking_handler"):
        replay(snap, other)


def test_a_handler_that_changes_nothing_writes_nothing():
    def keep(text: str, blocks: tuple[ThinkingBlock, ...]) -> tuple[str, Any]:
        return text, blocks

    agent, provider = built(keep)
    agent.run_sync("EUR/USD?")
    state = thaw(agent.snapshot().state)
    assert "thinking_normalised" not in state
    thinking = [c for c in agent.snapshot().history() if c.stage_id == "thinking"]
    assert len(thinking) == 2 and all(not c.writes for c in thinking)
    plain, plain_provider = built(None)
    plain.run_sync("EUR/USD?")
    assert provider.requests == plain_provider.requests  # the same requests, byte for byte
    assert replay(agent.snapshot()) is not None


def test_not_configured_mounts_no_stage_and_writes_no_key():
    agent, _ = built(None)
    agent.run_sync("EUR/USD?")
    snap = agent.snapshot()
    assert "thinking" not in {c.stage_id for c in snap.history()}
    state = thaw(snap.state)
    assert "thinking_normalised" not in state
    assert "thinking_handler" not in state["settings"]
    assert state["final_answer"] == "<reasoning>It said 1.08.</reasoning>1.08"


def test_the_handler_runs_on_a_streamed_answer_too():
    agent, _ = built(stream=True)
    tokens: list[str] = []
    agent.on("stream.token", lambda event: tokens.append(event.payload["text"]))
    assert agent.run_sync("EUR/USD?") == "1.08"
    assert "<reasoning>" in "".join(tokens)  # the stream is what the model sent
    assert thaw(agent.snapshot().state)["thinking_normalised"][1]["chars_after"] == 4


def test_blocks_may_be_returned_as_dicts():
    def as_dicts(text: str, blocks: tuple[ThinkingBlock, ...]) -> tuple[str, Any]:
        return text.upper(), [{"kind": "reasoning", "text": "noted"}]

    agent, provider = built(as_dicts)
    agent.run_sync("EUR/USD?")
    assert provider.requests[1].messages[1].thinking == (
        ThinkingBlock(kind="reasoning", text="noted"),
    )


def boom(text: str, blocks: tuple[ThinkingBlock, ...]) -> tuple[str, Any]:
    raise KeyError("thoughts")


def no_pair(text: str, blocks: tuple[ThinkingBlock, ...]) -> Any:
    return text


def text_blocks(text: str, blocks: tuple[ThinkingBlock, ...]) -> Any:
    return text, "reasoning"


def bad_block(text: str, blocks: tuple[ThinkingBlock, ...]) -> Any:
    return text, [{"kind": "musing", "text": "?"}]


@pytest.mark.parametrize(
    ("handler", "said"),
    [
        (boom, "raised KeyError on the answer of model call 1"),
        (no_pair, "returned '<reasoning>Look"),
        (text_blocks, "returned blocks 'reasoning'"),
        (bad_block, "as a block for the answer of model call 1, which is no ThinkingBlock"),
    ],
)
def test_a_handler_that_raises_or_returns_the_wrong_shape_is_named(handler: Any, said: str):
    agent, _ = built(handler)
    with pytest.raises(ThinkingHandlerError) as caught:
        agent.run_sync("EUR/USD?")
    error = caught.value
    assert error.handler == handler.__name__ and error.k == 1
    assert f"thinking handler {handler.__name__!r}" in str(error) and said in str(error)
    assert "return" in str(error)  # the fix
    assert error.stage_error is not None and error.stage_error.stage_path.startswith("thinking#")
    if handler is boom:
        assert isinstance(error.__cause__, KeyError)
    # the raw answer is kept in the record
    response = thaw(agent.snapshot().state)["response"]
    assert response["content"].startswith("<reasoning>")


def test_the_builder_refuses_what_the_record_cannot_name():
    builder = Agent.create(provider=mock(replies=[]), model="m")
    with pytest.raises(AgentBuildError, match="pass name="):
        builder.thinking_handler(lambda text, blocks: (text, blocks))
    with pytest.raises(AgentBuildError, match="pass a function"):
        builder.thinking_handler("vendor_tags")  # type: ignore[arg-type]
    builder.thinking_handler(lambda text, blocks: (text, blocks), name="as-is")
    with pytest.raises(AgentBuildError, match="already given 'as-is'"):
        builder.thinking_handler(vendor_tags)
    agent = builder.build()
    assert agent._cfg.thinking_handler.name == "as-is"


def test_a_recording_with_a_thinking_handler_from_this_version_loads_and_replays():
    """tests/agent/fixtures/recording-thinkfn-v1.jsonl: a handler moving tagged reasoning out
    of a tool turn and of the answer (the answer also carried the server's own block)."""
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 2
    state = thaw(loaded.state)
    assert state["settings"]["thinking_handler"] == "vendor_tags"
    assert [r["k"] for r in state["thinking_normalised"]] == [1, 2]
    assert state["history"][1]["thinking"] == [
        {"kind": "reasoning", "text": "Look the rate up first."}
    ]
    replayed = replay(loaded)
    assert thaw(replayed.state)["final_answer"] == state["final_answer"] == "1.08"


def write_fixture() -> None:  # pragma: no cover - run by hand to refresh the fixture
    from trackway.agent import save_recording

    agent, _ = built()
    agent.run_sync("EUR/USD?")
    save_recording(agent, FIXTURE)


# -- retirements: what a vendor's request leaves out, no later request to it restores ----------


def test_a_failed_call_then_resume_on_error_restores_no_reasoning_its_vendor_left_out():
    """Retirement by construction for the provider paths: ``openai()`` sends no reasoning at
    all and ``anthropic()`` no unsigned block, by kind, on every request (no state). So the
    request that failed and the request that retries it from ``err.checkpoint`` leave out the
    same reasoning, on each vendor's wire."""
    from trackway.agent import RunCheckpointError
    from trackway.agent.context._request import assemble
    from trackway.agent.providers._anthropic import anthropic
    from trackway.agent.providers._openai import openai

    signed = {"kind": "thinking", "text": "Signed step.", "signature": "EqQBCgIYAhIM"}
    unsigned = {"kind": "reasoning", "text": "Unsigned step."}
    first = {
        "tool_calls": [{"id": "c1", "name": "rate", "args": {}}],
        "thinking": [signed, unsigned],
    }
    agent = Agent.create(provider=mock(replies=[first]), model="m").tool(RATE).build()
    with pytest.raises(RunCheckpointError) as failed:  # the second call: the script ran out
        agent.run_sync("EUR/USD?")
    failed_request = assemble(agent.snapshot().state).request  # what the failed call sent
    retry_provider = mock(replies=["1.08"])
    retry = Agent.create(provider=retry_provider, model="m").tool(RATE).build()
    assert retry.resume_on_error_sync(failed.value.checkpoint) == "1.08"
    retried = retry_provider.requests[0]
    assert retried.messages == failed_request.messages
    for vendor in (openai("m", api_key="sk-test"), anthropic("m", api_key="sk-test")):
        before, after = vendor.wire(failed_request), vendor.wire(retried)
        assert before == after
        assert b"Unsigned step." not in after
    assert b"Signed step." in anthropic("m", api_key="sk-test").wire(retried)
    assert b"Signed step." not in openai("m", api_key="sk-test").wire(retried)


def test_reasoning_a_window_left_out_of_a_failed_request_is_retired_from_its_checkpoint():
    """The window's ledger says which entries' reasoning a request left out
    (``thinking_retired``, committed before the call); the failed call's ``err.checkpoint``
    and ``checkpoint()`` carry none of it, so the retry's request has no retired block."""
    from trackway.agent import RunCheckpointError, sliding_window

    def step(n: int) -> dict[str, Any]:
        return {
            "tool_calls": [{"id": f"c{n}", "name": "rate", "args": {}}],
            "thinking": [{"kind": "reasoning", "text": f"step {n}"}],
        }

    agent = (
        Agent.create(provider=mock(replies=[step(1), step(2), step(3)]), model="m")
        .tool(RATE)
        .window(sliding_window(keep_recent_turns=1), keep_last_tool_results=1)
        .build()
    )
    with pytest.raises(RunCheckpointError) as failed:  # the fourth call: the script ran out
        agent.run_sync("EUR/USD?")
    rows = thaw(agent.snapshot().state)["window"]
    retired = sorted(i for row in rows for i in row.get("thinking_retired", ()))
    assert retired  # the window left reasoning out of a request before the call failed
    history = failed.value.checkpoint.history
    assert all("thinking" not in history[i] for i in retired)
    kept = [m["thinking"][0]["text"] for m in history if "thinking" in m]
    assert kept and "step 1" not in kept
    retry_provider = mock(replies=["1.08"])
    retry = Agent.create(provider=retry_provider, model="m").tool(RATE).build()
    assert retry.resume_on_error_sync(failed.value.checkpoint) == "1.08"
    served = [b.text for m in retry_provider.requests[0].messages for b in m.thinking or ()]
    assert served == kept and "step 1" not in served
    assert_law(agent)
    replay_ok = replay(agent.snapshot())  # the ledger's new field replays as recorded
    assert replay_ok is not None


def test_a_run_that_retires_nothing_writes_no_retirement():
    from trackway.agent import sliding_window

    agent = (
        Agent.create(provider=mock(replies=["1.08"]), model="m")
        .window(sliding_window(keep_recent_turns=1))
        .build()
    )
    agent.run_sync("EUR/USD?")
    assert all("thinking_retired" not in row for row in thaw(agent.snapshot().state)["window"])
