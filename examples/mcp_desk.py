"""Tools over MCP both ways, a chart as a tool, and an agent as a tool — in one process.

Run it: ``python examples/mcp_desk.py`` (needs the mcp extra: ``pip install 'trackway[mcp]'``).
Offline: the model is scripted (``mock``), and the MCP server runs in process, so nothing
listens on a port. The script

- serves a credit-check chart (``flowchart_as_tool``) and an inventory tool over MCP
  (``mcp_serve``), and connects an agent to that server as any MCP client would
  (``mcp_client``);
- gives the same agent a translator agent as one more tool (``agent_as_tool``);
- runs one turn, then reads the chart's and the translator's inner runs back from the outer
  record (``tool_run``) and rebuilds the translator's request from it (``served_at``).

To serve the same tools to another process, call ``SERVER.run("stdio")`` (or
``"streamable-http"``, which listens on 127.0.0.1:8000 at ``/mcp``).
"""

from __future__ import annotations

from typing import Any

import anyio

from trackway import (
    Agent,
    agent_as_tool,
    define_tool,
    flow_chart,
    flowchart_as_tool,
    mcp_client,
    mcp_serve,
    mock,
    served_at,
    tool_run,
)


def _score(scope: Any) -> None:
    scope["score"] = 720 if scope["income"] > 50_000 else 480


def _decide(scope: Any) -> None:
    scope["decision"] = "approve" if scope["score"] >= 600 else "review"


CREDIT = (
    flow_chart("Score", _score, id="score")
    .then("Decide", _decide, id="decide")
    .build(
        name="credit check",
        chart_id="credit_check",
        description="Score an applicant by income and decide.",
        input_schema={
            "type": "object",
            "properties": {"income": {"type": "integer"}},
            "required": ["income"],
        },
        output_schema={"type": "object", "properties": {"decision": {"type": "string"}}},
    )
)
STOCK = define_tool(
    name="stock",
    description="Units in stock for a product code.",
    input_schema={
        "type": "object",
        "properties": {"code": {"type": "string"}},
        "required": ["code"],
    },
    execute=lambda args, ctx: {"code": args["code"], "units": 12},
)
SERVER = mcp_serve([flowchart_as_tool(CREDIT), STOCK], name="desk")


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in items]}


def translator() -> Agent:
    return Agent.create(
        provider=mock(replies=["Aprobado; quedan 12 unidades."]), model="small", name="translator"
    ).build()


async def run_desk() -> Agent:
    async with mcp_client(name="desk", server=SERVER.server) as desk:
        remote = await desk.tools()
        script = [
            calls(("c1", "credit_check", {"income": 80_000}), ("c2", "stock", {"code": "X-1"})),
            calls(("c3", "translator", {"message": "Approved; 12 units left."})),
            "Aprobado; quedan 12 unidades.",
        ]
        agent = (
            Agent.create(provider=mock(replies=script), model="large")
            .tools(remote)
            .tool(agent_as_tool(translator(), description="Translates into Spanish."))
            .build()
        )
        await agent.run("Check the applicant (income 80000), stock of X-1, answer in Spanish.")
    return agent


def main() -> Agent:
    agent = anyio.run(run_desk)
    snap = agent.snapshot()
    for message in snap.state["history"]:
        if message["role"] == "tool":
            print(f"{message['name']}: {message['content']}")
    print("answer:", snap.state["final_answer"])
    inner = tool_run(snap, "c3")
    print("translator was asked:", served_at(inner, 1).messages[-1].content)
    print("inner runs on the record:", [(r["id"], r["kind"]) for r in snap.state["tool_runs"]])
    return agent


if __name__ == "__main__":
    main()
