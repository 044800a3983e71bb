"""Server-sent events of a run: ``to_sse(agent, auth=...)``, and the event source every
served route shares (``run_events``): the record's events after a ``Last-Event-ID``, from
the store and this process's hub, then live ones as the run makes them, then ``run.end``."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Mapping
from typing import Any, NamedTuple

import anyio
import orjson
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from trackway.agent import Agent, status_line
from trackway.engine import RunStore, UnknownRunError

from ._auth import Authenticate, ServeError, Unauthenticated, identify, same_caller
from ._hub import EventHub, EventKey, SentEvent, commit_events, parse_event_id
from ._owners import Owners

__all__ = ["RunEnd", "UnknownRun", "hub_for", "run_events", "sse_response", "to_sse"]

_HUBS: weakref.WeakKeyDictionary[Agent, EventHub] = weakref.WeakKeyDictionary()

RUNNING = "running"


class UnknownRun(ServeError):
    """A run id neither this process nor the store knows (or the caller may not see)."""


class RunEnd(NamedTuple):
    """The last thing a stream sends: how the run ended (``done``, ``failed``,
    ``paused``, ...). It has no id: a reconnect after it resumes after the last event."""

    status: str


def hub_for(agent: Agent) -> EventHub:
    """The agent's event hub, attached on first use (attach before the agent runs: a
    recorder cannot be attached while a run is in flight)."""
    hub = _HUBS.get(agent)
    if hub is None:
        hub = EventHub()
        agent.attach(hub)
        _HUBS[agent] = hub
    return hub


def store_of(agent: Agent) -> RunStore | None:
    """The store the agent's runs are written to (``Agent.create(store=...)``)."""
    runtime = getattr(agent, "_runtime", None)
    store = getattr(runtime, "store", None)
    return store if isinstance(store, RunStore) else None


async def run_events(
    hub: EventHub,
    store: RunStore | None,
    run_id: str,
    after: EventKey | None = None,
    *,
    poll: float = 0.25,
) -> AsyncIterator[SentEvent | RunEnd]:
    """Every event of ``run_id`` after ``after`` in record order, then :class:`RunEnd`.

    Commits made before this process followed the run come from ``store``; a run this
    process is running (or ran lately) from its hub's journal and then live; a run another
    process is running is followed by reading the store every ``poll`` seconds."""
    cursor: EventKey = after if after is not None else (0, -1)
    feed = hub.feed(run_id)
    if feed is not None:
        wake, leave = feed.follow()  # before anything is read: nothing falls in between
        try:
            if cursor < (feed.first_seq + 1, 0) and store is not None:
                for sent in await _stored(store, run_id, cursor, feed.first_seq):
                    yield sent
                    cursor = sent.key
            position = 0
            while True:
                wake.clear()
                items, status = feed.since(position)
                position += len(items)
                for sent in items:
                    if sent.key > cursor:
                        yield sent
                        cursor = sent.key
                if status is not None:
                    yield RunEnd(status)
                    return
                await wake.wait()
        finally:
            leave()
    if store is None:
        raise UnknownRun(f"run {run_id!r} is not running here and there is no store to read")
    while True:
        snapshot = await anyio.to_thread.run_sync(_load, store, run_id)
        for commit in snapshot.commits:
            if commit.seq < cursor[0] or not commit.emitted:
                continue
            for sent in commit_events(commit):
                if sent.key > cursor:
                    yield sent
                    cursor = sent.key
        if snapshot.status != RUNNING:
            yield RunEnd(snapshot.status)
            return
        live = hub.feed(run_id)  # resumed in this process meanwhile: follow it there
        if live is not None:
            async for item in run_events(hub, store, run_id, cursor, poll=poll):
                yield item
            return
        await anyio.sleep(poll)


def _load(store: RunStore, run_id: str) -> Any:
    try:
        return store.load(run_id)
    except UnknownRunError:
        raise UnknownRun(f"no run {run_id!r} in the store") from None


async def _stored(store: RunStore, run_id: str, cursor: EventKey, upto: int) -> list[SentEvent]:
    snapshot = await anyio.to_thread.run_sync(_load, store, run_id)
    return [
        sent
        for commit in snapshot.commits
        if cursor[0] <= commit.seq <= upto and commit.emitted
        for sent in commit_events(commit)
        if sent.key > cursor
    ]


def sse_response(
    hub: EventHub,
    store: RunStore | None,
    run_id: str,
    request: Request,
    agent: Agent | None = None,
) -> Response:
    """The SSE response streaming ``run_id`` after the request's ``Last-Event-ID``: each
    event as ``id: seq.i``, ``event: name``, ``data: payload JSON``; then ``run.end``.
    With ``agent``, an event that moves the status line (model call, tool start, progress)
    is followed by a ``status`` event (no id: derived, not recorded) with the line the
    agent's voice words (``{"key", "text", "call_id", "tool"}``)."""
    after = parse_event_id(request.headers.get("last-event-id"))
    counts: dict[str, int] = {}  # progress reports per call, for the generic line

    def status(name: str, payload: Any) -> dict[str, Any] | None:
        if agent is None or not isinstance(payload, Mapping):
            return None
        count = 1
        if name == "stream.tool_progress":
            call = str(payload.get("id"))
            count = counts[call] = counts.get(call, 0) + 1
        line = status_line(
            name, payload, templates=agent.thinking_templates, app_name=agent.app_name, count=count
        )
        if line is None:
            return None
        said = {"key": line.key, "text": line.text, "call_id": line.call_id, "tool": line.tool}
        return {"event": "status", "data": orjson.dumps(said).decode()}

    async def frames() -> AsyncIterator[dict[str, Any]]:
        async for item in run_events(hub, store, run_id, after):
            if isinstance(item, RunEnd):
                yield {"event": "run.end", "data": orjson.dumps({"status": item.status}).decode()}
            else:
                yield {
                    "id": item.id,
                    "event": item.name,
                    "data": orjson.dumps(item.payload).decode(),
                }
                line = status(item.name, item.payload)
                if line is not None:
                    yield line

    return EventSourceResponse(frames(), ping=15, headers={"Cache-Control": "no-store"})


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def to_sse(
    agent: Agent,
    *,
    auth: Authenticate | None,
    store: RunStore | None = None,
    status_lines: bool = False,
) -> Starlette:
    """An ASGI app streaming a run's events: ``GET /{run_id}`` (mount it anywhere, e.g.
    ``Mount("/events", to_sse(agent, auth=hook))``).

    Each event of the record carries the id of its place, ``"{commit_seq}.{i}"``; a client
    that reconnects with ``Last-Event-ID`` gets exactly the events after it, from the
    store (default: the agent's own) or from this process, whether the run is still going
    or long over. ``auth`` maps each request to an identity (none: every request is 401);
    a caller sees only the runs of its own tenant and principal (404 otherwise). Events
    are the record's own: redacted as the store keeps them. Build the app before the agent
    runs (it attaches a recorder). ``status_lines``: follow each event that moves the
    status line with a ``status`` event worded in the agent's voice (``serve_agent`` does)."""
    hub = hub_for(agent)
    kept = store if store is not None else store_of(agent)
    owners = Owners(hub, kept)

    async def events(request: Request) -> Response:
        try:
            caller = await identify(auth, request)
        except Unauthenticated as exc:
            return error_response(401, str(exc))
        run_id = request.path_params["run_id"]
        owner = await owners.owner(run_id)
        if owner is None or not same_caller(owner, caller):
            return error_response(404, f"no run {run_id!r} of yours")
        return sse_response(hub, kept, run_id, request, agent if status_lines else None)

    return Starlette(routes=[Route("/{run_id}", events, methods=["GET"])])
