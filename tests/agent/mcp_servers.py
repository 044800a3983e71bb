"""MCP servers the MCP tests start in subprocesses: ``python -m tests.agent.mcp_servers KIND
TRANSPORT [PORT]``. ``ours`` is trackway's ``mcp_serve``; ``sdk`` is written with the SDK's own
``MCPServer`` (independent of trackway)."""

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
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 8000
    if kind == "ours":
        mcp_serve(OURS, name="trackway-tests").run(transport, port=port)  # type: ignore[arg-type]
    else:
        server = sdk_server()
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", port=port)
