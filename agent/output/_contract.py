"""The contract report: how the run's last answer failed the output schema
(``output_contract_unmet``), written by ``final`` and read back with every field, also from
recordings made before the fields were; and the :class:`OutputContractError` of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trackway.engine import Scope, thaw

from ..context._config import AgentConfig
from ..messages._errors import OutputContractError
from ..middleware._output import BROKEN_BY_KEY
from ._judged import answer_verdict
from ._verdict import stage_of

__all__ = ["UNMET_FIELDS", "contract_error", "contract_unmet", "unmet_view"]

UNMET_FIELDS = (
    "attempts",
    "retries_spent",
    "stage",
    "error",
    "path",
    "broken_by",
    "fallback_configured",
    "stop_reason",
)
"""What ``agent.output_contract_unmet()`` returns, every field, ``None`` when not set."""


def contract_unmet(
    cfg: AgentConfig, scope: Scope, response: Mapping[str, Any], judged: str
) -> dict[str, Any] | None:
    """The report ``final`` commits when the answer handed back (``judged``) fails the
    schema, or ``None``: the error ``route`` committed (else the verdict on ``judged``),
    answers judged, retries spent, the stage and field, the output link that broke a valid
    answer, whether a fallback tier stands, and under the native strategy the stop."""
    found = answer_verdict(cfg, scope, response, judged)
    error = scope.get("output_error")
    if error is None and found is None:
        return None
    if error is None:
        assert found is not None
        error = found.error
    spent = scope.get("output_attempts", 0)
    report: dict[str, Any] = {"error": error, "attempts": spent + 1}
    report["retries_spent"] = spent
    if found is not None:
        report.update({k: v for k, v in found.fields().items() if k != "error"})
    else:
        report["stage"] = stage_of(str(error))
    if BROKEN_BY_KEY in scope:
        report["broken_by"] = scope[BROKEN_BY_KEY]
    report["fallback_configured"] = cfg.typed is not None and cfg.typed.chained
    return report


def unmet_view(value: Any) -> dict[str, Any] | None:
    """The committed report with every field of :data:`UNMET_FIELDS` (a recording from
    before a field was kept reads it as what it then was: no retries past the first answer's
    re-asks, no fallback, the stage from the error's words)."""
    if value is None:
        return None
    kept = dict(thaw(value))
    attempts = int(kept.get("attempts", 1))
    error = str(kept.get("error", ""))
    view = {
        "attempts": attempts,
        "retries_spent": kept.get("retries_spent", attempts - 1),
        "stage": kept.get("stage", stage_of(error)),
        "error": error,
        "path": kept.get("path"),
        "broken_by": kept.get("broken_by"),
        "fallback_configured": bool(kept.get("fallback_configured", False)),
        "stop_reason": kept.get("stop_reason"),
    }
    return view | {k: v for k, v in kept.items() if k not in view}


def contract_error(
    model: str, unmet: Mapping[str, Any], answer: str, chain: Sequence[Mapping[str, Any]] = ()
) -> OutputContractError:
    """The error ``run_typed`` raises for a run whose report is ``unmet`` (and whose
    fallback chain, when one ran, is ``chain``: every tier failed)."""
    view = unmet_view(unmet) or {}
    tried = ""
    if chain:
        tiers = ", ".join(f"{row['tier']} {row['outcome']}" for row in chain)
        tried = f"; the fallback chain served nothing valid ({tiers})"
    return OutputContractError(
        f"the answer did not match {model} after {view['attempts']} attempt(s): "
        f"{view['error']}{tried}",
        attempts=view["attempts"],
        last_error=view["error"],
        answer=answer,
        stage=view["stage"],
        path=view["path"],
        retries_spent=view["retries_spent"],
        broken_by=view["broken_by"],
        stop_reason=view["stop_reason"],
        fallback_configured=view["fallback_configured"],
        chain=tuple(dict(row) for row in chain),
    )
