"""The A2A executor: one A2A task is one trackway turn (a run in the store). Tool calls and
their progress go out as ``working`` status updates while the turn runs; the answer as an
artifact and the ``completed`` status; a question for a person as ``input-required`` (the
next message on the task answers it and resumes the run); a failure as ``failed`` with the
error text the store kept (redacted as the agent's policy says). Every update carries the
run id in the task's metadata, so the trackway record of a task is one lookup away."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from a2a.helpers import get_data_parts, new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types import Message, Part, Task, TaskState
from a2a.utils.errors import InternalError, InvalidParamsError

from trackway.agent import (
    Agent,
    Conversation,
    DecisionRequiredError,
    InvalidAnswerError,
    Paused,
)
from trackway.engine import EmitEvent, RunStore
from trackway.tools import Identity

from ._caller import caller_of
from ._conversation import RUN_ID_KEY, continued, run_of

__all__ = ["A2AExecutor", "status_line"]

T = TypeVar("T")
_REFUSED_ANSWERS = (InvalidAnswerError, DecisionRequiredError)
"""An answer the paused question cannot take, refused before its checkpoint is claimed."""
_LINE = 120


def _trimmed(text: str) -> str:
    """``text`` on one status line: at most 120 characters, then how many more there were."""
    text = " ".join(text.split())
    if len(text) <= _LINE:
        return text
    return f"{text[:_LINE]}… (+{len(text) - _LINE} more)"


def status_line(event: EmitEvent) -> str | None:
    """The working-status text of a run event, or ``None`` for an event that gets none:
    a tool call starting, saying how it goes (a ``message`` it reports, else a generic
    line), or ending."""
    payload = event.payload if isinstance(event.payload, Mapping) else {}
    tool = str(payload.get("name", "a tool"))
    if event.name == "stream.tool_start":
        return f"Calling {tool}"
    if event.name == "stream.tool_progress":
        said = payload.get("payload")
        if isinstance(said, Mapping) and isinstance(said.get("message"), str):
            return f"{tool}: {_trimmed(said['message'])}"
        if isinstance(said, str):
            return f"{tool}: {_trimmed(said)}"
        return f"{tool} is working"
    if event.name == "stream.tool_end":
        return f"{tool} finished ({payload.get('status', 'done')})"
    return None


def _whole(value: Any) -> Any:
    """``value`` with whole floats as ints (a protobuf ``Value`` keeps every number as a
    double, so a form's ``3`` arrives as ``3.0``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def _answer_of(message: Message | None, text: str) -> Any:
    """What a person's message answers with: its data part when it has one (a form's
    answer for ``request_input``), else its text."""
    if message is not None:
        data = get_data_parts(list(message.parts))
        if data:
            return _whole(data[0])
    return text


class A2AExecutor(AgentExecutor):
    """Runs a trackway agent for the A2A SDK's request handler (its ``AgentExecutor``):
    a new task is a turn, a follow-up in a context continues that context's conversation,
    and a message on a task waiting for input answers the question."""

    def __init__(self, agent: Agent, store: RunStore, tasks: TaskStore) -> None:
        self.agent = agent
        self.store = store
        self.tasks = tasks

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        caller = caller_of(context.call_context)
        task_id, context_id = context.task_id, context.context_id
        if task_id is None or context_id is None or context.message is None:
            raise InvalidParamsError(message="an A2A request without a message")
        updater = TaskUpdater(event_queue, task_id, context_id)
        identity = caller.model_copy(update={"conversation_id": context_id})
        task = context.current_task
        if task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        text = context.get_user_input()
        turn = _Turn(self, updater, run_of(task) if task is not None else None)
        try:
            if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
                try:
                    outcome = await turn.resume(_answer_of(context.message, text), identity)
                except _REFUSED_ANSWERS as exc:  # nothing was claimed: ask again
                    await turn.asked_again(task, exc)
                    return
            else:
                call = context.call_context
                convo = await continued(self, context_id, task_id, caller, call)
                outcome = await turn.run(text, identity, convo)
        except Exception as exc:
            await turn.failed(exc)
            return
        await turn.ended(outcome)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # the SDK cancels the task running execute() (and with it the turn) before this
        assert context.task_id is not None and context.context_id is not None
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class _Turn:
    """One execute() call: relays the run's events and says how it ended."""

    def __init__(self, host: A2AExecutor, updater: TaskUpdater, run_id: str | None) -> None:
        self.host = host
        self.updater = updater
        self.run_id = run_id

    def _meta(self) -> dict[str, Any]:
        return {RUN_ID_KEY: self.run_id} if self.run_id else {}

    def _message(self, text: str, metadata: dict[str, Any] | None = None) -> Message:
        return self.updater.new_agent_message([Part(text=text)], metadata=metadata)

    async def relay(self, event: EmitEvent) -> None:
        if self.run_id is None:
            self.run_id = event.run_id
            await self.updater.update_status(TaskState.TASK_STATE_WORKING, metadata=self._meta())
        line = status_line(event)
        if line is None:
            return
        payload = event.payload if isinstance(event.payload, Mapping) else {}
        about = {"event": event.name, "tool": payload.get("name"), "call_id": payload.get("id")}
        await self.updater.update_status(
            TaskState.TASK_STATE_WORKING, self._message(line, about), metadata=self._meta()
        )

    async def run(self, text: str, identity: Identity, convo: Conversation | None) -> str | Paused:
        async with self.host.agent.stream(text, identity=identity, continue_from=convo) as events:
            async for event in events:
                await self.relay(event)
        assert events.outcome is not None
        return events.outcome

    async def resume(self, answer: Any, identity: Identity) -> str | Paused:
        run_id = self.run_id
        if run_id is None:
            raise InternalError(message="this task waits for input but names no trackway run")
        resumed = self.host.agent.resume(run_id, answer, identity=identity)
        outcome = await self._relaying(resumed, run_id)
        return outcome if isinstance(outcome, Paused) else str(outcome)

    async def _relaying(self, work: Awaitable[T], run_id: str) -> T:
        """Await ``work`` while relaying the events ``run_id`` emits, in order."""
        heard: list[EmitEvent] = []
        wake = asyncio.Event()

        def hear(event: EmitEvent) -> None:
            if event.run_id == run_id:
                heard.append(event)
                wake.set()

        stop: Callable[[], None] = self.host.agent.on("*", hear)
        job = asyncio.ensure_future(work)
        try:
            while True:
                waiting = asyncio.ensure_future(wake.wait())
                await asyncio.wait({job, waiting}, return_when=asyncio.FIRST_COMPLETED)
                waiting.cancel()
                wake.clear()
                finished = job.done()
                while heard:
                    await self.relay(heard.pop(0))
                if finished:
                    return job.result()
        finally:
            stop()
            if not job.done():
                job.cancel()

    async def ended(self, outcome: str | Paused) -> None:
        if isinstance(outcome, Paused):
            self.run_id = outcome.run_id
            about = {"kind": outcome.kind, "call": dict(outcome.call)}
            if outcome.schema is not None:
                about["schema"] = dict(outcome.schema)
            await self.updater.update_status(
                TaskState.TASK_STATE_INPUT_REQUIRED,
                self._message(outcome.question, about),
                metadata=self._meta(),
            )
            return
        await self.updater.add_artifact([Part(text=outcome)], name="answer", metadata=self._meta())
        await self.updater.update_status(
            TaskState.TASK_STATE_COMPLETED, self._message(outcome), metadata=self._meta()
        )

    async def asked_again(self, task: Task, refused: Exception) -> None:
        """``input-required`` again for an answer the question cannot take (nothing was
        claimed, the run still waits): the same question, saying why, in ``refused``."""
        asked = task.status.message
        again = self._message("".join(p.text for p in asked.parts))
        again.metadata.CopyFrom(asked.metadata)  # kind, call, schema
        again.metadata["refused"] = str(refused)
        await self.updater.update_status(
            TaskState.TASK_STATE_INPUT_REQUIRED, again, metadata=self._meta()
        )

    async def failed(self, exc: Exception) -> None:
        """``failed``, saying what the store kept of the error: the agent's redaction
        applied (a turn refused before its run began says its own error)."""
        text = f"{type(exc).__name__}: {exc}"
        if self.run_id is not None:
            kept = self.host.store.load(self.run_id).error
            if kept is not None:
                text = f"{kept.type}: {kept.message}"
        await self.updater.update_status(
            TaskState.TASK_STATE_FAILED, self._message(text), metadata=self._meta()
        )
