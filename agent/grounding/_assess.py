"""The answer's standing, folded from its committed record: ``assess_answer(record)``.

A pure function of what the run committed — never of events, never of how sure the model
sounded — so a recording loaded in another process folds to the same assessment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict

from trackway.engine import Snapshot, thaw

from ._corpus import EvidenceCorpus
from ._reading import TOOL_WORDS, TurnResult, person_words, turn_results
from ._validation import REPORT_KEY
from ._values import value_of

__all__ = ["REASONS", "STANDINGS", "AnswerAssessment", "Standing", "assess_answer", "fold"]

Standing = Literal["known", "consistent", "not-sure", "ask", "not-assessed"]
STANDINGS: tuple[Standing, ...] = ("known", "consistent", "not-assessed", "not-sure", "ask")
"""The standings, from the best an answer can have to the run still waiting."""

REASONS = (
    "tool-failed",
    "result-incomplete",
    "empty-undeclared",
    "not-checked",
    "period-undeclared",
    "period-not-held",
    "argument-assumed",
    "argument-unverified",
    "unsupported-values",
    "claim-unmet",
    "validation-incomplete",
    "output-contract-unmet",
    "stopped-early",
)
"""Why an answer is not sure, in the order the fold lists them (a call's reasons in the order
of the calls, then the answer's)."""

_NO_ANSWER = ("running", "failed", "broken", "incomplete")
_EMPTY: tuple[Any, ...] = ([], {}, "", None)


class AnswerAssessment(BaseModel):
    """How far an answer stands on its record.

    ``standing``: ``known`` (the evidence gate's check in the answer-validation report
    passed having read every result of the turn, with at least one name or number judged,
    and nothing made the answer not sure), ``consistent`` (checks ran and none
    fired — never "verified"), ``not-sure`` (``reasons`` say why), ``ask`` (the run waits on
    a person's answer) or ``not-assessed`` (the record holds nothing to check the answer
    against). ``results_read``: this turn's tool results the fold read (those the tool
    wrote); ``checks_run``: the answer checks that ran (claims, the evidence gate).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    standing: Standing
    reasons: tuple[dict[str, Any], ...] = ()
    results_read: int = 0
    checks_run: int = 0

    def to_json(self) -> bytes:
        """The assessment as JSON (what a UI or a log keeps)."""
        return orjson.dumps(self.model_dump(mode="json"))


def assess_answer(record: Snapshot | Mapping[str, Any]) -> AnswerAssessment | None:
    """Fold a run's committed record into its answer's standing.

    ``record`` is a :class:`~trackway.engine.Snapshot` (``agent.snapshot()``, or a recording
    read with ``load_recording``) or a run's state mapping (``snapshot.state``). ``None``
    when there is no answer to assess: before a run, while one is in flight, after one that
    failed or was broken off, and when a rule refused the answer (the error raised carries
    that verdict). A bare state mapping has no run status, so a mapping from a failed run
    reads as the keys it holds; pass the snapshot when you have it.
    """
    if isinstance(record, Snapshot):
        return fold(record.state, record.status)
    if isinstance(record, Mapping):
        return fold(record, None)
    raise TypeError(
        f"assess_answer takes a Snapshot (agent.snapshot(), load_recording(path)) or a run's "
        f"state mapping, not {type(record).__name__}"
    )


def fold(state: Mapping[str, Any], status: str | None) -> AnswerAssessment | None:
    """The fold itself, over a state and the run's status (``None``: not known)."""
    if status in _NO_ANSWER or "message_denied" in state:
        return None
    verdict = state.get("unsupported_values")
    if isinstance(verdict, Mapping) and verdict.get("refused"):
        return None
    if state.get("pending_question") is not None:
        return AnswerAssessment(standing="ask")
    if "final_answer" not in state or status == "paused":
        return None
    results = turn_results(state)
    reasons: list[dict[str, Any]] = []
    coverage: dict[str, list[Mapping[str, Any]]] = {}
    for row in state.get("coverage_declared", ()):
        coverage.setdefault(str(row.get("id")), []).append(row)
    rules = thaw(state.get("tool_rules") or {})
    trace: EvidenceCorpus | None = None  # where a value the model chose could come from
    traced = 0  # the results of earlier iterations in ``trace``, in order
    for result in results:
        reasons += _call_reasons(result, coverage.get(result.id, ()))
        ruled = (rules.get(result.name) or {}).get("ask_or_assume") or {}
        if ruled:
            if trace is None:  # the person's words, read once, when a ruled call needs them
                trace = EvidenceCorpus()
                for words in person_words(state):
                    trace.add("person", words, None)
            while traced < len(results) and _before(results[traced], result):
                earlier = results[traced]
                trace.add(earlier.id, earlier.own, earlier.row)
                traced += 1
            reasons += _unverified(result, ruled, trace)
    reasons += _answer_reasons(state)
    basis = sum(r.row.get("status") in TOOL_WORDS for r in results)
    checks = _checks_run(state)
    if reasons:
        standing: Standing = "not-sure"
    elif not basis and not checks:
        standing = "not-assessed"
    elif _grounded(state):
        standing = "known"
    else:
        standing = "consistent"
    return AnswerAssessment(
        standing=standing, reasons=tuple(reasons), results_read=basis, checks_run=checks
    )


def _before(earlier: TurnResult, result: TurnResult) -> bool:
    """Whether ``earlier`` came back in an iteration before ``result``'s."""
    return int(earlier.row["iteration"]) < int(result.row["iteration"])


def _call_reasons(result: TurnResult, declared: Any) -> list[dict[str, Any]]:
    """What one call of the turn leaves the answer unsure of."""
    row = result.row
    at = {"tool": result.name, "id": result.id}
    out: list[dict[str, Any]] = []
    status = row.get("status")
    if status == "failure":
        out.append({"reason": "tool-failed", **at, "status": status})
    cut = [flag for flag in ("truncated", "refused", "withheld") if row.get(flag)]
    if status == "partial" or cut:
        out.append({"reason": "result-incomplete", **at, "by": cut[0] if cut else "partial"})
    if status == "success" and not cut and not declared and _empty(result.own):
        out.append({"reason": "empty-undeclared", **at})
    for statement in declared:
        lists = {
            name: [_what(item) for item in statement.get(name, ())]
            for name in ("not_checked", "cannot_cover")
            if statement.get(name)
        }
        if lists:
            out.append({"reason": "not-checked", **at, **lists})
        verdict = statement.get("verdict")
        if verdict is not None and verdict != "covered":
            out.append({"reason": "period-not-held", **at, "verdict": verdict})
    if row.get("period") == "undeclared":
        out.append({"reason": "period-undeclared", **at})
    for filled in row.get("assumed", ()):
        out.append(
            {
                "reason": "argument-assumed",
                **at,
                "argument": filled.get("argument"),
                "source": filled.get("source"),
            }
        )
    return out


def _empty(text: str) -> bool:
    """Whether a tool's own text says nothing: blank, or JSON ``[]``, ``{}``, ``""``,
    ``null`` however it is spaced."""
    text = text.strip()
    if not text:
        return True
    if text[0] not in '[{"n':
        return False
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return any(value == empty and type(value) is type(empty) for empty in _EMPTY)


def _what(item: Any) -> Any:
    return item.get("what") if isinstance(item, Mapping) else item


def _unverified(
    result: TurnResult, ruled: Mapping[str, Any], trace: EvidenceCorpus
) -> list[dict[str, Any]]:
    """Ruled arguments the model sent a value of its own for, that the record cannot trace
    to the person's words or to an earlier result of the turn."""
    row = result.row
    sent = result.args
    if sent is None:
        return []
    settled = {a.get("argument") for a in row.get("assumed", ())}
    settled |= {a.get("argument") for a in row.get("asked", ())}
    settled |= {a.get("argument") for a in row.get("rewritten", ())}  # a link said where
    out = []
    for argument in ruled:
        if argument in settled or argument not in sent:
            continue
        value = sent[argument]
        spelled = value if isinstance(value, str) else orjson.dumps(value).decode()
        wanted = value_of(spelled)
        found = None if wanted is None else trace.find(wanted)
        if found is not None and not found.looked_for_only:  # not an echo of a question
            continue
        out.append(
            {
                "reason": "argument-unverified",
                "tool": result.name,
                "id": result.id,
                "argument": argument,
            }
        )
    return out


def _answer_reasons(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What the answer as a whole leaves unsure: the checks on it, and how it ended."""
    out: list[dict[str, Any]] = []
    verdict = state.get("unsupported_values")
    if isinstance(verdict, Mapping) and verdict.get("values"):
        flagged: dict[str, Any] = {"reason": "unsupported-values"}
        flagged["values"] = [v.get("value") for v in verdict["values"]]
        flagged.update(posture=verdict.get("posture"), revised=bool(verdict.get("revised")))
        if verdict.get("corpus_truncated"):  # the gate did not read every result
            flagged["corpus_truncated"] = True
        out.append(flagged)
    report = state.get(REPORT_KEY)
    if isinstance(report, Mapping):
        for check in report.get("checks", ()):
            if check.get("check") == "claim" and check.get("outcome") == "fired":
                values = [v["value"] for v in check.get("values", ()) if "carried_by" not in v]
                out.append({"reason": "claim-unmet", "claim": check.get("id"), "values": values})
        if not report.get("complete", True):
            checks = report.get("checks", ())
            skipped = [c.get("id", c.get("check")) for c in checks if c.get("outcome") == "skipped"]
            out.append(
                {
                    "reason": "validation-incomplete",
                    "stopped_by": report.get("stopped_by"),
                    "skipped": skipped,
                }
            )
    contract = state.get("output_contract_unmet")
    if isinstance(contract, Mapping):
        unmet: dict[str, Any] = {"reason": "output-contract-unmet"}
        unmet["attempts"] = contract.get("attempts")
        chain = state.get("output_fallback") or ()
        if chain and chain[-1].get("outcome") == "passed":  # what run_typed handed back
            unmet["served_by"] = chain[-1].get("tier")  # code's value, not the model's
        out.append(unmet)
    stopped = state.get("stopped_early")
    if isinstance(stopped, Mapping):
        out.append({"reason": "stopped-early", "by": stopped.get("reason")})
    return out


def _checks_run(state: Mapping[str, Any]) -> int:
    """The answer checks that ran: those of the validation report that were not skipped,
    and the evidence gate (counted once: the report lists it when there is one)."""
    checks = _report_checks(state)
    ran: int = sum(1 for c in checks if c.get("outcome") != "skipped")
    gate = (state.get("settings") or {}).get("evidence") is not None
    if gate and not any(c.get("check") == "evidence" for c in checks):
        ran += 1
    return ran


def _report_checks(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    report = state.get(REPORT_KEY)
    return list(report.get("checks", ())) if isinstance(report, Mapping) else []


def _grounded(state: Mapping[str, Any]) -> bool:
    """Whether the evidence gate found every name and number of the answer — one at least —
    in a corpus it read whole: its check in the validation report passed, uncut (the one
    standing above ``consistent``; without the report the record does not say how many
    values the gate judged, nor that it read every result)."""
    for check in _report_checks(state):
        if check.get("check") == "evidence":
            return (
                check.get("outcome") == "passed"
                and int(check.get("candidates") or 0) > 0
                and "cut_by" not in check
            )
    return False
