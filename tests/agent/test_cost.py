"""Usage and cost ledgers: per-call usage with cache tokens, prices per call and per run,
unpriced calls kept as such, and a cost budget that warns or halts before the next call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trackway.agent import (
    Agent,
    AgentBuildError,
    load_recording,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
)
from trackway.tools import define_tool

PRICES = {"m": {"input": 2.0, "output": 10.0, "cache_read": 0.5, "cache_write": 4.0}}
LOOKUP = define_tool(
    name="lookup",
    description="Look up.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    execute=lambda args, ctx: "ok",
)


def call(i: int, **usage: int) -> dict[str, Any]:
    reply: dict[str, Any] = {"tool_calls": [{"id": f"c{i}", "name": "lookup", "args": {"q": "x"}}]}
    if usage:
        reply["usage"] = usage
    return reply


def answer(text: str, **usage: int) -> dict[str, Any]:
    return {"content": text, "usage": usage} if usage else {"content": text}


def agent_with(replies: list[Any], **kw: Any) -> Agent:
    return Agent.create(provider=mock(replies=replies), model="m", **kw).tool(LOOKUP).build()


def test_usage_totals_keep_cache_tokens_and_never_count_silence_as_zero() -> None:
    agent = agent_with(
        [
            call(1, input_tokens=1000, output_tokens=10, cache_read_tokens=800),
            call(2),  # reported nothing
            answer("done", input_tokens=1200, output_tokens=20, cache_write_tokens=300),
        ]
    )
    agent.run_sync("go")
    state = agent.snapshot().state
    assert state["usage_total"] == {
        "input_tokens": 2200,
        "output_tokens": 30,
        "cache_read_tokens": 800,
        "cache_write_tokens": 300,
    }
    assert "cost" not in state and "cost_total" not in state  # no pricing: no ledger
    from trackway.agent.messages._usage import run_usage

    use = run_usage(receipts(agent.snapshot()))
    assert (use.cache_read_tokens, use.cache_write_tokens, use.unreported_calls) == (800, 300, 1)


def test_each_call_is_priced_and_unpriced_calls_are_said() -> None:
    agent = agent_with(
        [
            call(1, input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=200_000),
            call(2),
            answer("done", input_tokens=500_000, output_tokens=0),
        ],
        pricing_table=PRICES,
    )
    ticks: list[Any] = []
    agent.on("cost.tick", lambda e: ticks.append(e.payload))
    agent.run_sync("go")
    state = agent.snapshot().state
    assert state["cost"] == [
        {"k": 1, "model": "m", "usd": 2.0 + 1.0 + 0.1},
        {
            "k": 2,
            "model": "m",
            "usd": None,
            "unpriced": "the provider reported no usage for this call",
        },
        {"k": 3, "model": "m", "usd": 1.0},
    ]
    assert state["cost_total"] == {"usd": 4.1, "unpriced_calls": 1}
    assert [t["usd_total"] for t in ticks] == [3.1, 3.1, 4.1]
    assert state["settings"]["pricing"] == PRICES


def test_a_model_without_a_price_is_unpriced_not_free() -> None:
    agent = agent_with(
        [answer("hi", input_tokens=10, output_tokens=5)],
        pricing_table={"other-model": {"input": 1, "output": 1}},
    )
    agent.run_sync("go")
    row = agent.snapshot().state["cost"][0]
    assert row["usd"] is None and row["unpriced"] == "no price for model 'm' in pricing_table"


def test_a_warning_budget_records_the_crossing_and_goes_on() -> None:
    agent = agent_with(
        [
            call(1, input_tokens=1_000_000, output_tokens=0),
            call(2, input_tokens=1_000_000, output_tokens=0),
            answer("done", input_tokens=10, output_tokens=1),
        ],
        pricing_table=PRICES,
        cost_budget=(3.0, "warn"),
    )
    heard: list[Any] = []
    agent.on("cost.budget_exceeded", lambda e: heard.append(e.payload))
    assert agent.run_sync("go") == "done"
    assert heard == [{"k": 2, "limit": 3.0, "spend": 4.0, "action": "warn"}]
    assert agent.stopped_early() is None


def test_a_halting_budget_stops_before_the_next_call(tmp_path: Path) -> None:
    provider = mock(
        replies=[
            call(1, input_tokens=1_000_000, output_tokens=0),
            call(2, input_tokens=1_000_000, output_tokens=0),
            answer("never asked"),
        ]
    )
    agent = (
        Agent.create(provider=provider, model="m", pricing_table=PRICES, cost_budget=(3.0, "halt"))
        .tool(LOOKUP)
        .build()
    )
    assert agent.run_sync("go") == ""  # the last call's content: it asked for tools
    assert len(provider.requests) == 2  # no third call
    stopped = agent.stopped_early()
    assert stopped is not None
    assert stopped["reason"] == "cost-budget" and stopped["limit"] == 3.0
    assert stopped["spend"] == 4.0 and stopped["pending_count"] == 1
    snap = agent.snapshot()
    assert snap.state["cost_budget_hit"]["action"] == "halt"
    for k, receipt in enumerate(receipts(snap), start=1):
        assert served_at(snap, k).hash == receipt["request_hash"]
    loaded = load_recording(save_recording(agent, tmp_path / "r.json"))
    assert replay(loaded).state["cost"] == snap.state["cost"]  # no agent: prices recorded


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pricing_table": {"m": {"input": 1}}}, "needs an 'output' price"),
        ({"pricing_table": {"m": {"input": 1, "output": -1}}}, "number ≥ 0"),
        ({"pricing_table": {"m": {"input": 1, "output": 1, "cached": 1}}}, "the kinds are"),
        ({"pricing_table": []}, "maps model names"),
        ({"cost_budget": (1.0, "halt")}, "needs pricing_table"),
        ({"pricing_table": PRICES, "cost_budget": (0, "halt")}, "usd > 0"),
        ({"pricing_table": PRICES, "cost_budget": (1.0, "stop")}, "'warn'"),
    ],
)
def test_bad_pricing_and_budgets_are_refused_at_create(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(AgentBuildError, match=match):
        Agent.create(provider=mock(reply="x"), model="m", **kwargs)


def test_a_halt_on_an_answer_that_fails_its_schema_says_so() -> None:
    from pydantic import BaseModel

    class Out(BaseModel):
        value: int

    provider = mock(
        replies=[
            answer("not json", input_tokens=1_000_000, output_tokens=0),
            answer('{"value": 1}'),
        ]
    )
    agent = (
        Agent.create(provider=provider, model="m", pricing_table=PRICES, cost_budget=(1.0, "halt"))
        .output_schema(Out, retries=2)
        .build()
    )
    agent.run_sync("go")
    assert len(provider.requests) == 1  # no retry after the budget went
    stopped = agent.stopped_early()
    assert stopped is not None and stopped["reason"] == "cost-budget"
    unmet = agent.output_contract_unmet()
    assert unmet is not None and unmet["attempts"] == 1
