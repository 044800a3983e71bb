"""Tool providers: which tools a model call is offered, decided per call from the run's state.

A provider names every tool it may ever offer (``tools``) and, before each model call, which
of them are offered now (``offer(state)``). The agent dispatches only what was offered for
the call being answered, and the offered list is committed, so the receipt hashes exactly
the tools that were served and a replay reads the offers instead of asking the provider.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ._define import Tool, distinct_tools
from ._errors import ToolDefinitionError

__all__ = ["ToolProvider", "gated_tools", "offered_tools", "static_tools"]


@runtime_checkable
class ToolProvider(Protocol):
    """Offers tools per model call. ``tools`` is every tool it may offer; ``offer(state)``
    returns the ones (or their names) offered for the coming call, given the run's
    committed state (read-only: ``history``, ``iteration``, ``tool_results``, ...)."""

    @property
    def tools(self) -> Sequence[Tool]: ...

    def offer(self, state: Mapping[str, Any]) -> Iterable[Tool | str]: ...


class _Static:
    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = tuple(tools)

    def offer(self, state: Mapping[str, Any]) -> Iterable[Tool | str]:
        return self.tools

    def __repr__(self) -> str:
        return f"static_tools({', '.join(t.name for t in self.tools)})"


class _Gated:
    def __init__(self, when: Callable[[Mapping[str, Any]], bool], tools: Sequence[Tool]) -> None:
        self.tools = tuple(tools)
        self._when = when

    def offer(self, state: Mapping[str, Any]) -> Iterable[Tool | str]:
        return self.tools if self._when(state) else ()

    def __repr__(self) -> str:
        name = getattr(self._when, "__name__", "predicate")
        return f"gated_tools({name}: {', '.join(t.name for t in self.tools)})"


def static_tools(*tools: Tool) -> ToolProvider:
    """A provider that offers the same tools to every call."""
    return _Static(distinct_tools(tools, "static_tools(...)"))


def gated_tools(when: Callable[[Mapping[str, Any]], bool], *tools: Tool) -> ToolProvider:
    """A provider that offers ``tools`` to a call only while ``when(state)`` is true (e.g.
    a refund tool only after an order was looked up)."""
    if not callable(when):
        raise ToolDefinitionError("gated_tools(when, *tools): when is a function (state) -> bool")
    return _Gated(when, distinct_tools(tools, "gated_tools(...)"))


def offered_tools(provider: ToolProvider, state: Mapping[str, Any]) -> list[Tool]:
    """What ``provider`` offers for one call, each a tool it declared; anything else is
    refused naming the provider (a tool it never declared could not be dispatched)."""
    known = {t.name: t for t in provider.tools}
    out: list[Tool] = []
    for item in provider.offer(state):
        name = item if isinstance(item, str) else getattr(item, "name", None)
        if not isinstance(name, str) or name not in known:
            raise ToolDefinitionError(
                f"tool provider {provider!r} offered {item!r}, which is not one of the tools "
                f"it declares ({', '.join(known) or 'none'}); list every tool it may offer "
                "in its `tools`"
            )
        if all(t.name != name for t in out):
            out.append(known[name])
    return out
