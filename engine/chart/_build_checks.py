"""The builder's checks of its arguments: names, callables, retries, merge policies, the
chart id, and stages nothing leads to. Each refusal names the stage and the fix."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Mapping
from typing import Any

from ..core._errors import ChartBuildError, ConfigurationError
from ..core._retry import Retry
from ._chart import FlowChart, MergePolicy, generator_kind

__all__ = [
    "check_callable",
    "check_chart_id",
    "check_display",
    "check_merge",
    "check_retry",
    "check_state_model",
    "unreachable",
]

_MERGE_NAMES = ("error_on_conflict", "namespace", "last")
_NOT_IN_DISPLAY = re.compile(r"[\x00\x1b\x9b\ud800-\udfff]")
"""What display text (names) may not hold: NUL, the escapes that start terminal control
sequences, lone surrogates (not valid Unicode text, so no store can keep them)."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def check_display(text: str, what: str) -> None:
    """Refuse a name (display text) holding NUL, a terminal escape or a lone surrogate."""
    m = _NOT_IN_DISPLAY.search(text)
    if m is not None:
        raise ChartBuildError(
            f"{what}: the name {text!r} holds {m[0]!r} at index {m.start()}; names are display "
            "text, which may not hold NUL, terminal escapes ('\\x1b', '\\x9b') or lone "
            "surrogates; remove it"
        )


def check_callable(fn: Any, what: str, expected: str, arity: int | None = None) -> None:
    """Refuse a non-callable, a generator function (a stray ``yield``: calling it only
    makes a generator, so its body would never run), and one that cannot be called with
    ``arity`` positional arguments when its signature says so (it would fail at run time)."""
    if not callable(fn):
        raise ChartBuildError(f"{what}: expected {expected}, got {fn!r}")
    kind = generator_kind(fn)
    if kind is not None:
        raise ChartBuildError(
            f"{what}: {_label(fn)} is {kind} (it contains `yield`), so calling it only makes a "
            "generator and its body never runs; remove the yield and return a value instead "
            "(async def without yield is fine)"
        )
    if arity is not None and not _code_stand_in(fn):
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            signature = None  # a builtin or an extension: nothing to check before it runs
        if signature is not None:
            try:
                signature.bind(*range(arity))
            except TypeError:
                took = "argument" if arity == 1 else "arguments"
                raise ChartBuildError(
                    f"{what}: {_label(fn)}{signature} cannot be called with {arity} "
                    f"positional {took}; it is called as {expected}"
                ) from None


def _code_stand_in(fn: Any) -> bool:
    """Whether ``fn`` is compiled but carries a ``__code__`` of no parameters: mypyc gives its
    async functions one so that ``inspect`` knows them as coroutine functions, and a
    signature read from it would refuse every argument."""
    return not inspect.isfunction(fn) and not inspect.ismethod(fn) and hasattr(fn, "__code__")


def _label(fn: Any) -> str:
    if isinstance(fn, functools.partial):
        return f"functools.partial({_label(fn.func)})"
    name = getattr(fn, "__qualname__", None)
    return name if isinstance(name, str) else f"{type(fn).__qualname__}.__call__"


def check_retry(value: Any, name: str) -> Retry | None:
    try:
        return Retry.coerce(value)
    except ConfigurationError as exc:
        raise ChartBuildError(f"stage {name!r}: {exc}") from None


def check_state_model(state: Any) -> None:
    """Refuse a ``state=`` that is not a pydantic model class."""
    if state is None:
        return
    from pydantic import BaseModel

    if not (isinstance(state, type) and issubclass(state, BaseModel)):
        raise ChartBuildError(
            f"flow_chart(state=...) takes a pydantic BaseModel subclass, got {state!r}"
        )


def check_merge(merge: Any, owner: str) -> MergePolicy:
    """A merge policy as given, checked: a name, or reducers that are plain functions."""
    if isinstance(merge, str) and merge in _MERGE_NAMES:
        return merge  # type: ignore[return-value]
    if isinstance(merge, Mapping) and all(
        isinstance(k, str) and callable(v) for k, v in merge.items()
    ):
        for key, reducer in merge.items():
            check_callable(reducer, f"the reducer of {key!r} in {owner}", "reducer(acc, value)", 2)
        return dict(merge)
    raise ChartBuildError(
        f"{owner}: merge={merge!r} is not a merge policy; use 'error_on_conflict' "
        "(default), 'namespace', 'last', or a dict {key: reducer(acc, value)}"
    )


def check_chart_id(chart_id: object) -> None:
    if chart_id is None:
        return
    if not isinstance(chart_id, str):
        raise ChartBuildError(f"build(chart_id=...) takes a str, got {chart_id!r}")
    bad = _CONTROL.search(chart_id)
    if bad is not None:
        raise ChartBuildError(
            f"build(chart_id={chart_id!r}): it holds {bad[0]!r} at index {bad.start()}; a chart "
            "id may not hold control characters or lone surrogates (stores keep it in a text "
            "column, where a NUL fails every write); remove it"
        )


def unreachable(chart: FlowChart) -> list[str]:
    """Stages nothing leads to, found on the chart's graph."""
    import networkx as nx

    reached = nx.descendants(chart.graph, chart.root) | {chart.root}
    return [
        f"stage {node.name!r} ({nid}) can never run: nothing leads to it (it follows a "
        "loop_to, or a decider whose branches all loop back); move it or remove it"
        for nid, node in chart.nodes.items()
        if nid not in reached and "\x00" not in nid
    ]
