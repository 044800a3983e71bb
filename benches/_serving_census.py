"""What a run keeps for the cyclic collector to walk (``bench_serving.py --census``): N
trackway runs of the serving agent, held at their third model call (the provider waits on
an event there), counted by type with ``gc.get_objects()`` after three full collections,
against the same count before they started; then, once every run has ended, what each
finished run left behind (the store's rows, for ``MemoryStore``).

Only tracked objects are counted: what the collector walks. Untracked ones (strings, bytes,
tuples and dicts of scalars it has stopped tracking) cost it nothing.
"""

from __future__ import annotations

import asyncio
import collections
import gc
from typing import Any

from _serving_load import CALLS, TOOL_NAME, answer_for
from _serving_systems import _trackway_store, trackway_agent

HELD_AT = 2
"""The model call (from 0) the runs wait at: the third, with two tool turns behind them."""


class _HeldProvider:
    """``CALLS - 1`` tool calls then the answer, as the serving model; call ``HELD_AT``
    waits for ``release``."""

    name = "held"

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.held = asyncio.Event()  # set once ``expected`` runs wait
        self.expected = 0
        self.waiting = 0

    async def complete(self, request: Any) -> Any:
        from trackway.agent import LLMResponse, ToolCall

        i = sum(1 for m in request.messages if m.role == "tool")
        if i == HELD_AT and not self.release.is_set():
            self.waiting += 1
            if self.waiting == self.expected:
                self.held.set()
            await self.release.wait()
        if i < CALLS - 1:
            return LLMResponse(tool_calls=(ToolCall(id=f"call_{i}", name=TOOL_NAME, args={}),))
        return LLMResponse(content=answer_for(request.messages[0].content))


def _collect() -> None:
    for _ in range(3):  # a nested tuple is untracked one collection after the one inside it
        gc.collect()


class _Since:
    """The objects tracked now, held (so no later object can take one's id): ``new()``
    counts by type the tracked objects made since, still alive."""

    def __init__(self) -> None:
        _collect()
        self._held = gc.get_objects()
        self._ids = {id(o) for o in self._held}
        self._ids |= {id(self._held), id(self._ids)}  # not counted as new either

    def new(self) -> collections.Counter[str]:
        _collect()
        return collections.Counter(
            type(o).__name__ for o in gc.get_objects() if id(o) not in self._ids
        )


async def _census(n: int, store: str, where: dict[str, Any]) -> dict[str, Any]:
    provider = _HeldProvider()
    backing = _trackway_store(store, where)
    agent = trackway_agent(provider, backing)
    provider.release.set()
    for i in range(20):  # warm: imports, caches, the agent's shared frame
        await agent.run(f"warm {i}")
    provider.release, provider.expected = asyncio.Event(), n
    since = _Since()

    async def run_all() -> list[str]:  # the runs' tasks die with this frame
        return list(await asyncio.gather(*(agent.run(f"go {i}") for i in range(n))))

    runs = asyncio.create_task(run_all())
    await provider.held.wait()
    held = since.new()
    provider.release.set()
    answers = await runs
    assert answers == [answer_for(f"go {i}") for i in range(n)], "a run did not answer"
    del runs, answers  # the runs' tasks with them: what is left, the agent and store keep
    left = since.new()
    if backing is not None and hasattr(backing, "close"):
        backing.close()
    return {
        "n": n,
        "store": store,
        "in_flight_per_run": sum(held.values()) / n,
        "left_per_finished_run": sum(left.values()) / n,
        "in_flight_by_type": {k: v / n for k, v in held.most_common(12)},
        "left_by_type": {k: v / n for k, v in left.most_common(6)},
    }


def measure(n: int, stores: tuple[str, ...] = ("none", "memory")) -> list[dict[str, Any]]:
    """One census per store (each in a fresh event loop)."""
    return [asyncio.run(_census(n, store, {})) for store in stores]
