"""A chart as one tool: a procedure the model calls with one set of arguments.

``flowchart_as_tool(chart)`` runs the chart on the call's arguments (its input schema is the
chart's declared one, the descriptor ``chart.to_mcp_tool()`` gives) and answers with the
chart's output; with ``coverage=`` the answer says what the procedure checked and did not.
The inner run's snapshot is embedded in the outer run's ``tool_runs`` key under the call's
id, so the procedure is explainable from the outer record alone. A chart that pauses
cannot ask a person from inside a tool: the call is a ``failure`` saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from trackway.engine import Executor, FlowChart, RedactionPolicy, thaw

from ..define._define import Tool, ToolContext, define_tool
from ..define._errors import ToolDefinitionError, ToolError
from ..results._declared import coverage as _coverage

__all__ = ["ChartPausedError", "flowchart_as_tool"]


class ChartPausedError(ToolError):
    """A chart run as a tool paused for a person: a tool call cannot wait for an answer."""


def _output(chart: FlowChart, state: Mapping[str, Any]) -> Any:
    """The chart's output: the keys its output schema names, or the whole final state."""
    schema = chart.to_mcp_tool().get("outputSchema")
    values = thaw(state)
    if isinstance(schema, Mapping) and isinstance(schema.get("properties"), Mapping):
        return {k: values[k] for k in schema["properties"] if k in values}
    return values


def flowchart_as_tool(
    chart: FlowChart,
    *,
    name: str | None = None,
    description: str | None = None,
    coverage: Mapping[str, Any] | None = None,
    redact: RedactionPolicy | None = None,
) -> Tool:
    """``chart`` as a tool: the call's arguments are the run's input; the answer is its
    output (wrapped in ``coverage(...)`` with the lists given). ``redact`` is the inner run's
    redaction policy (its snapshot is embedded in the outer record as redacted)."""
    if not isinstance(chart, FlowChart):
        raise ToolDefinitionError(f"flowchart_as_tool takes a built chart, not {chart!r}")
    descriptor = chart.to_mcp_tool()
    if coverage is not None:
        _coverage(None, **dict(coverage))  # refused here, where it is written
    tool_name = name or descriptor["name"].replace(".", "_")

    async def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        executor = Executor(chart, redact=redact)
        result = await executor.run(args)
        ctx.record_run(
            {
                "kind": "chart",
                "chart": chart.id,
                "run_id": result.run_id,
                "status": result.status,
                "snapshot": orjson.loads(result.snapshot.to_json()),
            }
        )
        if result.status == "paused":
            raise ChartPausedError(
                f"{tool_name} paused to ask a person, and a tool call cannot wait for an "
                "answer; run the chart on its own to answer it"
            )
        if result.error is not None:
            raise result.error
        output = _output(chart, result.state)
        return output if coverage is None else _coverage(output, **dict(coverage))

    return define_tool(
        name=tool_name,
        description=description or descriptor["description"],
        input_schema=descriptor["inputSchema"],
        execute=execute,
    )
