"""No towers on unverified lemmas: with ``.findings()`` and the evidence gate both armed, a
value the model uses — in its final answer, or as an argument of a later tool call — whose
every carrier is a result the model itself declared open, noise or ruled-out lands on the
ledger as a ``contingent`` row (``declared_on``: ``"answer"`` or the call's id; the value's
normal form; each carrier with its current standing; the iteration), one row per value per
moment, and fires ``findings.contingent`` (counts and enums, never the value).

Nothing is inferred and no judge is called: the standings are the model's own (the last per
result), the carriers the evidence corpus's (the current turn's tool results). A value
stands when any carrier is a fact or has no standing; a value with more carriers than the
corpus keeps (``truncated``), or read from a corpus the token ceiling cut, is not judged. A
value the person's message or the system prompt holds is never contingent. Detection only:
no branch changes and no call is blocked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trackway.engine import Scope, StagePath

from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ..context._findings import FINDINGS_ARGUMENT, STANDINGS, peel
from ..context._findings_piece import ledger_index
from ..messages._messages import is_said_by_person
from ._corpus import NOT_EVIDENCE, EvidenceCorpus
from ._values import AnswerValue, answer_values, token_keys
from ._verdict import judge, judged_values, text_leaves

__all__ = ["SET_ASIDE", "contingent_at_answer", "contingent_at_dispatch"]

SET_ASIDE = ("open", "noise", "ruled-out")
"""The standings a value's every carrier must have for the value to be contingent."""


def _armed(cfg: AgentConfig, scope: Scope) -> bool:
    return (
        cfg.findings
        and cfg.evidence is not None
        and isinstance(scope["settings"].get("findings"), Mapping)
    )


def _standings(scope: Scope, extra: Sequence[Mapping[str, Any]] = ()) -> Callable[[str], Any]:
    """The current standing of a result: ``extra`` (standings declared in the same batch,
    filed or not yet, the last one winning), else the ledger's last (from the run's index)."""
    index = ledger_index(scope)
    batch = {str(item["id"]): str(item["standing"]) for item in extra}

    def of(rid: str) -> Any:
        return batch[rid] if rid in batch else index.standing_of(rid)

    return of


class _TurnCorpus:
    """The current turn's evidence corpus of one run and mount, built as results land: each
    visit indexes only the messages added since the last (O(new results)); a person's
    message starts a new turn. Built as :meth:`EvidenceCorpus.of` builds it."""

    __slots__ = ("corpus", "rows", "seen", "seen_rows")

    def __init__(self) -> None:
        self.corpus: EvidenceCorpus | None = None
        self.seen = 0
        self.seen_rows = 0
        self.rows: dict[str, Mapping[str, Any]] = {}

    def read(self, cfg: AgentConfig, scope: Scope) -> EvidenceCorpus:
        history = scope["history"]
        results = scope.get("tool_results") or ()
        if len(history) < self.seen or len(results) < self.seen_rows:
            self.__init__()  # type: ignore[misc]
        for i in range(self.seen_rows, len(results)):
            self.rows[str(results[i]["id"])] = results[i]
        self.seen_rows = len(results)
        doors = frozenset(cfg.skills.doors) if cfg.skills is not None else frozenset()
        if self.corpus is None:
            self.corpus = EvidenceCorpus(cfg.evidence.max_corpus_tokens)
        for i in range(self.seen, len(history)):
            message = history[i]
            if is_said_by_person(message):  # a new turn: earlier results are not evidence
                self.corpus = EvidenceCorpus(cfg.evidence.max_corpus_tokens)
                continue
            if message.get("role") != "tool" or self.corpus.truncated:
                continue
            if message.get("name") in doors:
                continue
            row = self.rows.get(str(message.get("tool_call_id")))
            if row is not None and row.get("status") in NOT_EVIDENCE:
                continue
            text = str(message.get("content") or "")
            if row is not None and "tool_chars" in row:
                text = text[: int(row["tool_chars"])]
            if not self.corpus._fits(len(text)):
                self.corpus.truncated, self.corpus.cut_by = True, "max_corpus_tokens"
                continue
            self.corpus.add(str(message.get("tool_call_id")), text, row)
        self.seen = len(history)
        return self.corpus


def _file(
    cfg: AgentConfig,
    scope: Scope,
    values: Sequence[AnswerValue],
    on: str,
    extra: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    mount = StagePath.parent_of(scope.stage_path)
    memo = scope.run_local(("findings-corpus", id(cfg), mount), _TurnCorpus)
    corpus = memo.read(cfg, scope)
    if corpus.truncated:  # a fact carrier past the cut would be invisible
        return []
    supplied = token_keys(str(scope.get("user_message") or ""))
    supplied |= token_keys(str(scope.get("system_prompt") or ""))
    standings = _standings(scope, extra)
    rows: list[dict[str, Any]] = []
    for value, _, found in judge(corpus, list(values)).values.values():
        if found is None or found.truncated or value.value in supplied:
            continue
        marks = [standings(c) for c in found.carriers]
        if not marks or any(m not in SET_ASIDE for m in marks):
            continue
        carriers = [{"id": c, "standing": m} for c, m in zip(found.carriers, marks, strict=True)]
        rows.append(
            {
                "kind": "contingent",
                "declared_on": on,
                "value": value.value,
                "carriers": carriers,
                "iteration": scope["iteration"],
            }
        )
        _emit(
            scope,
            "findings.contingent",
            {
                "moment": "answer" if on == "answer" else "dispatch",
                "declared_on": on,
                "carriers": len(carriers),
                "standings": sorted({str(m) for m in marks}),
                "value_chars": len(value.value),
            },
        )
    if rows:
        scope.extend("findings", rows)
    return rows


def contingent_at_answer(cfg: AgentConfig, scope: Scope, answer: str) -> None:
    """File the answer's contingent values (``answer``: the model's text, notes taken off),
    after its own declaration was filed."""
    if _armed(cfg, scope):
        _file(cfg, scope, judged_values(answer, cfg.output_model is not None), "answer")


def _declared_previous(calls: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Every well-formed standing the batch's calls declare, in call order."""
    out: list[Mapping[str, Any]] = []
    for call in calls:
        args = call.get("args")
        declared = args.get(FINDINGS_ARGUMENT) if isinstance(args, Mapping) else None
        previous = declared.get("previous") if isinstance(declared, Mapping) else None
        for item in previous if isinstance(previous, list) else ():
            if isinstance(item, Mapping) and item.get("standing") in STANDINGS and "id" in item:
                out.append(item)
    return out


def contingent_at_dispatch(
    cfg: AgentConfig, scope: Scope, calls: Sequence[Mapping[str, Any]], call: Mapping[str, Any]
) -> None:
    """File the contingent values among ``call``'s argument data (``calls``: its batch, whose
    declared standings all govern it), before it runs."""
    if not _armed(cfg, scope):
        return
    args = peel(call)[0].get("args") or {}
    values = [v for text in text_leaves(args) for v in answer_values(text)]
    if values:
        _file(cfg, scope, values, str(call["id"]), _declared_previous(calls))
