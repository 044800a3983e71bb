"""The checks every served request goes through before a route sees it: who the caller is
(the auth hook, and nothing else), and, for a POST, that it comes from the app's own page
(``Origin``), so another site open in the same browser cannot act with its cookies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from trackway.tools import Identity

from ._auth import Authenticate, Unauthenticated, identify

__all__ = ["LOOPBACK_HOSTS", "Guard", "loopback_auth", "refuse"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
"""Host names a page served on this machine is reached by: the app's own origin by default."""

Handler = Callable[[Request, Identity], Awaitable[Response]]


def refuse(status: int, message: str) -> JSONResponse:
    """An error as JSON: ``{"error": message}``."""
    return JSONResponse({"error": message}, status_code=status)


class Guard:
    """Wraps each route: 401 without an identity from ``auth``; for a POST, 403 when its
    ``Origin`` is neither the app's own (a loopback host, by default) nor one of
    ``origins``. A request without ``Origin`` comes from no browser page (browsers send it
    on every POST) and passes the origin check; it still needs the auth hook's yes."""

    def __init__(self, auth: Authenticate | None, origins: Sequence[str] = ()) -> None:
        self.auth = auth
        self.origins = frozenset(o.rstrip("/") for o in origins)

    def origin_ok(self, request: Request) -> bool:
        origin = request.headers.get("origin")
        if origin is None:
            return True
        origin = origin.rstrip("/")
        if origin in self.origins:
            return True
        host = request.headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        # the app's own origin, only on a loopback host name: a page of another site whose
        # name resolves to this machine (DNS rebinding) carries its own name as Host
        return name in LOOPBACK_HOSTS and origin == f"{request.url.scheme}://{host}"

    def __call__(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            if request.method == "POST" and not self.origin_ok(request):
                return refuse(
                    403,
                    f"a POST from origin {request.headers.get('origin')!r} is refused: only "
                    "the app's own page (or an origin passed in origins=) may post",
                )
            try:
                caller = await identify(self.auth, request)
            except Unauthenticated as exc:
                return refuse(401, str(exc))
            if not caller.principal:
                return refuse(401, "the auth hook gave an identity without a principal")
            return await handler(request, caller)

        return guarded


async def body_of(request: Request, *fields: str) -> dict[str, Any]:
    """The JSON object a POST carries, holding ``fields`` (strings) and nothing that says
    who the caller is: ValueError naming what is wrong."""
    try:
        body = orjson.loads(await request.body())
    except orjson.JSONDecodeError:
        raise ValueError("the body must be a JSON object") from None
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    named = sorted({"identity", "tenant", "principal", "conversation_id"} & set(body))
    if named:
        raise ValueError(
            f"the body names {', '.join(named)}: who the caller is comes from the auth hook "
            "alone, never from a request body"
        )
    for name in fields:
        if name not in body:
            raise ValueError(f"the body needs {name!r}")
    return body


def loopback_auth(tenant: str = "local", principal: str = "me") -> Authenticate:
    """A development auth hook: every request from this machine (a loopback client
    address) is ``Identity(tenant, principal)``; any other is refused. For trying an agent
    on your own machine; never for a server others reach."""

    def hook(request: Any) -> Identity | None:
        client = request.client
        if client is None or client.host not in ("127.0.0.1", "::1", "localhost"):
            return None
        return Identity(tenant=tenant, principal=principal)

    return hook
