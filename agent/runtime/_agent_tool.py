"""An agent as one tool of another agent, and reading inner runs back from the outer record.

``agent_as_tool(agent)`` lets an outer agent hand a message to an inner one: the inner run gets
the outer caller's identity and session, runs under the outer call's cancellation, and its
whole recording is embedded in the outer run's ``tool_runs`` key under the call's id.
``tool_run(record, call_id)`` gives that recording back as a :class:`Snapshot`, so
``served_at(tool_run(record, call_id), k)`` rebuilds the inner agent's k-th request.
"""

from __future__ import annotations

from typing import Any

import orjson

from trackway.engine import Snapshot, thaw
from trackway.tools import Tool, ToolContext, ToolError, define_tool

from ..messages._errors import AgentBuildError
from ..messages._paused import Paused
from ._agent import Agent

__all__ = ["agent_as_tool", "tool_run"]


def agent_as_tool(agent: Agent, *, name: str | None = None, description: str | None = None) -> Tool:
    """``agent`` as a tool taking one ``message``; the answer is the inner agent's answer."""
    if not isinstance(agent, Agent):
        raise AgentBuildError(f"agent_as_tool takes a built Agent, not {agent!r}")
    tool_name = name or agent.name

    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        identity = None if ctx.identity is None else ctx.identity.model_dump(exclude_none=True)
        before = agent.snapshot().run_id if agent.commit_count() else None
        answer: str | Paused | None = None
        try:
            answer = await agent.run(args["message"], identity=identity, session_id=ctx.session_id)
            if isinstance(answer, Paused):  # withdrawn first, so the record says so
                await agent.abandon_pause()
        finally:  # the inner record is kept whether the inner run answered or failed
            snap = agent.snapshot() if agent.commit_count() else None
            if snap is not None and snap.run_id != before:  # this call's run, not an older one
                ctx.record_run(
                    {
                        "kind": "agent",
                        "agent": agent.name,
                        "run_id": snap.run_id,
                        "snapshot": orjson.loads(snap.to_json()),
                    }
                )
        if isinstance(answer, Paused):
            raise ToolError(
                f"{tool_name} paused to ask a person ({answer.question!r}), and a tool call "
                "cannot wait for an answer; give it what it needs in the message instead"
            )
        assert answer is not None
        return answer

    return define_tool(
        name=tool_name,
        description=description or f"Ask the {agent.name} agent; it answers in text.",
        input_schema={
            "type": "object",
            "properties": {"message": {"type": "string", "description": "What to ask it."}},
            "required": ["message"],
        },
        execute=execute,
    )


def tool_run(record: Snapshot | Agent, call_id: str) -> Snapshot:
    """The inner run a tool call made (a chart or an agent as a tool), from the outer record."""
    snap = record.snapshot() if isinstance(record, Agent) else record
    runs = thaw(snap.state.get("tool_runs", []))
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise LookupError(
            "this record's tool_runs are redacted, so inner runs cannot be read back from it; "
            "read them from an unredacted record (or leave tool_runs out of the policy)"
        )
    for run in runs:
        if run["id"] == call_id:
            return Snapshot.from_json(orjson.dumps(run["snapshot"]), source=f"tool call {call_id}")
    known = [r["id"] for r in runs]
    raise LookupError(
        f"tool call {call_id!r} made no inner run in this record; the calls that did: "
        f"{', '.join(known) or 'none'}"
    )
