"""Recognizing a declared result among whatever a tool's ``execute`` returned: one of the
three result types, or a hand-built absence or ledger of the same wire shape (read, never
repaired: a bad field is left off the record with one warning per tool)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from trackway.engine import TrackwayWarning
from trackway.tools.results._coverage_items import (
    DeclarationRefused,
    ListName,
    plain_copy,
    read_items,
)
from trackway.tools.results._declared import (
    _LISTS,
    ABSENCE_MARKER,
    COVERAGE_MARKER,
    CoveredResult,
    DescribedResult,
    ToolAbsence,
    _statement,
)
from trackway.tools.results._period import PERIOD_WIRE, check_period

__all__ = ["Declared", "read_declared"]

_warned: set[str] = set()


class Declared(NamedTuple):
    """A declared result as the dispatcher reads it: the delivered ``status`` ("absent" or
    "success"), the ``served`` JSON value the model reads, and the ``statement`` to record."""

    status: str
    served: Any
    statement: dict[str, Any] | None


def _read_lists(
    envelope: Mapping[str, Any], names: Sequence[ListName]
) -> tuple[dict[str, list[Any]], dict[str, list[dict[str, Any]]], list[str]] | None:
    served: dict[str, list[Any]] = {}
    recorded: dict[str, list[dict[str, Any]]] = {}
    problems: list[str] = []
    for name in names:
        if name not in envelope:
            recorded[name] = []
            continue
        read = read_items(envelope[name], name)
        if read is None:
            return None
        served[name], recorded[name], found = read
        problems += found
    return served, recorded, problems


def _read_period(envelope: Mapping[str, Any], problems: list[str]) -> dict[str, Any] | None:
    if envelope.get(PERIOD_WIRE["key"]) is None:
        return None
    try:
        return check_period(envelope[PERIOD_WIRE["key"]])
    except DeclarationRefused as exc:
        problems.append(f"a period that does not check ({exc})")
        return None


def _warn_once(tool_name: str, problems: list[str]) -> None:
    if not problems or tool_name in _warned:
        return
    _warned.add(tool_name)
    warnings.warn(
        f"tool {tool_name!r} built a declared result by hand with {'; '.join(problems)}. A "
        "hand-built envelope is read, never repaired: those fields were left off the record. "
        "Fix them where the envelope is built (or use absent() / coverage(), which refuse "
        "them on the spot).",
        TrackwayWarning,
        stacklevel=4,
    )


def _read_absence(tool_name: str, envelope: Mapping[str, Any]) -> Declared | None:
    if envelope.get("outcome") != "nothing_found" or not envelope.get("checked"):
        return None
    read = _read_lists(envelope, _LISTS)
    if read is None:
        return None
    served, recorded, problems = read
    extra: dict[str, Any] = {"period": _read_period(envelope, problems)}
    if isinstance(envelope.get("try_instead"), str):
        extra["try_instead"] = envelope["try_instead"]
    tool = envelope.get("try_instead_tool")
    if isinstance(tool, Mapping) and isinstance(tool.get("tool"), str):
        extra["try_instead_tool"] = {
            k: tool[k] for k in ("tool", "why") if isinstance(tool.get(k), str)
        }
    _warn_once(tool_name, problems)
    lists = tuple(tuple(recorded[n]) for n in _LISTS)
    return Declared(
        "absent", {**plain_copy(envelope), **served}, _statement("absent", lists, **extra)
    )


def _read_ledger(tool_name: str, envelope: Mapping[str, Any]) -> Declared | None:
    ledger = envelope[COVERAGE_MARKER]
    read = _read_lists(ledger, (*_LISTS, "in_progress"))
    if read is None:
        return None
    served, recorded, problems = read
    period = _read_period(ledger, problems)
    _warn_once(tool_name, problems)
    lists = tuple(tuple(recorded[n]) for n in _LISTS)
    statement = _statement("coverage", lists, in_progress=recorded["in_progress"], period=period)
    wire = {
        COVERAGE_MARKER: {**plain_copy(ledger), **served},
        "result": plain_copy(envelope["result"]),
    }
    return Declared("success", wire, statement)


def read_declared(tool_name: str, value: Any) -> Declared | None:
    """Recognize a declared result among whatever ``execute`` returned: one of the three
    result types, or a hand-built absence or ledger of the same wire shape; None otherwise."""
    if isinstance(value, ToolAbsence):
        return Declared("absent", value.wire(), value.statement())
    if isinstance(value, CoveredResult | DescribedResult):
        return Declared("success", value.wire(), value.statement())
    if not isinstance(value, Mapping):
        return None
    if value.get(ABSENCE_MARKER) is True:
        return _read_absence(tool_name, value)
    if set(value.keys()) == {COVERAGE_MARKER, "result"} and isinstance(
        value[COVERAGE_MARKER], Mapping
    ):
        return _read_ledger(tool_name, value)
    return None
