"""The part of the agent's builder that declares memory: ``.memory(...)``, and at ``build()``
the store each memory is kept in (its own ``store=``, else the agent's run store)."""

from __future__ import annotations

from typing import Any, Self

from trackway.engine import MemoryRows

from ..loop._inputs import Runtime
from ..memory._define import MemoryDefinition
from ..memory._store_io import StoreMemory
from ..messages._errors import AgentBuildError

__all__ = ["MemoryBuilding"]


class MemoryBuilding:
    """``.memory(...)``."""

    _memories: list[MemoryDefinition]
    _memory_io: Any
    _runtime: Runtime

    def _take_memory_options(self) -> None:
        self._memories = []
        self._memory_io = None  # a replay's: the recorded rows

    def memory(self, *definitions: MemoryDefinition) -> Self:
        """Remember across runs (``define_memory(...)``): before each turn the memories are
        recalled for who the run is for (its identity; without one, its own run) and served
        after the system prompt; after the turn, the message and the answer are written.
        Memory is kept in the agent's run store unless a definition names its own."""
        if not definitions:
            raise AgentBuildError("memory(...) takes one or more define_memory(...)")
        for definition in definitions:
            if not isinstance(definition, MemoryDefinition):
                raise AgentBuildError(f"memory(...) takes define_memory(...), got {definition!r}")
            if any(m.id == definition.id for m in self._memories):
                raise AgentBuildError(
                    f"two memories have the id {definition.id!r}; give one another id: "
                    f"define_memory({definition.kind!r}, id='...')"
                )
            self._memories.append(definition)
        return self

    def _memory_plan(self) -> tuple[tuple[MemoryDefinition, ...], Any]:
        """The memories and where their stages read and write (checked: a store each)."""
        if not self._memories:
            return (), None
        if self._memory_io is not None:
            return tuple(self._memories), self._memory_io
        stores: dict[str, MemoryRows] = {}
        for memory in self._memories:
            store = memory.store if memory.store is not None else self._runtime.store
            if store is None:
                raise AgentBuildError(
                    f"memory {memory.id!r} has nowhere to be kept: give the agent a store, "
                    "Agent.create(..., store=SqliteStore('runs.db')), or the memory its own, "
                    f"define_memory({memory.kind!r}, ..., store=...)"
                )
            if not isinstance(store, MemoryRows):
                raise AgentBuildError(
                    f"memory {memory.id!r}: the store {store!r} keeps no memory (it has no "
                    "memory_append, memory_recent, memory_put_facts, memory_facts); use "
                    "SqliteStore, PostgresStore or MemoryStore, or pass one with "
                    f"define_memory({memory.kind!r}, ..., store=...)"
                )
            stores[memory.id] = store
        return tuple(self._memories), StoreMemory(stores)
