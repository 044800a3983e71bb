"""The output door: the answer the person would get passes the output links before the
turn ends.

Mounted only when some link stands at the output door: the ``route`` decider keeps its id
and, whenever it would end the turn or ask again for the output schema's sake, first walks
the links over the answer as the person would get it (the findings notes taken out, the
limits block appended when limits travel and the answer is prose). A ``deny`` withholds
the answer (``message_denied``; the run ends there). With an output schema, the answer the
links passed is what is judged: a rewrite that repairs a failing answer ends the retries,
and one that breaks an answer the model got right is named (``output_broken_by``, then
``output_contract_unmet.broken_by``) and asks the model nothing more, since a rule breaks
the next answer the same way. The ``final`` stage hands back what the links passed
(:func:`passed_answer`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from trackway.engine import Decision, Scope

from ..context._config import AgentConfig
from ._ledger import DECISIONS_KEY
from ._links import is_async
from ._message_doors import (
    MessageContext,
    Passed,
    message_context,
    refuse,
    walk_message,
    walk_message_now,
)

__all__ = ["BROKEN_BY_KEY", "answering", "passed_answer"]

BROKEN_BY_KEY = "output_broken_by"
"""The output link whose rewrite broke an answer that matched the output schema."""

_ENDS = ("final", "output-retry")
"""The routes on which an answer may reach the person (now, or once it is judged)."""


def answering(
    cfg: AgentConfig,
    route: Callable[[Scope], Decision],
    person_answer: Callable[[Scope, str], str],
    judge: Callable[[Scope, str], str | None] | None,
) -> Callable[[Scope], Any]:
    """The ``route`` decider behind the output door. ``person_answer(scope, content)``: the
    answer as the person would get it; ``judge(scope, text)``: the output schema's error
    for ``text`` (``None``: it matches; the verdict committed), when the agent has a
    schema. A plain function when no link there is async."""
    links = cfg.links("output")

    def answered(scope: Scope, decision: Decision, answer: str, passed: Passed) -> Decision:
        if passed.denied is not None:
            refuse(scope, passed, "output", scope["iteration"])
            return Decision("final", {**decision.evidence, "chosen": "final", "denied": passed.by})
        if judge is None or not passed.rewrites:
            return decision
        return _judged(scope, decision, answer, passed, judge)

    def opened(scope: Scope) -> tuple[str, MessageContext]:
        """The answer as the person would get it, and the links' context."""
        answer = person_answer(scope, scope["response"].get("content", ""))
        return answer, message_context(scope, cfg.name, "output", scope["iteration"])

    if not any(is_async(link, "output") for link in links):

        def route_answering_now(scope: Scope) -> Decision:
            decision = route(scope)
            if decision.branch not in _ENDS:
                return decision
            answer, ctx = opened(scope)
            passed = walk_message_now(scope, links, "output", answer, ctx)
            return answered(scope, decision, answer, passed)

        return route_answering_now

    async def route_answering(scope: Scope) -> Decision:
        decision = route(scope)
        if decision.branch not in _ENDS:
            return decision
        answer, ctx = opened(scope)
        passed = await walk_message(scope, links, "output", answer, ctx)
        return answered(scope, decision, answer, passed)

    return route_answering


def _judged(
    scope: Scope,
    decision: Decision,
    answer: str,
    passed: Passed,
    judge: Callable[[Scope, str], str | None],
) -> Decision:
    """The route once the schema judged the rewritten answer, not the model's own."""
    evidence = decision.evidence
    error = judge(scope, passed.text)
    if error is None:  # what the person gets matches: nothing to ask again
        if "output_error" in scope:
            del scope["output_error"]
        if decision.branch == "output-retry":
            why = "the answer the output links passed matches the schema"
            return Decision("final", {**evidence, "chosen": "final", "why": why})
        return decision
    if judge(scope, answer) is None:  # the model's answer matched: a rule broke it
        by = next(name for name, text in passed.rewrites if judge(scope, text) is not None)
        scope["output_error"] = error
        scope[BROKEN_BY_KEY] = by
        return Decision("final", {**evidence, "chosen": "final", "broken_by": by})
    if decision.branch == "final":  # no retry left: the error is the delivered answer's
        scope["output_error"] = error
    return decision  # asked again, the model reads what was wrong with its own answer


def passed_answer(scope: Scope, iteration: int) -> str | None:
    """The answer the output links passed at ``iteration`` when one rewrote it (the last
    rewrite on the ledger), else ``None``."""
    rows = scope.get(DECISIONS_KEY, ())
    for row in reversed(rows):
        if not isinstance(row, Mapping) or row.get("iteration") != iteration:
            break
        if row.get("door") == "output" and "value" in row:
            value: Any = row["value"]
            return str(value)
    return None
