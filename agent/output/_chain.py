"""The fallback chain: primary, then the fallback (its value judged again), then the canned
value (validated at build). One implementation for ``parse_output_async`` and for a run:
there the ``output-fallback`` stage (mounted only with ``.output_fallback()``) walks it
after ``final`` when the run input says the caller asked for a typed answer
(``run_typed``), and commits each step as an ``output_fallback`` row ``{tier, outcome,
...}`` (the value on the row that served it), so a resume in another process and a replay
read the typed answer from the record, never from the fallback's code again."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from pydantic import BaseModel

from trackway.engine import Scope, thaw

from ..context._config import AgentConfig, emit
from ._contract import contract_error
from ._plan import Attempt, FallbackSource, TypedPlan
from ._verdict import Verdict, schema_error, stage_of, value_verdict, verdict

__all__ = [
    "FALLBACK_KEY",
    "TYPED_INPUT",
    "degrade",
    "fallback_line",
    "fallback_stage",
    "live_source",
    "parse_chained",
    "typed_value",
]

FALLBACK_KEY = "output_fallback"
"""The rows of a typed run's chain, one per tier tried, in order."""

TYPED_INPUT = "typed"
"""The run input ``run_typed`` sets: the caller asked for a typed answer (it survives a
pause, so ``resume`` in any process answers typed too)."""


def live_source(model: type[BaseModel], fn: Callable[..., Any]) -> FallbackSource:
    """The user's ``fallback(error, raw)`` (sync or async) as the chain asks it: what it
    returned, as JSON to be judged (an instance as its dump, a dict, a JSON text), or why
    nothing could be judged (it raised; it returned something else)."""

    async def ask(error: Any, raw: str) -> Attempt:
        try:
            got = fn(error, raw)
            if inspect.isawaitable(got):
                got = await got
        except Exception as exc:  # the tier failed: recorded, and the chain goes on
            return ("raised", f"{type(exc).__name__}: {exc}")
        if isinstance(got, BaseModel):
            got = got.model_dump(mode="json")
        if isinstance(got, str):
            return ("returned", got)
        if isinstance(got, Mapping):
            try:
                return ("returned", orjson.loads(orjson.dumps(dict(got))))
            except (TypeError, orjson.JSONEncodeError) as exc:
                return ("refused", f"the fallback returned a dict that is not plain JSON ({exc})")
        return (
            "refused",
            f"the fallback returned a {type(got).__name__}; return a {model.__name__}, a dict "
            "or a JSON str",
        )

    return ask


async def degrade(
    plan: TypedPlan, raw: str, failed: Verdict
) -> tuple[list[dict[str, Any]], Any | None]:
    """The chain past a primary answer ``raw`` that ``failed``: its rows, and the value it
    served as JSON (``None``: every tier failed)."""
    rows: list[dict[str, Any]] = [{"tier": "primary", "outcome": "failed", **failed.fields()}]
    if plan.fallback is not None:
        kind, got = await plan.fallback(schema_error(plan.model, raw, failed), raw)
        if kind == "returned":
            found, value = value_verdict(plan.model, got)
            if found is None:
                rows.append({"tier": "fallback", "outcome": "passed", "value": value})
                return rows, value
            rows.append(
                {"tier": "fallback", "outcome": "invalid", **found.fields(), "returned": got}
            )
        else:
            rows.append({"tier": "fallback", "outcome": kind, "error": got})
    if plan.canned is not None:
        rows.append({"tier": "canned", "outcome": "passed", "value": plan.canned})
        return rows, plan.canned
    return rows, None


def _failed(unmet: Mapping[str, Any]) -> Verdict:
    error = str(unmet["error"])
    return Verdict(
        str(unmet.get("stage") or stage_of(error)),
        error,
        unmet.get("path"),
        unmet.get("stop_reason"),
    )


def fallback_stage(cfg: AgentConfig) -> Callable[[Scope], Awaitable[None]]:
    """The ``output-fallback`` stage: nothing unless the run input asked for a typed answer;
    then the chain over the answer ``final`` handed back, each step committed."""
    plan = cfg.typed
    assert plan is not None and plan.chained

    async def output_fallback(scope: Scope) -> None:
        if not scope.get(TYPED_INPUT):  # run(): the chain is run_typed's alone
            return
        unmet = scope.get("output_contract_unmet")
        if unmet is None:
            rows: list[dict[str, Any]] = [{"tier": "primary", "outcome": "passed"}]
        else:
            rows = (await degrade(plan, scope["final_answer"], _failed(thaw(unmet))))[0]
        scope[FALLBACK_KEY] = rows
        served = rows[-1]["tier"] if rows[-1]["outcome"] == "passed" else None
        tiers = [[row["tier"], row["outcome"]] for row in rows]
        emit(scope, "agent.output_fallback", {"served": served, "tiers": tiers})

    return output_fallback


def fallback_line(event: Mapping[str, Any]) -> str:
    """The narrative's line for an ``agent.output_fallback`` event (tiers, never values)."""
    tiers = ", ".join(f"{tier} {outcome}" for tier, outcome in event.get("tiers", ()))
    served = event.get("served")
    if served is None:
        return f"No tier of the fallback chain served a valid typed answer ({tiers})"
    return f"The typed answer came from the {served} tier ({tiers})"


def typed_value(model: type[BaseModel], state: Mapping[str, Any]) -> BaseModel:
    """The typed answer of a finished run: the value its chain served, else its answer
    parsed; :class:`OutputContractError` when the contract went unmet and nothing valid was
    served."""
    answer = str(state["final_answer"])
    unmet = state.get("output_contract_unmet")
    rows = thaw(state.get(FALLBACK_KEY)) or []
    if rows:
        last = rows[-1]
        if last["outcome"] == "passed":
            if "value" in last:
                return model.model_validate(last["value"])
            return model.model_validate_json(answer)
    if unmet is not None:
        raise contract_error(model.__name__, thaw(unmet), answer, rows)
    return model.model_validate_json(answer)


async def parse_chained(model: type[BaseModel], plan: TypedPlan | None, raw: str) -> BaseModel:
    """``raw`` parsed into ``model``; on failure the chain, when ``plan`` has one, else the
    :class:`OutputSchemaError` (with the chain's rows when every tier failed)."""
    found = verdict(model, raw)
    if found is None:
        return model.model_validate_json(raw)
    if plan is None or not plan.chained:
        raise schema_error(model, raw, found)
    rows, value = await degrade(plan, raw, found)
    if value is None:
        error = schema_error(model, raw, found)
        error.chain = tuple(rows)
        raise error
    return model.model_validate(value)
