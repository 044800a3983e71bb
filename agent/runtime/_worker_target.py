"""An agent driven by a worker (``Worker(store, charts={"name": agent})``): its runs start,
resume and recover on the worker's store through the agent's own checks, so a run a worker
drives is the run ``agent.run`` would make — the same log, the same ``served_at``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from trackway.engine import (
    ConfigurationError,
    Executor,
    RunResult,
    RunStore,
    WorkOutcome,
    WorkTarget,
)

from ..loop._inputs import run_input

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["AgentTarget", "Workable"]


class AgentTarget:
    """One agent on one store, started, resumed and recovered by run id."""

    def __init__(self, agent: Agent, store: RunStore) -> None:
        runtime = agent._runtime
        if runtime.store is not None and runtime.store is not store:
            raise ConfigurationError(
                f"agent {agent.name!r} keeps its runs in {runtime.store!r}, and the worker "
                f"claims from {store!r}: build the agent without store= (the worker binds "
                "it to its own) or with the worker's store object"
            )
        if runtime.store is None:
            agent = type(agent)(
                agent._cfg, agent._chart, agent._attached, runtime=replace(runtime, store=store)
            )
        self.agent = agent
        self.chart_id = agent.spec().id
        self.policy = agent._runtime.redact
        self.redacts = self.policy is not None
        """Its runs are redacted: the worker's store must seal what the policy hides."""

    async def _outcome(self, start: Callable[[Executor], Awaitable[RunResult]]) -> WorkOutcome:
        kept: list[RunResult] = []
        try:
            await self.agent._drive(start, kept)
        except Exception:
            if not kept:  # refused before the run began
                raise
        return WorkOutcome.of(kept[0])

    async def start(self, run_id: str, input: Any) -> WorkOutcome:
        initial = run_input(input, None)
        return await self._outcome(lambda ex: ex.run(initial, run_id=run_id, raise_on_error=False))

    async def resume(self, checkpoint_id: str, answer: Any) -> WorkOutcome:
        return await self._outcome(self.agent._resuming(checkpoint_id, answer, None, None, None))

    async def recover(self, run_id: str) -> WorkOutcome:
        return await self._outcome(lambda ex: ex.recover(run_id, raise_on_error=False))


class Workable:
    """What makes an agent something a :class:`Worker` can drive."""

    def work_target(self: Any, store: RunStore) -> WorkTarget:
        """This agent as a worker drives it on ``store``: bound to that store when it has
        none of its own."""
        return AgentTarget(self, store)
