"""The verdicts of a typed run, on its record: every answer the output schema judged (in
``route``, by the output links' judge, in ``final``) is committed as an ``output_judged``
row, the SHA-256 of the text and what the schema said of it (``passed``, or the stage,
error and field). The rows make the validator's work data, so a replay without the agent
judges from them (:class:`~._verdict.Judged`); nothing is written without an output schema.
Settings record the schema itself (``output_schema``: its name and retries)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from trackway.engine import Scope, thaw

from ..context._config import AgentConfig
from ._verdict import NATIVE_STOPS, Judged, Verdict, verdict

__all__ = [
    "JUDGED_KEY",
    "answer_error",
    "answer_verdict",
    "judged",
    "settle_output",
    "text_digest",
]

JUDGED_KEY = "output_judged"
"""The rows of a typed run's verdicts, one per answer judged (consecutive repeats once)."""


def text_digest(text: str) -> str:
    """The hex SHA-256 of ``text`` (UTF-8) by which a row names the answer it judged."""
    return hashlib.sha256(text.encode()).hexdigest()


def judged(scope: Scope, model: type[BaseModel], text: str) -> Verdict | None:
    """The schema's verdict on ``text``, committed as an ``output_judged`` row (not again
    when the last row is already this verdict on this text: ``final`` reads the answer
    ``route`` judged)."""
    if issubclass(model, Judged):
        found = model.judged_text(text, scope.stage_path)
    else:
        found = verdict(model, text)
    row: dict[str, Any] = {"answer": text_digest(text)}
    row.update({"passed": True} if found is None else found.fields())
    rows = scope.get(JUDGED_KEY)
    if not rows or thaw(rows[-1]) != row:
        scope.append(JUDGED_KEY, row)
    return found


def answer_verdict(
    cfg: AgentConfig, scope: Scope, response: Mapping[str, Any], text: str
) -> Verdict | None:
    """The verdict on a run's answer ``text``: the schema's (committed, :func:`judged`),
    and under the native strategy the stop of ``response`` (the committed answer) that fails
    it, even when ``text`` parses (``stop_reason`` is set on the verdict then)."""
    assert cfg.output_model is not None
    found = judged(scope, cfg.output_model, text)
    plan = cfg.typed
    stop = response.get("stop_reason") if plan is not None and plan.native else None
    if stop not in NATIVE_STOPS:
        return found
    if found is None:
        return Verdict("stop-reason", f"{NATIVE_STOPS[stop]} (stop reason {stop!r})", None, stop)
    return replace(found, stop_reason=stop)


def answer_error(
    cfg: AgentConfig, scope: Scope, response: Mapping[str, Any], text: str
) -> str | None:
    """The error ``route`` commits as ``output_error`` for ``text`` (``None``: it passes)."""
    found = answer_verdict(cfg, scope, response, text)
    return None if found is None else found.error


def settle_output(cfg: AgentConfig, settings: dict[str, Any]) -> None:
    """Record in ``settings`` what a replay needs to judge as the run did without the
    agent's code: the schema (``output_schema``: the model's name, the retries), and what
    the plan changes (the native response format, the fallback chain)."""
    if cfg.output_model is None:
        return
    settings["output_schema"] = {"model": cfg.output_model.__name__, "retries": cfg.output_retries}
    if cfg.typed is not None:
        cfg.typed.settle(settings)
