"""Who an A2A call is for, carried from the auth hook to the SDK: the identity the hook gave
the HTTP request becomes the SDK's ``User``, whose name is the owner key the task store
scopes every task by (so one caller never sees another's tasks)."""

from __future__ import annotations

import json

from a2a.auth.user import UnauthenticatedUser, User
from a2a.server.context import ServerCallContext
from a2a.server.routes import DefaultServerCallContextBuilder
from starlette.requests import Request

from trackway.tools import Identity

from .._auth import Unauthenticated

__all__ = ["IDENTITY_SCOPE_KEY", "CallerContexts", "caller_of", "task_owner"]

IDENTITY_SCOPE_KEY = "trackway.identity"
"""Where the A2A routes put the identity the auth hook gave a request (its ASGI scope)."""


def task_owner(context: ServerCallContext) -> str:
    """The owner a task store files a call's tasks under: the caller's tenant and principal
    (an ``owner_resolver`` for an SDK task store you pass as ``task_store=``)."""
    return context.user.user_name


class _Caller(User):
    def __init__(self, identity: Identity) -> None:
        self.identity = identity

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return json.dumps([self.identity.tenant, self.identity.principal])


class CallerContexts(DefaultServerCallContextBuilder):
    """The SDK's call context, its user the identity the auth hook gave the request."""

    def build_user(self, request: Request) -> User:
        identity = request.scope.get(IDENTITY_SCOPE_KEY)
        return _Caller(identity) if isinstance(identity, Identity) else UnauthenticatedUser()


def caller_of(context: ServerCallContext) -> Identity:
    """The identity of an A2A call; :class:`Unauthenticated` for a call without one."""
    user = context.user
    if isinstance(user, _Caller):
        return user.identity
    raise Unauthenticated("an A2A call reached the agent without an identity from the auth hook")
