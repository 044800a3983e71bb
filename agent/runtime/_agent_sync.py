"""The agent's entry points for callers without an event loop: each starts one (asyncio or
trio, as the sync bridge says) and awaits its async twin, so the two share one
implementation."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trackway.engine import Checkpoint
from trackway.engine.core._sync import run_sync
from trackway.tools import Identity

from ..messages._conversation import Conversation
from ..messages._paused import Paused

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ._result import AgentResult

__all__ = ["AgentSyncTwins"]


class AgentSyncTwins:
    """``run_sync``, ``run_result_sync``, ``run_typed_sync``, ``follow_up_sync``,
    ``resume_sync``, ``abandon_pause_sync`` and ``resume_on_error_sync`` (mixed into
    :class:`~trackway.agent.Agent`; ``close_tool_sessions_sync`` lives with its twin).
    ``tests/dx/test_sync_twins.py`` checks that every public async method has one."""

    if TYPE_CHECKING:

        async def run_result(
            self,
            message: str | Mapping[str, Any],
            *,
            identity: Identity | Mapping[str, Any] | None = None,
            session_id: str | None = None,
            continue_from: Conversation | None = None,
            timeout: float | None = None,
        ) -> AgentResult: ...

        async def run_typed(
            self,
            message: str | Mapping[str, Any],
            *,
            identity: Identity | Mapping[str, Any] | None = None,
            session_id: str | None = None,
            continue_from: Conversation | None = None,
            timeout: float | None = None,
        ) -> BaseModel | Paused: ...

        async def follow_up(
            self,
            message: str | Mapping[str, Any],
            *,
            identity: Identity | Mapping[str, Any] | None = None,
            session_id: str | None = None,
            timeout: float | None = None,
        ) -> str | Paused: ...

        async def run(
            self,
            message: str | Mapping[str, Any],
            *,
            identity: Identity | Mapping[str, Any] | None = None,
            session_id: str | None = None,
            continue_from: Conversation | None = None,
            timeout: float | None = None,
            time: Any = None,
        ) -> str | Paused: ...

        async def resume(
            self,
            checkpoint: Checkpoint | str | bytes,
            answer: Any,
            *,
            identity: Identity | Mapping[str, Any] | None = None,
            session_id: str | None = None,
            timeout: float | None = None,
            time: Any = None,
        ) -> str | BaseModel | Paused: ...

        async def abandon_pause(self) -> dict[str, Any] | None: ...

        async def resume_on_error(
            self,
            checkpoint: Conversation | str | bytes,
            *,
            identity: Identity | Mapping[str, Any] | None = None,
            session_id: str | None = None,
            timeout: float | None = None,
        ) -> str | Paused: ...

    def run_sync(
        self,
        message: str | Mapping[str, Any],
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        continue_from: Conversation | None = None,
        timeout: float | None = None,
        time: Any = None,
    ) -> str | Paused:
        """``run`` for callers without an event loop."""
        call = functools.partial(
            self.run,
            message,
            identity=identity,
            session_id=session_id,
            continue_from=continue_from,
            timeout=timeout,
            time=time,
        )
        return run_sync(call, name="Agent.run_sync", twin="await agent.run(...)")

    def run_result_sync(
        self,
        message: str | Mapping[str, Any],
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        continue_from: Conversation | None = None,
        timeout: float | None = None,
    ) -> AgentResult:
        """``run_result`` for callers without an event loop."""
        call = functools.partial(
            self.run_result,
            message,
            identity=identity,
            session_id=session_id,
            continue_from=continue_from,
            timeout=timeout,
        )
        return run_sync(call, name="Agent.run_result_sync", twin="await agent.run_result(...)")

    def run_typed_sync(
        self,
        message: str | Mapping[str, Any],
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        continue_from: Conversation | None = None,
        timeout: float | None = None,
    ) -> BaseModel | Paused:
        """``run_typed`` for callers without an event loop."""
        call = functools.partial(
            self.run_typed,
            message,
            identity=identity,
            session_id=session_id,
            continue_from=continue_from,
            timeout=timeout,
        )
        return run_sync(call, name="Agent.run_typed_sync", twin="await agent.run_typed(...)")

    def follow_up_sync(
        self,
        message: str | Mapping[str, Any],
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """``follow_up`` for callers without an event loop."""
        call = functools.partial(
            self.follow_up, message, identity=identity, session_id=session_id, timeout=timeout
        )
        return run_sync(call, name="Agent.follow_up_sync", twin="await agent.follow_up(...)")

    def resume_sync(
        self,
        checkpoint: Checkpoint | str | bytes,
        answer: Any,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
        time: Any = None,
    ) -> str | BaseModel | Paused:
        """``resume`` for callers without an event loop."""
        call = functools.partial(
            self.resume,
            checkpoint,
            answer,
            identity=identity,
            session_id=session_id,
            timeout=timeout,
            time=time,
        )
        return run_sync(call, name="Agent.resume_sync", twin="await agent.resume(...)")

    def abandon_pause_sync(self) -> dict[str, Any] | None:
        """``abandon_pause`` for callers without an event loop."""
        return run_sync(
            self.abandon_pause, name="Agent.abandon_pause_sync", twin="await agent.abandon_pause()"
        )

    def resume_on_error_sync(
        self,
        checkpoint: Conversation | str | bytes,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """``resume_on_error`` for callers without an event loop."""
        call = functools.partial(
            self.resume_on_error,
            checkpoint,
            identity=identity,
            session_id=session_id,
            timeout=timeout,
        )
        return run_sync(
            call, name="Agent.resume_on_error_sync", twin="await agent.resume_on_error(...)"
        )
