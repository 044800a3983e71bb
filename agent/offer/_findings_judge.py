"""A second source for the ledger: ``.findings(judge=classifier)``. Before each model call
the ``offer`` stage asks the judge about every tool result that landed since the last call —
one classifier call per result, a choice among the four standings — and files the answer as
a ``judgment`` row beside the model's own ``standing`` (never merged with it, never served),
or a ``judgment-error`` row with the provider's status and message (the run goes on).

Only a result the tool produced is judged: a denied or invalid call (a gate, a person, a
refused argument) spends no classifier call. The judge is asked what the result is to the
proposition the call declared, or else to the person's question; the result text is cut at
4000 characters first, and the row says so (``clipped``). A replay reads the rows instead of
asking (:class:`~trackway.agent.rerun._replay_findings.RecordedJudge`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine import StagePath
from trackway.engine.run._scope import TrackedScope

from ..classify._port import ClassifierError, ClassifyCriterion, ClassifyRequest
from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ..context._findings import STANDINGS
from ..context._findings_piece import ledger_index

__all__ = ["FINDINGS_JUDGE_QUESTION", "JUDGE_CLIP", "judge_results"]

FINDINGS_JUDGE_QUESTION = "trackway.findings-judge"
"""The ``question_id`` of the request a findings judge is asked."""
JUDGE_CLIP = 4000
"""A result's text is cut at this many characters before the judge reads it."""
_UNJUDGED = ("denied", "invalid")
_CRITERIA = (
    ClassifyCriterion("fact", "The result settles it: a value to stand on."),
    ClassifyCriterion("open", "The result bears on it but does not settle it."),
    ClassifyCriterion("noise", "The result does not bear on it."),
    ClassifyCriterion("ruled-out", "The result rules it out."),
)


class _Judged:
    """How many call rows this run and mount has looked at (O(new results) per call)."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = -1


def _text_of(scope: TrackedScope, rid: str) -> str:
    history = scope["history"]
    for i in range(len(history) - 1, -1, -1):
        message = history[i]
        if message["role"] == "tool" and message.get("tool_call_id") == rid:
            return str(message.get("content") or "")
    return ""


async def judge_results(cfg: AgentConfig, scope: TrackedScope) -> None:
    """File a judgment (or a judgment error) for each tool-produced result that landed
    since the last model call."""
    judge = cfg.findings_plan.judge
    mount = StagePath.parent_of(scope.stage_path)
    memo = scope.run_local(("findings-judge", id(cfg), mount), _Judged)
    results = scope.get("tool_results") or ()
    if memo.seen < 0:  # the first visit of this run: what the ledger already judged stays
        ledger = scope.get("findings") or ()
        done = {r.get("id") for r in ledger if r.get("kind") in ("judgment", "judgment-error")}
        fresh = [r for r in results if r.get("id") not in done]
    else:
        fresh = list(results[memo.seen :])
    memo.seen = len(results)
    rows: list[dict[str, Any]] = []
    index = ledger_index(scope)
    for call in fresh:
        if call.get("status") in _UNJUDGED:
            continue
        rid = str(call["id"])
        text = _text_of(scope, rid)
        proposition = index.proposition_of(rid)
        against = "proposition" if proposition is not None else "question"
        subject = proposition if proposition is not None else str(scope["user_message"])
        clipped = len(text) > JUDGE_CLIP
        request = ClassifyRequest(
            question_id=FINDINGS_JUDGE_QUESTION,
            question=f"What is this tool result to the {against}?",
            criteria=_CRITERIA,
            state={against: subject, "tool": call["name"], "result": text[:JUDGE_CLIP]},
        )
        base = {"id": rid, "judge": judge.name, "against": against}
        try:
            answer = await judge.classify(request)
        except ClassifierError as exc:
            rows.append(_failed(scope, base, exc.status, str(exc), call["iteration"]))
            continue
        if answer.chosen not in STANDINGS:
            message = f"the judge answered {str(answer.chosen)[:40]!r}, not one of the standings"
            rows.append(_failed(scope, base, None, message, call["iteration"]))
            continue
        row: dict[str, Any] = {"kind": "judgment", **base, "standing": answer.chosen}
        if answer.model is not None:
            row["model"] = answer.model
        if answer.confidence is not None:
            row["confidence"] = answer.confidence
        if clipped:
            row["clipped"] = True
        row["answer"] = answer.record()
        row["iteration"] = call["iteration"]
        rows.append(row)
        usage: Mapping[str, Any] = answer.usage or {}
        _emit(
            scope,
            "findings.judged",
            {
                "id": rid,
                "standing": answer.chosen,
                "confidence": answer.confidence,
                "latency_ms": answer.latency_ms,
                "tokens": sum(int(v) for v in usage.values()),
            },
        )
    if rows:
        scope.extend("findings", rows)


def _failed(
    scope: TrackedScope, base: dict[str, Any], status: int | None, message: str, iteration: int
) -> dict[str, Any]:
    _emit(scope, "findings.judge_failed", {"id": base["id"], "status": status})
    row = {"kind": "judgment-error", **base, "status": status, "message": message}
    row["iteration"] = iteration
    return row
