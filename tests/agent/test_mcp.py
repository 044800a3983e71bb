"""MCP both ways over real transports: our client against the reference server
(``@modelcontextprotocol/server-everything``, stdio) and a server written with the SDK's own
``MCPServer``; the SDK's ``mcp.Client`` against our ``mcp_serve`` over stdio and streamable
HTTP; agents that use remote tools end to end, with served_at and replay holding."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest

from tests.backends import run_async
from trackway.agent import Agent, AgentBuildError, mock, receipts, replay, served_at
from trackway.engine import TrackwayWarning
from trackway.tools import (
    McpConnectionError,
    ToolContext,
    ToolError,
    define_tool,
    mcp_client,
    mcp_serve,
)

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
EVERYTHING = os.environ.get("TRACKWAY_TEST_MCP_EVERYTHING") or str(
    Path.home() / ".cache/trackway/npm/node_modules/.bin/mcp-server-everything"
)
needs_everything = pytest.mark.skipif(
    not Path(EVERYTHING).exists(),
    reason="the reference MCP server is not installed: .ci/run installs it with npm "
    "(npm install --prefix ~/.cache/trackway/npm @modelcontextprotocol/server-everything)",
)


def law(agent: Agent) -> None:
    snap = agent.snapshot()
    for k, receipt in enumerate(receipts(snap), start=1):
        assert served_at(snap, k).hash == receipt["request_hash"]


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in items]}


def ours_stdio(**kw: Any) -> Any:
    return mcp_client(
        name="ours",
        command=PY,
        args=["-m", "tests.agent.mcp_servers", "ours", "stdio"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        **kw,
    )


@needs_everything
def test_our_client_against_the_reference_server_over_stdio() -> None:
    async def main() -> Agent:
        async with mcp_client(name="everything", command=EVERYTHING, args=["stdio"]) as server:
            tools = {t.name: t for t in await server.tools()}
            assert {"echo", "get-sum"} <= set(tools)
            assert tools["echo"].source == "mcp server 'everything'"
            script = [
                calls(("c1", "echo", {"message": "hi"}), ("c2", "get-sum", {"a": 2, "b": 3})),
                calls(("c3", "get-sum", {"a": "two"})),  # refused by our validation first
                "2 + 3 = 5",
            ]
            agent = (
                Agent.create(provider=mock(replies=script), model="m")
                .tools([tools["echo"], tools["get-sum"]])
                .build()
            )
            assert await agent.run("echo and add") == "2 + 3 = 5"
            return agent

    agent = run_async(main)
    history = agent.snapshot().state["history"]
    assert history[2]["content"] == "Echo: hi"
    assert history[3]["content"] == "The sum of 2 and 3 is 5."
    rows = agent.snapshot().state["tool_results"]
    assert [r["status"] for r in rows] == ["success", "success", "invalid"]
    law(agent)
    replay(agent.snapshot())  # no server needed


@needs_everything
def test_errors_from_the_reference_server_are_failure_results() -> None:
    async def main() -> Agent:
        async with mcp_client(name="everything", command=EVERYTHING, args=["stdio"]) as server:
            tools = {t.name: t for t in await server.tools()}
            loose = define_tool(  # the same remote tool without our schema check
                name="sum_unchecked",
                description="d",
                input_schema={"type": "object"},
                execute=tools["get-sum"].execute,
            )
            agent = (
                Agent.create(
                    provider=mock(replies=[calls(("c1", "sum_unchecked", {"a": "x"})), "ok"]),
                    model="m",
                )
                .tool(loose)
                .build()
            )
            await agent.run("add")
            return agent

    agent = run_async(main)
    row = agent.snapshot().state["tool_results"][0]
    assert row["status"] == "failure"
    assert "answered with an error" in agent.snapshot().state["history"][2]["content"]


def test_a_server_written_with_the_sdk_used_end_to_end() -> None:
    async def main() -> Agent:
        client = mcp_client(
            name="weather",
            command=PY,
            args=["-m", "tests.agent.mcp_servers", "sdk", "stdio"],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        async with client:
            tools = await client.tools()
            script = [calls(("c1", "forecast", {"city": "Oslo"})), "Oslo: rain tomorrow."]
            agent = Agent.create(provider=mock(replies=script), model="m").tools(tools).build()
            assert await agent.run("weather in Oslo?") == "Oslo: rain tomorrow."
        return agent

    agent = run_async(main)
    assert agent.snapshot().state["history"][2]["content"] == "Oslo: rain, 14°C"
    law(agent)
    replayed = replay(agent.snapshot())  # hermetic: the server is gone
    assert replayed.state["history"] == agent.snapshot().state["history"]


def test_a_server_that_dies_mid_call_is_a_failure_not_a_hung_run() -> None:
    async def main() -> Agent:
        client = mcp_client(
            name="weather",
            command=PY,
            args=["-m", "tests.agent.mcp_servers", "sdk", "stdio"],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            call_timeout=20,
        )
        async with client:
            tools = {t.name: t for t in await client.tools()}
            script = [calls(("c1", "crash", {})), "It went away."]
            agent = (
                Agent.create(provider=mock(replies=script), model="m").tool(tools["crash"]).build()
            )
            await agent.run("crash it")
        return agent

    agent = run_async(main)
    assert agent.snapshot().state["tool_results"][0]["status"] == "failure"
    assert "MCP server 'weather'" in agent.snapshot().state["history"][2]["content"]


def test_a_hung_call_fails_within_the_call_timeout() -> None:
    async def main() -> Agent:
        async with ours_stdio(call_timeout=1) as client:
            tools = {t.name: t for t in await client.tools()}
            script = [calls(("c1", "slow", {"seconds": 30})), "gave up"]
            agent = (
                Agent.create(provider=mock(replies=script), model="m").tool(tools["slow"]).build()
            )
            started = time.monotonic()
            await agent.run("wait")
            assert time.monotonic() - started < 15
        return agent

    agent = run_async(main)
    content = agent.snapshot().state["history"][2]["content"]
    assert "did not answer slow within 1 s" in content


def test_a_connection_failure_names_the_server_and_what_to_check() -> None:
    async def main() -> None:
        client = mcp_client(name="nowhere", command="/nonexistent/mcp-server", connect_timeout=5)
        with pytest.raises(
            McpConnectionError, match="'nowhere' \\(stdio: /nonexistent/mcp-server\\)"
        ):
            async with client:
                pass

    run_async(main)
    with pytest.raises(ToolError, match="exactly one of command="):
        mcp_client(name="x")
    with pytest.raises(ToolError, match="exactly one of command="):
        mcp_client(name="x", command="a", url="http://127.0.0.1:1/mcp")


def test_structured_mode_hands_absences_over_and_rules_ride_meta() -> None:
    async def main() -> tuple[Agent, Agent]:
        agents = []
        for mode in ("structured", "text"):
            async with ours_stdio(result_mode=mode) as client:
                tools = {t.name: t for t in await client.tools()}
                lookup = tools["lookup"]
                assert lookup.ask_or_assume == {"window": {"assume": "2h"}}  # from _meta
                assert lookup.spec()["input_schema"]["required"] == ["key"]
                script = [
                    calls(("c1", "lookup", {"key": "missing"}), ("c2", "lookup", {"key": "abc"})),
                    "done",
                ]
                agent = Agent.create(provider=mock(replies=script), model="m").tool(lookup).build()
                await agent.run("look up")
                agents.append(agent)
        return agents[0], agents[1]

    structured, text = run_async(main)
    rows = structured.snapshot().state["tool_results"]
    assert [r["status"] for r in rows] == ["absent", "success"]
    assert rows[1]["assumed"] == [{"argument": "window", "value": "2h", "source": "default"}]
    assert structured.snapshot().state["coverage_declared"][0]["tool"] == "lookup"
    assert [r["status"] for r in text.snapshot().state["tool_results"]] == ["success", "success"]
    assert "coverage_declared" not in text.snapshot().state  # text mode: JSON text is data
    law(structured)


def test_clashing_remote_names_are_refused_naming_both_sources() -> None:
    async def main() -> None:
        async with ours_stdio() as a:
            remote = {t.name: t for t in await a.tools()}
        local = define_tool(
            name="lookup", description="d", input_schema={"type": "object"}, execute=lambda x, c: 1
        )
        with pytest.raises(AgentBuildError, match="from .tool\\(\\) and from mcp server 'ours'"):
            Agent.create(provider=mock(reply="x"), model="m").tool(local).tool(remote["lookup"])

    run_async(main)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def ours_over_http() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [PY, "-m", "tests.agent.mcp_servers", "ours", "streamable-http", str(port)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("our MCP server did not start listening on 127.0.0.1 within 20 s")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _sdk_client_checks(client: Any) -> Any:
    async def check() -> None:
        listed = await client.list_tools()
        lookup = next(t for t in listed.tools if t.name == "lookup")
        assert lookup.meta == {
            "trackway": {
                "ask_or_assume": {"window": {"assume": "2h"}},
                "period": {"argument": "window", "spelling": "lookback"},
            }
        }
        found = await client.call_tool("lookup", {"key": "abc"})  # window filled by the rule
        assert found.is_error is False and found.structured_content == {"key": "abc", "value": 3}
        bad = await client.call_tool("lookup", {"key": 7, "window": "1h"})
        assert bad.is_error is True
        assert bad.content[0].text.startswith(
            "Error: invalid arguments for lookup: key: expected type"
        )
        boom = await client.call_tool("lookup", {"key": "boom", "window": "1h"})
        assert boom.is_error and "RuntimeError: the table is locked" in boom.content[0].text
        none = await client.call_tool("lookup", {"key": "missing", "window": "1h"})
        assert none.structured_content["af_absent"] is True

    return check


def test_the_sdk_client_against_mcp_serve_over_stdio() -> None:
    params = mcp.StdioServerParameters(
        command=PY,
        args=["-m", "tests.agent.mcp_servers", "ours", "stdio"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )

    async def main() -> None:
        async with mcp.Client(params) as client:
            await _sdk_client_checks(client)()

    run_async(main)


def test_the_sdk_client_against_mcp_serve_over_streamable_http(ours_over_http: str) -> None:
    async def main() -> None:
        async with mcp.Client(ours_over_http) as client:
            await _sdk_client_checks(client)()
        async with mcp_client(
            name="ours-http", url=ours_over_http, headers={"x-trace": "1"}
        ) as ours:
            assert {t.name for t in await ours.tools()} == {"lookup", "slow"}

    run_async(main)


def test_mcp_serve_refuses_bad_input() -> None:
    with pytest.raises(ToolError, match="takes Tools"):
        mcp_serve(["lookup"])  # type: ignore[list-item]
    t = define_tool(
        name="t", description="d", input_schema={"type": "object"}, execute=lambda a, c: 1
    )
    with pytest.raises(ToolError, match="twice"):
        mcp_serve([t, t])


def test_in_process_servers_list_schemaless_tools_and_keep_clashing_names_apart() -> None:
    plain = define_tool(name="plain", description="d", input_schema={}, execute=lambda a, c: "p")
    served = mcp_serve([plain])

    async def main() -> list[str]:
        async with mcp_client(name="mem", server=served.server) as client:
            tools = await client.tools()
            agent = (
                Agent.create(provider=mock(replies=[calls(("c1", "plain", {})), "ok"]), model="m")
                .tools(tools)
                .build()
            )
            await agent.run("go")
            assert agent.snapshot().state["history"][2]["content"] == "p"
            return [t.name for t in tools]

    assert run_async(main) == ["plain"]
    from trackway.tools.bridges._mcp_client import _local_names

    assert _local_names(["a.b", "a_b"]) == _local_names(["a_b", "a.b"])  # see below, over stdio
    assert _local_names([""]) == {"": "tool"}
    # a server that lists, as valid names, the names the hash would give: counted past
    digest = hashlib.sha256(b"a.b").hexdigest()
    decoys = [f"a_b_{digest[:8]}", f"a_b_{digest[:16]}"]
    named = _local_names(["a.b", "a_b", *decoys])
    assert named["a.b"] == f"a_b_{digest[:8]}_2"
    assert len(set(named.values())) == 4


def test_the_sdk_client_against_mcp_serve_in_process() -> None:
    """The same checks in process (so coverage sees the server's code), and the rest of
    what a call can come to."""
    from tests.agent.mcp_servers import OURS

    extra = [
        define_tool(
            name="partial",
            description="An envelope.",
            input_schema={"type": "object"},
            execute=lambda a, c: {"content": {"done": 1}, "effects": [], "status": "partial"},
        ),
        define_tool(
            name="denied",
            description="A denied envelope.",
            input_schema={"type": "object"},
            execute=lambda a, c: {"content": "no", "effects": [], "status": "denied"},
        ),
        define_tool(
            name="odd",
            description="Returns a value JSON cannot hold.",
            input_schema={"type": "object"},
            execute=lambda a, c: {1, 2},
        ),
        define_tool(
            name="asks",
            description="Asks for its window.",
            input_schema={"type": "object", "properties": {"window": {"type": "string"}}},
            execute=lambda a, c: a["window"],
            ask_or_assume={"window": {"ask": "Which window?"}},
        ),
        define_tool(
            name="refuses",
            description="A helper that refuses.",
            input_schema={"type": "object"},
            execute=lambda a, c: __import__("trackway").described_result(facts=[]),
        ),
    ]
    served = mcp_serve([*OURS, *extra], name="in-process")
    assert repr(served).startswith("mcp_serve('in-process': lookup, slow")

    async def main() -> None:
        async with mcp.Client(served.server) as client:
            await _sdk_client_checks(client)()
            partial = await client.call_tool("partial", {})
            assert partial.is_error is False and partial.content[0].text == '{"done":1}'
            assert (await client.call_tool("denied", {})).is_error is True
            odd = await client.call_tool("odd", {})
            assert odd.is_error and "not JSON" in odd.content[0].text
            asks = await client.call_tool("asks", {})
            assert asks.is_error and "needs window from the person" in asks.content[0].text
            refused = await client.call_tool("refuses", {})
            assert refused.is_error and refused.content[0].text.startswith(
                "refused: `facts` is empty"
            )
            missing = await client.call_tool("nope", {})
            assert missing.is_error and "there is no tool named 'nope'" in missing.content[0].text

    run_async(main)
    with pytest.raises(ToolError, match="use 'stdio' or 'streamable-http'"):
        run_async(lambda: served.serve("sse"))  # type: ignore[arg-type]


def test_non_text_content_is_described_never_dropped() -> None:
    from mcp import types

    from trackway.tools.bridges._mcp_client import _text

    blocks = [
        types.TextContent(type="text", text="a chart:"),
        types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
        types.ResourceLink(type="resource_link", uri="file:///tmp/x.csv", name="x"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="file:///tmp/y.txt", text="inline text"),
        ),
    ]
    assert _text(blocks) == (
        "a chart:\n[image image/png, 8 base64 characters]\n[resource link file:///tmp/x.csv]\n"
        "inline text"
    )


def _stdio(kind: str, arg: str, **kw: Any) -> Any:
    return mcp_client(
        name=kind,
        command=PY,
        args=["-m", "tests.agent.mcp_servers", kind, "stdio", arg],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        **kw,
    )


def test_tools_whose_schemas_cannot_work_are_left_out_of_the_listing_with_a_warning(
    schema_host: tuple[str, list[str]],
) -> None:
    url, requested = schema_host
    tree_args = {"label": "root", "children": [{"label": "leaf", "children": []}]}
    script = [
        calls(
            ("c1", "echo", {"text": "hi"}),
            ("c2", "tree", tree_args),
            ("c3", "tree", {"label": "root", "children": [{"children": []}]}),
            ("c4", "by_id", {"x": "seven"}),
            ("c5", "cycle", {"x": 1}),
        ),
        "done",
    ]

    async def main() -> tuple[dict[str, Any], dict[str, str], list[str], Agent]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            async with _stdio("hostile", url) as client:
                tools = {t.name: t for t in await client.tools()}
                agent = (
                    Agent.create(provider=mock(replies=script), model="m")
                    .tools(tools.values())
                    .build()
                )
                assert await agent.run("go") == "done"  # the run is not broken
        said = [str(w.message) for w in caught if w.category is TrackwayWarning]
        return tools, dict(client.left_out), said, agent

    tools, left_out, said, agent = run_async(main)
    assert set(tools) == {"echo", "tree", "by_id"}  # the good ones, recursive tree included
    assert set(left_out) == {"cycle", "nowhere", "remote", "not_a_schema"}
    assert left_out["cycle"].startswith(
        "input_schema has a $ref cycle ($ref '#/$defs/b' -> allOf -> $ref '#/$defs/a')"
    )
    assert left_out["nowhere"] == (
        "input_schema has a $ref '#/$defs/missing' that points at nothing in the schema"
    )
    assert left_out["remote"].startswith(f"input_schema has a $ref to {url!r}, outside the schema")
    assert left_out["not_a_schema"].startswith("input_schema is not valid JSON Schema")
    assert len(said) == 4  # one per tool left out, each naming the server, the tool and why
    for name, why in left_out.items():
        assert f"MCP server 'hostile' lists tool {name!r}, left out: {why}" in said
    assert requested == []  # the remote $ref was never fetched
    rows = agent.snapshot().state["tool_results"]
    assert [r["status"] for r in rows] == ["success", "success", "invalid", "invalid", "invalid"]
    history = agent.snapshot().state["history"]
    assert history[2]["content"] == "reached echo"
    assert history[3]["content"] == "reached tree"
    assert "children/0: 'label' is a required property" in history[4]["content"]
    assert "there is no tool named 'cycle'" in history[6]["content"]
    law(agent)


def test_a_name_listed_twice_keeps_the_first_listing_and_warns() -> None:
    from mcp import types
    from mcp.server import Server

    async def list_tools(ctx: Any, params: Any) -> Any:
        plain = {"type": "object"}
        return types.ListToolsResult(
            tools=[
                types.Tool(name="twice", description="first", input_schema=plain),
                types.Tool(name="twice", description="second", input_schema=plain),
            ]
        )

    client = mcp_client(name="dup", server=Server("dup", on_list_tools=list_tools))
    with pytest.warns(TrackwayWarning, match="lists tool 'twice' more than once"):
        tools = run_async(client.tools)
    assert [(t.name, t.description) for t in tools] == [("twice", "first")]
    assert client.left_out == {}


def test_argument_checks_never_fetch_a_remote_ref(schema_host: tuple[str, list[str]]) -> None:
    """A tool that got past ``define_tool`` with a remote ``$ref`` (its schema replaced
    afterwards): the agent's check fails that call without fetching it, and ``mcp_serve``
    refuses the tool."""
    url, requested = schema_host
    plain = define_tool(
        name="echo", description="d", input_schema={"type": "object"}, execute=lambda a, c: "ok"
    )
    remote = {"type": "object", "properties": {"x": {"$ref": url}}}
    sneaky = dataclasses.replace(plain, input_schema=remote)
    script = [calls(("c1", "echo", {"x": "seven"})), "it cannot be called"]
    agent = Agent.create(provider=mock(replies=script), model="m").tool(sneaky).build()
    assert agent.run_sync("go") == "it cannot be called"
    assert agent.snapshot().state["tool_results"][0]["status"] == "invalid"
    said = agent.snapshot().state["history"][2]["content"]
    assert f"the tool's schema has a $ref {url!r} that does not resolve" in said
    with pytest.raises(ToolError, match=f"tool 'echo': its input schema has a \\$ref to '{url}'"):
        mcp_serve([sneaky])
    assert requested == []
    # the control: jsonschema's own default registry does fetch it, so the host would see it
    import jsonschema

    with pytest.warns(DeprecationWarning, match="remote references"):
        assert not jsonschema.Draft202012Validator(remote).is_valid({"x": "seven"})
    assert requested == ["/schemas/x.json"]


def test_argument_checks_of_a_recursive_schema_fail_deep_arguments_not_the_run() -> None:
    """A recursive schema whose every level goes through a few in-place references: JSON the
    record can hold (100 levels) is deeper than Python's stack lets jsonschema check."""
    defs = {
        "node": {"allOf": [{"$ref": "#/$defs/a"}]},
        "a": {"anyOf": [{"$ref": "#/$defs/b"}]},
        "b": {"oneOf": [{"$ref": "#/$defs/c"}]},
        "c": {
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        },
    }
    tree = define_tool(
        name="tree",
        description="d",
        input_schema={"type": "object", "$defs": defs, "$ref": "#/$defs/node"},
        execute=lambda a, c: "ok",
    )
    deep: dict[str, Any] = {"children": []}
    for _ in range(100):
        deep = {"children": [deep]}
    script = [calls(("c1", "tree", deep), ("c2", "tree", {"children": [{"children": []}]})), "ok"]
    agent = Agent.create(provider=mock(replies=script), model="m").tool(tree).build()
    assert agent.run_sync("go") == "ok"
    rows = agent.snapshot().state["tool_results"]
    assert [r["status"] for r in rows] == ["invalid", "success"]
    assert "nested too deeply" in agent.snapshot().state["history"][2]["content"]


def test_local_names_do_not_depend_on_listing_order() -> None:
    """The same tools listed forward and in reverse get the same local names, each reaching
    its own remote tool; a valid name is kept, a sanitized one that collides gets a suffix
    from its own name, and every name is cut to 64 characters."""

    async def names(order: str) -> dict[str, str]:
        async with _stdio("names", order) as client:
            out = {}
            for t in await client.tools():
                ctx = ToolContext(call_id="c", tool_name=t.name, run_id="r", iteration=1)
                out[t.name] = await t.execute({}, ctx)
            return out

    forward, reverse = run_async(names, "forward"), run_async(names, "reverse")
    assert forward == reverse
    reached = {said.removeprefix("reached "): local for local, said in forward.items()}
    assert len(reached) == 8  # every remote tool, each reached by its own local name
    assert reached["a_b"] == "a_b"  # a valid name is never renamed
    assert reached["db.query"] == "db_query"  # sanitized, and nobody else's
    assert reached["ok-name"] == "ok-name"
    assert reached["z" * 80] == "z" * 64
    import re

    for remote in ("a.b", "a b"):
        assert re.fullmatch("a_b_[0-9a-f]{8}", reached[remote]), reached[remote]
    for remote in ("x" * 70, "x" * 70 + "y"):
        assert re.fullmatch("x{55}_[0-9a-f]{8}", reached[remote]), reached[remote]
    assert len(set(reached.values())) == 8


def _timed_calls(client: Any, pinger: Any, n: int, seconds: float) -> Any:
    """Start ``n`` concurrent ``slow`` calls on ``client``; 0.3 s in, ask ``pinger`` for the
        tool list (the SDK deprecates ``ping``; any request the server answers on its event loop
        will do). Returns when each call finished (seconds from the start) and how long the list
    took to come."""

    async def go() -> tuple[list[float], float]:
        started = time.monotonic()
        finished: list[float] = []

        async def one() -> None:
            result = await client.call_tool("slow", {"seconds": seconds})
            assert result.is_error is False, result.content
            finished.append(time.monotonic() - started)

        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(one)
            await anyio.sleep(0.3)
            asked = time.monotonic()
            assert (await pinger.list_tools()).tools
            pinged = time.monotonic() - asked
        return sorted(finished), pinged

    return go


def test_sync_tools_run_in_threads_so_another_clients_ping_is_answered(
    ours_over_http: str,
) -> None:
    """Four concurrent 1 s calls of a plain ``def`` tool over streamable HTTP finish together,
    and a ping from another client, sent while they run, is answered while they run."""

    async def main() -> tuple[list[float], float]:
        async with mcp.Client(ours_over_http) as a, mcp.Client(ours_over_http) as b:
            return await _timed_calls(a, b, 4, 1.0)()

    finished, pinged = run_async(main)
    assert finished[-1] < 2.5  # together (one after another they end at 1, 2, 3 and 4 s)
    assert pinged < 0.5  # at once (behind a blocked loop: not before the first call ends)


def test_sync_tools_run_in_threads_over_stdio() -> None:
    params = mcp.StdioServerParameters(
        command=PY,
        args=["-m", "tests.agent.mcp_servers", "ours", "stdio"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )

    async def main() -> tuple[list[float], float]:
        async with mcp.Client(params) as client:
            return await _timed_calls(client, client, 4, 1.0)()

    finished, pinged = run_async(main)
    assert finished[-1] < 2.5
    assert pinged < 0.5


def test_max_threads_bounds_the_sync_calls_that_run_at_once() -> None:
    from tests.agent.mcp_servers import OURS

    served = mcp_serve(OURS, name="two", max_threads=2)

    async def main() -> tuple[list[float], float]:
        async with mcp.Client(served.server) as client:
            return await _timed_calls(client, client, 4, 0.5)()

    finished, _ = run_async(main)
    assert finished[1] < 0.9  # two at once...
    assert finished[2] >= 0.95  # ...and never a third: the last two wait for a thread
    assert finished[3] < 3.0
    for bad in (0, -1, 1.5, True, "4"):
        with pytest.raises(ToolError, match="max_threads"):
            mcp_serve(OURS, max_threads=bad)  # type: ignore[arg-type]
