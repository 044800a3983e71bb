"""Deciders (one branch) and selectors (several branches, run in parallel).

A decider's or selector's function runs as a stage whose result is read by an
:data:`~trackway.engine.run._stage.Interpret`: the chosen keys, the decision evidence for the
commit's ``detail`` and, for an undeclared key, the error the run fails with.
"""

from __future__ import annotations

from typing import Any

from ..chart._chart import Node
from ..core._detail import CommitDetail, DecisionEvidence
from ..core._errors import RunError, StageContractError, UnknownBranchError
from ..core._paths import join
from ..core._values import FrozenList, thaw
from ._context import Strand
from ._decide import Decision, Selection
from ._parallel import exec_parallel
from ._stage import Interpret, run_stage

__all__ = ["exec_decider", "exec_selector"]


def _decider_reader(node: Node) -> Interpret:
    def interpret(result: Any) -> tuple[list[str], CommitDetail, RunError | None]:
        evidence: DecisionEvidence
        if isinstance(result, Decision):
            evidence = thaw(result.evidence)
            key = evidence["chosen"] = result.branch
        elif result is None and node.default is not None:
            key, evidence = node.default, {"chosen": node.default, "default": True}
        elif isinstance(result, str):
            key, evidence = result, {"chosen": result}
        else:
            raise StageContractError(
                f"decider {node.name!r} returned {result!r}; return a branch key "
                f"({', '.join(node.branches)}) or decide(scope, rules, default)"
            )
        problem = None
        if key not in node.branches:
            problem = UnknownBranchError(
                f"decider {node.name!r} chose branch {key!r}, which it does not declare; its "
                f"branches are {', '.join(node.branches)}"
            )
        return [key], {"decision": evidence}, problem

    return interpret


def _selector_reader(node: Node) -> Interpret:
    declared = [b.key for b in node.parallel]

    def interpret(result: Any) -> tuple[list[str], CommitDetail, RunError | None]:
        evidence: DecisionEvidence | None
        if isinstance(result, Selection):
            keys, evidence = list(result.branches), result.evidence  # type: ignore[assignment]
        elif isinstance(result, str):
            keys, evidence = [result], None
        elif isinstance(result, (list, tuple, FrozenList)):
            keys, evidence = list(result), None
        else:
            raise StageContractError(
                f"selector {node.name!r} returned {result!r}; return a list of branch keys "
                f"({', '.join(declared)}) or select(scope, rules)"
            )
        unknown = [k for k in keys if k not in declared]
        if evidence is None:
            evidence = {"selected": keys}
        problem = None
        if unknown:
            problem = UnknownBranchError(
                f"selector {node.name!r} chose {', '.join(map(repr, unknown))}, which it does "
                f"not declare; its branches are {', '.join(declared)}"
            )
        return keys, {"decision": evidence}, problem

    return interpret


async def exec_decider(strand: Strand, node: Node) -> str | None:
    """Run the decider; the next node is the chosen branch's (``None`` if it broke)."""
    chosen, scope = await run_stage(
        strand, node.id, node.name, node.fn, node.is_async, "decider", node.retry,
        _decider_reader(node),
    )  # fmt: skip
    strand.decision = {"decider": scope.stage_path, "branch": chosen[0]}
    if strand.broken is not None:
        return None
    return node.branches[chosen[0]]


async def exec_selector(strand: Strand, node: Node) -> str | None:
    """Run the selector, then its chosen branches in parallel and their merge."""
    chosen, scope = await run_stage(
        strand, node.id, node.name, node.fn, node.is_async, "selector", node.retry,
        _selector_reader(node),
    )  # fmt: skip
    if strand.broken is not None:
        return None
    picked = [(b.key, b) for b in node.parallel if b.key in chosen]
    if picked:
        path = scope.stage_path
        await exec_parallel(strand, node, picked, path, join(f"{path}/", "merge"))
    return node.next
