"""Whose run is it: the identity each run was started for, read from this process's hub or
from the store (the run's initial state), cached (it never changes), and the runs of one
caller, newest first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import anyio
from pydantic import ValidationError

from trackway.engine import RunStore, UnknownRunError, thaw
from trackway.tools import Identity

from ._auth import same_caller
from ._hub import EventHub

__all__ = ["Owners", "RunRow"]


class RunRow(NamedTuple):
    """One of a caller's runs, as the runs route lists it."""

    run_id: str
    conversation_id: str | None
    status: str
    started_at: float
    ended_at: float | None

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def _identity(value: Any) -> Identity | None:
    if isinstance(value, Identity):
        return value
    if not isinstance(value, Mapping):
        return None
    try:
        return Identity.model_validate(dict(thaw(value)))
    except ValidationError:
        return None


class Owners:
    """Who each run belongs to (``None``: a run nobody may see, or no such run)."""

    def __init__(self, hub: EventHub, store: RunStore | None) -> None:
        self.hub = hub
        self.store = store
        self._known: dict[str, Identity | None] = {}

    async def owner(self, run_id: str) -> Identity | None:
        if run_id in self._known:
            return self._known[run_id]
        feed = self.hub.feed(run_id)
        if feed is not None:
            found = _identity(feed.identity)
        elif self.store is not None:
            found = await anyio.to_thread.run_sync(self._stored_owner, run_id)
        else:
            return None
        self._known[run_id] = found
        return found

    def _stored_owner(self, run_id: str) -> Identity | None:
        assert self.store is not None
        try:
            snapshot = self.store.load(run_id)
        except UnknownRunError:
            return None
        return _identity(snapshot.initial_state.get("identity"))

    async def runs_of(self, caller: Identity) -> list[RunRow]:
        """The caller's runs (same tenant and principal), newest first."""
        rows: dict[str, RunRow] = {}
        if self.store is not None:
            for info in await anyio.to_thread.run_sync(self.store.list_runs):
                owner = await self.owner(info.run_id)
                if owner is not None and same_caller(owner, caller):
                    rows[info.run_id] = RunRow(
                        info.run_id,
                        owner.conversation_id,
                        info.status,
                        info.started_at,
                        info.ended_at,
                    )
        for run_id, feed in self.hub.feeds():
            owner = await self.owner(run_id)
            if run_id in rows or owner is None or not same_caller(owner, caller):
                continue
            rows[run_id] = RunRow(
                run_id, owner.conversation_id, feed.status or "running", feed.started_at, None
            )
        return sorted(rows.values(), key=lambda r: (r.started_at, r.run_id), reverse=True)

    async def last_of(self, caller: Identity, conversation_id: str) -> RunRow | None:
        """The newest run of the caller's conversation ``conversation_id``."""
        for row in await self.runs_of(caller):
            if row.conversation_id == conversation_id:
                return row
        return None
