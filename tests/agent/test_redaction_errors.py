"""Under ``conversation_redaction()`` error text is hidden on every retained surface: a
provider whose error body echoes the request (a real HTTP server on 127.0.0.1), a tool that
raises, an MCP server that answers with an error. Each test runs an agent with a SQLite store
file and a JSONL recording, then scans the raw bytes of everything the run left behind:
the database and its WAL, the recording, the snapshot, the events, the ``trackway`` log
(tracebacks included). The record still says what failed: the error's type, and that its
text was redacted."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.backends import run_async
from tests.local_http import Handler, base_url, serving
from trackway.agent import (
    Agent,
    ProviderError,
    ProviderResponseError,
    anthropic,
    conversation_redaction,
    mock,
    openai,
)
from trackway.engine import SqliteStore
from trackway.recorders import jsonl, narrative
from trackway.tools import ToolContext, define_tool, mcp_client

from .mcp_servers import VAULT_SECRET

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-live-ECHO-3b7d91f0"
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
MARKER = b"[REDACTED]"


class Ears:
    """A recorder that keeps every event it hears, as text."""

    heard: list[str]

    def __init__(self) -> None:
        self.heard = []
        self.story = narrative()

    def __getattr__(self, hook: str) -> Any:
        if not hook.startswith("on_"):
            raise AttributeError(hook)
        return lambda event: self.heard.append(repr(event))


class _EchoingGateway(Handler):
    """An OpenAI-compatible proxy that rejects every request with a 400 whose body quotes
    the request's last user message, as many servers and proxies do."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        said = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        error = {
            "error": {
                "message": f"Invalid request: content filter matched in message {said!r}",
                "type": "invalid_request_error",
                "code": "content_filter",
            }
        }
        self.answer(400, json.dumps(error).encode())


@pytest.fixture
def gateway() -> Iterator[str]:
    with serving(_EchoingGateway) as httpd:
        yield base_url(httpd)


class _Scripted(Handler):
    """Answers every request with the server's ``answer``: a status, a content type and a
    body in which ``{request}`` stands for the whole request body (JSON-escaped), echoed."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["content-length"])).decode()
        status, kind, template = self.server.answer  # type: ignore[attr-defined]
        self.answer(status, template.replace("{request}", json.dumps(raw)[1:-1]).encode(), kind)


@pytest.fixture
def scripted() -> Iterator[Any]:
    with serving(_Scripted) as httpd:
        yield httpd


def _agent(
    tmp_path: Path, provider: Any, ears: Ears, tools: Any = (), *, stream: bool = True
) -> Agent:
    agent = (
        Agent.create(
            provider=provider,
            model="m",
            store=SqliteStore(tmp_path / "runs.db"),
            redact=conversation_redaction(),
            stream=stream,
        )
        .tools(list(tools))
        .recorder(jsonl(tmp_path / "run.jsonl"))
        .recorder(ears)
        .recorder(ears.story)
        .build()
    )
    agent.on("*", lambda event: ears.heard.append(repr(event)))
    return agent


def _surfaces(tmp_path: Path, agent: Agent, ears: Ears, caplog: Any) -> dict[str, bytes]:
    """Everything the run left behind, as bytes (the log formatted with its tracebacks)."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return {
        "store": b"".join(p.read_bytes() for p in sorted(tmp_path.glob("runs.db*"))),
        "recording": (tmp_path / "run.jsonl").read_bytes(),
        "snapshot": agent.snapshot().to_json(),
        "events": "\n".join(ears.heard).encode(),
        "narrative": ears.story.text().encode(),
        "log": "\n".join(formatter.format(r) for r in caplog.records).encode(),
    }


def _assert_hidden(surfaces: dict[str, bytes], *secrets: str) -> None:
    leaks = [(s, name) for s in secrets for name, data in surfaces.items() if s.encode() in data]
    assert leaks == []


def _error_commit(agent: Agent, stage_id: str) -> Any:
    return next(c for c in agent.snapshot().history() if c.stage_id == stage_id and c.error)


# -- a provider's error body -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_a_provider_error_body_echoing_the_request_is_hidden_everywhere(
    tmp_path: Path, gateway: str, caplog: Any, stream: bool
) -> None:
    caplog.set_level(logging.DEBUG, logger="trackway")
    ears = Ears()
    provider = openai("m", base_url=gateway, api_key="k-local-000", max_retries=0)
    agent = _agent(tmp_path, provider, ears, stream=stream)
    with pytest.raises(ProviderResponseError) as caught:
        agent.run_sync(f"my card is {SECRET}")
    # the live run: the caller's exception quotes the server, word for word
    assert SECRET in str(caught.value)
    surfaces = _surfaces(tmp_path, agent, ears, caplog)
    surfaces["stage_error"] = str(caught.value.stage_error).encode()
    surfaces["snapshot.error"] = repr(agent.snapshot().error).encode()
    _assert_hidden(surfaces, SECRET)
    # an honest record: which error, from where, and that the server's words were hidden
    commit = _error_commit(agent, "call-llm")
    assert commit.error.type == "ProviderResponseError"
    assert f"the server at {gateway} rejected the request (400 Bad Request: [REDACTED])" in (
        commit.error.message
    )
    assert agent.snapshot().error.type == "StageError"
    assert "ProviderResponseError" in agent.snapshot().error.message
    assert MARKER in surfaces["store"] and MARKER in surfaces["recording"]


JSON = "application/json"
ANSWERS = {
    "400": (400, JSON, '{"error": {"message": "bad request: {request}", "type": "invalid"}}'),
    "401": (401, JSON, '{"error": {"message": "invalid api key for {request}"}}'),
    "404-model": (404, JSON, '{"error": {"message": "model not found: {request}"}}'),
    "context": (
        400,
        JSON,
        '{"error": {"code": "context_length_exceeded", "message": "{request}"}}',
    ),
    "429": (429, JSON, '{"error": {"message": "slow down: {request}"}}'),
    "500": (500, JSON, '{"error": {"message": "crashed on {request}"}}'),
    "400-text": (400, "text/plain", "cannot parse {request}"),
    "200-not-json": (200, "text/html", "<html>{request}</html>"),
    "200-error": (200, JSON, '{"error": {"message": "failed: {request}"}}'),
}


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
@pytest.mark.parametrize("answer", list(ANSWERS))
def test_every_http_error_keeps_its_own_words_and_hides_the_servers(
    scripted: Any, answer: str, vendor: str
) -> None:
    scripted.answer = ANSWERS[answer]
    url = f"http://127.0.0.1:{scripted.server_address[1]}"
    provider = (
        openai("m", base_url=f"{url}/v1", api_key="k-local-000", max_retries=0)
        if vendor == "openai"
        else anthropic("m", base_url=url, api_key="k-local-000", max_retries=0)
    )
    agent = Agent.create(
        provider=provider, model="m", redact=conversation_redaction(), stream=False
    ).build()
    with pytest.raises(ProviderError) as caught:
        agent.run_sync(f"my card is {SECRET}")
    assert SECRET in str(caught.value)  # the server echoed it: the caller reads it
    kept = _error_commit(agent, "call-llm").error
    assert kept.type == type(caught.value).__bases__[1].__name__  # (RunCheckpointError, kind)
    assert SECRET not in kept.message and SECRET.encode() not in agent.snapshot().to_json()
    # trackway's own words stay: which provider, which server; only the quote is masked
    assert kept.message.startswith(f"{vendor}: ") and "[REDACTED]" in kept.message
    assert url in kept.message


# -- a tool's error text -----------------------------------------------------------------------


def test_a_tool_error_text_is_hidden_everywhere(tmp_path: Path, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG, logger="trackway")

    def charge(args: dict[str, Any], ctx: ToolContext) -> str:
        raise ValueError(f"the card {SECRET} was declined")

    tool = define_tool(name="charge", description="Charge.", input_schema=SCHEMA, execute=charge)
    ears = Ears()
    script = [{"tool_calls": [{"id": "c1", "name": "charge", "args": {"q": "x"}}]}, "sorry"]
    agent = _agent(tmp_path, mock(replies=script), ears, [tool])
    assert agent.run_sync("charge it") == "sorry"
    # the live run: the model read the tool's own words
    assert SECRET in agent.checkpoint().history[2]["content"]
    surfaces = _surfaces(tmp_path, agent, ears, caplog)
    _assert_hidden(surfaces, SECRET)
    row = agent.snapshot().state["tool_results"][0]
    assert row["status"] == "failure"
    assert row["error"] == {"kind": "raised", "type": "ValueError", "message": "[REDACTED]"}
    assert b'"type":"ValueError"' in surfaces["store"]
    # the log still says which tool failed, how, and where (the stack, not the message)
    logged = surfaces["log"].decode()
    assert "tool 'charge' raised ValueError" in logged and "in charge" in logged
    assert "[REDACTED]" in logged


def test_a_refused_call_whose_check_quotes_its_arguments_is_hidden_everywhere(
    tmp_path: Path, caplog: Any
) -> None:
    caplog.set_level(logging.DEBUG, logger="trackway")
    schema = {"type": "object", "properties": {"q": {"type": "integer"}}, "required": ["q"]}
    tool = define_tool(
        name="charge", description="Charge.", input_schema=schema, execute=lambda a, c: "ok"
    )
    ears = Ears()
    script = [{"tool_calls": [{"id": "c1", "name": "charge", "args": {"q": SECRET}}]}, "sorry"]
    agent = _agent(tmp_path, mock(replies=script), ears, [tool])
    assert agent.run_sync("charge it") == "sorry"
    assert SECRET in agent.checkpoint().history[2]["content"]
    _assert_hidden(_surfaces(tmp_path, agent, ears, caplog), SECRET)
    row = agent.snapshot().state["tool_results"][0]
    assert row["status"] == "invalid"
    assert row["error"] == {
        "kind": "invalid_arguments",
        "type": "InvalidArguments",
        "message": "[REDACTED]",
    }
    assert "tool call c1 ('charge') was not run: invalid_arguments: [REDACTED]" in caplog.text


def test_tool_error_text_is_kept_without_a_policy(tmp_path: Path, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG, logger="trackway")

    def charge(args: dict[str, Any], ctx: ToolContext) -> str:
        raise ValueError(f"the card {SECRET} was declined")

    tool = define_tool(name="charge", description="Charge.", input_schema=SCHEMA, execute=charge)
    script = [{"tool_calls": [{"id": "c1", "name": "charge", "args": {"q": "x"}}]}, "sorry"]
    agent = Agent.create(provider=mock(replies=script), model="m").tool(tool).build()
    agent.run_sync("charge it")
    assert agent.snapshot().state["tool_results"][0]["error"]["message"] == (
        f"the card {SECRET} was declined"
    )
    assert SECRET in caplog.text and "Traceback" in logging.Formatter().format(caplog.records[0])


# -- an MCP server's error text ----------------------------------------------------------------


def test_an_mcp_server_error_text_is_hidden_everywhere(tmp_path: Path, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG, logger="trackway")
    ears = Ears()

    async def main() -> Agent:
        client = mcp_client(
            name="ours",
            command=sys.executable,
            args=["-m", "tests.agent.mcp_servers", "ours", "stdio"],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        async with client:
            tools = await client.tools()
            script = [
                {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"key": "vault"}}]},
                "the vault is closed",
            ]
            agent = _agent(tmp_path, mock(replies=script), ears, tools)
            assert await agent.run("open the vault") == "the vault is closed"
        return agent

    agent = run_async(main)
    # the live run: the model read the server's words
    assert VAULT_SECRET in agent.checkpoint().history[2]["content"]
    surfaces = _surfaces(tmp_path, agent, ears, caplog)
    _assert_hidden(surfaces, VAULT_SECRET)
    row = agent.snapshot().state["tool_results"][0]
    assert row["status"] == "failure"
    assert row["error"]["type"] == "McpCallError" and row["error"]["message"] == "[REDACTED]"
    assert orjson.loads(surfaces["snapshot"])  # still a readable document
