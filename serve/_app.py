"""``serve_agent(agent, auth=...)``: an agent behind an ASGI app. A person starts a
conversation or follows one up (the turn runs in the background), follows its events over
SSE, lists their runs, answers a pending question, and retries a run a provider failure
ended. Every route goes through the :class:`~._guard.Guard` (auth hook, Origin) and sees
only the caller's own runs (same tenant and principal)."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from trackway.agent import (
    Agent,
    Conversation,
    DecisionRequiredError,
    InvalidAnswerError,
    InvalidRunInputError,
)
from trackway.engine import CheckpointClaimedError, RunStore, thaw
from trackway.tools import Identity

from ._auth import Authenticate, ServeError, same_caller
from ._guard import Guard, body_of, refuse
from ._hub import TICKET, EventHub, Ticket
from ._owners import Owners
from ._sse import hub_for, sse_response, store_of

__all__ = ["serve_agent"]

_log = logging.getLogger("trackway.serve")

_PAGE_TYPES = {"chat.html": "text/html", "chat.js": "text/javascript", "chat.css": "text/css"}


class _Host:
    """The app's state: the agent, its hub and store, who owns which run, the turns
    running in the background."""

    def __init__(self, agent: Agent, store: RunStore, hub: EventHub) -> None:
        self.agent = agent
        self.store = store
        self.hub = hub
        self.owners = Owners(hub, store)
        self.tasks: set[asyncio.Task[None]] = set()

    async def launch(self, turn: Callable[[], Awaitable[Any]]) -> str:
        """Start ``turn`` in the background; its run id once it started, or the error it
        raised before it started (a message or answer refused before anything ran)."""
        ticket = Ticket()
        failed: list[BaseException] = []

        async def body() -> None:
            TICKET.set(ticket)
            try:
                await turn()
            except Exception as exc:  # recorded in the run; here only logged
                if ticket.run_id is None:
                    failed.append(exc)
                else:
                    _log.info("run %s ended with %s: %s", ticket.run_id, type(exc).__name__, exc)
            finally:
                ticket.started.set()

        task = asyncio.create_task(body())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        await ticket.started.wait()
        if ticket.run_id is None:
            raise failed[0] if failed else ServeError("the turn ended before it started")
        return ticket.run_id

    async def mine(self, request: Request, caller: Identity) -> str | Response:
        """The run the path names, if the caller's; else the 404 to send (the same for a
        run of another caller as for none: nothing says it exists)."""
        run_id = str(request.path_params["run_id"])
        owner = await self.owners.owner(run_id)
        if owner is None or not same_caller(owner, caller):
            return refuse(404, f"no run {run_id!r} of yours")
        return run_id

    def pending(self, run_id: str) -> dict[str, Any] | None:
        for paused in self.store.paused():
            if paused.run_id == run_id:
                payload = thaw(paused.payload)
                if not isinstance(payload, dict):
                    return None
                return {
                    k: payload[k] for k in ("question", "kind", "call", "schema") if k in payload
                }
        return None

    def conversation(self, run_id: str) -> Conversation:
        """The conversation a stored run leaves: its history with its answer appended."""
        state = self.store.load(run_id).state
        history = [dict(m) for m in thaw(state.get("history", ()))]
        if "final_answer" in state:
            history.append({"role": "assistant", "content": str(state["final_answer"])})
        return Conversation(history=history, agent=self.agent.name)


def serve_agent(
    agent: Agent,
    *,
    auth: Authenticate | None,
    store: RunStore | None = None,
    origins: Sequence[str] = (),
    a2a_url: str | None = None,
) -> Starlette:
    """``agent`` as an ASGI app (see docs/guide/serving.md, "A hosted agent", for the
    routes). ``auth`` maps each request to an :class:`Identity` (without it every request
    is 401); ``store`` is where the agent's runs are kept (default: the agent's own, which
    it must have: conversations are followed up, runs listed and questions answered from
    it, after a restart too); ``origins`` are other origins whose pages may POST (the
    app's own page on a loopback host always may). ``a2a_url``, the public URL of this app's
    ``/a2a/`` path, hosts the agent over A2A there too (the ``a2a`` extra; same auth hook,
    same store). Build it before the agent runs."""
    kept = store if store is not None else store_of(agent)
    if kept is None:
        raise ServeError(
            "serve_agent needs a store to keep the runs it serves: build the agent with "
            "Agent.create(..., store=SqliteStore('runs.db')) or pass store="
        )
    host = _Host(agent, kept, hub_for(agent))
    guard = Guard(auth, origins)

    async def start(request: Request, caller: Identity) -> Response:
        try:
            message = (await body_of(request, "message"))["message"]
        except ValueError as exc:
            return refuse(400, str(exc))
        conversation_id = "c-" + secrets.token_hex(8)
        return await _turn(host, caller, conversation_id, message, None)

    async def follow_up(request: Request, caller: Identity) -> Response:
        try:
            message = (await body_of(request, "message"))["message"]
        except ValueError as exc:
            return refuse(400, str(exc))
        conversation_id = request.path_params["conversation_id"]
        last = await host.owners.last_of(caller, conversation_id)
        if last is None:
            return refuse(404, f"no conversation {conversation_id!r} of yours")
        if last.status in ("running", "paused"):
            return refuse(
                409,
                f"run {last.run_id} of this conversation is {last.status}: wait for its "
                "answer, or answer its question first",
            )
        before = await anyio.to_thread.run_sync(host.conversation, last.run_id)
        return await _turn(host, caller, conversation_id, message, before)

    async def runs(request: Request, caller: Identity) -> Response:
        return JSONResponse({"runs": [r.to_json() for r in await host.owners.runs_of(caller)]})

    async def run(request: Request, caller: Identity) -> Response:
        run_id = await host.mine(request, caller)
        if not isinstance(run_id, str):
            return run_id
        return JSONResponse(await _summary(host, run_id))

    async def events(request: Request, caller: Identity) -> Response:
        run_id = await host.mine(request, caller)
        if not isinstance(run_id, str):
            return run_id
        return sse_response(host.hub, host.store, run_id, request, agent)

    async def question(request: Request, caller: Identity) -> Response:
        run_id = await host.mine(request, caller)
        if not isinstance(run_id, str):
            return run_id
        pending = await anyio.to_thread.run_sync(host.pending, run_id)
        if pending is None:
            return refuse(404, f"run {run_id} waits for no answer")
        return JSONResponse(pending)

    async def answer(request: Request, caller: Identity) -> Response:
        run_id = await host.mine(request, caller)
        if not isinstance(run_id, str):
            return run_id
        try:
            given = (await body_of(request, "answer"))["answer"]
        except ValueError as exc:
            return refuse(400, str(exc))
        owner = await host.owners.owner(run_id)
        if await anyio.to_thread.run_sync(host.pending, run_id) is None:
            return refuse(409, f"run {run_id} waits for no answer")
        try:
            await host.launch(lambda: agent.resume(run_id, given, identity=owner))
        except (InvalidAnswerError, DecisionRequiredError) as exc:
            return refuse(400, str(exc))
        except CheckpointClaimedError as exc:
            return refuse(409, str(exc))
        return JSONResponse({"run_id": run_id}, status_code=202)

    async def retry(request: Request, caller: Identity) -> Response:
        run_id = await host.mine(request, caller)
        if not isinstance(run_id, str):
            return run_id
        summary = await _summary(host, run_id)
        if summary["status"] != "failed":
            return refuse(409, f"run {run_id} is {summary['status']}; only a failed run retries")
        owner = await host.owners.owner(run_id)
        before = await anyio.to_thread.run_sync(host.conversation, run_id)
        try:
            new = await host.launch(lambda: agent.resume_on_error(before, identity=owner))
        except InvalidRunInputError as exc:
            return refuse(409, str(exc))
        return JSONResponse(
            {"run_id": new, "conversation_id": summary["conversation_id"]}, status_code=202
        )

    async def page(request: Request) -> Response:
        name = request.path_params.get("asset", "chat.html")
        if name == "favicon.ico":
            return Response(status_code=204)
        if name not in _PAGE_TYPES:
            return refuse(404, "no such file")
        text = (resources.files("trackway.serve") / name).read_text(encoding="utf-8")
        if name == "chat.html":
            return HTMLResponse(text, headers=_PAGE_HEADERS)
        return Response(text, media_type=_PAGE_TYPES[name])

    routes: list[BaseRoute] = []
    if a2a_url is not None:  # before the page's catch-all
        from .a2a import a2a_routes  # the a2a extra, only when asked for

        found = a2a_routes(agent, store=kept, auth=auth, url=a2a_url, allowed_origins=origins)
        routes.append(Mount("/a2a", routes=found))
    routes += [
        Route("/", page, methods=["GET"]),
        Route("/{asset:str}", page, methods=["GET"]),
        Route("/api/conversations", guard(start), methods=["POST"]),
        Route("/api/conversations/{conversation_id}", guard(follow_up), methods=["POST"]),
        Route("/api/runs", guard(runs), methods=["GET"]),
        Route("/api/runs/{run_id}", guard(run), methods=["GET"]),
        Route("/api/runs/{run_id}/events", guard(events), methods=["GET"]),
        Route("/api/runs/{run_id}/question", guard(question), methods=["GET"]),
        Route("/api/runs/{run_id}/answer", guard(answer), methods=["POST"]),
        Route("/api/runs/{run_id}/retry", guard(retry), methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.state.trackway_host = host
    return app


_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


async def _turn(
    host: _Host,
    caller: Identity,
    conversation_id: str,
    message: Any,
    before: Conversation | None,
) -> Response:
    identity = Identity(
        tenant=caller.tenant, principal=caller.principal, conversation_id=conversation_id
    )
    agent = host.agent
    try:
        run_id = await host.launch(
            lambda: agent.run(message, identity=identity, continue_from=before)
        )
    except InvalidRunInputError as exc:
        return refuse(400, str(exc))
    return JSONResponse({"run_id": run_id, "conversation_id": conversation_id}, status_code=202)


async def _summary(host: _Host, run_id: str) -> dict[str, Any]:
    """A run as the run route shows it: status, conversation, answer or question, error."""
    owner = await host.owners.owner(run_id)
    feed = host.hub.feed(run_id)
    out: dict[str, Any] = {
        "run_id": run_id,
        "conversation_id": owner.conversation_id if owner is not None else None,
        "status": "running",
    }
    if feed is not None and feed.status is None:
        return out
    snapshot = await anyio.to_thread.run_sync(host.store.load, run_id)
    out["status"] = snapshot.status
    state = snapshot.state
    if "final_answer" in state:
        out["answer"] = thaw(state["final_answer"])
    if snapshot.status == "paused":
        out["question"] = await anyio.to_thread.run_sync(host.pending, run_id)
    if snapshot.error is not None:
        out["error"] = {"type": snapshot.error[0], "message": snapshot.error[1]}
    return out
