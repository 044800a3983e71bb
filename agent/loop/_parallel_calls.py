"""Several tool calls of one model answer, run at once (bounded), recorded as if in order.

The calls of one answer that need nobody (no question, no refusal) and whose tools are all
``async`` run concurrently, at most ``max_parallel_tool_calls`` at a time (a sync tool
blocks the event loop, so with one in the batch they run one after another, in call order).
What they leave on the record does not depend on which finished first: each call's events
(progress, sessions, filled arguments) are held (``TrackedScope._hold_emits``) and emitted in call
order once all are done, the repeated-call nudge is judged in call order, and their messages
and rows are written in call order in the one commit of the batch — so a replay, which runs
no tool, writes the same bytes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio

from trackway.engine import Scope
from trackway.engine.run._scope import TrackedScope

from ._nudge import NUDGE_LATER
from ._served import Outcome

__all__ = ["run_together"]


Job = Callable[[Scope], Awaitable[Outcome]]


async def run_together(
    scope: Scope, jobs: list[Job], limit: int
) -> list[tuple[Outcome, list[tuple[object, Any]]]]:
    """Run ``jobs`` (each a call, given the scope it sees) at most ``limit`` at a time; each
    outcome, in job order, with the events it held (``[]`` when the jobs ran one after
    another on the stage's own scope, their events emitted as they came). The caller emits
    the held events and judges the nudge in job order."""
    if len(jobs) == 1 or limit == 1:
        return [(await job(scope), []) for job in jobs]  # as calls always ran
    held: list[list[tuple[object, Any]]] = [[] for _ in jobs]
    outcomes: list[Outcome | None] = [None] * len(jobs)
    gate = anyio.Semaphore(limit)

    async def one(i: int) -> None:  # a task of its own: what it sets is its own
        async with gate:
            NUDGE_LATER.set(True)
            held[i] = cast(TrackedScope, scope)._hold_emits()  # the engine's scope
            outcomes[i] = await jobs[i](scope)

    async with anyio.create_task_group() as group:
        for i in range(len(jobs)):
            group.start_soon(one, i)
    done: list[tuple[Outcome, list[tuple[object, Any]]]] = []
    for outcome, box in zip(outcomes, held, strict=True):
        assert outcome is not None
        done.append((outcome, box))
    return done
