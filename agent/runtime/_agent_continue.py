"""How an agent's conversation goes on after a run: ``checkpoint()`` (the conversation with
its last answer), ``follow_up`` (a new message on it), and ``resume_on_error`` (a new run from
the conversation a provider failure carried, see ``_with_checkpoint``). A part of
:class:`~._agent.Agent`."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from trackway.engine import (
    Checkpoint,
    CheckpointClaimedError,
    Executor,
    RunResult,
    Snapshot,
    thaw,
)
from trackway.engine.core._sync import run_sync
from trackway.tools import Identity

from ..context._compaction import carry_compaction
from ..context._config import AgentConfig
from ..loop._inputs import checkpointed, run_input
from ..loop._model_call import carried_history, without_retired
from ..messages._conversation import Conversation
from ..messages._errors import (
    InvalidRunInputError,
    NoConversationError,
    PendingQuestionError,
    RunCheckpointError,
    RunInFlightError,
)
from ..messages._messages import is_said_by_person
from ..messages._paused import Paused
from ..middleware._message_doors import DENIED_KEY
from ..providers._provider import MissingAPIKeyError, ProviderError
from ..time._layer import check_clock

__all__ = ["Continuing", "Turn"]


class Turn(NamedTuple):
    """One turn of a conversation a host keeps itself (:meth:`Continuing.turn`): what the
    run returned, the conversation to continue next (None while it waits on a question:
    continue with :meth:`Continuing.resume_turn`) and the run's id."""

    outcome: str | Paused
    conversation: Conversation | None
    run_id: str


class Continuing:
    """``checkpoint``, ``follow_up``, ``resume_on_error``, ``abandon_pause`` (mixed into
    ``Agent``)."""

    _cfg: AgentConfig
    _running: bool
    _last: Snapshot | None
    _pending: Paused | None

    if TYPE_CHECKING:

        async def run(
            self,
            message: str | Mapping[str, Any],
            *,
            identity: Identity | Mapping[str, Any] | None = None,
            session_id: str | None = None,
            continue_from: Conversation | None = None,
            timeout: float | None = None,
        ) -> str | Paused: ...

        async def _drive(
            self,
            start: Callable[[Executor], Awaitable[RunResult]],
            kept: list[RunResult] | None = None,
        ) -> str | Paused: ...

        def _state(self) -> Mapping[str, Any]: ...

        def _refuse_if_busy(self) -> None: ...

        def _resuming(
            self,
            checkpoint: Checkpoint | str | bytes,
            answer: Any,
            identity: Identity | Mapping[str, Any] | None,
            session_id: str | None,
            timeout: float | None,
        ) -> Callable[[Executor], Awaitable[RunResult]]: ...

    async def abandon_pause(self) -> dict[str, Any] | None:
        """Drop the question this agent's last run waits on, on the record: the waiting call
        gets a result saying the question was withdrawn and the run ends. Returns what was
        dropped (``question``, ``id``, ``name``), or ``None`` when nothing was waiting."""
        pending = self._pending
        if pending is None:
            return None
        self._refuse_if_busy()
        try:
            await self._drive(
                lambda ex: ex.resume(pending.checkpoint, {"abandon": True}, raise_on_error=False)
            )
        except CheckpointClaimedError:
            self._pending = None  # answered elsewhere: nothing waits here any more
            raise
        return {
            "question": pending.question,
            "id": pending.call["id"],
            "name": pending.call["name"],
        }

    def _with_checkpoint(self, error: Exception, state: Mapping[str, Any]) -> Exception:
        """A provider failure, carrying the conversation up to the last completed iteration
        (``resume_on_error`` retries from there). A missing key is raised as itself: nothing
        was sent, so there is nothing to resume (set the key and run again)."""
        if (
            not isinstance(error, ProviderError)
            or isinstance(error, MissingAPIKeyError)
            or "history" not in state
        ):
            return error
        history = without_retired(state, [dict(m) for m in thaw(state["history"])])
        failed = cast(RunCheckpointError, checkpointed(type(error))(*error.args))
        failed.__dict__.update(error.__dict__)
        failed.__cause__ = error.__cause__
        folded = carry_compaction(self._cfg.window, state)  # what .compaction() folded
        failed.checkpoint = Conversation(history=history, agent=self._cfg.name, carry=folded)
        failed.run_id = self._last.run_id if self._last is not None else ""
        failed.last_completed_iteration = max(0, int(state.get("iteration", 1)) - 1)
        if failed.stage_error is not None:  # the engine's record points at what was raised
            failed.stage_error.__cause__ = failed
        return failed

    async def resume_on_error(
        self,
        checkpoint: Conversation | str | bytes,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """Retry a run that failed at its provider, from the conversation it carried
        (``err.checkpoint`` of a :class:`RunCheckpointError`, or its JSON), in any process.

        No new user message is added: the next model call is the one that failed. It is a
        new run (a new run id, a full ``max_iterations``); tool calls of the failed
        iteration were never answered, so the model may ask for them again.
        """
        if isinstance(checkpoint, (str, bytes)):
            checkpoint = Conversation.from_json(checkpoint)
        if not isinstance(checkpoint, Conversation) or not checkpoint.history:
            raise InvalidRunInputError(
                "resume_on_error takes the checkpoint of a RunCheckpointError (a Conversation "
                "with at least the person's message)"
            )
        said = [m for m in checkpoint.history if is_said_by_person(m)]
        if not said:
            raise InvalidRunInputError(
                "resume_on_error: the conversation holds no message from the person to answer"
            )
        initial = run_input(str(said[-1]["content"]), checkpoint, identity, session_id)
        check_clock(self._cfg.time, initial.get("time"), "run")  # .time()
        initial["retry"] = True
        return await self._drive(lambda ex: ex.run(initial, timeout=timeout, raise_on_error=False))

    def checkpoint(self, *, redact_thinking: bool = False) -> Conversation:
        """The conversation so far, with the last answer appended: continue it anywhere.

        After a run whose message an input link refused there is none (a refused message
        was never admitted): :class:`NoConversationError`; continue a conversation kept
        from an earlier run with ``run(..., continue_from=...)``. After an answer an output
        link denied, the conversation holds no answer. The model's reasoning travels with the
        turns it came with (the answer's too); ``redact_thinking=True`` leaves all of it out."""
        return self._conversation(self._state(), redact_thinking)

    def _conversation(self, state: Mapping[str, Any], redact_thinking: bool) -> Conversation:
        """The conversation a run with final ``state`` leaves (see :meth:`checkpoint`)."""
        refused = state.get(DENIED_KEY)
        if refused is not None and refused["door"] == "input":
            raise NoConversationError(
                f"agent {self._cfg.name!r} has no conversation to continue: middleware "
                f"{refused['middleware']!r} refused the last run's message "
                f"({refused['reason']}). Continue a conversation you kept from an earlier run "
                "with run(..., continue_from=...)"
            )
        history = [dict(m) for m in thaw(state["history"])]
        history = carried_history(state, history, redact=redact_thinking)
        skills = self._cfg.skills
        carry = None
        if skills is not None and skills.continuing and "skill_cursor" in state:
            carry = {"skill_cursor": thaw(state["skill_cursor"])}
        folded = carry_compaction(self._cfg.window, state)  # what .compaction() folded
        if folded is not None:
            carry = {**(carry or {}), **folded}
        return Conversation(history=history, agent=self._cfg.name, carry=carry)

    async def follow_up(
        self,
        message: str | Mapping[str, Any],
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """Continue this agent's last conversation with a new message.

        Before any run, or after a run whose message an input link refused, there is nothing
        to continue: :class:`NoConversationError` (a follow-up that quietly became a first
        turn would hide the mistake).
        """
        if self._running:
            raise RunInFlightError(
                f"agent {self._cfg.name!r} is running a turn, so its last conversation is not "
                "settled; await that run first (or continue a kept Conversation with "
                "run(..., continue_from=...))"
            )
        if self._pending is not None:
            raise PendingQuestionError(
                f"agent {self._cfg.name!r} is waiting for a person's answer to "
                f"{self._pending.question!r} (call {self._pending.call.get('id')!r}) in the "
                "conversation follow_up would continue: resume it with "
                "agent.resume(paused.checkpoint, answer), or drop it with "
                "agent.abandon_pause() first"
            )
        if self._last is None:
            raise NoConversationError(
                f"agent {self._cfg.name!r} has no conversation to follow up: call run(...) "
                "first, or pass continue_from= a Conversation you kept"
            )
        return await self.run(
            message,
            identity=identity,
            session_id=session_id,
            continue_from=self.checkpoint(),
            timeout=timeout,
        )

    async def turn(
        self,
        message: str | Mapping[str, Any],
        *,
        continue_from: Conversation | None = None,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> Turn:
        """Run one turn like :meth:`run` and hand back, with its outcome, the conversation
        that turn leaves: what a host keeping many conversations on one agent continues
        next (``checkpoint()`` reads the agent's last run, which may be another caller's)."""
        initial = run_input(message, continue_from, identity, session_id)
        check_clock(self._cfg.time, initial.get("time"), "run")  # .time()
        kept: list[RunResult] = []
        outcome = await self._drive(
            lambda ex: ex.run(initial, timeout=timeout, raise_on_error=False), kept
        )
        return self._turn(outcome, kept[0])

    async def resume_turn(
        self,
        checkpoint: Checkpoint | str | bytes,
        answer: Any,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> Turn:
        """:meth:`resume` a paused turn, handing back the conversation it leaves (see
        :meth:`turn`)."""
        kept: list[RunResult] = []
        start = self._resuming(checkpoint, answer, identity, session_id, timeout)
        return self._turn(await self._drive(start, kept), kept[0])

    def turn_sync(
        self,
        message: str | Mapping[str, Any],
        *,
        continue_from: Conversation | None = None,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> Turn:
        """Sync twin of :meth:`turn`."""
        call = functools.partial(
            self.turn,
            message,
            continue_from=continue_from,
            identity=identity,
            session_id=session_id,
            timeout=timeout,
        )
        return run_sync(call, name="Agent.turn_sync", twin="await agent.turn(...)")

    def resume_turn_sync(
        self,
        checkpoint: Checkpoint | str | bytes,
        answer: Any,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> Turn:
        """Sync twin of :meth:`resume_turn`."""
        call = functools.partial(
            self.resume_turn,
            checkpoint,
            answer,
            identity=identity,
            session_id=session_id,
            timeout=timeout,
        )
        return run_sync(call, name="Agent.resume_turn_sync", twin="await agent.resume_turn(...)")

    def _turn(self, outcome: str | Paused, result: RunResult) -> Turn:
        paused = isinstance(outcome, Paused)
        conversation = None if paused else self._conversation(result.state, False)
        return Turn(outcome, conversation, result.run_id)
