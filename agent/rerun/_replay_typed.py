"""Typed answers in a replay: the twin asks for the same schema and strategy, and its
fallback tier is served from the recorded ``output_fallback`` rows (what the fallback
returned, raised or was refused for), so the user's fallback is never run again. A
recording made without the agent's definition cannot be replayed when it asked for a
native answer or stood a fallback chain: the schema is code."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from trackway.engine import Snapshot, thaw
from trackway.engine.core._values import to_bytes

from ..context._config import AgentConfig
from ..messages._errors import OutputSchemaError, ReplayDivergence
from ..output._chain import FALLBACK_KEY
from ..output._plan import Attempt

__all__ = ["RecordedFallback", "as_recorded", "refuse_typed", "replay_typed"]

_UNMET = "output_contract_unmet"


class RecordedFallback:
    """The fallback tier as the recording says it went, ask by ask."""

    def __init__(self, snap: Snapshot) -> None:
        rows = thaw(snap.state.get(FALLBACK_KEY)) or []
        self._rows = [row for row in rows if row["tier"] == "fallback"]

    async def __call__(self, error: OutputSchemaError, raw: str) -> Attempt:
        if not self._rows:
            raise ReplayDivergence(
                "the replay asked the output fallback, which the recording never did",
                stage_path="output-fallback",
                key=FALLBACK_KEY,
            )
        row = self._rows.pop(0)
        if row["outcome"] == "passed":
            return ("returned", row["value"])
        if row["outcome"] == "invalid":
            return ("returned", row["returned"])
        return (str(row["outcome"]), row["error"])


def _never(error: OutputSchemaError, raw: str) -> Any:  # pragma: no cover - replaced
    raise AssertionError("a replay serves the fallback tier from the record")


def replay_typed(builder: Any, cfg: AgentConfig, snap: Snapshot) -> None:
    """Ask ``builder`` (the replay's twin) for the typed answer ``cfg`` asked for, its
    fallback tier served from ``snap``."""
    if cfg.output_model is None:
        return
    plan = cfg.typed
    strategy = "instruct" if plan is None else plan.strategy
    builder.output_schema(cfg.output_model, retries=cfg.output_retries, strategy=strategy)
    if plan is None or not plan.chained:
        return
    chain: dict[str, Any] = {}
    if plan.fallback is not None:
        builder._fallback_source = RecordedFallback(snap)
        chain["fallback"] = _never
    if plan.canned is not None:
        chain["canned"] = plan.canned
    builder.output_fallback(**chain)


def refuse_typed(snap: Snapshot, settings: Mapping[str, Any]) -> None:
    """A replay without the agent refuses a run that asked for a native answer or stood a
    fallback chain (the output schema is code), naming what to pass."""
    if settings.get("output_strategy") is None and settings.get("output_fallback") is None:
        return
    seed = next(c.stage_path for c in snap.history() if c.frame == "" and c.stage_id == "seed")
    raise ReplayDivergence(
        "this recording used an output schema (a native strategy or a fallback chain), whose "
        "validator is code: replay it with the runner that made it (the agent, or the "
        "composition it is a member of), replay(record, runner)",
        stage_path=seed,
        key="settings",
    )


def as_recorded(write: tuple[Any, ...], recorded: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
    """A replayed write of the contract report, in the shape the recording kept it when the
    recording is from before the report had its ``stage`` (and the fields beside it): the
    fields it kept then, compared as they were; any other write as it is."""
    if write[1] != _UNMET:
        return write
    kept = next((w for w in recorded if w[1] == _UNMET), None)
    if kept is None:
        return write
    old = orjson.loads(kept[2])
    if not isinstance(old, dict) or "stage" in old:
        return write
    new = orjson.loads(write[2])
    return (write[0], write[1], to_bytes({k: v for k, v in new.items() if k in old}))
