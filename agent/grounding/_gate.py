"""The evidence gate (``.names_and_numbers_from_evidence(posture=...)``): every name and
number of a final answer is looked up in what the tools wrote in the current turn.

``route`` judges the answer once the output door and the output schema have passed it, and
commits the verdict as ``unsupported_values`` when some value is in no result (deleted again
when a revised answer is grounded), with an ``agent.evidence_checked`` event of counts only.
Postures: ``assist`` flags; ``guard`` asks the model once to revise (the ``evidence-recheck``
branch, mounted only for ``guard`` and ``rails``), then ships with a flag; ``rails`` asks
once, then withholds the answer: the run ends without ``final`` and ``run`` raises
:class:`UnsupportedValuesError`. A corpus cut by its token ceiling only flags, whatever the
posture (``corpus_truncated``, ``downgraded_from``). No revision is asked of a turn that may
make no further call (its cost budget spent, or cut short at ``max_iterations``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from trackway.engine import Commit, Decision, Scope, thaw

from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ..context._findings import strip_answer
from ..messages._errors import UnsupportedValuesError
from ._corpus import EvidenceCorpus
from ._validation import AnswerValidation, Checking
from ._verdict import judge, judged_values, listed

__all__ = [
    "DEFAULT_MAX_CORPUS_TOKENS",
    "POSTURES",
    "SPENT_KEY",
    "VERDICT_KEY",
    "EvidenceGate",
    "evidence_stages",
    "gate_lines",
    "gated",
    "withheld_error",
]

Posture = Literal["assist", "guard", "rails"]
POSTURES: tuple[Posture, ...] = ("assist", "guard", "rails")
DEFAULT_MAX_CORPUS_TOKENS = 100_000
VERDICT_KEY = "unsupported_values"
SPENT_KEY = "evidence_revision_spent"
_NO_FURTHER_CALL = ("cost budget", "cut short")
_NAMED = 12  # values a revision ask names before "and N more"


@dataclass(frozen=True)
class EvidenceGate:
    """The gate as configured: its posture and the corpus's token ceiling (``None``: none)."""

    posture: Posture
    max_corpus_tokens: int | None = DEFAULT_MAX_CORPUS_TOKENS

    @property
    def revises(self) -> bool:
        """The model may be asked once to revise (``guard``, ``rails``)."""
        return self.posture != "assist"

    def record(self) -> dict[str, Any]:
        """What ``settings["evidence"]`` records: the builder's arguments, for a replay."""
        return {"posture": self.posture, "max_corpus_tokens": self.max_corpus_tokens}


def gated(cfg: AgentConfig, route: Callable[[Scope], Any]) -> Callable[[Scope], Any]:
    """``route`` with the gate judging each answer it would end the turn on (``route`` as it
    is without a gate; async when it is)."""
    gate: EvidenceGate | None = cfg.evidence
    if gate is None:
        return route
    reading = _Reading(
        gate,
        typed=cfg.output_model is not None,
        findings=cfg.findings,
        doors=frozenset(cfg.skills.doors) if cfg.skills is not None else frozenset(),
        validation=cfg.validation,
    )

    if inspect.iscoroutinefunction(route):

        async def route_gated(scope: Scope) -> Decision:
            return _judged(reading, scope, await route(scope))

        return route_gated

    def route_gated_now(scope: Scope) -> Decision:
        return _judged(reading, scope, route(scope))

    return route_gated_now


@dataclass(frozen=True)
class _Reading:
    """How one agent's answers are read: its gate, whether answers are typed or carry
    findings notes, and the names of its library tools (the skills' doors)."""

    gate: EvidenceGate
    typed: bool
    findings: bool
    doors: frozenset[str]
    validation: AnswerValidation | None = None
    """``.answer_validation(...)``: the gate is its first check, its corpus read within the
    limits (a corpus a limit cut only flags, as one cut by the token ceiling)."""


def _judged(reading: _Reading, scope: Scope, decision: Decision) -> Decision:
    gate, evidence = reading.gate, decision.evidence
    if decision.branch != "final" or "denied" in evidence:
        return decision
    content = str(scope["response"].get("content") or "")
    if reading.findings:
        content = strip_answer(content)[0]
    rows = scope.get("tool_results", ())
    checking = None if reading.validation is None else Checking.begin(reading.validation)
    admit = None if checking is None else checking.gate_reads()
    history = scope["history"]
    corpus = EvidenceCorpus.of(history, rows, gate.max_corpus_tokens, reading.doors, admit)
    judged = judge(corpus, judged_values(content, reading.typed))
    if checking is not None:  # the pass's first check, committed with the claims pending
        checking.gate_judged(scope, corpus, judged)
    posture = gate.posture
    downgraded = corpus.truncated and gate.revises
    spent = bool(scope.get(SPENT_KEY))
    unsupported = judged.unsupported
    ask = gate.revises and not downgraded and not spent
    ask = ask and evidence.get("why") not in _NO_FURTHER_CALL
    refused = bool(unsupported) and not ask and posture == "rails" and not downgraded
    action = "pass" if not unsupported else "revise" if ask else "refuse" if refused else "flag"
    counts = {
        "iteration": scope["iteration"],
        "k": len(scope.get("receipts", ())),
        "posture": posture,
        "candidates": judged.candidates,
        "unsupported": len(unsupported),
        "by_absence": len(judged.by_absence),
        "corpus_results": corpus.results,
        "corpus_tokens": corpus.tokens,
        "corpus_truncated": corpus.truncated,
        "action": action,
    }
    if downgraded:
        counts["downgraded_from"] = posture
    _emit(scope, "agent.evidence_checked", counts)  # counts only: never a value
    if not unsupported:
        if VERDICT_KEY in scope:  # the revised answer is grounded
            del scope[VERDICT_KEY]
        return decision
    values, absent, omitted = listed(judged, scope.unquoted)
    verdict: dict[str, Any] = {
        "posture": posture,
        "candidates": judged.candidates,
        "refused": refused,
        "revised": spent,
        "values": values,
        "iteration": scope["iteration"],
        "corpus_truncated": corpus.truncated,
    }
    if omitted:
        verdict["values_omitted"] = omitted
    if absent:
        verdict["by_absence"] = absent
    if downgraded:
        verdict["downgraded_from"] = posture
    scope[VERDICT_KEY] = verdict
    why = f"{len(unsupported)} value(s) in no tool result of this turn"
    if ask:
        return Decision("evidence-recheck", {**evidence, "chosen": "evidence-recheck", "why": why})
    if refused:
        scope.break_("answer withheld: unsupported values")
        return Decision("final", {**evidence, "chosen": "final", "withheld": why})
    return decision


def _ask(spellings: list[str], total: int) -> str:
    """The library's message asking the model once to revise the ``total`` values no result
    carried, naming the first of them as the answer spelled them."""
    shown = ", ".join(f'"{s}"' for s in spellings[:_NAMED])
    more = total - min(len(spellings), _NAMED)
    named = f": {shown}" + (f" and {more} more" if more else "") if shown else f" ({total})"
    return (
        f"Your answer states values that appear in no tool result of this turn{named}. "
        "Check each against what the tools returned: correct it, look it up with a tool, or "
        "leave it out and say you could not find it. Then answer again."
    )


def evidence_stages(cfg: AgentConfig) -> dict[str, Callable[..., Any]]:
    """The ``evidence-recheck`` stage, for ``guard`` and ``rails`` (none otherwise)."""
    gate: EvidenceGate | None = cfg.evidence
    if gate is None or not gate.revises:
        return {}
    typed = cfg.output_model is not None
    findings = cfg.findings

    def evidence_recheck(scope: Scope) -> None:
        """The answer as the model gave it, then one library message naming the values no
        result carried (as the answer spelled them); the revision is spent."""
        response = scope["response"]
        content = str(response.get("content") or "")
        judged = content if not findings else strip_answer(content)[0]
        verdict = thaw(scope[VERDICT_KEY])
        flagged = {v["value"] for v in verdict["values"]}
        spellings: list[str] = []
        for value in judged_values(judged, typed):
            if value.value in flagged:
                flagged.discard(value.value)  # one spelling each: the first
                spellings.append(value.spelling)
        total = len(verdict["values"]) + int(verdict.get("values_omitted", 0))
        iteration = scope["iteration"]
        scope.extend(
            "history",
            [
                {"role": "assistant", "content": content},
                {"role": "user", "content": _ask(spellings, total), "origin": "library"},
            ],
        )
        scope[SPENT_KEY] = True
        scope["iteration"] = iteration + 1
        _emit(scope, "agent.iteration_end", {"iteration": iteration, "tool_calls": 0})

    return {"evidence-recheck": evidence_recheck}


def withheld_error(state: Mapping[str, Any], run_id: str) -> UnsupportedValuesError | None:
    """The error ``run`` raises for a run whose answer the gate withheld (else ``None``)."""
    verdict = state.get(VERDICT_KEY)
    if verdict is None or not verdict.get("refused") or "final_answer" in state:
        return None
    kept = dict(thaw(verdict))
    kinds = [v["kind"] for v in kept["values"]]
    n = len(kinds) + int(kept.get("values_omitted", 0))
    names, numbers = kinds.count("name"), kinds.count("number")
    return UnsupportedValuesError(
        f"the answer was withheld: {n} value(s) ({names} name(s), {numbers} number(s) listed) "
        f"appear in no tool result of this turn, after one revision ask (posture 'rails'). "
        "The values are on error.verdict['values'] and agent.unsupported_values(); give the "
        "agent a tool whose result holds them, or build with posture='guard' to ship such an "
        "answer with a flag",
        verdict=kept,
        run_id=run_id,
    )


def gate_lines(commit: Commit) -> list[str]:
    """The narrative's line for a ``route`` commit where the gate judged an answer (counts
    only, as its event carries): what it flagged, asked again about or withheld."""
    lines = []
    for event in commit.events:
        if event.name != "agent.evidence_checked":
            continue
        said = thaw(event.payload)
        n, of = said["unsupported"], said["candidates"]
        values = f"{n} of {of} value{'' if of == 1 else 's'} in no tool result of the turn"
        cut = " (the corpus passed its ceiling: flagged only)" if said["corpus_truncated"] else ""
        if said["action"] == "flag":
            lines.append(f"The evidence gate flagged {values}{cut}")
        elif said["action"] == "revise":
            lines.append(f"The evidence gate asked the model to revise {values}")
        elif said["action"] == "refuse":
            lines.append(f"The evidence gate withheld the answer: {values}, after one revision")
    return lines
