"""run_many: a chart or an agent over a data set; failures collected, progress reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from trackway import Agent, Executor, SqliteStore, define_tool, flow_chart, mock
from trackway.agent import load_recording, run_many, run_many_sync, served_at
from trackway.engine import ConfigurationError
from trackway.tools import ask_human

from ..backends import run_async


def _chart() -> Any:
    def score(scope: Any) -> None:
        if scope["amount"] < 0:
            raise ValueError("a negative amount")
        scope["risk"] = "high" if scope["amount"] > 1000 else "low"

    return flow_chart("Score", score, id="score").build()


def test_a_chart_over_a_batch_keeps_input_order_and_collects_failures(tmp_path: Path) -> None:
    inputs = [{"amount": a} for a in (10, 5000, -1, 700)]
    seen: list[tuple[int, int]] = []
    report = run_many_sync(
        _chart(),
        inputs,
        concurrency=2,
        recordings=tmp_path,
        on_progress=lambda done, total, item: seen.append((done, total)),
    )
    assert [item.index for item in report.items] == [0, 1, 2, 3]
    assert [item.status for item in report.items] == ["done", "done", "failed", "done"]
    assert report.items[1].output["risk"] == "high"
    (failed,) = report.failures
    assert failed.index == 2 and "a negative amount" in str(failed.error)
    assert report.counts == {"done": 3, "failed": 1}
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    for item in report.items:  # one recording per run, the failed one included
        assert item.recording == tmp_path / f"{item.index}.jsonl"
        assert load_recording(item.recording).run_id == item.run_id


def test_an_executor_target_keeps_its_store(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    try:
        report = run_many_sync(Executor(_chart(), store=store), [{"amount": 1}, {"amount": 2}])
        stored = {run.run_id for run in store.list_runs()}
    finally:
        store.close()
    assert stored == {item.run_id for item in report.items}


def test_an_agent_over_a_data_set_runs_concurrently_on_one_agent(tmp_path: Path) -> None:
    now = {"in_flight": 0, "most": 0}

    async def lookup(args: dict[str, Any], ctx: Any) -> str:
        now["in_flight"] += 1
        now["most"] = max(now["most"], now["in_flight"])
        await anyio.sleep(0.01)
        now["in_flight"] -= 1
        return f"{args['q']}: found"

    def respond(request: Any) -> Any:
        q = request.messages[0].content
        if q == "boom":
            raise RuntimeError("the model broke")
        if len(request.messages) == 1:
            return {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": q}}]}
        return f"answer: {request.messages[-1].content}"

    tool = define_tool(
        name="lookup",
        description="L.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        execute=lookup,
    )
    agent = Agent.create(provider=mock(respond=respond), model="m").tool(tool).build()
    questions = [f"q{i}" for i in range(6)] + ["boom"]

    async def main() -> Any:
        return await run_many(agent, questions, concurrency=3, recordings=tmp_path)

    report = run_async(main)
    assert now["most"] == 3  # bounded
    assert [item.output for item in report.items[:6]] == [f"answer: q{i}: found" for i in range(6)]
    (failed,) = report.failures
    assert failed.input == "boom" and "the model broke" in str(failed.error)
    # each recording rebuilds its own run's requests
    first = report.items[0].recording
    assert first is not None and served_at(first, 2).messages[0].content == "q0"


def test_a_paused_run_is_an_item_not_an_error() -> None:
    model = mock(
        respond=lambda req: (
            {"tool_calls": [{"id": "h", "name": "ask_human", "args": {"question": "ok?"}}]}
            if len(req.messages) == 1
            else "fine"
        )
    )
    agent = Agent.create(provider=model, model="m").tool(ask_human()).build()
    report = run_many_sync(agent, ["a"])
    assert report.items[0].status == "paused"


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="concurrency must be an int >= 1"):
        run_many_sync(_chart(), [], concurrency=0)
    with pytest.raises(ConfigurationError, match="is not a folder"):
        run_many_sync(_chart(), [], recordings="/no/such/folder")
    with pytest.raises(ConfigurationError, match="a FlowChart, an Executor or an Agent"):
        run_many_sync("chart", [])  # type: ignore[arg-type]
    report = run_many_sync(Executor(_chart()), ["not a mapping"])
    assert report.items[0].status == "failed" and "mapping" in str(report.items[0].error)
