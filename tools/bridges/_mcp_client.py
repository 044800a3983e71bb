"""MCP client: the tools an MCP server lists, as trackway tools.

``mcp_client(name=, command=, args=, env=)`` (stdio), ``mcp_client(name=, url=, headers=)``
(streamable HTTP) or ``mcp_client(name=, server=)`` (an in-process server, for tests) is an
async context manager over the official ``mcp`` SDK's ``Client``: inside it one connection is
shared by every call. ``await client.tools()`` returns :class:`~trackway.tools.Tool`s whose
calls go through the agent like any other tool's (validation, statuses, ceilings, records).
A call made while no ``async with`` block is open gets a connection of its own, closed when
the call returns. A server that fails, dies or hangs turns into a ``failure`` result within
``call_timeout``; it never hangs the run. A listed tool whose schema could not check a call
(not JSON Schema, a ``$ref`` cycle, a ``$ref`` to nothing or outside the schema) is left out
of the listing with a warning; the others are listed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import re
import warnings
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Literal

import anyio
import orjson

from trackway.engine import TrackwayWarning
from trackway.engine.core._keywords import checked_keywords

from ..define._assume import check_rules
from ..define._define import Tool, ToolContext, define_tool
from ..define._errors import ToolDefinitionError, ToolError

__all__ = ["McpCallError", "McpClient", "McpConnectionError", "mcp_client"]

ResultMode = Literal["text", "structured"]
_NAME = re.compile(r"[^A-Za-z0-9_-]")
_NAME_LIMIT = 64
"""The longest tool name both OpenAI (function names: at most 64 characters) and Anthropic
(tool names: ``^[a-zA-Z0-9_-]{1,64}$``) accept."""
_VALID = re.compile(rf"[A-Za-z0-9_-]{{1,{_NAME_LIMIT}}}")


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
        self._left_out: dict[str, str] = {}

    @property
    def left_out(self) -> dict[str, str]:
        """The tools the last listing left out, by remote name: why each was (a schema that
        could not check a call, mostly); empty when every tool was listed."""
        return dict(self._left_out)

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
        specs = list(listed.tools)
        names = _local_names(spec.name for spec in specs)
        out: list[Tool] = []
        left_out: dict[str, str] = {}
        seen: set[str] = set()
        for spec in specs:
            if spec.name in seen:  # the server breaks the protocol; its first listing stands
                self._warn(f"lists tool {spec.name!r} more than once; the first listing is used")
                continue
            seen.add(spec.name)
            try:
                out.append(self._tool(spec, names[spec.name]))
            except ToolDefinitionError as exc:
                why = str(exc).removeprefix(f"tool {names[spec.name]!r}: ")
            except Exception as exc:  # whatever else one tool brings, the others are listed
                why = f"could not be read ({type(exc).__name__}: {exc})"
            else:
                continue
            left_out[spec.name] = why
            self._warn(f"lists tool {spec.name!r}, left out: {why}")
        self._left_out = left_out
        return out

    def _warn(self, said: str) -> None:
        warnings.warn(f"MCP server {self.name!r} {said}", TrackwayWarning, stacklevel=3)

    async def _with_client(self, action: Any) -> Any:
        if self._client is not None:
            return await action(self._client)
        async with AsyncExitStack() as stack:
            return await action(await self._open(stack))

    def _tool(self, spec: Any, local: str) -> Tool:
        """One listed tool as a :class:`Tool` named ``local``; ``ToolDefinitionError`` when
        ``define_tool`` refuses it (a schema that could not check a call, say): the listing
        leaves it out."""
        remote = spec.name
        schema = dict(spec.input_schema or {"type": "object", "properties": {}})

        async def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
            return await self._call(remote, args)

        said = spec.description or ""
        made = define_tool(
            name=local,
            description=said if said.strip() else f"{remote} (from MCP server {self.name})",
            input_schema=schema,
            execute=execute,
        )
        rules = period = None
        meta = (spec.meta or {}).get("trackway") if isinstance(spec.meta, Mapping) else None
        if isinstance(meta, Mapping) and (meta.get("ask_or_assume") or meta.get("period")):
            try:  # what define_tool would do with them, judged against the listed schema
                rules, period = check_rules(
                    local, meta.get("ask_or_assume"), schema, meta.get("period")
                )
            except ToolError as exc:  # dropped, not fatal
                warnings.warn(
                    f"MCP server {self.name!r}: the rules of {remote!r} were dropped ({exc}); "
                    "the tool still registers",
                    TrackwayWarning,
                    stacklevel=3,
                )
        return dataclasses.replace(
            made, ask_or_assume=rules, period=period, source=f"mcp server {self.name!r}"
        )

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


def _local_names(remote: Iterable[str]) -> dict[str, str]:
    """The local name of each remote tool name, the same whatever order the server lists
    them in: a name providers accept is kept; any other has each character outside
    ``[A-Za-z0-9_-]`` mapped to ``_`` and is cut to :data:`_NAME_LIMIT` characters; and when
    that result is another tool's name too, it ends in ``_`` and 8 hex digits of a SHA-256
    of its remote name instead (more, then a count, if a listed name is that too)."""
    names = set(remote)
    kept = {n for n in names if _VALID.fullmatch(n)}
    plain = {n: _NAME.sub("_", n)[:_NAME_LIMIT] or "tool" for n in names - kept}
    shared: dict[str, int] = {}
    for base in plain.values():
        shared[base] = shared.get(base, 0) + 1
    out = {n: n for n in kept}
    clashing = []
    for n, base in plain.items():
        if base in kept or shared[base] > 1:
            clashing.append(n)
        else:
            out[n] = base
    taken = set(out.values())
    for n in sorted(clashing):  # sorted: the same names whatever the listing order
        digest = hashlib.sha256(n.encode()).hexdigest()
        # a server can list valid names that equal these on purpose: count on past them
        tails = itertools.chain(
            (digest[:8], digest[:16]), (f"{digest[:8]}_{k}" for k in itertools.count(2))
        )
        for tail in tails:
            local = plain[n][: _NAME_LIMIT - len(tail) - 1] + "_" + tail
            if local not in taken:
                break
        out[n] = local
        taken.add(local)
    return out


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
