"""MCP server: trackway tools offered to any MCP client, over the official ``mcp`` SDK.

``mcp_serve(tools, name=)`` returns a :class:`McpServe` whose ``run(transport="stdio" |
"streamable-http", host="127.0.0.1", port=8000)`` follows the SDK's convention (``serve`` is
its async twin). Arguments are checked against the tool's own schema before it runs; invalid
arguments and tools that raise come back as MCP tool errors with the same teaching text an
agent's model would read. A tool's ``ask_or_assume`` rules and ``period`` ride the listed
tool's ``_meta`` under ``trackway``; an omitted argument with an ``assume`` rule is filled
here, so clients that do not read the rules still get the declared default. A plain ``def``
tool runs in a worker thread (at most ``max_threads`` at once), so it never blocks the event
loop that answers every other request and client.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Iterable
from typing import Any, Literal

import anyio
import anyio.lowlevel
import anyio.to_thread
import orjson

from trackway.engine import thaw

from ..define._assume import fill
from ..define._define import Tool, ToolContext, distinct_tools
from ..define._errors import ToolError
from ..define._schema_refs import local_validator, ref_fault
from ..results._coverage_items import DeclarationRefused
from ..results._declared_read import read_declared
from ..results._outcome import argument_errors, read_envelope
from ._mcp_client import _sdk

__all__ = ["McpServe", "mcp_serve"]

Transport = Literal["stdio", "streamable-http"]
_MAX_THREADS = 16
"""Plain ``def`` tools one server runs at once by default: enough for tools that wait on I/O
to overlap, few enough that a burst of calls cannot start a thread each."""


class McpServe:
    """Trackway tools served over MCP (see :func:`mcp_serve`)."""

    def __init__(
        self, tools: Iterable[Tool], name: str, *, max_threads: int = _MAX_THREADS
    ) -> None:
        self.name = name
        self.tools = {t.name: t for t in tools}
        self.max_threads = max_threads
        for tool in self.tools.values():  # define_tool checked them, unless it was bypassed
            fault = ref_fault(tool.input_schema)
            if fault is not None:
                raise ToolError(f"mcp_serve: tool {tool.name!r}: its input schema {fault}")
            if tool.wants:  # its tickets are redeemed by an agent's store; this door has none
                raise ToolError(
                    f"mcp_serve: tool {tool.name!r} wants artifacts ({', '.join(tool.wants)}): "
                    "an MCP client has no artifact store to redeem its tickets from; serve it "
                    "from an agent with .artifacts(store), or serve a tool without wants"
                )
        self._validators = {t.name: local_validator(t.input_schema) for t in self.tools.values()}
        # one limiter per event loop (a limiter belongs to the loop it was made in)
        self._limiter: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar(
            f"mcp_serve {name} threads"
        )
        self._calls = itertools.count(1)
        mcp = _sdk()
        self.server = mcp.server.Server(
            name, on_list_tools=self._list_tools, on_call_tool=self._call_tool
        )

    def __repr__(self) -> str:
        return f"mcp_serve({self.name!r}: {', '.join(self.tools)})"

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        types = _sdk().types
        listed = []
        for tool in self.tools.values():
            meta = {}
            if tool.ask_or_assume:
                meta["ask_or_assume"] = thaw(tool.ask_or_assume)
            if tool.period:
                meta["period"] = thaw(tool.period)
            listed.append(
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema={"type": "object", **dict(tool.input_schema)},
                    meta={"trackway": meta} if meta else None,
                )
            )
        return types.ListToolsResult(tools=listed)

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        types = _sdk().types

        def answer(text: str, *, error: bool = False, structured: Any = None) -> Any:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)],
                structured_content=structured,
                is_error=error,
            )

        tool = self.tools.get(params.name)
        if tool is None:
            names = ", ".join(self.tools) or "none"
            return answer(
                f"Error: there is no tool named {params.name!r}. Available tools: {names}.",
                error=True,
            )
        args = dict(params.arguments or {})
        if tool.ask_or_assume:
            filling = fill(args, tool.ask_or_assume)
            if filling.asks:
                asked = ", ".join(a["argument"] for a in filling.asks)
                return answer(
                    f"Error: {tool.name} needs {asked} from the person (its rule asks them); "
                    "ask them and call again with it.",
                    error=True,
                )
            args = filling.args
        errors = argument_errors(self._validators[tool.name], args)
        if errors:
            return answer(
                f"Error: invalid arguments for {tool.name}: {'; '.join(errors)}. Call the tool "
                "again with arguments that match its schema.",
                error=True,
            )
        call_id = f"mcp-{next(self._calls)}"
        context = ToolContext(
            call_id=call_id, tool_name=tool.name, run_id=f"mcp:{self.name}", iteration=0
        )
        try:
            if tool.is_async:
                result = await tool.execute(args, context)
            else:  # off the event loop, which answers every other request meanwhile
                call = functools.partial(tool.execute, args, context)
                result = await anyio.to_thread.run_sync(call, limiter=self._threads())
                if inspect.isawaitable(result):
                    result = await result
        except DeclarationRefused as exc:
            return answer(f"refused: {exc}", error=True)
        except Exception as exc:
            return answer(f"Error: {tool.name} failed: {type(exc).__name__}: {exc}", error=True)
        declared = read_declared(tool.name, result)
        if declared is not None:
            wire = declared.served
            return answer(
                orjson.dumps(wire).decode(), structured=wire if isinstance(wire, dict) else None
            )
        envelope = read_envelope(tool.name, result)
        if envelope is not None:
            content, status, _ = envelope
            failed = status in ("failure", "denied", "invalid")
            text = content if isinstance(content, str) else orjson.dumps(content).decode()
            return answer(text, error=failed)
        if isinstance(result, str):
            return answer(result)
        try:
            text = orjson.dumps(result, default=thaw).decode()
        except TypeError as exc:
            return answer(
                f"Error: {tool.name} returned a value that is not JSON ({exc})", error=True
            )
        return answer(text, structured=result if isinstance(result, dict) else None)

    def _threads(self) -> anyio.CapacityLimiter:
        try:
            return self._limiter.get()
        except LookupError:
            limiter = anyio.CapacityLimiter(self.max_threads)
            self._limiter.set(limiter)
            return limiter

    async def serve(
        self, transport: Transport = "stdio", *, host: str = "127.0.0.1", port: int = 8000
    ) -> None:
        """Serve until cancelled (async twin of :meth:`run`). Streamable HTTP listens on
        ``host`` (loopback unless told otherwise) at ``/mcp``."""
        if transport == "stdio":
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())
            return
        if transport != "streamable-http":
            raise ToolError(f"mcp_serve: transport={transport!r}: use 'stdio' or 'streamable-http'")
        import uvicorn

        app = self.server.streamable_http_app(host=host)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        await uvicorn.Server(config).serve()

    def run(
        self, transport: Transport = "stdio", *, host: str = "127.0.0.1", port: int = 8000
    ) -> None:
        """Serve in this process until it is stopped (the SDK's ``run`` convention)."""
        anyio.run(lambda: self.serve(transport, host=host, port=port))


def mcp_serve(
    tools: Iterable[Tool], *, name: str = "trackway", max_threads: int = _MAX_THREADS
) -> McpServe:
    """Offer ``tools`` to MCP clients; ``.run(transport=...)`` serves them. Plain ``def``
    tools run in worker threads, at most ``max_threads`` at once (16 by default); further
    calls wait for a thread, while ``async def`` tools and other requests go on."""
    if isinstance(max_threads, bool) or not isinstance(max_threads, int) or max_threads < 1:
        raise ToolError(
            f"mcp_serve(max_threads={max_threads!r}): use a whole number of threads, 1 or more"
        )
    return McpServe(distinct_tools(tools, "mcp_serve(tools)"), name, max_threads=max_threads)
