"""The Executor's entry points for callers without an event loop: each starts one (asyncio
or trio, as the sync bridge says) and awaits its async twin, so the two share one
implementation."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..core._sync import run_sync

if TYPE_CHECKING:
    from ..core._snapshot import Snapshot
    from ..stores._checkpoint import Checkpoint
    from ._executor import RunResult

__all__ = ["SyncTwins"]


class SyncTwins:
    """``run_sync``, ``fork_from_sync``, ``resume_sync`` and ``recover_sync`` (mixed into
    :class:`~trackway.engine.Executor`)."""

    if TYPE_CHECKING:

        async def run(
            self,
            input: Mapping[str, Any] | None = None,
            *,
            timeout: float | None = None,
            raise_on_error: bool = True,
            run_id: str | None = None,
        ) -> RunResult: ...

        async def fork_from(
            self,
            run: Snapshot | str,
            k: int,
            changes: Mapping[str, Any] | None = None,
            *,
            timeout: float | None = None,
            raise_on_error: bool = True,
        ) -> RunResult: ...

        async def resume(
            self,
            checkpoint: Checkpoint | str | bytes,
            value: Any = None,
            *,
            timeout: float | None = None,
            raise_on_error: bool = True,
        ) -> RunResult: ...

        async def recover(
            self, run_id: str, *, timeout: float | None = None, raise_on_error: bool = True
        ) -> RunResult: ...

    def run_sync(
        self,
        input: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
        run_id: str | None = None,
    ) -> RunResult:
        """``run`` for callers without an event loop (it starts one)."""
        return run_sync(
            functools.partial(
                self.run, input, timeout=timeout, raise_on_error=raise_on_error, run_id=run_id
            ),
            name="Executor.run_sync",
            twin="await executor.run(...)",
        )

    def fork_from_sync(
        self,
        run: Snapshot | str,
        k: int,
        changes: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
    ) -> RunResult:
        """``fork_from`` for callers without an event loop."""
        return run_sync(
            functools.partial(
                self.fork_from, run, k, changes, timeout=timeout, raise_on_error=raise_on_error
            ),
            name="Executor.fork_from_sync",
            twin="await executor.fork_from(...)",
        )

    def resume_sync(
        self,
        checkpoint: Checkpoint | str | bytes,
        value: Any = None,
        *,
        timeout: float | None = None,
        raise_on_error: bool = True,
    ) -> RunResult:
        """``resume`` for callers without an event loop."""
        return run_sync(
            functools.partial(
                self.resume, checkpoint, value, timeout=timeout, raise_on_error=raise_on_error
            ),
            name="Executor.resume_sync",
            twin="await executor.resume(...)",
        )

    def recover_sync(
        self, run_id: str, *, timeout: float | None = None, raise_on_error: bool = True
    ) -> RunResult:
        """``recover`` for callers without an event loop."""
        return run_sync(
            functools.partial(self.recover, run_id, timeout=timeout, raise_on_error=raise_on_error),
            name="Executor.recover_sync",
            twin="await executor.recover(...)",
        )
