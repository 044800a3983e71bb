"""Who a request is for. An auth hook maps each HTTP request to an :class:`Identity` (or
``None`` to refuse it); it is the only source of identity: a request body never names one.
A served app without a hook refuses every request."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

from starlette.requests import HTTPConnection

from trackway.agent import AgentError
from trackway.tools import Identity

__all__ = ["Authenticate", "ServeError", "Unauthenticated", "identify", "same_caller"]

Authenticate: TypeAlias = Callable[
    [HTTPConnection],
    "Identity | Mapping[str, Any] | Awaitable[Identity | Mapping[str, Any] | None] | None",
]
"""An auth hook: the request (headers, cookies, client) in, who it is for out; ``None``
refuses it. It may be sync or async."""


class ServeError(AgentError):
    """Base class of the serving layer's own errors."""


class Unauthenticated(ServeError):
    """A request the auth hook did not map to an identity (or a served app without one)."""


async def identify(auth: Authenticate | None, request: HTTPConnection) -> Identity:
    """The identity ``auth`` gives ``request``; :class:`Unauthenticated` when there is no
    hook or it refused. A hook that returns anything but an identity is a ``TypeError``
    naming what it returned."""
    if auth is None:
        raise Unauthenticated(
            "this app has no auth hook, so it refuses every request: pass auth=fn, a "
            "function of the request returning an Identity (or None to refuse)"
        )
    found = auth(request)
    if inspect.isawaitable(found):
        found = await found
    if found is None:
        raise Unauthenticated("the auth hook refused this request")
    if isinstance(found, Identity):
        return found
    if isinstance(found, Mapping):
        return Identity.model_validate(dict(found))
    raise TypeError(
        f"the auth hook returned {found!r}; it must return an Identity, a dict of its "
        "fields (tenant, principal, conversation_id) or None to refuse the request"
    )


def same_caller(owner: Identity | None, caller: Identity) -> bool:
    """Whether ``caller`` may read or answer a run stored for ``owner``: the same tenant and
    the same principal (a run stored without an identity belongs to nobody who asks)."""
    if owner is None:
        return False
    return owner.tenant == caller.tenant and owner.principal == caller.principal
