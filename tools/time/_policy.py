"""How a mention's candidates are settled: the policy (``date_order``, ``year``) keeps the
candidates it allows; one left is taken, several are put to the person, none is said."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trackway.engine import ConfigurationError

from ._candidates import DATE_ORDERS

__all__ = ["DEFAULT_POLICY", "YEAR_POLICIES", "check_policy", "settle"]

YEAR_POLICIES = ("ask", "nearest")
"""``year``: ``"ask"`` keeps both readings of a two-digit year; ``"nearest"`` the one
within fifty years of the clock's year (``26`` read in 2026 is 2026; ``80`` is 1980)."""

DEFAULT_POLICY: dict[str, str] = {"date_order": "ask", "year": "ask"}


def check_policy(policy: Mapping[str, Any] | None) -> dict[str, str]:
    """The policy with its defaults; an unknown key or value is refused, naming the choices."""
    if policy is None:
        return dict(DEFAULT_POLICY)
    if not isinstance(policy, Mapping):
        raise ConfigurationError(
            f"time policy={policy!r}: give a dict such as {{'date_order': 'MDY', 'year': 'ask'}}"
        )
    unknown = sorted(set(policy) - set(DEFAULT_POLICY))
    if unknown:
        raise ConfigurationError(
            f"time policy has unknown keys {unknown}; it takes 'date_order' and 'year'"
        )
    out = {**DEFAULT_POLICY, **policy}
    if out["date_order"] not in ("ask", *DATE_ORDERS):
        raise ConfigurationError(
            f"time policy date_order={out['date_order']!r}: use 'ask', 'DMY', 'MDY' or 'YMD'"
        )
    if out["year"] not in YEAR_POLICIES:
        raise ConfigurationError(f"time policy year={out['year']!r}: use 'ask' or 'nearest'")
    return out


def _allowed(candidate: Mapping[str, Any], policy: Mapping[str, str]) -> bool:
    order = candidate.get("date_order")
    if policy["date_order"] != "ask" and order is not None and order != policy["date_order"]:
        return False
    return not (
        policy["year"] == "nearest"
        and candidate.get("year_from") == "two-digit"
        and candidate.get("nearest") is False
    )


def settle(candidates: Sequence[Mapping[str, Any]], policy: Mapping[str, str]) -> dict[str, Any]:
    """``{"how": ..., "settled": candidate | None, "open": [...]}``. ``how`` is
    ``"only-candidate"`` (one to begin with), ``"policy"`` (the policy left one),
    ``"ask"`` (several left: the person chooses among ``open``) or ``"no-candidate"``."""
    if len(candidates) == 1:
        return {"how": "only-candidate", "settled": dict(candidates[0]), "open": []}
    if not candidates:
        return {"how": "no-candidate", "settled": None, "open": []}
    kept = [dict(c) for c in candidates if _allowed(c, policy)]
    if len(kept) == 1:
        return {"how": "policy", "settled": kept[0], "open": []}
    if not kept:
        return {"how": "no-candidate", "settled": None, "open": []}
    return {"how": "ask", "settled": None, "open": kept}
