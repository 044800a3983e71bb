"""``.thinking_handler(fn)`` on the agent builder."""

from __future__ import annotations

from typing import Any, Self

from ...messages._errors import AgentBuildError
from ._handler import HandlerFn, ThinkingHandler

__all__ = ["ThinkingBuilding"]


class ThinkingBuilding:
    """``.thinking_handler(fn)`` (mixed into the builder)."""

    _thinking: ThinkingHandler | None = None

    def thinking_handler(self, fn: HandlerFn, *, name: str | None = None) -> Self:
        """Normalise every model answer with ``fn(text, blocks) -> (text, blocks)``.

        ``fn`` gets the answer's text and the :class:`ThinkingBlock` reasoning the provider
        read (a tuple, maybe empty) and returns the pair it should have been, for instance
        with a vendor's ``<reasoning>...</reasoning>`` moved out of the text into a
        ``ThinkingBlock(kind="reasoning", text=...)``. It runs in a ``thinking`` stage after
        each model call, before the route; what it changed is recorded per call
        (``thinking_normalised``) and ``settings["thinking_handler"]`` keeps its ``name``
        (``fn.__name__`` unless given), never its code. Called once per agent.
        """
        if self._thinking is not None:
            raise AgentBuildError(
                f"thinking_handler() was already given {self._thinking.name!r}: an agent has "
                "one; compose the two functions into one handler"
            )
        if not callable(fn):
            raise AgentBuildError(
                f"thinking_handler({fn!r}): pass a function fn(text, blocks) -> (text, blocks)"
            )
        label: Any = name if name is not None else getattr(fn, "__name__", None)
        if not isinstance(label, str) or not label or label == "<lambda>":
            raise AgentBuildError(
                f"thinking_handler({fn!r}): the record keeps the handler's name, and this one "
                "has none; pass name='...' (e.g. thinking_handler(fn, name='vendor-tags'))"
            )
        self._thinking = ThinkingHandler(fn, label)
        return self
