"""An agent that asks a person, built the same way in a test and in the subprocess that
resumes it (``python -m tests.agent.person_agent STORE CHECKPOINT ANSWER``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from trackway.agent import Agent, mock
from trackway.engine import SqliteStore
from trackway.tools import ask_human, define_tool

REFUND = define_tool(
    name="refund",
    description="Refund an order.",
    input_schema={
        "type": "object",
        "properties": {"amount": {"type": "number"}},
        "required": ["amount"],
    },
    execute=lambda args, ctx: (
        f"refunded {args['amount']} for {ctx.identity and ctx.identity.tenant}"
    ),
)


def build(replies: list[Any], store: SqliteStore | None = None) -> Agent:
    """The support agent: it may ask the person, and refunds wait for their approval."""
    return (
        Agent.create(provider=mock(replies=replies), model="m", store=store)
        .system("You handle refunds.")
        .tool(ask_human())
        .tool(REFUND)
        .check_in(["refund"], question="Refund this order?")
        .build()
    )


if __name__ == "__main__":
    store_path, checkpoint_path, answer = sys.argv[1:4]
    agent = build(["Refund done."], SqliteStore(store_path))
    outcome = agent.resume_sync(Path(checkpoint_path).read_bytes(), answer)
    print(outcome)
