"""What the serving tests share: a weather agent on a scripted model whose tool reports
progress (and can wait on a gate), an auth hook reading a test header or cookie, a real
uvicorn server in a thread, and an SSE reader."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import orjson
import uvicorn

from trackway.agent import Agent, mock
from trackway.engine import RedactionPolicy, SqliteStore
from trackway.tools import Identity, define_tool

SECRET = "S3CRET-9f1c"
"""A value the weather tool puts in its progress, which a redaction policy hides."""

USER_HEADER = "x-test-user"


def auth(request: Any) -> Identity | None:
    """``x-test-user: tenant/principal`` (or the same in a ``test_user`` cookie)."""
    who = request.headers.get(USER_HEADER) or request.cookies.get("test_user")
    if not who or "/" not in who:
        return None
    tenant, principal = who.split("/", 1)
    return Identity(tenant=tenant, principal=principal)


def as_user(who: str) -> dict[str, str]:
    return {USER_HEADER: who}


def _respond(request: Any) -> dict[str, Any]:
    last = request.messages[-1]
    role = getattr(last, "role", None) or last["role"]
    if role == "tool":
        return {"content": "It is sunny in Oslo."}
    return {"tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Oslo"}}]}


def weather_agent(
    store: SqliteStore,
    *,
    gate: threading.Event | None = None,
    check_in: bool = False,
    redact: bool = False,
    reached: threading.Event | None = None,
    voice: dict[str, str] | None = None,
) -> Agent:
    """The agent: one tool call (``weather``, which reports progress carrying
    :data:`SECRET`, then waits on ``gate``), then the answer "It is sunny in Oslo."."""

    async def weather(args: dict[str, Any], ctx: Any) -> str:
        # async, waiting without blocking the loop: a served run shares the server's loop
        ctx.progress({"message": f"looking up {args.get('city')}", "token": SECRET})
        if reached is not None:
            reached.set()
        waited = 0.0
        while gate is not None and not gate.is_set():
            await asyncio.sleep(0.02)
            waited += 0.02
            if waited > 20:
                raise TimeoutError("the test never opened the gate")
        return "sunny, 21 C"

    tool = define_tool(
        name="weather",
        description="The weather in a city.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
        execute=weather,
    )
    policy = RedactionPolicy(emit_fields={"stream.tool_progress": ["payload.token"]})
    builder = Agent.create(
        provider=mock(respond=_respond, stream=True),
        model="m",
        store=store,
        redact=policy if redact else None,
    ).tool(tool)
    if check_in:
        builder = builder.check_in(["weather"])
    if voice is not None:
        builder = builder.thinking_templates(voice).app_name("Forecaster")
    return builder.build()


def store_at(tmp: Path) -> SqliteStore:
    return SqliteStore(tmp / "runs.db")


@contextmanager
def served(app: Any) -> Iterator[str]:
    """``app`` under uvicorn on 127.0.0.1, a free port, in a thread; yields its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def read_sse(response: Any, *, until: str | None = None) -> list[dict[str, Any]]:
    """The events of an SSE response as ``{id, event, data}`` (data decoded JSON), up to
    and including the first named ``until`` (or to the end)."""
    out: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in response.iter_lines():
        if line == "":
            if "event" in current or "data" in current:
                current["data"] = orjson.loads(current.get("data", "null"))
                out.append(current)
                if until is not None and current.get("event") == until:
                    return out
            current = {}
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data" and "data" in current:
            current["data"] += "\n" + value
        else:
            current[field] = value
    return out


def stored_events(store: SqliteStore, run_id: str) -> list[tuple[str, str, Any]]:
    """``(id, name, payload)`` of every event the store holds for ``run_id``, in order."""
    snapshot = store.load(run_id)
    return [
        (f"{c.seq}.{i}", e.name, orjson.loads(e.data))
        for c in snapshot.commits
        for i, e in enumerate(c.events)
    ]


def client(base: str, who: str | None = None, **headers: str) -> httpx2.Client:
    given = dict(headers)
    if who is not None:
        given.update(as_user(who))
    return httpx2.Client(base_url=base, headers=given, timeout=20)
