"""Usage and cost ledgers: what each model call used and cost, and the run's budget.

Token totals (``usage_total``) sum what providers reported; a call that reported nothing is
never counted as zero. With ``pricing_table={model: {"input": usd_per_million, "output": ...,
"cache_read": ..., "cache_write": ...}}`` every call gets a row in the ``cost`` ledger and
``cost_total`` keeps the run's spend; a call without a price or without usage is recorded
as unpriced, not as free. ``cost_budget=(usd, "warn" | "halt")``: the first call that takes
the spend over the limit is recorded (``cost_budget_hit``); under ``"halt"`` the run stops
before the next call, recorded like ``stopped_early`` (reason ``cost-budget``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine import thaw
from trackway.engine.run._scope import TrackedScope

from ..messages._errors import AgentBuildError
from ..messages._usage import usage_reported
from ._config import emit as _emit

__all__ = ["PRICE_KINDS", "account", "budget_option", "check_budget", "check_pricing"]

PRICE_KINDS = ("input", "output", "cache_read", "cache_write")
_TOKENS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_tokens",
    "cache_write": "cache_write_tokens",
}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def check_pricing(table: Any) -> dict[str, dict[str, float]] | None:
    """``pricing_table`` checked where it is given (prices in USD per million tokens)."""
    if table is None:
        return None
    if not isinstance(table, Mapping) or not table:
        raise AgentBuildError(
            "Agent.create(pricing_table=...) maps model names to prices in USD per million "
            'tokens, e.g. {"gpt-4o": {"input": 2.5, "output": 10}}'
        )
    out: dict[str, dict[str, float]] = {}
    for model, prices in table.items():
        if not isinstance(model, str) or not isinstance(prices, Mapping):
            raise AgentBuildError(
                f"pricing_table[{model!r}] must be a mapping of {', '.join(PRICE_KINDS)} to USD "
                "per million tokens"
            )
        unknown = sorted(set(prices) - set(PRICE_KINDS))
        if unknown:
            raise AgentBuildError(
                f"pricing_table[{model!r}] has {unknown}; the kinds are {', '.join(PRICE_KINDS)}"
            )
        for kind in ("input", "output"):
            if kind not in prices:
                raise AgentBuildError(f"pricing_table[{model!r}] needs an {kind!r} price")
        for kind, price in prices.items():
            if not _number(price):
                raise AgentBuildError(
                    f"pricing_table[{model!r}][{kind!r}] = {price!r}: use a number ≥ 0 (USD per "
                    "million tokens)"
                )
        out[model] = {k: float(prices[k]) for k in PRICE_KINDS if k in prices}
    return out


def check_budget(budget: Any, pricing: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``cost_budget=(usd, "warn" | "halt")`` checked where it is given."""
    if budget is None:
        return None
    if (
        not isinstance(budget, tuple | list)
        or len(budget) != 2
        or not _number(budget[0])
        or budget[0] <= 0
        or budget[1] not in ("warn", "halt")
    ):
        raise AgentBuildError(
            f"Agent.create(cost_budget={budget!r}): pass (usd, 'warn') or (usd, 'halt') with "
            "usd > 0"
        )
    if pricing is None:
        raise AgentBuildError(
            "Agent.create(cost_budget=...) needs pricing_table=...: without prices the spend "
            "cannot be measured"
        )
    return {"usd": float(budget[0]), "action": budget[1]}


def budget_option(recorded: Mapping[str, Any] | None) -> tuple[float, str] | None:
    """The ``cost_budget=`` that made a recorded budget (for building the agent again)."""
    return None if recorded is None else (recorded["usd"], recorded["action"])


def _priced(
    prices: Mapping[str, float] | None, usage: Mapping[str, Any] | None, model: str
) -> tuple[float | None, str | None]:
    if prices is None:
        return None, f"no price for model {model!r} in pricing_table"
    if not usage_reported(usage):
        return None, "the provider reported no usage for this call"
    assert usage is not None
    usd = sum(prices[k] * (usage.get(_TOKENS[k]) or 0) for k in prices) / 1_000_000
    return round(usd, 10), None


def account(
    scope: TrackedScope, k: int, model: str, usage: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Add call ``k``'s usage (and cost, when priced) to the ledgers; returns the
    ``cost.tick`` payload."""
    current = scope.get("usage_total")
    totals = {"input_tokens": 0, "output_tokens": 0} if current is None else dict(thaw(current))
    if usage:
        for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            if usage.get(key) is not None:
                totals[key] = totals.get(key, 0) + usage[key]
        scope["usage_total"] = totals
    tick: dict[str, Any] = {"k": k, "usage": usage, "reported": usage_reported(usage)}
    tick["total"] = totals
    settings = scope["settings"]
    pricing = settings.get("pricing")
    if pricing is None:
        return tick
    usd, why = _priced(pricing.get(model), usage, model)
    row: dict[str, Any] = {"k": k, "model": model, "usd": usd}
    if why is not None:
        row["unpriced"] = why
    scope.append("cost", row)
    spent = dict(thaw(scope.get("cost_total", {"usd": 0.0, "unpriced_calls": 0})))
    if usd is None:
        spent["unpriced_calls"] += 1
    else:
        spent["usd"] = round(spent["usd"] + usd, 10)
    scope["cost_total"] = spent
    tick.update(usd=usd, usd_total=spent["usd"])
    budget = settings.get("cost_budget")
    if budget is not None and spent["usd"] > budget["usd"] and "cost_budget_hit" not in scope:
        hit = {"k": k, "limit": budget["usd"], "spend": spent["usd"], "action": budget["action"]}
        scope["cost_budget_hit"] = hit
        _emit(scope, "cost.budget_exceeded", hit)
    return tick


def halted(scope: TrackedScope) -> dict[str, Any] | None:
    """The budget hit that stops the run before its next call (``"halt"`` only)."""
    hit = scope.get("cost_budget_hit")
    return None if hit is None or hit["action"] != "halt" else dict(thaw(hit))
