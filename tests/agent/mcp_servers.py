"""MCP servers the MCP tests start in subprocesses: ``python -m tests.agent.mcp_servers KIND
TRANSPORT [PORT | ARG]``. ``ours`` is trackway's ``mcp_serve``; ``sdk`` is written with the SDK's
own ``MCPServer`` (independent of trackway). ``hostile`` (stdio; ARG is a URL) and ``names``
(stdio; ARG is ``forward`` or ``reverse``) are written with the SDK's low-level ``Server``, so
they can list what ``MCPServer`` never would: schemas that cannot work and names that are not
valid tool names."""

from __future__ import annotations

import sys
import time
from typing import Any

from trackway.tools import absent, define_tool, mcp_serve

VAULT_SECRET = "sk-live-VAULT-91c4e2d7"
"""What the ``vault`` key's error quotes: text only the server knows (the redaction tests)."""


def _lookup(args: dict[str, Any], ctx: Any) -> Any:
    if args["key"] == "missing":
        return absent(what="the key 'missing'", checked=["every key in the table"])
    if args["key"] == "boom":
        raise RuntimeError("the table is locked")
    if args["key"] == "vault":
        raise RuntimeError(f"the vault refused the passphrase {VAULT_SECRET}")
    return {"key": args["key"], "value": len(args["key"])}


OURS = [
    define_tool(
        name="lookup",
        description="Look a key up in the table.",
        input_schema={
            "type": "object",
            "properties": {
                "key": {"type": "string"},
                "window": {"type": "string", "enum": ["1h", "2h"]},
            },
            "required": ["key", "window"],
        },
        execute=_lookup,
        ask_or_assume={"window": {"assume": "2h"}},
        period={"argument": "window"},
    ),
    define_tool(
        name="slow",
        description="Sleep for a number of seconds.",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}},
        execute=lambda args, ctx: (time.sleep(args.get("seconds", 0)), "slept")[1],
    ),
]


def hostile_schemas(remote: str) -> dict[str, dict[str, Any]]:
    """Tools by name: good ones (a recursive tree, an absolute ``$ref`` to the schema's own
    ``$id``) and ones whose schema cannot work (a ``$ref`` cycle, a ``$ref`` to nowhere, a
    ``$ref`` to ``remote``, a schema that is not JSON Schema)."""
    node = {
        "type": "object",
        "properties": {
            "label": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
        },
        "required": ["label"],
    }
    return {
        "echo": {"type": "object", "properties": {"text": {"type": "string"}}},
        "tree": {"type": "object", "$defs": {"node": node}, "$ref": "#/$defs/node"},
        "cycle": {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
        },
        "nowhere": {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}},
        "remote": {"type": "object", "properties": {"x": {"$ref": remote}}},
        "not_a_schema": {"type": "object", "properties": {"x": {"type": 5}}},
        "by_id": {
            "$id": "https://schemas.example/by-id",
            "type": "object",
            "properties": {"x": {"$ref": "https://schemas.example/by-id#/$defs/x"}},
            "$defs": {"x": {"type": "integer"}},
        },
    }


NAMES = ["a_b", "a.b", "a b", "db.query", "x" * 70, "x" * 70 + "y", "z" * 80, "ok-name"]
"""Remote names: ``a_b`` is valid; ``a.b`` and ``a b`` both sanitize to it; ``db.query``
sanitizes to a name nobody has; the two ``x`` names share their first 64 characters; the
``z`` name is only too long."""


def low_level_server(kind: str, arg: str) -> Any:
    """``hostile`` lists :func:`hostile_schemas` (``arg`` is the remote URL); ``names`` lists
    :data:`NAMES` in ``arg`` order (``forward`` or ``reverse``). A call answers with the
    remote name it reached."""
    from mcp import types
    from mcp.server import Server

    if kind == "hostile":
        listed = list(hostile_schemas(arg).items())
    else:
        plain = {"type": "object", "properties": {}}
        listed = [(n, plain) for n in (NAMES if arg == "forward" else NAMES[::-1])]

    async def list_tools(ctx: Any, params: Any) -> Any:
        tools = [types.Tool(name=n, description=f"tool {n}", input_schema=s) for n, s in listed]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        text = f"reached {params.name}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server(f"{kind}-tests", on_list_tools=list_tools, on_call_tool=call_tool)


def sdk_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("weather-sdk")

    @server.tool()
    def forecast(city: str) -> str:
        """Tomorrow's forecast for a city."""
        return f"{city}: rain, 14°C"

    @server.tool()
    def crash() -> str:
        """Stops the server process (for the tests of a server that dies mid-call)."""
        import os

        os._exit(3)

    return server


if __name__ == "__main__":
    kind, transport = sys.argv[1], sys.argv[2]
    if kind in ("hostile", "names"):
        import anyio
        from mcp.server.stdio import stdio_server

        low = low_level_server(kind, sys.argv[3])

        async def serve() -> None:
            async with stdio_server() as (read, write):
                await low.run(read, write, low.create_initialization_options())

        anyio.run(serve)
        sys.exit(0)
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 8000
    if kind == "ours":
        mcp_serve(OURS, name="trackway-tests").run(transport, port=port)  # type: ignore[arg-type]
    else:
        server = sdk_server()
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", port=port)
