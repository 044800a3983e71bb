"""What the agent bench cases share: the ``lookup`` tool, a turn of ``n`` lookups then the
answer, and the scripted builder every variant starts from."""

from __future__ import annotations

from typing import Any

from trackway.agent import Agent, AgentBuilder, mock
from trackway.tools import define_tool

LOOKUP = define_tool(
    name="lookup",
    description="Look a key up.",
    input_schema={"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
    execute=lambda args, ctx: "ok",
)


def lookup_script(n: int, answer: str) -> list[Any]:
    """``n`` model replies each calling ``lookup`` once, then ``answer``."""
    calls = [
        {"tool_calls": [{"id": f"c{i}", "name": "lookup", "args": {"key": f"k{i}"}}]}
        for i in range(n)
    ]
    return [*calls, answer]


def scripted(n: int, replies: list[Any]) -> AgentBuilder:
    """A builder on a mock that plays ``replies`` (``n`` tool calls, then the answer)."""
    provider = mock(replies=replies, keep_requests=False)
    return Agent.create(provider=provider, model="scripted", max_iterations=n + 1, stream=False)
