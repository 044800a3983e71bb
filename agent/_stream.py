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

from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from trackway.engine import EmitEvent, Executor, RunResult

from ._errors import AgentError
from ._paused import Paused
from ._result import AgentResult, result_of

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["AgentStream"]

_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError)


class AgentStream:
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
        self._buffer = buffer
        self.outcome: str | Paused | None = None
        """What ``run`` would have returned; ``None`` until the run ended."""
        self.result: AgentResult | None = None
        """The turn's :class:`AgentResult`; ``None`` until the run ended."""
        self._receive: MemoryObjectReceiveStream[EmitEvent] | None = None
        self._group: TaskGroup | None = None
        self._crash: BaseException | None = None
        self._entered = False

    async def __aenter__(self) -> AgentStream:
        if self._entered:
            raise AgentError("a stream runs its turn once; call agent.stream(...) again")
        self._entered = True
        send, receive = anyio.create_memory_object_stream[EmitEvent](self._buffer)
        self._receive = receive
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        group.start_soon(self._pump, send)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._group is not None and self._receive is not None
        self._group.cancel_scope.cancel()  # nothing left to wait for when the run ended
        self._receive.close()
        # The pump catches what the run raises, so the group ends clean; the block's own
        # exception (the turn's error from `async for`, a break's) goes on as itself.
        await self._group.__aexit__(None, None, None)
        return None

    async def _pump(self, send: MemoryObjectSendStream[EmitEvent]) -> None:
        waiting: deque[EmitEvent] = deque()  # heard while the channel was full, in order
        mine: list[str] = []  # this run's id, once its stream is open

        def hear(event: EmitEvent) -> None:
            if not mine or event.run_id != mine[0]:
                return  # another run of the same agent
            if not waiting:
                try:
                    send.send_nowait(event)
                    return
                except anyio.WouldBlock:
                    pass
                except _GONE:
                    return
            waiting.append(event)

        async def catch_up() -> None:
            while waiting:
                try:
                    await send.send(waiting[0])
                except _GONE:
                    waiting.clear()
                    return
                waiting.popleft()

        async def start(executor: Executor) -> RunResult:
            async with executor.stream(
                self._initial, timeout=self._timeout, raise_on_error=False, buffer=1
            ) as commits:
                mine.append(commits.run_id)
                async for _commit in commits:
                    await catch_up()  # the run waits before its next stage meanwhile
            assert commits.result is not None
            return commits.result

        stop_listening: Callable[[], None] = self._agent.on("*", hear)
        kept: list[RunResult] = []
        with send:
            try:
                self.outcome = await self._agent._drive(start, kept)
                await catch_up()
            except Exception as exc:  # raised to the reader, after its last event
                await catch_up()
                self._crash = exc
            finally:
                stop_listening()
        if kept:
            paused = self.outcome if isinstance(self.outcome, Paused) else None
            self.result = result_of(kept[0].snapshot, kept[0].state, paused)

    def __aiter__(self) -> AgentStream:
        return self

    async def __anext__(self) -> EmitEvent:
        if self._receive is None:
            raise AgentError(
                "iterate a stream inside its block: `async with agent.stream(message) as "
                "events: async for event in events: ...` (the block ends the turn with it)"
            )
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            pass
        if self._crash is not None:
            raise self._crash
        raise StopAsyncIteration
