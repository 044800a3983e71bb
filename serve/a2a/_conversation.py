"""Which trackway conversation an A2A context continues: the last completed task of the
caller in that context names its run (task metadata), and that stored run's final state is
the conversation the next turn goes on from."""

from __future__ import annotations

from typing import Protocol

from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import ListTasksRequest, Task, TaskState

from trackway.agent import Agent, Conversation
from trackway.agent.loop._model_call import carried_history
from trackway.engine import RunStore, thaw
from trackway.tools import Identity

from .._auth import same_caller

__all__ = ["RUN_ID_KEY", "continued", "run_of"]

RUN_ID_KEY = "trackway_run_id"
"""The key of a task's metadata that names the trackway run of its turn."""


def run_of(task: Task) -> str | None:
    """The trackway run a task's metadata names (``None`` before its turn began)."""
    if RUN_ID_KEY not in task.metadata:  # a protobuf Struct: no .get()
        return None
    run_id = task.metadata[RUN_ID_KEY]
    return run_id if isinstance(run_id, str) else None


class _Host(Protocol):
    """What hosts the turns: the agent, its run store and the A2A task store."""

    agent: Agent
    store: RunStore
    tasks: TaskStore


async def continued(
    host: _Host,
    context_id: str,
    task_id: str,
    caller: Identity,
    call: ServerCallContext,
) -> Conversation | None:
    """The conversation of the caller's latest completed turn in ``context_id`` (``None``
    for a new context). Only the caller's own tasks are listed (the task store is scoped by
    owner) and the run's stored identity must be the caller's too."""
    listed = await host.tasks.list(ListTasksRequest(context_id=context_id), call)
    for task in listed.tasks:  # the most recently updated first
        if task.id == task_id or task.status.state != TaskState.TASK_STATE_COMPLETED:
            continue
        run_id = run_of(task)
        if run_id is None:
            continue
        state = host.store.load(run_id).state
        owner = state.get("identity")
        if "history" not in state or not same_caller(
            None if owner is None else Identity.model_validate(thaw(owner)), caller
        ):
            continue
        history = [dict(m) for m in thaw(state["history"])]
        return Conversation(
            history=carried_history(state, history, redact=False), agent=host.agent.name
        )
    return None
