"""Run-local data lives and dies with its run: nothing per run stays in a definition."""

from __future__ import annotations

import gc
import tracemalloc

from trackway import Agent, Executor, LLMRequest, define_tool, flow_chart
from trackway.agent import LLMResponse, ToolCall


class Closeable:
    def __init__(self) -> None:
        self.closed = False
        self.seen: list[int] = []

    def close(self) -> None:
        self.closed = True


def test_run_locals_are_per_run_shared_between_stages_and_closed_at_the_end():
    made: list[Closeable] = []

    def factory() -> Closeable:
        made.append(Closeable())
        return made[-1]

    def step(scope):
        local = scope.run_local("counter", factory)
        local.seen.append(len(local.seen))
        scope["n"] = len(local.seen)

    chart = flow_chart("A", step, id="a").then("B", step, id="b").build()
    executor = Executor(chart)
    first, second = executor.run_sync(), executor.run_sync()
    assert first.state["n"] == second.state["n"] == 2
    assert len(made) == 2 and all(m.closed for m in made)
    assert made[0].seen == [0, 1]  # one object per run, shared by its stages


def test_a_resumed_run_starts_with_fresh_run_locals():
    made: list[Closeable] = []

    def ask(scope):
        scope.run_local("x", lambda: made.append(Closeable()) or made[-1])
        scope.pause("?")

    def answer(scope, value):
        scope.run_local("x", lambda: made.append(Closeable()) or made[-1])
        scope["answer"] = value

    chart = flow_chart("Ask", ask, id="ask", on_resume=answer).build()
    executor = Executor(chart)
    paused = executor.run_sync()
    assert len(made) == 1 and made[0].closed
    assert executor.resume_sync(paused.checkpoint, "yes").state["answer"] == "yes"
    assert len(made) == 2 and made[1].closed


def _mounted_agent() -> tuple[Agent, Executor]:
    tool = define_tool(
        name="lookup",
        description="Look a key up.",
        input_schema={"type": "object", "properties": {"k": {"type": "string"}}},
        execute=lambda args, ctx: "ok",
    )

    class Scripted:
        """Two tool calls, then an answer; keeps nothing (mock() keeps every request)."""

        name = "scripted"

        async def complete(self, request: LLMRequest) -> LLMResponse:
            asked = sum(1 for m in request.messages if m.role == "tool")
            if asked < 2:
                call = ToolCall(id=f"c{asked}", name="lookup", args={"k": "a"})
                return LLMResponse(tool_calls=(call,), stop_reason="tool_use")
            return LLMResponse(content="done", stop_reason="stop")

    agent = (
        Agent.create(provider=Scripted(), model="m", max_iterations=5, stream=False)
        .tool(tool)
        .build()
    )
    outer = (
        flow_chart("Ask", lambda s: s.__setitem__("question", "go"), id="ask")
        .subflow(
            "Agent",
            agent.spec(),
            id="agent",
            input={"message": "question"},
            output={"answer": "final_answer"},
        )
        .build()
    )
    return agent, Executor(outer, max_iterations=50)


def test_an_agent_mounted_in_a_chart_keeps_nothing_per_run_and_memory_stays_flat():
    agent, executor = _mounted_agent()
    assert executor.run_sync().state["answer"] == "done"
    for _ in range(100):  # warm up: caches, interned strings, pydantic schemas
        executor.run_sync()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(1_000):
            executor.run_sync()
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    # flat: what is left is noise (allocator pools, type caches), not ~1 KB per run
    assert grown < 100_000, f"{grown} bytes retained after 1,000 runs"
    assert set(vars(agent._cfg)) >= {"validators"} and not hasattr(agent._cfg, "caches")
    assert len(agent._cfg.validators) <= 1
