"""A misspelled keyword argument answered with "did you mean ...?" instead of Python's bare
``TypeError`` (one helper for every construction-time API: ``flow_chart``, the builders,
``Executor``, ``Agent.create``, ``define_tool``).

:func:`checked_keywords` wraps a function and does nothing on a call that binds: Python
itself finds the unknown keyword, and only then is the message rebuilt, so a correct call
costs one extra frame and no check.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeVar

from ._errors import UnknownKeywordError

__all__ = ["checked_keywords", "closest", "unknown_keyword_message"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known spelling nearest to ``word``, or ``None`` when none is near."""
    found = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_keyword_message(where: str, keyword: str, accepted: Iterable[str]) -> str:
    """``"<where> got an unknown keyword 'x'; did you mean 'y'?"``, or, with no near
    spelling, the keywords ``where`` takes."""
    accepted = tuple(accepted)
    near = closest(keyword, accepted)
    if near is not None:
        return f"{where} got an unknown keyword {keyword!r}; did you mean {near!r}?"
    return f"{where} got an unknown keyword {keyword!r}; it takes {', '.join(accepted)}"


def _keywords(fn: Callable[..., object]) -> tuple[str, ...]:
    """The names ``fn`` accepts as keywords (``self`` and positional-only ones left out)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.kind in kinds and p.name not in ("self", "cls")
    )


def _shown_name(fn: Callable[..., object]) -> str:
    name = fn.__qualname__
    return f"{name.removesuffix('.__init__')}()"


def checked_keywords(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Raise :class:`UnknownKeywordError` (a ``TypeError``) naming the nearest keyword when
    ``fn`` is called with one it does not take.

    A ``TypeError`` raised inside ``fn`` passes through untouched: only a call that failed
    to bind (its traceback never reached ``fn``'s own frame) is answered.
    """

    @functools.wraps(fn)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except TypeError as exc:
            if not kwargs or exc.__traceback__ is None or exc.__traceback__.tb_next is not None:
                raise  # raised inside fn, not by the call
            accepted = _keywords(fn)
            unknown = [key for key in kwargs if key not in accepted]
            if not unknown:
                raise
            where = _shown_name(fn)
            message = unknown_keyword_message(where, unknown[0], accepted)
            if len(unknown) > 1:
                others = ", ".join(repr(key) for key in unknown[1:])
                message += f" (also unknown: {others})"
            raise UnknownKeywordError(
                message, where=where, keyword=unknown[0], accepted=accepted
            ) from None

    return call
