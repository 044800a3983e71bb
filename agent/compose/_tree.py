"""``tree_of_thoughts``: propose ``k`` thoughts from each path kept, score them, keep the best
``beam`` paths; ``depth`` levels; one chart, one record.

A level runs the proposer once per (kept path, option) in parallel: slot ``i`` is member
``propose_i``, given the problem, the path's thoughts and which option it is. Each candidate
(its path plus the new thought) is scored by ``evaluate``: a function
``evaluate(problem, thoughts) -> float``, or a runner (slot ``i`` member ``evaluate_i``) whose
answer's first number is the score (an answer with none is recorded unscored and ranks
last). The ``beam`` best candidates are kept, ties going to the earlier candidate (kept path
order, then option order), so the same scores always keep the same paths. Every candidate is a
row of ``tree``; each level emits ``composition.beam``. The answer is the last thought of the
best path (the whole path is ``best_path``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trackway.engine import Decision, FlowChart, Scope, flow_chart, thaw

from ..messages._errors import AgentBuildError
from ..runtime._agent import Agent
from ._composition import Composition, _finish, _noop, _options, _seed
from ._slots import check_count, runner_of, score_of, slot_chart, slot_names

__all__ = ["tree_of_thoughts"]

Evaluate = Callable[[str, list[str]], float]
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _numbered(thoughts: Sequence[str]) -> str:
    return "\n".join(f"{i}. {t}" for i, t in enumerate(thoughts, start=1)) or "(none yet)"


def propose_prompt(problem: str, path: Sequence[str], option: int, k: int) -> str:
    """What proposer slot is asked: the problem, the path so far, which option it is."""
    return (
        f"{problem}\n\nThoughts so far:\n{_numbered(path)}\n\n"
        f"Propose the next thought (option {option} of {k})."
    )


def evaluate_prompt(problem: str, path: Sequence[str]) -> str:
    """What an evaluating runner is asked about one candidate path."""
    return (
        f"{problem}\n\nThoughts:\n{_numbered(path)}\n\n"
        "How promising are these thoughts? Answer with a number; higher is better."
    )


def tree_of_thoughts(
    propose: Agent,
    *,
    evaluate: Evaluate | Agent,
    k: int = 3,
    beam: int = 2,
    depth: int = 2,
    concurrency: int = 4,
    name: str = "tree",
    **options: Any,
) -> Composition:
    """A tree-of-thoughts composition (see the module docstring); ``options`` as every
    composition takes them (``store``, ``durability``, ``redact``)."""
    kind = "tree_of_thoughts"
    for what, n in (("k", k), ("beam", beam), ("depth", depth), ("concurrency", concurrency)):
        check_count(kind, what, n)
    slots = beam * k
    judges = [evaluate] * slots if isinstance(evaluate, Agent) else None
    return _build(name, [propose] * slots, evaluate, judges, k, beam, depth, concurrency, options)


def _build(
    name: str,
    proposers: list[Agent],
    evaluate: Evaluate | Agent,
    judges: list[Agent] | None,
    k: int,
    beam: int,
    depth: int,
    concurrency: int,
    options: Mapping[str, Any],
) -> Composition:
    kind = "tree_of_thoughts"
    if not isinstance(evaluate, Agent) and not callable(evaluate):
        raise AgentBuildError(
            f"{kind}: evaluate= takes a function (problem, thoughts) -> float, or a runner "
            "whose answer's first number is the score"
        )
    members: dict[str, Agent] = {}
    for slot, runner in zip(slot_names("propose", len(proposers)), proposers, strict=True):
        members[slot] = runner_of(kind, slot, runner, members)
    for slot, runner in zip(slot_names("evaluate", len(judges or [])), judges or [], strict=True):
        members[slot] = runner_of(kind, slot, runner, members)
    cap = len(proposers)
    chart_id = f"tot-{name}"

    def start(scope: Scope) -> None:
        by = "member" if judges is not None else "function"
        scope["tot"] = {"k": k, "beam": beam, "depth": depth, "evaluate": by}
        scope["beam"] = [[]]
        scope["level"] = 0

    def level(scope: Scope) -> None:
        problem = str(scope["user_message"])
        prompts, parents = [], []
        for parent, path in enumerate(thaw(scope["beam"])):
            for option in range(1, k + 1):
                prompts.append(propose_prompt(problem, path, option, k))
                parents.append(parent)
        scope["prompts"] = prompts
        scope["parents"] = parents

    def candidates(scope: Scope) -> list[list[str]]:
        paths = thaw(scope["beam"])
        thoughts = [str(t) for t in thaw(scope["thoughts"])]
        return [[*paths[p], t] for p, t in zip(thaw(scope["parents"]), thoughts, strict=True)]

    def ask(scope: Scope) -> None:
        problem = str(scope["user_message"])
        scope["judge_prompts"] = [evaluate_prompt(problem, c) for c in candidates(scope)]

    def keep(scope: Scope) -> None:
        problem, at = str(scope["user_message"]), int(scope["level"])
        paths = candidates(scope)
        scores: list[float | None] = []
        if judges is not None:
            for rating in thaw(scope["ratings"]):
                found = _NUMBER.search(str(rating))
                scores.append(float(found.group()) if found else None)
        else:
            assert callable(evaluate)
            for i, path in enumerate(paths):
                where = f"{kind}: evaluate (level {at}, candidate {i})"
                scores.append(score_of(evaluate(problem, list(path)), where))
        order = sorted(
            range(len(paths)),
            key=lambda i: (scores[i] is None, -(scores[i] or 0.0), i),
        )
        kept = sorted(order[:beam])  # kept in candidate order: the next level's parents
        parents = thaw(scope["parents"])
        scope.extend(
            "tree",
            [
                {"level": at, "index": i, "parent": parents[i], "score": s, "kept": i in kept}
                for i, s in enumerate(scores)
            ],
        )
        scope["beam"] = [paths[i] for i in kept]
        best = order[0] if order else None
        scope["best_path"] = paths[best] if best is not None else []
        scope["current"] = paths[best][-1] if best is not None else ""
        scope.emit(
            "composition.beam",
            {
                "level": at,
                "candidates": len(paths),
                "kept": len(kept),
                "best": best,
                "best_score": None if best is None else scores[best],
                "unscored": sum(s is None for s in scores),
            },
        )

    def deeper(scope: Scope) -> Decision:
        done = int(scope["level"]) + 1
        if done >= depth:
            return Decision("done", {"level": done, "depth": depth})
        scope["level"] = done
        return Decision("again", {"level": done, "depth": depth})

    b = (
        flow_chart("_seed", _seed, id="_seed", description="Take the message")
        .then("_start", start, id="_start", description="The root")
        .then("_level", level, id="_level", description="Ask for the next thoughts")
        .parallel_for_each(
            "_propose",
            items="prompts",
            branch=slot_chart("propose", proposers, chart_id),
            into="thoughts",
            max_branches=cap,
            concurrency=concurrency,
            id="_propose",
        )
    )
    if judges is not None:
        b = b.then("_ask", ask, id="_ask", description="Ask for the scores").parallel_for_each(
            "_evaluate",
            items="judge_prompts",
            branch=slot_chart("evaluate", judges, chart_id),
            into="ratings",
            max_branches=cap,
            concurrency=concurrency,
            id="_evaluate",
        )
    chart: FlowChart = (
        b.then("_beam", keep, id="_beam", description="Keep the best")
        .decider("_depth", deeper, id="_depth")
        .branch("again", "_again", _noop, id="_again", loop_to="_level")
        .branch("done", "_final", _finish("current"), id="_final")
        .end()
        .build(name=f"TreeOfThoughts {name}", chart_id=chart_id, description="TreeOfThoughts")
    )

    def rebuild(swap: Callable[[str, Agent], Agent]) -> Composition:
        names = slot_names("propose", cap)
        again = [swap(n, r) for n, r in zip(names, proposers, strict=True)]
        judged = None
        if judges is not None:
            pairs = zip(slot_names("evaluate", cap), judges, strict=True)
            judged = [swap(n, r) for n, r in pairs]
        return _build(name, again, evaluate, judged, k, beam, depth, concurrency, options)

    return Composition(name, chart, depth + 2, _options(kind, options), members, rebuild)
