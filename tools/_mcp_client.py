"""MCP client: the tools an MCP server lists, as trackway tools.

``mcp_client(name=, command=, args=, env=)`` (stdio), ``mcp_client(name=, url=, headers=)``
(streamable HTTP) or ``mcp_client(name=, server=)`` (an in-process server, for tests) is an
async context manager over the official ``mcp`` SDK's ``Client``: inside it one connection is
shared by every call. ``await client.tools()`` returns :class:`~trackway.tools.Tool`s whose
calls go through the agent like any other tool's (validation, statuses, ceilings, records).
A call made while no ``async with`` block is open gets a connection of its own, closed when
the call returns. A server that fails, dies or hangs turns into a ``failure`` result within
``call_timeout``; it never hangs the run.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Literal

import anyio
import orjson

from trackway.engine import TrackwayWarning
from trackway.engine._keywords import checked_keywords

from ._assume import check_rules
from ._define import Tool, ToolContext, define_tool
from ._errors import ToolError

__all__ = ["McpCallError", "McpClient", "McpConnectionError", "mcp_client"]

ResultMode = Literal["text", "structured"]
_NAME = re.compile(r"[^A-Za-z0-9_-]")


class McpConnectionError(ToolError, ConnectionError):
    """An MCP server could not be reached or listed (the message names it and what to
    check)."""


class McpCallError(ToolError):
    """An MCP tool call failed: the server answered with an error, hung past the call
    timeout, or went away. Inside a run it becomes the call's ``failure`` result."""


def _sdk() -> Any:
    try:
        import mcp
    except ImportError:  # pragma: no cover - the extra is installed in every test run
        raise ToolError("MCP support needs the mcp extra: pip install 'trackway[mcp]'") from None
    return mcp


class McpClient:
    """A connection to one MCP server (see :func:`mcp_client`)."""

    def __init__(
        self,
        name: str,
        target: Any,
        where: str,
        *,
        result_mode: ResultMode,
        call_timeout: float,
        connect_timeout: float,
    ) -> None:
        self.name = name
        self._target = target
        self._where = where
        self.result_mode: ResultMode = result_mode
        self.call_timeout = call_timeout
        self.connect_timeout = connect_timeout
        self._client: Any = None
        self._stack: AsyncExitStack | None = None

    def __repr__(self) -> str:
        return f"mcp_client({self.name!r}: {self._where})"

    async def _open(self, stack: AsyncExitStack) -> Any:
        mcp = _sdk()
        # no cancel scope around entering: the client's own task group outlives this call;
        # a server that never answers the handshake times out on the read
        client = mcp.Client(self._target(), read_timeout_seconds=self.connect_timeout)
        try:
            return await stack.enter_async_context(client)
        except Exception as exc:
            raise McpConnectionError(
                f"MCP server {self.name!r} ({self._where}) could not be reached: "
                f"{type(exc).__name__}: {_said(exc, self.connect_timeout)}. "
                "Check that the command runs on its own (or that the URL answers), and its "
                "arguments and environment"
            ) from exc

    async def __aenter__(self) -> McpClient:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            self._client = await self._open(stack)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc: Any) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    async def tools(self) -> list[Tool]:
        """The server's tools as trackway tools (listed over the open connection, or over
        one opened for the listing)."""
        try:
            listed = await self._with_client(lambda c: c.list_tools())
        except McpConnectionError:
            raise
        except Exception as exc:
            raise McpConnectionError(
                f"MCP server {self.name!r} ({self._where}) could not list its tools: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        out: list[Tool] = []
        taken: set[str] = set()
        for spec in listed.tools:
            tool = self._tool(spec, taken)
            taken.add(tool.name)
            out.append(tool)
        return out

    async def _with_client(self, action: Any) -> Any:
        if self._client is not None:
            return await action(self._client)
        async with AsyncExitStack() as stack:
            return await action(await self._open(stack))

    def _tool(self, spec: Any, taken: set[str]) -> Tool:
        remote = spec.name
        base = local = _NAME.sub("_", remote)[:60] or "tool"
        n = 1
        while local in taken:  # two remote names that map to one local name: keep both
            n += 1
            local = f"{base}_{n}"
        schema = dict(spec.input_schema or {"type": "object", "properties": {}})
        rules = period = None
        meta = (spec.meta or {}).get("trackway") if isinstance(spec.meta, Mapping) else None
        if isinstance(meta, Mapping) and (meta.get("ask_or_assume") or meta.get("period")):
            try:
                rules, period = check_rules(
                    local, meta.get("ask_or_assume"), schema, meta.get("period")
                )
            except ToolError as exc:  # judged against the listed schema: dropped, not fatal
                warnings.warn(
                    f"MCP server {self.name!r}: the rules of {remote!r} were dropped ({exc}); "
                    "the tool still registers",
                    TrackwayWarning,
                    stacklevel=3,
                )
                rules = period = None

        async def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
            return await self._call(remote, args)

        made = define_tool(
            name=local,
            description=spec.description or f"{remote} (from MCP server {self.name})",
            input_schema=schema,
            execute=execute,
            ask_or_assume=rules,
            period=period,
        )
        import dataclasses

        return dataclasses.replace(made, source=f"mcp server {self.name!r}")

    async def _call(self, remote: str, args: dict[str, Any]) -> Any:
        try:
            with anyio.fail_after(self.call_timeout):
                result = await self._with_client(
                    lambda c: c.call_tool(remote, args, read_timeout_seconds=self.call_timeout)
                )
        except TimeoutError:
            raise McpCallError(
                f"MCP server {self.name!r} did not answer {remote} within {self.call_timeout:g} s"
            ) from None
        except McpConnectionError:
            raise
        except Exception as exc:
            raise McpCallError(
                f"MCP server {self.name!r} failed during {remote}: {type(exc).__name__}: {exc}"
            ) from None
        text = _text(result.content)
        if result.is_error:
            said = text.removeprefix("Error: ")
            raise McpCallError(
                f"{remote} on MCP server {self.name!r} answered with an error: {said}"
            )
        if self.result_mode == "structured":
            if result.structured_content is not None:
                return result.structured_content
            try:
                parsed = orjson.loads(text)
            except orjson.JSONDecodeError:
                return text
            return parsed if isinstance(parsed, dict) else text
        return text


def _said(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s"
    return str(exc) or "no detail given"


def _text(content: Sequence[Any]) -> str:
    """The text of a result's content blocks (other blocks described, never dropped)."""
    parts: list[str] = []
    for block in content:
        kind = getattr(block, "type", "?")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = len(getattr(block, "data", "") or "")
            parts.append(f"[{kind} {getattr(block, 'mime_type', '?')}, {size} base64 characters]")
        elif kind == "resource_link":
            parts.append(f"[resource link {getattr(block, 'uri', '?')}]")
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            parts.append(
                getattr(resource, "text", None) or f"[resource {getattr(resource, 'uri', '?')}]"
            )
        else:
            parts.append(f"[{kind} content]")
    return "\n".join(parts)


@checked_keywords
def mcp_client(
    *,
    name: str,
    command: str | None = None,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    server: Any = None,
    result_mode: ResultMode = "text",
    call_timeout: float = 60.0,
    connect_timeout: float = 20.0,
) -> McpClient:
    """A client of one MCP server: over stdio (``command``, ``args``, ``env``), streamable
    HTTP (``url``, ``headers``) or in process (``server``, an SDK ``Server`` or
    ``MCPServer``). ``result_mode="structured"`` hands structured content (and JSON text) over
    as objects, so ``absent`` / ``coverage`` envelopes from the server are recognized; the
    default ``"text"`` hands over the text."""
    if not isinstance(name, str) or not name:
        raise ToolError("mcp_client(name=...) names the server (a non-empty str)")
    given = [k for k, v in (("command", command), ("url", url), ("server", server)) if v]
    if len(given) != 1:
        raise ToolError(
            f"mcp_client({name!r}): pass exactly one of command= (stdio), url= (streamable "
            f"HTTP) or server= (in process); got {given or 'none'}"
        )
    if result_mode not in ("text", "structured"):
        raise ToolError(f"mcp_client({name!r}): result_mode is 'text' or 'structured'")
    for label, value in (("call_timeout", call_timeout), ("connect_timeout", connect_timeout)):
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ToolError(f"mcp_client({name!r}): {label}={value!r}: use seconds > 0")
    mcp = _sdk()
    target: Any  # a factory: each connection gets a fresh transport
    if command:
        params = mcp.StdioServerParameters(
            command=command, args=list(args), env=None if env is None else dict(env)
        )
        target, where = (lambda: params), f"stdio: {command} {' '.join(args)}".strip()
    elif url:
        where = f"streamable HTTP: {url}"
        if headers:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            sent = dict(headers)

            @asynccontextmanager
            async def target() -> AsyncIterator[Any]:
                timeout = httpx2.Timeout(30.0, read=300.0)
                http = httpx2.AsyncClient(headers=sent, follow_redirects=True, timeout=timeout)
                async with http, streamable_http_client(url, http_client=http) as streams:
                    yield streams  # the HTTP client closes with the connection: not the transport's

        else:
            target = lambda: url  # noqa: E731 - a factory of one value
    else:
        target, where = (lambda: server), "in process"
    return McpClient(
        name,
        target,
        where,
        result_mode=result_mode,
        call_timeout=float(call_timeout),
        connect_timeout=float(connect_timeout),
    )
