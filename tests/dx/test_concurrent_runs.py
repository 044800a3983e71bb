"""One Agent serves concurrent runs, as a web server shares one agent."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from trackway import Agent, define_tool, mock, receipts, served_at
from trackway.agent import Paused, PendingQuestionError
from trackway.tools import ask_human

from ..backends import run_async


def _echo_agent() -> Any:
    """Calls `lookup` once with the person's message, then answers with what it returned."""

    def respond(request: Any) -> Any:
        said = request.messages[0].content
        if len(request.messages) == 1:
            return {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": said}}]}
        return f"answer to {said}: {request.messages[-1].content}"

    async def lookup(args: dict[str, Any], ctx: Any) -> str:
        await anyio.sleep(0.01 * (len(args["q"]) % 3))  # interleave the runs
        return f"found {args['q']} for {ctx.run_id[-6:]}"

    tool = define_tool(
        name="lookup",
        description="Look up.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        execute=lookup,
    )
    return Agent.create(provider=mock(respond=respond), model="m").tool(tool).build()


def test_concurrent_runs_each_keep_their_own_state() -> None:
    agent = _echo_agent()
    results: dict[str, Any] = {}

    async def one(question: str) -> None:
        results[question] = await agent.run_result(question)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for q in ("alpha", "beta", "gamma", "delta", "epsilon"):
                tg.start_soon(one, q)

    run_async(main)
    assert len({r.run_id for r in results.values()}) == 5
    for question, result in results.items():
        assert result.output == f"answer to {question}: found {question} for {result.run_id[-6:]}"
        history = [(m.role, m.content) for m in result.messages]
        assert history[0] == ("user", question)
        assert history[2] == ("tool", f"found {question} for {result.run_id[-6:]}")
        assert result.snapshot.run_id == result.run_id
        # the law holds for each run, however the runs interleaved
        for k, receipt in enumerate(receipts(result.snapshot), start=1):
            assert served_at(result.snapshot, k).hash == receipt["request_hash"]
    assert agent.snapshot().run_id in {r.run_id for r in results.values()}  # the last to end


def test_a_paused_run_does_not_block_another_conversation() -> None:
    model = mock(
        respond=lambda req: (
            {"tool_calls": [{"id": "h", "name": "ask_human", "args": {"question": "ok?"}}]}
            if req.messages[0].content == "needs a person" and len(req.messages) == 1
            else f"done: {req.messages[0].content}"
        )
    )
    agent = Agent.create(provider=model, model="m").tool(ask_human()).build()
    paused = agent.run_sync("needs a person")
    assert isinstance(paused, Paused)
    with pytest.raises(PendingQuestionError, match="conversation follow_up would continue"):
        anyio.run(agent.follow_up, "more")  # it would continue the paused conversation
    assert agent.run_sync("another user") == "done: another user"  # a new conversation
    # the paused run is still there, resumed by its checkpoint
    assert agent.resume_sync(paused.checkpoint, "yes") == "done: needs a person"
