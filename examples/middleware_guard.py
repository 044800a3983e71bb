"""A support agent guarded at every door of its turn, offline, and what its record keeps.

Run it: ``python examples/middleware_guard.py [DIR]`` (without ``DIR``, a temporary
directory). The agent looks up orders; a scripted stand-in for the model (``mock``) asks for
the tool the way an LLM would. Its middleware:

- at the **input** door, ``no_cards`` refuses a message with a card number (no model is
  called) and spells out "asap";
- **before each call**, ``own_orders`` keeps lookups to the caller's own orders (it fills in
  the tenant, and says where that came from);
- **after each call**, ``hide_emails`` scrubs e-mail addresses the model must never read;
- at the **output** door, ``signed`` signs the answer the person gets.

The script runs two turns, a refused one and an answered one, prints what each link did
(the ``middleware_decisions`` ledger) and the narrative, then saves the answered turn as a
recording and replays it without the agent, its model, its tool or any link.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from trackway.agent import (
    Agent,
    InputRefusedError,
    MessageContext,
    act,
    load_recording,
    mock,
    replay,
    save_recording,
)
from trackway.recorders import narrative
from trackway.tools import ToolContext, allow, deny, scrub, tool

CARD = re.compile(r"\b(?:\d[ -]?){13,16}\b")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")


@tool
def order_status(order: str, tenant: str = "") -> str:
    """The status of an order."""
    return f"Order {order} for {tenant}: shipped Monday; contact jo.doe@example.com"


def no_cards(message: dict[str, Any], ctx: MessageContext) -> Any:
    """The person's message: no card numbers in chat; "asap" spelled out."""
    if CARD.search(message["content"]):
        return deny("card numbers are not taken in chat; use the payment page")
    if "asap" in message["content"]:
        return allow(message["content"].replace("asap", "as soon as possible"), "spelled out")
    return None


def own_orders(call: dict[str, Any], ctx: ToolContext) -> Any:
    """Before a lookup: only the caller's own orders, with their tenant filled in."""
    tenant = ctx.identity.tenant if ctx.identity is not None else None
    if tenant is None:
        return deny("order lookups need a signed-in customer")
    return allow(
        {**call["args"], "tenant": tenant}, "the caller's tenant", from_={"tenant": "login"}
    )


def hide_emails(call: dict[str, Any], result: dict[str, Any], ctx: ToolContext) -> Any:
    """After a lookup: the model never reads an e-mail address."""
    return scrub(lambda text: EMAIL.sub("[email]", text), "e-mail addresses")


def signed(message: dict[str, Any], ctx: MessageContext) -> Any:
    """The answer the person gets, signed."""
    return allow(message["content"] + " — the support desk", "signed")


def build(provider: Any, story: Any) -> Agent:
    return (
        Agent.create(provider=provider, model="support-model")
        .system("You answer questions about orders.")
        .tool(order_status)
        .input_middleware(no_cards)
        .middleware(act(before_tool=own_orders), act(after_tool=hide_emails), act(output=signed))
        .recorder(story)
        .build()
    )


def main(where: Path) -> None:
    lookup = {"tool_calls": [{"id": "c1", "name": "order_status", "args": {"order": "A7"}}]}
    provider = mock(replies=[lookup, "Order A7 shipped on Monday."])
    story = narrative()
    agent = build(provider, story)
    caller = {"tenant": "acme"}

    try:
        agent.run_sync("Charge my card 4111 1111 1111 1111 for A7", identity=caller)
    except InputRefusedError as refused:
        print(f"Refused by {refused.middleware}: {refused.reason}")
        print(f"Model calls so far: {len(provider.requests)}")

    answer = agent.run_sync("Where is order A7? I need it asap", identity=caller)
    print(f"Answer: {answer}")
    print(f"The model read: {provider.requests[0].messages[-1].content!r}")
    served = [m.content for m in provider.requests[1].messages if m.role == "tool"]
    print(f"The tool result it read: {served[0]!r}")
    print("Decisions:")
    for row in agent.snapshot().state["middleware_decisions"]:
        changed = "rewrote" if row["changed"] else "passed" if row["outcome"] == "allow" else ""
        what = changed or row["outcome"]
        print(f"  {row['door']:<11} {row['middleware']:<11} {what}  {row.get('why', '')}")
    print("Narrative:")
    for line in story.text().splitlines():
        print(f"  {line}")

    path = save_recording(agent, where / "support.jsonl")
    replayed = replay(load_recording(path))  # no agent, no model, no tool, no link
    print(f"Replayed {len(replayed)} commits from {path.name} without the agent: same record")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
