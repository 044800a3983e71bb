"""Serving agents over HTTP: server-sent events of a run (``to_sse``), an agent behind an
ASGI app (``serve_agent``, ``trackway serve``) with an auth hook that says who each request
is for, a standing agent's session lifecycle, A2A hosting (``trackway.serve.a2a``) and the
live viewer of a store (``trackway.serve.ui``, ``trackway ui``).

The layer above the agent: it imports ``trackway.agent`` and everything below it; nothing
imports it. Its dependencies (Starlette, sse-starlette, uvicorn) come with the ``serve``
extra: ``pip install 'trackway[serve]'``.
"""

from ._standing import CloseHook as CloseHook
from ._standing import SessionClosedError as SessionClosedError
from ._standing import SessionLifecycle as SessionLifecycle
from ._standing import SessionOwnerError as SessionOwnerError
from ._standing import StandingAgent as StandingAgent

__all__ = [
    "CloseHook",
    "SessionClosedError",
    "SessionLifecycle",
    "SessionOwnerError",
    "StandingAgent",
]
