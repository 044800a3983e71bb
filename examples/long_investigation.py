"""A long investigation that stays inside its context window, within budget, on the record.

Run it: ``python examples/long_investigation.py``. Offline: a scripted stand-in for the
model (the ``mock`` provider) checks 30 log shards one call at a time, as an LLM would, and
says on each call how it judges the shard before (the reserved ``_findings`` argument:
noise, or a fact when it found the error). The agent:

- serves each call a sliding window of the 4 most recent turns (``.window(...)``): the
  history keeps every shard, the request does not grow, and a notice tells the model what
  was left out;
- prices every call and warns once the run goes over $0.05 (``pricing_table``,
  ``cost_budget``);
- files what the model declared on the findings ledger, and serves the shards it judged
  noise as short tickets.

The script prints the served size of some requests, the window's last record, the findings
it filed and the spend, then checks that every request rebuilds from the record
(``served_at``) with the hash its receipt committed.
"""

from __future__ import annotations

from typing import Any

from trackway import Agent, define_tool, mock, receipts, served_at, sliding_window

SHARDS = 30
ERROR_AT = 17


def read_shard(args: dict[str, Any], ctx: Any) -> str:
    n = args["shard"]
    if n == ERROR_AT:
        return f"shard {n}: ERROR disk full on node-4 at 02:13"
    return f"shard {n}: " + "ok " * 40


SHARD_TOOL = define_tool(
    name="read_shard",
    description="Read one log shard by number.",
    input_schema={
        "type": "object",
        "properties": {"shard": {"type": "integer"}},
        "required": ["shard"],
        "additionalProperties": False,
    },
    execute=read_shard,
)


def script() -> list[Any]:
    replies: list[Any] = []
    for n in range(SHARDS):
        findings: dict[str, Any] = {"basis": "exploratory"}
        if n > 0:
            standing = "fact" if n - 1 == ERROR_AT else "noise"
            findings["previous"] = [{"id": f"s{n - 1}", "standing": standing}]
        call = {"id": f"s{n}", "name": "read_shard", "args": {"shard": n, "_findings": findings}}
        replies.append(
            {"tool_calls": [call], "usage": {"input_tokens": 4_000, "output_tokens": 60}}
        )
    replies.append(
        {
            "content": "The disk filled on node-4 at 02:13 (shard 17).",
            "usage": {"input_tokens": 4_000, "output_tokens": 20},
        }
    )
    return replies


def build() -> Agent:
    return (
        Agent.create(
            provider=mock(replies=script()),
            model="small-model",
            max_iterations=SHARDS + 1,
            pricing_table={"small-model": {"input": 0.40, "output": 1.60}},
            cost_budget=(0.05, "warn"),
        )
        .tool(SHARD_TOOL)
        .window(sliding_window(keep_recent_turns=4), keep_last_tool_results=1)
        .findings()
        .build()
    )


def main() -> Agent:
    agent = build()
    answer = agent.run_sync("Which shard shows why the job failed?")
    print(answer)
    snap = agent.snapshot()
    sizes = {k: len(served_at(snap, k).canonical_json()) for k in (5, 15, 25, SHARDS + 1)}
    print("served bytes by call:", ", ".join(f"#{k} {n}" for k, n in sizes.items()))
    last = snap.state["window"][-1]
    print(
        f"window: {last['why']}; {snap.state['window_view']['dropped_messages']} messages left out"
    )
    facts = [
        r["id"] for r in agent.findings() if r["kind"] == "standing" and r["standing"] == "fact"
    ]
    print("facts:", facts, "| tickets:", len(snap.state["findings_tickets"]))
    spent = snap.state["cost_total"]["usd"]
    hit = snap.state["cost_budget_hit"]
    print(f"spent ${spent:.4f}; budget ${hit['limit']} passed at call {hit['k']}")
    ok = all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(receipts(snap), 1))
    print("every request rebuilds from the record:", ok)
    return agent


if __name__ == "__main__":
    main()
