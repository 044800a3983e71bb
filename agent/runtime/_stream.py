"""``agent.stream(message)``: a turn's events, as they happen, to an ``async for``.

The events are the ones listeners hear (``stream.token``, ``stream.llm_start``/``_end``,
``stream.tool_start``/``_progress``/``_end``, ``agent.turn_end`` with the answer, ...), each
an :class:`~trackway.engine.EmitEvent`, in the order they were emitted, for this run only
(an agent may run others at the same time). The run and its reader are two tasks joined by a
bounded channel: when the reader falls ``buffer`` events behind, the run waits before its
next stage (the engine's commit stream, read one commit at a time, is the brake), so a slow
reader slows the run instead of letting memory grow. Leaving the block early cancels the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from anyio.streams.memory import MemoryObjectSendStream

from trackway.engine import EmitEvent, Executor, RunResult
from trackway.engine.execute._stream import Pumped, Tap
from trackway.tools import Identity

from ..context._config import AgentConfig
from ..loop._inputs import run_input
from ..messages._conversation import Conversation
from ..messages._errors import AgentError, InvalidRunInputError
from ..messages._paused import Paused
from ..time._layer import check_clock
from ._result import AgentResult, result_of

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["AgentStream", "Streaming"]


class AgentStream(Pumped[EmitEvent]):
    """One turn's events; use it as ``async with agent.stream(message) as events``.

    Iterating yields each event of the run as it is emitted and ends when the run ends;
    :attr:`outcome` is then what ``run`` returns (the answer, or :class:`Paused`) and
    :attr:`result` the :class:`AgentResult`. A turn that fails raises its error from the
    ``async for`` after its last event. Leaving the block before the run ended cancels it.
    """

    def __init__(self, agent: Agent, initial: dict[str, Any], timeout: float | None, buffer: int):
        self._agent = agent
        self._initial = initial
        self._timeout = timeout
        self.outcome: str | Paused | None = None
        """What ``run`` would have returned; ``None`` until the run ended."""
        self.result: AgentResult | None = None
        """The turn's :class:`AgentResult`; ``None`` until the run ended."""
        self._setup(buffer)

    def _again(self) -> Exception:
        return AgentError("a stream runs its turn once; call agent.stream(...) again")

    def _outside(self, text: str) -> Exception:
        return AgentError(text)

    async def _pump(self, send: MemoryObjectSendStream[EmitEvent]) -> None:
        tap = Tap[EmitEvent](send)  # an event that finds the channel full waits in it
        mine: list[str] = []  # this run's id, once its stream is open

        def hear(event: EmitEvent) -> None:
            if mine and event.run_id == mine[0]:  # not another run of the same agent
                tap(event)

        async def start(executor: Executor) -> RunResult:
            async with executor.stream(
                self._initial, timeout=self._timeout, raise_on_error=False, buffer=1
            ) as commits:
                mine.append(commits.run_id)
                async for _commit in commits:
                    await tap.make_room()  # the run waits before its next stage meanwhile
            assert commits.result is not None
            return commits.result

        stop_listening: Callable[[], None] = self._agent.on("*", hear)
        kept: list[RunResult] = []
        with send:
            try:
                self.outcome = await self._agent._drive(start, kept)
                await tap.make_room()
            except Exception as exc:  # raised to the reader, after its last event
                await tap.make_room()
                self._crash = exc
            finally:
                stop_listening()
        if kept:
            paused = self.outcome if isinstance(self.outcome, Paused) else None
            self.result = result_of(kept[0].snapshot, kept[0].state, paused)

    async def __anext__(self) -> EmitEvent:
        event = await self._next(
            "iterate a stream inside its block: `async with agent.stream(message) as "
            "events: async for event in events: ...` (the block ends the turn with it)"
        )
        if event is None:
            raise StopAsyncIteration
        return event


class Streaming:
    """``agent.stream(...)`` (mixed into :class:`~trackway.agent.Agent`)."""

    _cfg: AgentConfig

    def stream(
        self,
        message: str | Mapping[str, Any],
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        continue_from: Conversation | None = None,
        timeout: float | None = None,
        time: Any = None,
        buffer: int = 64,
    ) -> AgentStream:
        """Run one turn like :meth:`run`, handing its events to an ``async for`` as they
        are emitted (tokens, model calls, tool calls with progress, the answer)::

            async with agent.stream("Weather in Paris?") as events:
                async for event in events:
                    print(event.name, event.payload)
            answer = events.outcome  # or events.result, an AgentResult

        At most ``buffer`` events wait unread; a slower reader makes the run wait before
        its next stage. Leaving the block early cancels the run. See :class:`AgentStream`.
        """
        if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
            raise InvalidRunInputError(f"stream(buffer=...) must be an int >= 1, got {buffer!r}")
        initial = run_input(message, continue_from, identity, session_id, time)
        check_clock(self._cfg.time, initial.get("time"), "run")  # .time()
        return AgentStream(cast("Agent", self), initial, timeout, buffer)
