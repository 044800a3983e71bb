"""Results that say what they covered: ``absent``, ``coverage`` and ``described_result``.

A tool's ``execute`` returns one of them; :func:`read_declared` is the strict rule that
recognizes them (or a hand-built envelope of the same shape) on whatever ``execute`` returned.
``wire()`` is what the model reads; ``statement()`` is what the run records.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trackway.tools.results._coverage_items import (
    DeclarationRefused,
    ListName,
    check_list,
    jsonable,
    nonempty_str,
    normalize_items,
    plain_copy,
    refuse_unknown,
    served_item,
)
from trackway.tools.results._period import PERIOD_WIRE, check_period, check_provenance

__all__ = [
    "ABSENCE_MARKER",
    "ABSENCE_NOTE",
    "COVERAGE_MARKER",
    "COVERAGE_NOTE",
    "IN_PROGRESS_CLAUSE",
    "IN_PROGRESS_WIRE",
    "PERIOD_WIRE",
    "SEMANTICS_NOTE",
    "CoveredResult",
    "DescribedResult",
    "ToolAbsence",
    "absent",
    "coverage",
    "described_result",
]

ABSENCE_MARKER = "af_absent"
COVERAGE_MARKER = "af_coverage"
IN_PROGRESS_WIRE = "in_progress"
ABSENCE_NOTE = (
    "The lookup ran to completion and found no match. Treat this as a real answer rather "
    "than a failure: no error happened and no substitute was returned, and repeating the "
    "call with the same arguments will give this same result. The ground searched is listed "
    "under `checked`; anything under `not_checked` or `cannot_cover` was not searched, and "
    "only a different question can reach it."
)
COVERAGE_NOTE = (
    "This result speaks only for the ground listed under `checked`. A clean result says "
    "nothing either way about `not_checked` (ground this call did not look at) or "
    "`cannot_cover` (ground this tool can never see), and retrying will never move anything "
    "out of `cannot_cover`. Keep these limits attached to any answer built on this result."
)
SEMANTICS_NOTE = (
    "These are typed facts rather than free text. `provenance` tells where the facts came "
    "from and how old they are (`measured_at` is when they were measured). `grain` tells what "
    "one value stands for: look at `is_counter` before adding values together. Anything under "
    "`not_covered` is ground this result does not speak for; these facts are no evidence "
    "about it either way."
)
IN_PROGRESS_CLAUSE = (
    "The items under `in_progress` were still running when this was read; their outcome is "
    "still open, so do not count them as succeeded or as failed."
)

_LISTS: tuple[ListName, ...] = ("checked", "not_checked", "cannot_cover")
_ABSENT_ARGS = ("what", *_LISTS, "try_instead", "try_instead_tool", "provenance", "period")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]+")
Items = tuple[dict[str, Any], ...]


def _statement(source: str, lists: Sequence[Items], **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"source": source}
    out.update({name: [dict(i) for i in items] for name, items in zip(_LISTS, lists, strict=True)})
    out.update({k: plain_copy(v) for k, v in extra.items() if v})
    return out


def _served(**fields: Any) -> dict[str, Any]:
    """Only the fields given a value; item lists are served without short and kind."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if isinstance(value, tuple):
            value = [served_item(i) for i in value]
        if value:
            out[key] = plain_copy(value)
    return out


@dataclass(frozen=True)
class ToolAbsence:
    """What :func:`absent` returns: the search ran and matched nothing."""

    looked_for: str
    checked: Items
    not_checked: Items = ()
    cannot_cover: Items = ()
    try_instead: str | None = None
    try_instead_tool: dict[str, Any] | None = None
    provenance: dict[str, Any] | None = None
    period: dict[str, Any] | None = None

    def wire(self) -> dict[str, Any]:
        """Exactly what the model reads."""
        return {
            ABSENCE_MARKER: True,
            "outcome": "nothing_found",
            "looked_for": self.looked_for,
            **_served(
                checked=self.checked,
                not_checked=self.not_checked,
                cannot_cover=self.cannot_cover,
                try_instead=self.try_instead,
                try_instead_tool=self.try_instead_tool,
                provenance=self.provenance,
                period=self.period,
            ),
            "retry_returns_the_same": True,
            "note": ABSENCE_NOTE,
        }

    def statement(self) -> dict[str, Any]:
        """What the run records: the ground, with ``short`` and ``kind`` kept."""
        return _statement(
            "absent",
            (self.checked, self.not_checked, self.cannot_cover),
            period=self.period,
            try_instead=self.try_instead,
            try_instead_tool=self.try_instead_tool,
        )


@dataclass(frozen=True)
class CoveredResult:
    """What :func:`coverage` returns: a value with the boundary it was read within."""

    result: Any
    checked: Items = ()
    not_checked: Items = ()
    cannot_cover: Items = ()
    in_progress: Items = ()
    period: dict[str, Any] | None = None

    def wire(self) -> dict[str, Any]:
        """Exactly what the model reads."""
        note = COVERAGE_NOTE + (" " + IN_PROGRESS_CLAUSE if self.in_progress else "")
        ledger = _served(
            checked=self.checked,
            not_checked=self.not_checked,
            cannot_cover=self.cannot_cover,
            in_progress=self.in_progress,
            period=self.period,
        )
        return {COVERAGE_MARKER: {**ledger, "note": note}, "result": plain_copy(self.result)}

    def statement(self) -> dict[str, Any]:
        """What the run records: the ground, with ``short`` and ``kind`` kept."""
        lists = (self.checked, self.not_checked, self.cannot_cover)
        return _statement(
            "coverage", lists, in_progress=[dict(i) for i in self.in_progress], period=self.period
        )


@dataclass(frozen=True)
class DescribedResult:
    """What :func:`described_result` returns: typed facts with their source, grain and gaps."""

    facts: tuple[dict[str, Any], ...]
    provenance: dict[str, Any] | None = None
    coverage: dict[str, Items] | None = None
    grain: dict[str, Any] | None = None
    period: dict[str, Any] | None = None

    def wire(self) -> dict[str, Any]:
        """Exactly what the model reads."""
        gaps = (
            [*self.coverage["not_checked"], *self.coverage["cannot_cover"]] if self.coverage else []
        )
        not_covered = [f"{i['what']} — {i['why']}" if "why" in i else i["what"] for i in gaps]
        return {
            "facts": plain_copy(list(self.facts)),
            **_served(
                provenance=self.provenance,
                grain=self.grain,
                period=self.period,
                not_covered=not_covered,
            ),
            "note": SEMANTICS_NOTE,
        }

    def statement(self) -> dict[str, Any] | None:
        """What the run records, or None when the result declares no coverage and no period."""
        if self.coverage is None and self.period is None:
            return None
        lists = tuple(self.coverage[n] if self.coverage else () for n in _LISTS)
        return _statement("described", lists, period=self.period)


def _ledger(
    checked: Any, not_checked: Any, cannot_cover: Any, prefix: str = ""
) -> tuple[Items, Items, Items]:
    lists = [
        tuple(normalize_items(v, n, prefix))
        for n, v in zip(_LISTS, (checked, not_checked, cannot_cover), strict=True)
    ]
    if not any(lists):
        raise DeclarationRefused(
            "`checked`, `not_checked` and `cannot_cover` are all empty — a ledger that "
            "declares no boundary tells a reader nothing; name at least one",
            f"{prefix}checked",
        )
    return lists[0], lists[1], lists[2]


def _try_instead_tool(value: Any) -> dict[str, Any]:
    field = "try_instead_tool"
    if not isinstance(value, Mapping):
        raise DeclarationRefused(
            f"`{field}` names one tool: a mapping {{'tool': name, 'why': reason}} (why is "
            f"optional), not {type(value).__name__}",
            field,
        )
    refuse_unknown(value.keys(), ("tool", "why"), field)
    if "tool" not in value:
        raise DeclarationRefused(f"`{field}` needs `tool`: the name of the tool", f"{field}.tool")
    name = nonempty_str(value["tool"], f"{field}.tool", "a tool name")
    if not _TOOL_NAME.fullmatch(name):
        raise DeclarationRefused(
            f"`{field}.tool` is {name!r}; a tool name is letters, digits, '_' or '-'",
            f"{field}.tool",
        )
    out = {"tool": name}
    if "why" in value:
        out["why"] = nonempty_str(value["why"], f"{field}.why", "a non-empty reason")
    return out


def _grain(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise DeclarationRefused(
            "`grain` must be a mapping {'is_counter': bool, 'unit'?: text, 'per'?: text}", "grain"
        )
    refuse_unknown(value.keys(), ("is_counter", "unit", "per"), "grain")
    if not isinstance(value.get("is_counter"), bool):
        raise DeclarationRefused(
            "`grain` needs `is_counter`: True or False — whether values may be summed",
            "grain.is_counter",
        )
    out: dict[str, Any] = {"is_counter": value["is_counter"]}
    for key in ("unit", "per"):
        if key in value:
            out[key] = nonempty_str(value[key], f"grain.{key}")
    return out


def absent(
    *,
    what: str,
    checked: Sequence[str | Mapping[str, Any]],
    not_checked: Sequence[str | Mapping[str, Any]] = (),
    cannot_cover: Sequence[str | Mapping[str, Any]] = (),
    try_instead: str | None = None,
    try_instead_tool: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
    period: Mapping[str, Any] | None = None,
    **unknown: Any,
) -> ToolAbsence:
    """Say that the search ran and matched nothing, naming the ground it covered (``checked``
    must not be empty: an absence that names no ground is a null with extra steps)."""
    for key in ("in_progress", "inProgress"):
        if key in unknown:
            raise DeclarationRefused(
                "an absence cannot take `in_progress`: it promises that a retry returns the "
                "same, and something still running promises the opposite — return "
                "coverage(value, checked=[...], in_progress=[...]) instead",
                key,
            )
    refuse_unknown(unknown, _ABSENT_ARGS)
    looked_for = nonempty_str(what, "what", "what was looked for")
    if not check_list(checked, "checked"):
        raise DeclarationRefused(
            "`checked` is empty — an absence must name the ground it searched, or it is a null "
            "with extra steps",
            "checked",
        )
    items = _ledger(checked, not_checked, cannot_cover)
    return ToolAbsence(
        looked_for,
        *items,
        try_instead=None if try_instead is None else nonempty_str(try_instead, "try_instead"),
        try_instead_tool=None if try_instead_tool is None else _try_instead_tool(try_instead_tool),
        provenance=None if provenance is None else check_provenance(provenance),
        period=None if period is None else check_period(period),
    )


def coverage(
    value: Any,
    *,
    checked: Sequence[str | Mapping[str, Any]] = (),
    not_checked: Sequence[str | Mapping[str, Any]] = (),
    cannot_cover: Sequence[str | Mapping[str, Any]] = (),
    in_progress: Sequence[str | Mapping[str, Any]] | None = None,
    period: Mapping[str, Any] | None = None,
    **unknown: Any,
) -> CoveredResult:
    """Wrap ``value`` (any JSON-able answer that has limits) with the ground it covers, what it
    did not look at, what it can never see, and what was still running when read."""
    refuse_unknown(unknown, (*_LISTS, "in_progress", "period"))
    items = _ledger(checked, not_checked, cannot_cover)
    running: Items = ()
    if in_progress is not None:
        running = tuple(normalize_items(in_progress, "in_progress"))
        if not items[0]:
            raise DeclarationRefused(
                "`in_progress` needs `checked` beside it, even when it is empty: an item still "
                "running is part of what the call read",
                "checked",
            )
    if isinstance(value, ToolAbsence | CoveredResult | DescribedResult):
        raise DeclarationRefused(
            "`value` is already a declared result — return it as it is; never wrap one in another",
            "value",
        )
    return CoveredResult(
        jsonable(value, "value"),
        *items,
        in_progress=running,
        period=None if period is None else check_period(period),
    )


def _described_coverage(value: Any) -> dict[str, Items]:
    if not isinstance(value, Mapping):
        raise DeclarationRefused(
            "`coverage` must be a mapping with checked / not_checked / cannot_cover", "coverage"
        )
    for key in ("in_progress", "inProgress"):
        if key in value:
            raise DeclarationRefused(
                "`in_progress` is not taken here yet — return coverage(value, checked=[...], "
                "in_progress=[...]) for items still running",
                f"coverage.{key}",
            )
    refuse_unknown(value.keys(), _LISTS, "coverage")
    checked, not_checked, cannot_cover = (value.get(n, ()) for n in _LISTS)
    lists = _ledger(checked, not_checked, cannot_cover, "coverage.")
    return dict(zip(_LISTS, lists, strict=True))


def described_result(
    *,
    facts: Sequence[Mapping[str, Any]],
    provenance: Mapping[str, Any] | None = None,
    coverage: Mapping[str, Any] | None = None,
    grain: Mapping[str, Any] | None = None,
    period: Mapping[str, Any] | None = None,
    **unknown: Any,
) -> DescribedResult:
    """Rows from a system of record as typed facts, with where they came from and how old they
    are (``provenance``), what one value means (``grain``) and what they do not cover."""
    refuse_unknown(unknown, ("facts", "provenance", "coverage", "grain", "period"))
    rows = check_list(facts, "facts")
    if not rows:
        raise DeclarationRefused(
            "`facts` is empty — if nothing matched, return absent(what=..., checked=[...]) "
            "instead.",
            "facts",
        )
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise DeclarationRefused(
                f"`facts[{i}]` must be a mapping (one typed fact), not {type(row).__name__}",
                f"facts[{i}]",
            )
    return DescribedResult(
        tuple(jsonable(row, f"facts[{i}]") for i, row in enumerate(rows)),
        provenance=None if provenance is None else check_provenance(provenance),
        coverage=None if coverage is None else _described_coverage(coverage),
        grain=None if grain is None else _grain(grain),
        period=None if period is None else check_period(period),
    )
