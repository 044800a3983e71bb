"""The seeds' three remaining patterns on one record each: a swarm whose triage agent hands the
conversation to billing, a map-reduce that summarizes three notes in parallel, and a tree of
thoughts that keeps the best two paths of three options per level.

Run it: ``python examples/patterns.py``. Offline: every model is scripted (``mock``). Each
pattern is a composition: one chart whose members are isolated subflows, so each run is one
commit log. The script prints each answer, what the pattern recorded (the handoffs, the
split, the beam), which member made each model call, checks that every request rebuilds from
the record with the hash its receipt committed, and replays each run from its record alone.
"""

from __future__ import annotations

from typing import Any

from trackway.agent import (
    Agent,
    LLMCall,
    handoff_tool,
    map_reduce,
    mock,
    receipts,
    replay,
    served_at,
    swarm,
    tree_of_thoughts,
)
from trackway.engine import thaw


def desk() -> Agent:
    handing = {
        "tool_calls": [
            {"id": "h1", "name": "handoff", "args": {"to": "billing", "note": "double charge"}}
        ]
    }
    triage = (
        Agent.create(provider=mock(replies=[handing, "Passing you to billing."]), model="small")
        .system("Route the person to the right desk.")
        .tool(handoff_tool())
        .build()
    )
    billing = (
        Agent.create(provider=mock(replies=["Refunded the second charge of 20 EUR."]), model="m")
        .system("You handle charges and refunds.")
        .tool(handoff_tool())
        .build()
    )
    return swarm({"triage": triage, "billing": billing}, name="desk", max_hops=3)


def digest() -> Agent:
    def summarize(request: Any) -> str:
        note = request.messages[-1].content
        return f"{note.split(':')[0]}: {len(note.split())} words"

    mapper = LLMCall.create(provider=mock(respond=summarize), model="small").build()
    return map_reduce(
        mapper,
        split=lambda text: [line for line in text.splitlines() if line.strip()],
        reduce=lambda answers: "; ".join(answers),
        max_items=8,
        concurrency=2,
        name="digest",
    )


def planner() -> Agent:
    def propose(request: Any) -> str:
        text = request.messages[-1].content
        option = int(text.split("(option ")[1].split(" ")[0])
        return ["walk", "take the bus", "cycle"][option - 1]

    def evaluate(problem: str, thoughts: list[str]) -> float:
        return {"walk": 1.0, "take the bus": 2.0, "cycle": 3.0}[thoughts[-1]] - len(thoughts)

    proposer = LLMCall.create(provider=mock(respond=propose), model="small").build()
    return tree_of_thoughts(proposer, evaluate=evaluate, k=3, beam=2, depth=2, name="route")


def show(title: str, runner: Agent, message: str) -> None:
    answer = runner.run_sync(message)
    snap = runner.snapshot()
    calls = receipts(snap)
    exact = all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(calls, 1))
    alone = replay(snap).state["final_answer"] == answer  # no pattern, no model: the record
    print(f"{title}: {answer}")
    for event in (e for c in snap.history() for e in c.events):
        if event.name.startswith("composition.") and event.name != "composition.turn_end":
            print(f"  {event.name} {thaw(event.payload)}")
    print(f"  calls by member: {[r['member'] for r in calls]}")
    print(f"  rebuilt exactly: {exact}; replayed from the record alone: {alone}")


def main() -> None:
    show("desk", desk(), "I was charged twice for one order.")
    notes = "tides: twice a day\nwinds: from the west today\nclouds: none"
    show("digest", digest(), notes)
    show("route", planner(), "How do I get to the station?")


if __name__ == "__main__":
    main()
