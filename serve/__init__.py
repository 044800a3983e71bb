"""Serving agents over HTTP: server-sent events of a run (``to_sse``), an agent behind an
ASGI app (``serve_agent``, ``trackway serve``) with an auth hook that says who each request
is for, a standing agent's session lifecycle, A2A hosting (``trackway.serve.a2a``) and the
live viewer of a store (``trackway.serve.ui``, ``trackway ui``).

The layer above the agent: it imports ``trackway.agent`` and everything below it; nothing
imports it. Its dependencies (Starlette, sse-starlette, uvicorn) come with the ``serve``
extra: ``pip install 'trackway[serve]'``.
"""

from ._app import serve_agent as serve_agent
from ._auth import Authenticate as Authenticate
from ._auth import ServeError as ServeError
from ._auth import Unauthenticated as Unauthenticated
from ._guard import loopback_auth as loopback_auth
from ._hub import EventHub as EventHub
from ._hub import SentEvent as SentEvent
from ._sse import RunEnd as RunEnd
from ._sse import UnknownRun as UnknownRun
from ._sse import hub_for as hub_for
from ._sse import run_events as run_events
from ._sse import to_sse as to_sse
from ._standing import CloseHook as CloseHook
from ._standing import SessionClosedError as SessionClosedError
from ._standing import SessionLifecycle as SessionLifecycle
from ._standing import SessionOwnerError as SessionOwnerError
from ._standing import StandingAgent as StandingAgent

__all__ = [
    "Authenticate",
    "CloseHook",
    "EventHub",
    "RunEnd",
    "SentEvent",
    "ServeError",
    "SessionClosedError",
    "SessionLifecycle",
    "SessionOwnerError",
    "StandingAgent",
    "Unauthenticated",
    "UnknownRun",
    "hub_for",
    "loopback_auth",
    "run_events",
    "serve_agent",
    "to_sse",
]
