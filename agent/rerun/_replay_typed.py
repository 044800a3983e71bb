"""Typed answers in a replay: the twin asks for the same schema and strategy, and its
fallback tier is served from the recorded ``output_fallback`` rows (what the fallback
returned, raised or was refused for), so the user's fallback is never run again. Without
the agent, the schema is a stand-in judging from the verdicts the recording kept
(``_replay_judged``); a recording from before they were kept (no ``output_schema`` in its
settings) is refused when its answers were judged against code."""

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
from ..providers._options import REQUEST_OPTIONS
from ._replay_judged import recorded_model

__all__ = [
    "RecordedFallback",
    "as_recorded",
    "recorded_options",
    "recorded_output",
    "refuse_typed",
    "replay_typed",
]

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


def recorded_options(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The request options a recording's ``settings`` name, but the response format the
    native strategy set (``output_schema(..., strategy="native")`` sets it again)."""
    options = {name: settings.get(name) for name in REQUEST_OPTIONS}
    if settings.get("output_schema") is not None and settings.get("output_strategy") == "native":
        options["response_format"] = None
    return options


def recorded_output(builder: Any, snap: Snapshot, settings: Mapping[str, Any]) -> None:
    """Ask ``builder`` (an agent rebuilt from ``snap``) for the typed answer the recording
    asked for, judged by the stand-in built from its verdicts, its chain as recorded."""
    schema = settings.get("output_schema")
    if schema is None:
        return
    strategy = str(settings.get("output_strategy") or "instruct")
    model = recorded_model(snap, settings)
    builder.output_schema(model, retries=int(schema["retries"]), strategy=strategy)
    chain = settings.get("output_fallback")
    if chain is None:
        return
    if chain.get("fallback"):
        builder._fallback_source = RecordedFallback(snap)
    canned = {} if chain.get("canned") is None else {"canned": chain["canned"]}
    builder.output_fallback(fallback=_never if chain.get("fallback") else None, **canned)


def refuse_typed(snap: Snapshot, settings: Mapping[str, Any], judged_at: str | None) -> None:
    """A replay without the agent of a recording that kept no verdicts (made before they
    were) refuses a run whose answers were judged against the schema (``judged_at``: the
    first stage that wrote of it), or that asked for a native answer or stood a fallback
    chain: the schema is code there. Names what to pass."""
    if settings.get("output_schema") is not None:
        return
    if judged_at is None:
        if settings.get("output_strategy") is None and settings.get("output_fallback") is None:
            return
        judged_at = next(
            c.stage_path for c in snap.history() if c.frame == "" and c.stage_id == "seed"
        )
    raise ReplayDivergence(
        "this recording used an output schema and kept no verdicts of it (it was made before "
        "they were recorded), so its validator is code: replay it with the runner that made "
        "it (the agent, or the composition it is a member of), replay(record, runner)",
        stage_path=judged_at,
        key="settings" if judged_at.startswith("seed") else None,
    )


def as_recorded(write: tuple[Any, ...], recorded: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
    """A replayed write in the shape the recording kept it when the recording is from before
    part of it was recorded: the contract report before its ``stage`` (and the fields beside
    it), the settings before ``output_schema``; the fields it kept then, compared as they
    were. Any other write as it is."""
    if write[1] not in (_UNMET, "settings"):
        return write
    kept = next((w for w in recorded if w[1] == write[1]), None)
    if kept is None or write[0] != "set" or kept[0] != "set":
        return write
    old = orjson.loads(kept[2])
    marker = "stage" if write[1] == _UNMET else "output_schema"
    if not isinstance(old, dict) or marker in old:
        return write
    new = orjson.loads(write[2])
    if write[1] == "settings":  # the schema alone was not recorded then
        if marker not in new:
            return write
        return (write[0], write[1], to_bytes({k: v for k, v in new.items() if k != marker}))
    return (write[0], write[1], to_bytes({k: v for k, v in new.items() if k in old}))
