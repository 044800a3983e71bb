"""An agent hosted over A2A: the SDK's agent card route and its JSON-RPC endpoint (A2A 1.0's
``SendMessage``, ``SendStreamingMessage``, ``GetTask``, ``ListTasks``, ``CancelTask``,
``SubscribeToTask``, and 0.3's ``message/send``, ``message/stream``, ...) behind trackway's
auth hook, as Starlette routes to mount anywhere or as a whole app."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import AgentCard
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from trackway.agent import Agent
from trackway.engine import ConfigurationError, RunStore

from .._auth import Authenticate, Unauthenticated, identify
from ._caller import IDENTITY_SCOPE_KEY, CallerContexts, task_owner
from ._card import agent_card
from ._executor import A2AExecutor

__all__ = ["a2a_app", "a2a_routes"]


def _on_store(agent: Agent, store: RunStore) -> Agent:
    """``agent`` keeping its runs in ``store``: the agent itself when it was built with that
    store, a copy bound to it when it was built with none."""
    runtime = agent._runtime
    if runtime.store is store:
        return agent
    if runtime.store is not None:
        raise ConfigurationError(
            f"agent {agent.name!r} keeps its runs in {runtime.store!r}, and the A2A host "
            f"was given store={store!r}: build the agent without store= (the host binds it) "
            "or pass the agent's own store object"
        )
    return type(agent)(
        agent._cfg, agent._chart, agent._attached, runtime=replace(runtime, store=store)
    )


def _same_origin(request: Request, allowed: Sequence[str]) -> bool:
    """A POST without ``Origin`` (a server-side client) or from this host or an allowed
    origin; a browser page from elsewhere is refused (it could ride a person's cookies)."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    own = f"{request.url.scheme}://{request.url.netloc}"
    return origin == own or origin in allowed


def _host(
    agent: Agent,
    *,
    store: RunStore,
    auth: Authenticate | None,
    url: str,
    card: AgentCard | None = None,
    task_store: TaskStore | None = None,
    rpc_path: str = "/",
    allowed_origins: Sequence[str] = (),
    release_waiting_after: float | None = 600.0,
) -> tuple[list[BaseRoute], DefaultRequestHandler]:
    """The routes of :func:`a2a_routes` and the SDK handler behind them."""
    if task_store is None:
        task_store = InMemoryTaskStore(owner_resolver=task_owner)
    bound = _on_store(agent, store)
    card = card if card is not None else agent_card(bound, url=url)
    handler = DefaultRequestHandler(
        agent_executor=A2AExecutor(bound, store, task_store),
        task_store=task_store,
        agent_card=card,
        interrupted_task_timeout=release_waiting_after,
    )
    dispatcher = JsonRpcDispatcher(
        handler, context_builder=CallerContexts(), enable_v0_3_compat=True
    )

    async def endpoint(request: Request) -> Response:
        if not _same_origin(request, allowed_origins):
            return JSONResponse(
                {
                    "error": f"POSTs from origin {request.headers['origin']!r} are refused: "
                    "list it in allowed_origins= if pages there may call this agent"
                },
                403,
            )
        try:
            request.scope[IDENTITY_SCOPE_KEY] = await identify(auth, request)
        except Unauthenticated as exc:
            return JSONResponse({"error": str(exc)}, 401)
        return await dispatcher.handle_requests(request)

    routes: list[BaseRoute] = [*create_agent_card_routes(card)]
    routes.append(Route(rpc_path, endpoint, methods=["POST"]))
    return routes, handler


def a2a_routes(
    agent: Agent,
    *,
    store: RunStore,
    auth: Authenticate | None,
    url: str,
    card: AgentCard | None = None,
    task_store: TaskStore | None = None,
    rpc_path: str = "/",
    allowed_origins: Sequence[str] = (),
    release_waiting_after: float | None = 600.0,
) -> list[BaseRoute]:
    """The A2A routes of ``agent``: its card at ``/.well-known/agent-card.json`` (public, as
    A2A discovery expects) and the JSON-RPC endpoint at ``rpc_path``, which refuses (HTTP
    401) every request ``auth`` does not map to an identity, and (403) a browser POST from
    another origin than its own or ``allowed_origins``.

    ``url`` is where clients reach the endpoint (the card says so): the full URL, with the
    prefix you mount the routes under. ``card`` replaces the card :func:`agent_card` makes.
    Each turn is a run in ``store`` (the agent is bound to it when built without one);
    ``task_store`` keeps the A2A tasks (in memory by default; an SDK store you pass must
    scope tasks by ``owner_resolver=task_owner``). A task waiting for input is let go from
    memory after ``release_waiting_after`` seconds (``None``: never); its answer, whenever it
    comes, picks it up from the task store. Turns still running when the server stops are
    cancelled with it (:func:`a2a_app` also drains them in its lifespan)."""
    routes, _handler = _host(
        agent,
        store=store,
        auth=auth,
        url=url,
        card=card,
        task_store=task_store,
        rpc_path=rpc_path,
        allowed_origins=allowed_origins,
        release_waiting_after=release_waiting_after,
    )
    return routes


def a2a_app(
    agent: Agent,
    *,
    store: RunStore,
    auth: Authenticate | None,
    url: str,
    card: AgentCard | None = None,
    task_store: TaskStore | None = None,
    allowed_origins: Sequence[str] = (),
    release_waiting_after: float | None = 600.0,
) -> Starlette:
    """``agent`` hosted over A2A as an ASGI app (the routes of :func:`a2a_routes` at ``/``):
    serve it with uvicorn, or mount it (``Mount("/a2a", app=a2a_app(..., url=
    "https://host/a2a/"))``). See :func:`a2a_routes` for the arguments."""
    routes, handler = _host(
        agent,
        store=store,
        auth=auth,
        url=url,
        card=card,
        task_store=task_store,
        allowed_origins=allowed_origins,
        release_waiting_after=release_waiting_after,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:  # the turns still running end with the server
            await handler.aclose()

    return Starlette(routes=routes, lifespan=lifespan)
