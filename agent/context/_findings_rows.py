"""The rows the ledger files beside a standing, read off the record, never inferred from a
result's text:

- ``conflict``: a fact standing whose assertions disagree with another result's current
  fact. Two assertions disagree when they are about the same thing (``about``, compared
  case- and space-folded) and state different values (compared the same way, a number by
  its text). The row names its two witnesses by identity only: the result id and the
  assertion's position. One row per pair of witnesses, filed when the later fact is
  declared; a result whose last standing is no longer fact is no witness.
- ``unsettled-by-absence``: a ruled-out standing on a result the dispatch door recorded as an
  absence (its call row has status ``absent`` and a ``coverage_declared`` row of source
  ``absent``), quoting what the envelope said it never checked (``not_checked``), cannot see
  (``cannot_cover``) and ``try_instead``, as the model was served them. Filed immediately
  after the standing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trackway.engine import Scope, thaw

from ._config import emit as _emit
from ._findings_piece import fold, ledger_index

__all__ = ["assertions_of", "rows_after_standing"]

_MAX_ASSERTIONS = 8


def assertions_of(given: Any, cut: Callable[[str], str]) -> tuple[list[dict[str, Any]], str]:
    """The assertions a standing stands on, as filed (each ``about`` and ``value``, cut at
    240 characters), and why any part was dropped (``""``: none)."""
    if given is None:
        return [], ""
    if not isinstance(given, list):
        return [], "assertions was not a list"
    kept: list[dict[str, Any]] = []
    bad = 0
    for item in given[:_MAX_ASSERTIONS]:
        about = item.get("about") if isinstance(item, Mapping) else None
        value = item.get("value") if isinstance(item, Mapping) else None
        if not isinstance(about, str) or not about.strip() or isinstance(value, bool):
            bad += 1
            continue
        if isinstance(value, (int, float)):
            kept.append({"about": cut(about.strip()), "value": value})
        elif isinstance(value, str) and value.strip():
            kept.append({"about": cut(about.strip()), "value": cut(value.strip())})
        else:
            bad += 1
    over = len(given) - _MAX_ASSERTIONS
    why = []
    if bad:
        why.append(f"{bad} assertion{'' if bad == 1 else 's'} without an about and a value")
    if over > 0:
        why.append(f"{over} assertion{'' if over == 1 else 's'} past the first {_MAX_ASSERTIONS}")
    return kept, "; ".join(why)


def _conflicts(
    scope: Scope,
    row: Mapping[str, Any],
    pending: Sequence[Mapping[str, Any]],
    by: str,
    iteration: int,
) -> list[dict[str, Any]]:
    """The conflicts the fact ``row`` makes with the current facts, read from the run's
    ledger index (O(its assertions x the facts about the same things)) and ``pending``."""
    mine = row.get("assertions") or ()
    if row["standing"] != "fact" or not mine:
        return []
    rid = str(row["id"])
    index = ledger_index(scope)
    current = {str(r["id"]): r for r in pending if r.get("kind") == "standing"}
    filed = {
        tuple(sorted((w["id"], w["assertion"]) for w in c["witnesses"]))
        for c in pending
        if c.get("kind") == "conflict"
    }
    out: list[dict[str, Any]] = []
    for i, said in enumerate(mine):
        about, value = fold(said["about"]), fold(said["value"])
        theirs = dict(index.facts_about(about))
        for other, standing in current.items():  # this declaration's own, filed just now
            theirs.pop(other, None)
            if standing["standing"] == "fact" and not standing.get("unknown_id"):
                for j, item in enumerate(standing.get("assertions") or ()):
                    if fold(item["about"]) == about:
                        theirs.setdefault(other, []).append((j, fold(item["value"])))
        for other, items in theirs.items():
            if other == rid or (other not in current and index.standing_of(other) != "fact"):
                continue
            for j, their_value in items:
                pair = tuple(sorted(((other, j), (rid, i))))
                if their_value == value or pair in filed or index.conflict_filed(pair):
                    continue
                filed.add(pair)
                witnesses = [{"id": other, "assertion": j}, {"id": rid, "assertion": i}]
                out.append(
                    {
                        "kind": "conflict",
                        "witnesses": witnesses,
                        "declared_by": by,
                        "iteration": iteration,
                    }
                )
                _emit(scope, "findings.conflict", {"ids": [other, rid], "declared_by": by})
    return out


def _absence(scope: Scope, rid: str, iteration: int) -> dict[str, Any] | None:
    """The ``unsettled-by-absence`` row of a ruling-out on result ``rid``, when the door
    recorded that result as an absence the model was served."""
    results = scope.get("tool_results") or ()
    call = next((r for r in reversed(results) if r.get("id") == rid), None)
    if call is None or call.get("status") != "absent":
        return None
    if call.get("refused") or call.get("truncated") or "placed" in (call.get("artifacts") or {}):
        return None  # the model was not served the envelope whole: nothing to quote
    coverage = scope.get("coverage_declared") or ()
    said = next(
        (c for c in reversed(coverage) if c.get("id") == rid and c.get("source") == "absent"),
        None,
    )
    if said is None:
        return None
    row: dict[str, Any] = {"kind": "unsettled-by-absence", "id": rid}
    for part in ("not_checked", "cannot_cover"):
        row[part] = thaw(said.get(part) or [])
    if said.get("try_instead"):
        row["try_instead"] = said["try_instead"]  # quoted, never parsed
    row["iteration"] = iteration
    return row


def rows_after_standing(
    scope: Scope,
    row: Mapping[str, Any],
    pending: Sequence[Mapping[str, Any]],
    *,
    by: str,
    iteration: int,
) -> list[dict[str, Any]]:
    """The rows filed right after the standing ``row`` (``pending``: the rows of the same
    declaration filed before it): an absence it rules out on, and the conflicts it makes.
    Only under a recording with the ledger piece (a dict run constant)."""
    if not isinstance(scope["settings"].get("findings"), Mapping):
        return []
    out: list[dict[str, Any]] = []
    if row["standing"] == "ruled-out":
        absence = _absence(scope, str(row["id"]), iteration)
        if absence is not None:
            out.append(absence)
    out += _conflicts(scope, row, pending, by, iteration)
    return out
